-- reasonix_configure: change a session's model, effort, work mode or tool approval after spawn.
local common = require "rmcp.server.tools.common"

local properties = common.agent_options()
properties.session_id = common.session_id()

return {
  name = "reasonix_configure",
  toolset = "fleet",
  title = "Configure agent",
  description = "Change model/effort/work_mode/tool_approval: idle now, in a turn before the next, exited at "
    .. "resume (ask→yolo allows pending gates). agent_config apart from queued.",
  inputSchema = common.object(properties, { "session_id" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = true, openWorldHint = false },
  handler = common.forward("configure"),
}
