-- reasonix_watch: the orchestrator's wake-up call — blocks until a session finishes, needs a decision or dies.
local common = require "rmcp.server.tools.common"

local properties = common.poll_options()
properties.session_ids = common.session_ids()
properties.timeout = {
  type = "number", minimum = 0,
  description = "Seconds to wait before returning timed_out=true. Default: no timeout (block until something happens).",
}
properties.detail = {
  type = "boolean", default = false,
  description = "Return poll-shaped results (text, turns, events) instead of the compact ones; poll options apply.",
}

local compact = {
  type = "object",
  properties = {
    status = { type = "string" },
    stop_reason = { type = "string" },
    message = { type = "string" },
    message_truncated = { type = "boolean" },
    permission_request = common.permission_request,
    plan = common.plan,
    current_work = {},
    error_text = { type = "string" },
    transcript_path = { type = "string" },
  },
}

return {
  name = "reasonix_watch",
  title = "Watch agents until something happens",
  description = "Block until any of session_ids finishes a turn, exits, or needs a decision (permission or "
    .. "agent question), then return results[session_id] with compact fields: status, stop_reason, one "
    .. "message capped to its first/last 4k chars, permission_request, plan/current_work, error_text, "
    .. "transcript_path. No timeout by default; ordinary output does not wake it, so no follow-up poll is "
    .. "needed. Loop: watch all ids -> handle each result (reasonix_respond_permission for a decision; drop "
    .. "finished ids) -> watch the rest again. Keep one watch per fleet: a newer overlapping watch makes the "
    .. "older return superseded=true. Undelivered results stay pending for the next watch, even across a "
    .. "server restart.",
  inputSchema = common.object(properties, { "session_ids" }),
  outputSchema = common.result({
    results = { type = "object", additionalProperties = compact },
    superseded = { type = "boolean" },
    timed_out = { type = "boolean" },
  }, { "results" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = false },
  long = true,
  handler = common.forward("watch", common.blocking),
}
