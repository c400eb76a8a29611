-- reasonix_stop: cancel, close and kill an agent; it stays listed and resumable.
local common = require "rmcp.tools.common"

return {
  name = "reasonix_stop",
  title = "Stop agent",
  description = "Cancel the turn and end the agent; it stays resumable.",
  inputSchema = common.object({ session_id = common.session_id() }, { "session_id" }),
  annotations = { readOnlyHint = false, destructiveHint = true, idempotentHint = true, openWorldHint = false },
  cli = { positional = { "session_id" } },
  handler = common.forward("stop"),
}
