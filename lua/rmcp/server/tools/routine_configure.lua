-- reasonix_routine_configure: change a routine for its future runs; pause or enable it.
local common = require "rmcp.server.tools.common"

local properties = common.routine_fields()
properties.routine_id = common.routine_id()

return {
  name = "reasonix_routine_configure",
  toolset = "routines",
  title = "Configure routine",
  description = "Edit, pause (enabled=false) or enable a routine; applies to future runs.",
  inputSchema = common.object(properties, { "routine_id" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = true, openWorldHint = false },
  handler = common.forward("routine_configure"),
}
