-- reasonix_broadcast: one message to several agents at once, each delivered as reasonix_send would.
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_broadcast",
  toolset = "fleet",
  title = "Broadcast",
  description = "reasonix_send to each at once; per-agent results[]; a failure undoes nothing.",
  inputSchema = common.object({
    session_ids = common.session_ids(),
    message = { type = "string", minLength = 1 },
    expect = common.expect,
    parallelism = common.parallelism,
  }, { "session_ids", "message" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = true },
  handler = common.forward("broadcast", common.without_any_expect),
}
