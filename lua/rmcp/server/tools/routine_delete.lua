-- reasonix_routine_delete: delete an inactive routine and its run history.
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_routine_delete",
  toolset = "routines",
  title = "Delete routine",
  description = "Delete a routine with no run at work, and its run history (transcripts stay).",
  inputSchema = common.object({ routine_id = common.routine_id() }, { "routine_id" }),
  annotations = { readOnlyHint = false, destructiveHint = true, idempotentHint = true, openWorldHint = false },
  handler = common.forward("routine_delete"),
}
