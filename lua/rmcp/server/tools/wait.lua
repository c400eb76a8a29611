-- reasonix_wait: legacy output-sensitive long poll; watch is the primary wake-up call.
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_wait",
  title = "Wait for output",
  description = "Legacy long poll: woke, the ready ids (new output, turn end, decision) and each session's "
    .. "status; consumes nothing. Prefer reasonix_watch.",
  inputSchema = common.object({
    session_ids = common.session_ids(),
    timeout = { type = "number", minimum = 0, default = 30 },
  }, { "session_ids" }),
  annotations = { readOnlyHint = true, openWorldHint = false },
  long = true,
  handler = common.forward("wait", common.blocking),
}
