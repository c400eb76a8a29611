-- reasonix_configure: change a session's model, effort, work mode or tool approval after spawn.
local common = require "rmcp.tools.common"

local properties = common.agent_options()
properties.session_id = common.session_id()
properties.budget = common.budget()

return {
  name = "reasonix_configure",
  toolset = "fleet",
  title = "Configure agent",
  description = "Change an agent's options: idle now, busy before its next turn, exited at resume.",
  inputSchema = common.object(properties, { "session_id" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = true, openWorldHint = false },
  cli = { positional = { "session_id" } },
  handler = common.forward("configure"),
}
