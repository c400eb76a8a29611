-- reasonix_wait: legacy output-sensitive long poll; watch is the primary wake-up call.
local common = require "rmcp.tools.common"

return {
  name = "reasonix_wait",
  title = "Wait for output",
  description = "Legacy long poll: ready ids, statuses; consumes nothing.",
  inputSchema = common.object({
    session_ids = common.session_ids(),
    timeout = { type = "number", minimum = 0, default = 30 },
  }, { "session_ids" }),
  annotations = { readOnlyHint = true, openWorldHint = false },
  cli = { positional = { "session_ids..." } },
  long = true,
  handler = common.forward("wait", common.blocking),
}
