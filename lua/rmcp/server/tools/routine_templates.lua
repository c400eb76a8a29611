-- reasonix_routine_templates: the curated routine templates, whole.
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_routine_templates",
  toolset = "routines",
  title = "Routine templates",
  description = "Curated maintenance routines: complete prompts, safe defaults (for reasonix_routine_from_template).",
  inputSchema = common.object({}),
  annotations = { readOnlyHint = true, destructiveHint = false, idempotentHint = true, openWorldHint = false },
  handler = common.forward("routine_templates"),
}
