-- Each orchestrator's parked sessions counted by status and their spend summed (rules/list.lua
-- M.tally), kept until a session is parked or unparked, comes or goes (or a hot reload swaps a
-- module in: rules/list.lua made the tally and reads it): per call a list counts only the sessions
-- that are not parked, however long the day's history. A parked session (park.lua) has no
-- agent and no runtime: its status and spend cannot change until it is unparked.
local rules_list = require "rmcp.rules.list"
local reload = require "rmcp.lib.reload"
local order = require "rmcp.agentd.session.order"

local M = {}

-- True when s is parked: counted in its owner's tally.
function M.is_counted(s)
  return s.parked ~= nil
end

-- Notes that a session was parked or unparked: every tally is made again when next asked.
function M.parked_changed(d)
  d.parked_gen = (d.parked_gen or 0) + 1
end

-- The tally of orchestrator owner's parked sessions. The caller must not change it.
function M.parked(d, owner)
  local t = d.parked_tally
  local swaps = reload.generation()
  if not t or t.sessions_gen ~= d.sessions_gen or t.parked_gen ~= d.parked_gen or t.swaps ~= swaps then
    t = { sessions_gen = d.sessions_gen, parked_gen = d.parked_gen, swaps = swaps, by_owner = {} }
    d.parked_tally = t
  end
  local mine = t.by_owner[owner]
  if not mine then
    mine = rules_list.tally(order.newest_first(d, owner), M.is_counted)
    t.by_owner[owner] = mine
  end
  return mine
end

return M
