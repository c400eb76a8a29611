-- reasonix_list: this orchestrator's fleet, with aggregate status counts.
local common = require "rmcp.tools.common"

return {
  name = "reasonix_list",
  title = "List agents",
  description = "Your sessions and counts; all=true adds older finished ones.",
  inputSchema = common.object({
    include_task = { type = "boolean" },
    pending_only = { type = "boolean" },
    detail = { type = "boolean" },
    all = { type = "boolean" },
    limit = { type = "integer", default = 50 },
    cursor = { type = "string" },
  }),
  annotations = { readOnlyHint = true, openWorldHint = false },
  cli = { flags = { task = "include_task" } },
  handler = common.forward("list"),
}
