-- reasonix_respond_permission: answer a tool approval or an agent question.
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_respond_permission",
  title = "Answer a permission request or question",
  description = "Answer the pending permission_request of a session (from watch/poll): option_id is one of "
    .. "its options[].optionId (e.g. allow_once, allow_always, reject_once, or q1:2 for a question), or "
    .. "\"cancel\" to abort the request. The agent continues; then reasonix_watch it again. "
    .. "Inspect tool_call.title/kind/rawInput before approving.",
  inputSchema = common.object({
    session_id = common.session_id(),
    option_id = { type = "string", minLength = 1, description = "optionId from permission_request.options, or \"cancel\"." },
    request_id = { type = { "integer", "string" },
                   description = "permission_request.request_id, to be sure the answer goes to that request (optional)." },
  }, { "session_id", "option_id" }),
  outputSchema = common.result({
    session_id = { type = "string" },
    answered = { type = "boolean" },
    status = { type = "string" },
  }, { "session_id" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = false },
  handler = common.forward("respond_permission"),
}
