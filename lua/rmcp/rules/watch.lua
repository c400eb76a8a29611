-- Watch shaping: when a watched session is ready, and the compact result a watch returns for it.
local json = require "rmcp.lib.json"
local caps = require "rmcp.rules.caps"

local M = {}

-- Says why a session wakes a watch ("terminal", "decision", "exited") or nil when it does not. A
-- pending decision wakes every watch until it is answered: an answer that failed (a wrong option id)
-- must not leave the orchestrator waiting on a session that waits on it.
function M.ready(s)
  if s.terminal_pending then return "terminal" end
  if s.pending and s.pending[1] then return "decision" end
  if s.status == "exited" or s.status == "orphaned" then return "exited" end
  if s.rt and s.rt.health_alert then return "stalled" end -- once per stall (agentd/health.lua)
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
