-- reasonix_send: forced steer — guidance for the running turn, or a new turn when idle.
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_send",
  title = "Send to agent",
  description = "Steer a running turn, or start one when idle; never dropped. expect refuses the other case.",
  inputSchema = common.object({
    session_id = common.session_id(),
    message = { type = "string", minLength = 1 },
    expect = common.expect,
  }, { "session_id", "message" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = true },
  handler = common.forward("send", common.without_any_expect),
}
