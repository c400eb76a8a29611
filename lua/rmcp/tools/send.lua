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
  -- Doc-only: docs/tools.md is generated from it (scripts/gen-docs.lua); tools/list never sends it.
  doc = {
    args = {
      { "session_id", "One session (or session_ids)." },
      { "session_ids", "Many sessions at once: the same message to each." },
      { "message", "The guidance: steers the running turn, or starts a new one when idle." },
      { "expect", "steer: only into a running turn; new_turn: only as a new turn; any: whichever applies (never dropped)." },
      { "parallelism", "With session_ids: how many are sent at once." },
    },
    result = {
      { "session_id", "The session." },
      { "delivered", "steer or new_turn: how it was delivered." },
      { "status", "Its status after it." },
      { "results[]", "With session_ids: per id, {session_id, delivered, status} or {session_id, status, error}; a failure undoes no delivery." },
      { "delivered, failed", "With session_ids: the counts (delivered is then a count)." },
    },
    notes = "With session_ids, an id that is not yours refuses the whole call. A message that would start a turn while a budget covering the session is reached is refused (-32022).",
  },
  -- one session, expect steer or new_turn or none: agentd's send takes the arguments as they are
  handler = common.forward_when(function(args, ctx)
    local ok, err = common.one_of(args, { "session_id", "session_ids" })
    if not ok then return nil, err end
    local params = common.without_any_expect(args)
    if args.session_id then
      if args.parallelism then return nil, "parallelism goes with session_ids" end
      return ctx.agentd("send", params, true)
    end
    return ctx.agentd("broadcast", params, true)
  end, "send", common.object({
    session_id = common.session_id(),
    message = { type = "string", minLength = 1 },
    expect = { type = "string", enum = { "steer", "new_turn" } },
  }, { "session_id", "message" })),
}
