-- The dashboard's view of agentd (a connection that said hello with observer = true): every
-- orchestrator's sessions and one session's timeline, read without consuming anything — no drain,
-- no delivery mark, no watch superseded, nothing added to an orchestrator's context — and a nudge
-- when a session changes. Actions on a session run as its owner: agentd's record, never the caller's
-- word (api.lua: observe_act).
local uv = require "luv"
local json = require "rmcp.lib.json"
local store = require "rmcp.agentd.store"
local rules_list = require "rmcp.rules.list"
local session = require "rmcp.agentd.session"
local health = require "rmcp.agentd.health"

local M = {}

M.timeline_max = 400   -- journal records one session answer carries (the newest)
M.nudge_ms = 50        -- at most one observe_changed per session this often

-- The row of s as the dashboard shows it: list's detailed row, its owner and the whole task.
local function row(d, s)
  local r = rules_list.row(s, { include_task = true, detail = true, current_work = session.current_work,
                                health = function(x) return health.of(d, x) end })
  r.owner = s.owner
  r.project_dir = s.project_dir
  return r
end

-- Every orchestrator's sessions: {orchestrators = [{id, sessions = [row…], active}]}, the
-- orchestrator with the most recent change first, each one's sessions newest first.
function M.fleet(d)
  local by_owner, order = {}, {}
  for _, s in pairs(d.sessions) do
    local o = by_owner[s.owner]
    if not o then
      o = { id = s.owner, sessions = json.array(), active = 0, updated_at = 0 }
      by_owner[s.owner] = o
      order[#order + 1] = o
    end
    o.sessions[#o.sessions + 1] = row(d, s)
    if rules_list.pending(s) then o.active = o.active + 1 end
    o.updated_at = math.max(o.updated_at, s.updated_at or 0)
  end
  for _, o in ipairs(order) do
    table.sort(o.sessions, function(a, b)
      if (a.created_at or 0) ~= (b.created_at or 0) then return (a.created_at or 0) > (b.created_at or 0) end
      return a.session_id > b.session_id
    end)
  end
  table.sort(order, function(a, b)
    if a.updated_at ~= b.updated_at then return a.updated_at > b.updated_at end
    return a.id < b.id
  end)
  return { orchestrators = json.array(order), now = store.now() }
end

-- One session for the dashboard: its row, pending decisions, the agent's reported config apart
-- from what is queued, the newest journal records (its timeline) and the running turn's text so far.
function M.session(d, s)
  local records = store.read_journal(s.transcript_path)
  local first = math.max(1, #records - M.timeline_max + 1)
  local timeline = json.array()
  for i = first, #records do timeline[#timeline + 1] = records[i] end
  local decisions = json.array()
  for _, dec in ipairs(s.pending or {}) do decisions[#decisions + 1] = session.decision_view(dec) end
  local rt = s.rt
  return {
    session = row(d, s),
    decisions = decisions,
    agent_config = rt and rt.config_options and session.effective_config(s) or nil,
    queued_config = s.queued_config,
    timeline = timeline,
    timeline_dropped = first - 1,
    live_text = rt and rt.prompt_active and session.turn_text(s) or nil,
  }
end

-- Tells the observer connections that s changed (at most once per nudge_ms per session; the page
-- fetches what it shows).
function M.changed(d, s)
  local obs = d.observers
  if not obs or next(obs.conns) == nil then return end
  if obs.pending[s.id] then return end
  obs.pending[s.id] = true
  local timer = uv.new_timer()
  timer:start(M.nudge_ms, 0, function()
    timer:close()
    obs.pending[s.id] = nil
    for conn in pairs(obs.conns) do
      if not conn.peer.closed then conn.peer:notify("observe_changed", { session_id = s.id, owner = s.owner, status = s.status }) end
    end
  end)
end

-- Tells the observers that this daemon ends for good (not a restart, which hands over): a
-- dashboard started for the fleet ends with it.
function M.daemon_exiting(d, reason)
  if not d.observers then return end
  for conn in pairs(d.observers.conns) do
    if not conn.peer.closed then conn.peer:notify("agentd_exiting", { reason = reason }) end
  end
end

-- Adds conn to the observers (hello with observer = true).
function M.add(d, conn)
  d.observers = d.observers or { conns = {}, pending = {} }
  d.observers.conns[conn] = true
end

-- Drops conn from the observers (its connection closed).
function M.remove(d, conn)
  if d.observers then d.observers.conns[conn] = nil end
end

return M
