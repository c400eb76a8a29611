-- reasonix_broadcast: one message to several agents at once, each delivered as reasonix_send would.
local common = require "rmcp.server.tools.common"

-- Drops expect="any" (the default) so agentd sees only a real constraint.
local function prepare(args)
  local params = {}
  for k, v in pairs(args) do params[k] = v end
  if params.expect == "any" then params.expect = nil end
  return params
end

return {
  name = "reasonix_broadcast",
  title = "Broadcast",
  description = "reasonix_send to each at once; per-agent results[]; a failure undoes nothing.",
  inputSchema = common.object({
    session_ids = common.session_ids(),
    message = { type = "string", minLength = 1 },
    expect = { type = "string", enum = { "any", "steer", "new_turn" }, default = "any" },
    parallelism = { type = "integer", minimum = 1, maximum = 16, default = 8 },
  }, { "session_ids", "message" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = true },
  handler = common.forward("broadcast", prepare),
}
