-- reasonix_poll: what changed in one session since the last poll (lean by default).
local common = require "rmcp.server.tools.common"

local properties = common.poll_options(true)
properties.session_id = common.session_id()
properties.detail = { type = "boolean", default = false, description = "Add text, turns, events, counters, config." }

return {
  name = "reasonix_poll",
  title = "Poll agent",
  description = "One session's changes since the last poll, shaped as watch's. Prefer reasonix_watch.",
  inputSchema = common.object(properties, { "session_id" }),
  annotations = { readOnlyHint = true, openWorldHint = false },
  answer_kept = true,
  handler = common.forward("poll", common.keep_answer),
}
