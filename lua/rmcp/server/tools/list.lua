-- reasonix_list: this orchestrator's fleet, with aggregate status counts.
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_list",
  title = "List agents",
  description = "Your sessions (live and resumable): status, cwd, task preview, pending decision, and counts "
    .. "per status. Finds your ids again after a restart.",
  inputSchema = common.object({
    include_task = { type = "boolean", default = false },
    pending_only = { type = "boolean", default = false, description = "Only active, blocked or uncollected ones." },
    detail = { type = "boolean", default = false },
  }),
  outputSchema = common.result(),
  annotations = { readOnlyHint = true, openWorldHint = false },
  handler = common.forward("list"),
}
