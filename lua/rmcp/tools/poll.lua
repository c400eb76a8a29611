-- reasonix_poll: what changed in one session since the last poll (lean by default).
local common = require "rmcp.tools.common"

local properties = common.poll_options()
properties.session_id = common.session_id()
properties.detail = { type = "boolean", description = "Adds text, turns, events." }

return {
  name = "reasonix_poll",
  title = "Poll agent",
  description = "One session's news since the last poll (consumed), as watch's.",
  inputSchema = common.object(properties, { "session_id" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = false },
  cli = { positional = { "session_id" }, flags = { thought = "include_thought" } },
  answer_kept = true,
  handler = common.forward("poll", common.keep_answer),
}
