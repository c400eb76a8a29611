-- reasonix_routine_run: trigger a routine now.
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_routine_run",
  toolset = "routines",
  title = "Run routine now",
  description = "Trigger now, paused or not, by its overlap policy: started, queued or skipped.",
  inputSchema = common.object({ routine_id = common.routine_id() }, { "routine_id" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = false },
  handler = common.forward("routine_run"),
}
