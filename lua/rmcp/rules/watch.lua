-- Watch shaping: when a watched session is ready, and the compact result a watch returns for it.
local json = require "rmcp.lib.json"
local caps = require "rmcp.rules.caps"

local M = {}

-- Says why a session wakes a watch ("terminal", "decision", "exited") or nil when it does not.
function M.ready(s)
  if s.terminal_pending then return "terminal" end
  for _, d in ipairs(s.pending or {}) do
    if not d.delivered then return "decision" end
  end
  if s.status == "exited" or s.status == "orphaned" then return "exited" end
  return nil
end

-- Builds the compact result from a drained snapshot: status, stop reason, one capped message,
-- the decision, plan, current work, error text and transcript path.
function M.compact(snap)
  local r = {
    status = snap.status,
    transcript_path = snap.transcript_path,
    current_work = snap.current_work,
    permission_request = snap.permission_request,
    error_text = snap.error_text,
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
