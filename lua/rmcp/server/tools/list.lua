-- reasonix_list: this orchestrator's fleet, with aggregate status counts.
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_list",
  title = "List agents",
  description = "Your sessions (status, cwd, task preview, pending decision) and counts: what you act on; "
    .. "all=true adds older ones.",
  inputSchema = common.object({
    include_task = { type = "boolean", default = false },
    pending_only = { type = "boolean", default = false, description = "Only active, blocked or uncollected ones." },
    detail = { type = "boolean", default = false },
    all = { type = "boolean", default = false },
    limit = { type = "integer", default = 50 },
    cursor = { type = "string" },
  }),
  annotations = { readOnlyHint = true, openWorldHint = false },
  handler = common.forward("list"),
}
