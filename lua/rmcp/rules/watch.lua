-- Watch shaping: when a watched session is ready, and the compact result a watch returns for it.
local json = require "rmcp.lib.json"
local config = require "rmcp.config"
local caps = require "rmcp.rules.caps"

local M = {}

-- Seconds after which a decision a connection's watch reported wakes it again, unanswered.
function M.remind_s()
  return config.limit("decision_remind_s")
end

-- Says why pending decision dec wakes the watch of connection watcher (nil: any) at time now, or
-- nil. A decision wakes each connection's watch once: a host that keeps a watch in flight while a
-- person answers does not spin on it. It comes back at once when an answer to it failed (a wrong
-- option, a dismissed form: the orchestrator is never left waiting on a session that waits on it),
-- to a connection that has not seen it (a new host, ctl), and as a reminder after remind_s.
function M.decision_due(dec, watcher, now)
  now = now or math.huge -- (no time: any reported decision is due, as a wait sees it)
  if not dec.delivered or dec.answer_failed then return "decision" end
  if watcher ~= nil and not (dec.seen_by and dec.seen_by[watcher]) then return "decision" end
  if (dec.delivered_at or 0) + M.remind_s() <= now then return "reminder" end
  return nil
end

-- When the watch of connection watcher is next due a reminder of s's pending decision (a time), or nil.
function M.next_reminder(s, watcher, now)
  local dec = s.pending and s.pending[1]
  if not dec or M.decision_due(dec, watcher, now) then return nil end
  return (dec.delivered_at or now) + M.remind_s()
end

-- Says why a session wakes the watch of connection watcher at time now ("terminal", "decision",
-- "reminder", "exited", "stalled", "integration") or nil when it does not.
function M.ready(s, watcher, now)
  if s.terminal_pending then return "terminal" end
  local dec = s.pending and s.pending[1]
  local why = dec and M.decision_due(dec, watcher, now)
  if why then return why end
  if s.status == "exited" or s.status == "orphaned" then return "exited" end
  if s.rt and s.rt.health_alert then return "stalled" end -- once per stall (agentd/health.lua)
  if s.rt and s.rt.integration_news then return "integration" end -- a step of its branch's integration
  return nil
end

-- True when s waits on a decision some watch already reported (the next result says it is a repeat).
function M.decision_repeated(s)
  local first = s.pending and s.pending[1]
  return first ~= nil and first.delivered == true
end

-- Builds the compact result from a drained snapshot: status, stop reason, one capped message,
-- the decision, plan, current work, error text, transcript path and (isolated agents) changes.
function M.compact(snap)
  local r = {
    status = snap.status,
    transcript_path = snap.transcript_path,
    current_work = snap.current_work,
    permission_request = snap.permission_request,
    error_text = snap.error_text,
    background_recovery = snap.background_recovery, -- {attempts, gave_up?}: recovery turns before this result
    health = snap.health, -- blocked or stalled (agentd/health.lua)
    changes = snap.changes, -- isolate=worktree: files, insertions, deletions, commits, untracked vs its base
    usage = snap.usage, -- {turn, total, cost?, currency?, estimated?, warning?, budget?} (rules/usage.lua line)
    integration = snap.integration, -- its branch's integration: {id, state, target, note?, files?, commit?}
  }
  if snap.status ~= "running" and snap.status ~= "starting" then r.stop_reason = snap.stop_reason end
  if snap.status == "exited" or snap.status == "orphaned" then r.exit_reason = snap.exit_reason end
  local message = snap.last_turn_text
  if message == nil or message == "" then message = snap.text end
  r.message, r.message_truncated = caps.message(message)
  if snap.plan and #snap.plan > 0 then r.plan = json.array(snap.plan) end
  return r
end

return M
