-- reasonix_routine_from_template: a routine copied from a curated template, fields overridable.
local common = require "rmcp.server.tools.common"

local properties = common.routine_fields()
properties.template_id = { type = "string" }

return {
  name = "reasonix_routine_from_template",
  toolset = "routines",
  title = "Routine from template",
  description = "Create a routine from a template; any routine field given overrides the template's.",
  inputSchema = common.object(properties, { "template_id" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = false },
  handler = common.forward("routine_from_template"),
}
