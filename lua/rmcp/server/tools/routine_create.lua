-- reasonix_routine_create: a durable loop agent that agentd runs on its schedule.
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_routine_create",
  toolset = "routines",
  title = "Create routine",
  description = "Durable loop agent: each run is a fresh session (prompt + idempotency contract) of an internal "
    .. "owner, not your fleet; overlap skip|queue; see reasonix_routine_list.",
  inputSchema = common.object(common.routine_fields(true), { "name", "prompt" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = false },
  handler = common.forward("routine_create"),
}
