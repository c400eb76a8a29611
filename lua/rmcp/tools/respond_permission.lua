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
  -- Doc-only: docs/tools.md is generated from it (scripts/gen-docs.lua); tools/list never sends it.
  doc = {
    args = {
      { "session_id", "The session whose decision you answer (or routine_id)." },
      { "routine_id", "A routine: answers its current run's decision." },
      { "option_id", "One of permission_request.options[].optionId, or \"cancel\"." },
      { "request_id", "The permission_request's request_id, when several could be pending." },
    },
    result = {
      { "session_id", "The session answered." },
      { "answered", "true once the agent has the answer." },
      { "status", "The session's status after it." },
      { "request_id", "The decision answered." },
      { "run_id", "With routine_id: the run answered." },
    },
  },
  handler = function(args, ctx)
    local ok, err = common.one_of(args, { "session_id", "routine_id" })
    if not ok then return nil, err end
    if args.session_id then return ctx.agentd("respond_permission", args, true) end
    local params = common.without(args, {})
    params.all = ctx.every_orchestrator
    return ctx.agentd("routine_respond", params, true)
  end,
}
