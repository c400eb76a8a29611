-- reasonix_send: forced steer — guidance for the running turn, or a new turn when idle; to one
-- session or to many at once.
local common = require "rmcp.tools.common"

return {
  name = "reasonix_send",
  title = "Send to agents",
  description = "Steer a running turn, or start one when idle; never dropped.",
  inputSchema = common.object({
    session_id = common.session_id(),
    session_ids = common.session_ids(),
    message = { type = "string", minLength = 1 },
    expect = common.expect,
    parallelism = common.parallelism,
  }, { "message" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = true },
  cli = { positional = { "session_id", "message" } },
  handler = function(args, ctx)
    local ok, err = common.one_of(args, { "session_id", "session_ids" })
    if not ok then return nil, err end
    local params = common.without_any_expect(args)
    if args.session_id then
      if args.parallelism then return nil, "parallelism goes with session_ids" end
      return ctx.agentd("send", params, true)
    end
    return ctx.agentd("broadcast", params, true)
  end,
}
