-- reasonix_poll: what changed in one session since the last poll (lean by default).
local common = require "rmcp.server.tools.common"

local properties = common.poll_options()
properties.session_id = common.session_id()
properties.detail = {
  type = "boolean", default = false,
  description = "Add the detailed shape: text delta, turns [{text, stop_reason}], events tail, counters, transcript_path, config.",
}

return {
  name = "reasonix_poll",
  title = "Poll an agent",
  description = "Return what changed in one session since the last poll: status, a capped message (only when "
    .. "output changed), stop_reason, plan, current_work, a pending permission_request/question and error_text; "
    .. "empty and unchanged fields are omitted. detail=true adds text, turns, a recent events tail and "
    .. "counters. Prefer keeping reasonix_watch in flight over polling in a loop.",
  inputSchema = common.object(properties, { "session_id" }),
  outputSchema = common.result(common.poll_result_properties(), { "session_id" }),
  annotations = { readOnlyHint = true, openWorldHint = false },
  handler = common.forward("poll"),
}
