-- Each orchestrator's parked sessions counted by status and their spend summed (rules/list.lua
-- M.tally), and the sessions a view of its list must look at, kept until a session is parked or
-- unparked, comes or goes, a parked one's result is collected (or a hot reload swaps a module in:
-- rules/list.lua made the tally and reads it): per call a list counts only the sessions that are
-- not parked and looks at the parked ones only as far as its page goes, however long the day's
-- history. A parked session (park.lua) has no agent, no runtime and no decision pending: its
-- status and spend cannot change until it is unparked, and a view shows it only while its result
-- is uncollected (terminal_pending).
local rules_list = require "rmcp.rules.list"
local reload = require "rmcp.lib.reload"
local order = require "rmcp.agentd.session.order"

local M = {}

-- True when s is parked: counted in its owner's tally.
function M.is_counted(s)
  return s.parked ~= nil
end

-- Notes that a session was parked or unparked, or a parked one's result collected: every tally is
-- made again when next asked.
function M.parked_changed(d)
  d.parked_gen = (d.parked_gen or 0) + 1
end

-- The tally of orchestrator owner's parked sessions, with what a view (not all) looks at: listed,
-- newest first, the sessions not parked and the parked ones whose result is uncollected; hidden,
-- how many parked ones it leaves out; uncounted, how many sessions are not parked. The caller must
-- not change it.
function M.parked(d, owner)
  local t = d.parked_tally
  local swaps = reload.generation()
  if not t or t.sessions_gen ~= d.sessions_gen or t.parked_gen ~= d.parked_gen or t.swaps ~= swaps then
    t = { sessions_gen = d.sessions_gen, parked_gen = d.parked_gen, swaps = swaps, by_owner = {} }
    d.parked_tally = t
  end
  local mine = t.by_owner[owner]
  if not mine then
    local list = order.newest_first(d, owner)
    mine = rules_list.tally(list, M.is_counted)
    local listed, hidden, uncounted = {}, 0, 0
    for _, s in ipairs(list) do
      if s.parked == nil then uncounted = uncounted + 1 end
      if s.parked == nil or s.terminal_pending == true then listed[#listed + 1] = s else hidden = hidden + 1 end
    end
    mine.listed, mine.hidden, mine.uncounted = listed, hidden, uncounted
    t.by_owner[owner] = mine
  end
  return mine
end

return M
