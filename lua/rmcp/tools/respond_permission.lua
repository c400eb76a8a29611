-- reasonix_respond_permission: answer a tool approval or an agent question, of a session or of a
-- routine's current run.
local common = require "rmcp.tools.common"

return {
  name = "reasonix_respond_permission",
  title = "Answer a decision",
  description = "Answer a permission_request (session or routine run): an options[].optionId or \"cancel\".",
  inputSchema = common.object({
    session_id = common.session_id(),
    routine_id = { type = "string" },
    option_id = { type = "string" },
    request_id = { type = { "integer", "string" } },
  }, { "option_id" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = false },
  cli = { verb = "respond", positional = { "session_id", "option_id" } },
  handler = function(args, ctx)
    local ok, err = common.one_of(args, { "session_id", "routine_id" })
    if not ok then return nil, err end
    if args.session_id then return ctx.agentd("respond_permission", args, true) end
    local params = common.without(args, {})
    params.all = ctx.every_orchestrator
    return ctx.agentd("routine_respond", params, true)
  end,
}
