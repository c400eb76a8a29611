-- reasonix_routine_list: the caller's routines with their schedule, queue and latest runs.
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_routine_list",
  toolset = "routines",
  title = "List routines",
  description = "Your routines: schedule, next_due, queued, current_run, latest 20 runs (a waiting run's "
    .. "permission_request: answer it with reasonix_respond_permission).",
  inputSchema = common.object({
    include_prompt = { type = "boolean", default = false },
    include_results = { type = "boolean", default = false },
  }),
  annotations = { readOnlyHint = true, destructiveHint = false, idempotentHint = true, openWorldHint = false },
  handler = common.forward("routine_list"),
}
