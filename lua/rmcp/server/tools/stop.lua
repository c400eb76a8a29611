-- reasonix_stop: cancel, close and kill an agent; it stays listed and resumable.
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_stop",
  title = "Stop an agent",
  description = "Cancel the running turn, close the session and kill the agent process. The session stays "
    .. "listed as exited (poll keeps reporting it) and reasonix_resume can revive it.",
  inputSchema = common.object({ session_id = common.session_id() }, { "session_id" }),
  outputSchema = common.result({ session_id = { type = "string" }, status = { type = "string" } }, { "session_id" }),
  annotations = { readOnlyHint = false, destructiveHint = true, idempotentHint = true, openWorldHint = false },
  handler = common.forward("stop"),
}
