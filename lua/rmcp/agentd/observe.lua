-- The dashboard's view of agentd (a connection that said hello with observer = true): every
-- orchestrator's sessions and one session's timeline, read without consuming anything — no drain,
-- no delivery mark, no watch superseded, nothing added to an orchestrator's context — and a nudge
-- when a session changes. Actions on a session run as its owner: agentd's record, never the caller's
-- word (methods/observe.lua: observe_act).
local uv = require "luv"
local json = require "rmcp.lib.json"
local after_reply = require "rmcp.lib.after_reply"
local store = require "rmcp.agentd.store"
local rules_list = require "rmcp.rules.list"
local rules_usage = require "rmcp.rules.usage"
local usage_ledger = require "rmcp.agentd.usage_ledger"
local session = require "rmcp.agentd.session"
local health = require "rmcp.agentd.health"

local M = {}

M.timeline_max = 400   -- journal records one session answer carries (the newest)
M.nudge_ms = 50        -- at most one observe_changed per session this often
M.live_text_max = 16384 -- bytes of the running turn's text one session answer carries (the newest)

-- The row of s as the dashboard shows it: list's detailed row, its owner and the whole task.
local function row(d, s)
  local r = rules_list.row(s, { include_task = true, detail = true, current_work = session.current_work,
                                health = function(x) return health.of(d, x) end })
  r.owner = s.owner
  r.project_dir = s.project_dir
  return r
end

-- What orchestrator o's sessions spent together (the list's usage: rules/list.lua spent), with
-- today = what its orchestrator spent today by the ledger (a routine's runs count to its creator;
-- absent when nothing, as in list's); nil when it spent nothing.
local function spent_of(d, id, sum)
  local today = usage_ledger.spent_today(d, id)
  if sum.total == 0 and not sum.cost and today.tokens == 0 and not today.cost then return nil end
  local u = rules_list.spent(sum)
  if today.tokens > 0 or today.cost then
    u.today = rules_list.spent({ total = today.tokens, cost = today.cost, cost_unknown = today.cost_unknown })
  end
  return u
end

-- Every orchestrator's sessions: {orchestrators = [{id, sessions = [row…], active, usage?}]}, the
-- orchestrator with the most recent change first, each one's sessions newest first.
function M.fleet(d)
  local by_owner, order, sums = {}, {}, {}
  for _, s in pairs(d.sessions) do
    local o = by_owner[s.owner]
    if not o then
      o = { id = s.owner, sessions = json.array(), active = 0, updated_at = 0 }
      by_owner[s.owner] = o
      order[#order + 1] = o
      sums[o] = rules_usage.zero()
    end
    o.sessions[#o.sessions + 1] = row(d, s)
    if rules_list.pending(s) then o.active = o.active + 1 end
    o.updated_at = math.max(o.updated_at, s.updated_at or 0)
    if s.usage then rules_usage.add(sums[o], s.usage) end
  end
  for _, o in ipairs(order) do
    o.usage = spent_of(d, o.id, sums[o])
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

-- What the fleet spent lately, for the dashboard's chart (usage_ledger.recent): today by hour and
-- the last days (n, default 14, at most 92) by day.
function M.usage(d, n)
  n = math.tointeger(n) or 14
  return usage_ledger.recent(d, math.max(1, math.min(n, 92)))
end

-- The newest max bytes of text (at most), starting on a whole UTF-8 character.
function M.text_tail(text, max)
  if #text <= max then return text end
  local i = #text - max + 1
  while i <= #text and (text:byte(i) & 0xC0) == 0x80 do i = i + 1 end
  return text:sub(i)
end

-- One session for the dashboard: its row, pending decisions, the agent's reported config apart
-- from what is queued, its timeline and the running turn's text and reasoning so far (the newest
-- live_text_max bytes of each). The timeline is the journal's newest timeline_max records, or with `since` (the
-- journal_offset an earlier answer gave) only the records after it; `timeline_reset` says the
-- journal had to be read from its start again.
function M.session(d, s, since)
  local from = math.tointeger(since) or 0
  if from < 0 then from = 0 end
  local records, offset, reset = store.read_journal_from(s.transcript_path, from)
  if reset then records, offset = store.read_journal_from(s.transcript_path, 0) end
  local first = math.max(1, #records - M.timeline_max + 1)
  local timeline = json.array()
  for i = first, #records do timeline[#timeline + 1] = records[i] end
  local decisions = json.array()
  for _, dec in ipairs(s.pending or {}) do decisions[#decisions + 1] = session.decision_view(dec) end
  local rt = s.rt
  local options = session.config_options(d, s)
  local live = rt and rt.prompt_active and session.turn_text(s) or nil
  local thought = rt and rt.prompt_active and session.turn_thought(s) or ""
  return {
    session = row(d, s),
    decisions = decisions,
    agent_config = options and session.effective_config(s, options) or nil,
    queued_config = s.queued_config,
    timeline = timeline,
    timeline_dropped = first - 1,
    timeline_reset = (from == 0 or reset) or nil,
    journal_offset = offset,
    live_text = live and M.text_tail(live, M.live_text_max) or nil,
    live_text_bytes = live and #live > M.live_text_max and #live or nil,
    live_thought = thought ~= "" and M.text_tail(thought, M.live_text_max) or nil,
  }
end

-- Tells the observer connections that s changed: at once when it has not in the last nudge_ms or
-- its status is new (a turn's end is never held back), else once at the end of that window (the
-- page fetches what it shows). "At once" is after the replies of the moment (lib/after_reply): a
-- watch woken by the same change gets its result first.
function M.changed(d, s)
  local obs = d.observers
  if not obs or next(obs.conns) == nil then return end
  obs.sent, obs.status = obs.sent or {}, obs.status or {} -- (a set made before a hot reload lacks them)
  local new_status = obs.status[s.id] ~= s.status
  if obs.pending[s.id] and not new_status then return end
  local function nudge()
    obs.sent[s.id], obs.status[s.id] = uv.now(), s.status
    local note = { session_id = s.id, owner = s.owner, status = s.status }
    after_reply.queue(function()
      for conn in pairs(obs.conns) do
        if not conn.peer.closed then conn.peer:notify("observe_changed", note) end
      end
    end)
  end
  local wait = (obs.sent[s.id] or -M.nudge_ms) + M.nudge_ms - uv.now()
  if wait <= 0 or new_status then return nudge() end
  obs.pending[s.id] = true
  local timer = uv.new_timer()
  timer:start(wait, 0, function()
    timer:close()
    obs.pending[s.id] = nil
    nudge()
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
  d.observers = d.observers or { conns = {}, pending = {}, sent = {}, status = {} }
  d.observers.conns[conn] = true
end

-- Drops conn from the observers (its connection closed).
function M.remove(d, conn)
  if d.observers then d.observers.conns[conn] = nil end
end

return M
