-- reasonix_routine_stop: stop a routine's current run (not its schedule).
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_routine_stop",
  toolset = "routines",
  title = "Stop routine run",
  description = "Stop the current run's agent; the schedule and queued triggers stay.",
  inputSchema = common.object({ routine_id = common.routine_id() }, { "routine_id" }),
  annotations = { readOnlyHint = false, destructiveHint = true, idempotentHint = true, openWorldHint = false },
  handler = common.forward("routine_stop"),
}
