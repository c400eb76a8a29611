-- reasonix_resume: revive a stopped or crashed session from its persisted transcript.
local common = require "rmcp.server.tools.common"

local properties = common.agent_options()
properties.session_id = common.session_id()
properties.cwd = { type = "string", description = "Default: the session's cwd." }
properties.keep_alive = { type = "boolean", default = false }
properties.idle_timeout = { type = "number", default = require("rmcp.config").idle_timeout() }

return {
  name = "reasonix_resume",
  title = "Resume agent",
  description = "Revive an exited or orphaned session with its history and the same session_id (options as "
    .. "spawn's; a live one: already_live); then reasonix_send it the next step.",
  inputSchema = common.object(properties, { "session_id" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = true, openWorldHint = true },
  handler = common.forward("resume"),
}
