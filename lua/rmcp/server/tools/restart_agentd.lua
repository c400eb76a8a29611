-- reasonix_restart_agentd: reload the shared daemon (global: affects every orchestrator).
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_restart_agentd",
  title = "Restart the agent daemon",
  description = "Restart the shared agent daemon with its current code (a new binary already queues a safe "
    .. "automatic reload). Refused while live agents remain, yours or other orchestrators' (the error names "
    .. "them) unless force=true, which stops them (their transcripts stay resumable with reasonix_resume). "
    .. "The next tool call reconnects to the fresh daemon by itself.",
  inputSchema = common.object({
    force = { type = "boolean", default = false, description = "Restart even if live agents would be terminated." },
  }),
  outputSchema = common.result({ restarting = { type = "boolean" } }),
  annotations = { readOnlyHint = false, destructiveHint = true, idempotentHint = false, openWorldHint = false },
  handler = common.forward("restart"),
}
