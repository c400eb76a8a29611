-- The order a list shows sessions in (newest first: rules/list.lua), kept per orchestrator and
-- sorted again only when a session came into d.sessions or left it: a list of a long history
-- (10,000 retained sessions) must not sort all of it on every call.
local rules_list = require "rmcp.rules.list"
local answers = require "rmcp.agentd.answers"

local M = {}

-- Puts session s into d.sessions as id (nil: takes id out); the only writer of d.sessions.
function M.put(d, id, s)
  d.sessions[id] = s
  d.sessions_gen = (d.sessions_gen or 0) + 1
  answers.changed() -- (a list shows the sessions that are)
end

-- The sessions of orchestrator owner, newest first. The caller must not change the list.
function M.newest_first(d, owner)
  local o = d.session_order
  if not o or o.gen ~= d.sessions_gen then
    o = { gen = d.sessions_gen, by_owner = {} }
    d.session_order = o
  end
  local list = o.by_owner[owner]
  if list then return list end
  list = {}
  for _, s in pairs(d.sessions) do
    if s.owner == owner then list[#list + 1] = s end
  end
  table.sort(list, rules_list.newer)
  o.by_owner[owner] = list
  return list
end

return M
