-- reasonix_respond_permission: answer a tool approval or an agent question.
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_respond_permission",
  title = "Answer a decision",
  description = "Answer a permission_request with an options[].optionId or \"cancel\"; check its "
    .. "tool_call first.",
  inputSchema = common.object({
    session_id = common.session_id(),
    option_id = { type = "string" },
    request_id = { type = { "integer", "string" } },
  }, { "session_id", "option_id" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = false },
  handler = common.forward("respond_permission"),
}
