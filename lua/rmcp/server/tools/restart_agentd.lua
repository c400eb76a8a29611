-- reasonix_restart_agentd: reload the shared daemon (global: affects every orchestrator).
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_restart_agentd",
  title = "Restart agentd",
  description = "Restart the shared agent daemon (a new binary already queues a safe reload). Refused while "
    .. "any is live (force=true stops yours, resumable; never others').",
  inputSchema = common.object({ force = { type = "boolean", default = false } }),
  annotations = { readOnlyHint = false, destructiveHint = true, idempotentHint = false, openWorldHint = false },
  handler = common.forward("restart"),
}
