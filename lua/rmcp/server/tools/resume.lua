-- reasonix_resume: revive a stopped or crashed session from its persisted transcript.
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_resume",
  title = "Resume agent",
  description = "Revive an exited or orphaned session with its history and the same session_id; then "
    .. "reasonix_send it the next step.",
  inputSchema = common.object({
    session_id = common.session_id(),
    cwd = { type = "string", description = "Default: the session's cwd." },
    keep_alive = { type = "boolean", default = false },
    idle_timeout = { type = "number", default = require("rmcp.config").idle_timeout() },
  }, { "session_id" }),
  outputSchema = common.result(),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = true, openWorldHint = true },
  handler = common.forward("resume"),
}
