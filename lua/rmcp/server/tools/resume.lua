-- reasonix_resume: revive a stopped or crashed session from its persisted transcript.
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_resume",
  title = "Resume a stopped agent",
  description = "Revive an exited, stopped or orphaned session (listed by reasonix_list) from its persisted "
    .. "transcript, with the same session_id. Then reasonix_send it a message to continue the work, and "
    .. "reasonix_watch it.",
  inputSchema = common.object({
    session_id = common.session_id(),
    cwd = { type = "string", minLength = 1, description = "Working directory; default: the session's own cwd." },
    keep_alive = common.keep_alive,
    idle_timeout = common.idle_timeout(),
  }, { "session_id" }),
  outputSchema = common.spawn_result(),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = true, openWorldHint = true },
  handler = common.forward("resume"),
}
