-- reasonix_resume_fleet: reasonix_resume for many sessions at once (after a daemon death, say).
local common = require "rmcp.server.tools.common"

local properties = common.agent_options()
properties.session_ids = common.session_ids()
properties.keep_alive = { type = "boolean" }
properties.idle_timeout = { type = "number" }
properties.parallelism = common.parallelism
properties.continue_interrupted = { type = "boolean", default = true }

return {
  name = "reasonix_resume_fleet",
  toolset = "fleet",
  title = "Resume fleet",
  description = "reasonix_resume each at once; a turn a daemon death cut short continues, idle ones stay "
    .. "idle; per-agent results[].",
  inputSchema = common.object(properties, { "session_ids" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = true, openWorldHint = true },
  handler = common.forward("resume_fleet"),
}
