-- Each orchestrator's parked sessions counted by status and their spend summed (rules/list.lua
-- M.tally), and the sessions a view of its list must look at, kept until a session is parked or
-- unparked, comes or goes, a parked one's result is collected (or a hot reload swaps a module in:
-- rules/list.lua made the tally and reads it); and the whole tally of its sessions (rules/list.lua
-- M.whole: counts, spend, what each view hides), kept besides until anything a list reads of any
-- session changes (revision.lua's generation). A list then counts nothing and looks at sessions
-- only as far as its page goes, however many there are. A parked session (park.lua) has no agent,
-- no runtime and no decision pending: its status and spend cannot change until it is unparked, and
-- a view shows it only while its result is uncollected (terminal_pending).
local rules_list = require "rmcp.rules.list"
local reload = require "rmcp.lib.reload"
local order = require "rmcp.agentd.session.order"
local revision = require "rmcp.agentd.session.revision"

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
-- how many parked ones it leaves out. The caller must not change it.
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
    local listed, hidden = {}, 0
    for _, s in ipairs(list) do
      if s.parked == nil or s.terminal_pending == true then listed[#listed + 1] = s else hidden = hidden + 1 end
    end
    mine.listed, mine.hidden = listed, hidden
    t.by_owner[owner] = mine
  end
  return mine
end

-- The whole tally of orchestrator owner's sessions (rules/list.lua M.whole), kept while the list
-- generation and its parked tally are. The caller must not change it.
function M.whole(d, owner)
  local mine, generation = M.parked(d, owner), revision.generation()
  local w = mine.whole
  if not w or w.generation ~= generation then
    w = rules_list.whole(mine.listed, mine, M.is_counted, mine.hidden)
    w.generation, mine.whole = generation, w
  end
  return w
end

return M
