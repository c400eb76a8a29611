-- reasonix_send: forced steer — guidance for the running turn, or a new turn when idle.
local common = require "rmcp.server.tools.common"

-- Drops expect="any" (the default) so agentd sees only a real constraint.
local function prepare(args)
  local params = {}
  for k, v in pairs(args) do params[k] = v end
  if params.expect == "any" then params.expect = nil end
  return params
end

return {
  name = "reasonix_send",
  title = "Send to agent",
  description = "Steer a running turn, or start one when idle; never dropped. expect refuses the other case.",
  inputSchema = common.object({
    session_id = common.session_id(),
    message = { type = "string", minLength = 1 },
    expect = { type = "string", enum = { "any", "steer", "new_turn" }, default = "any" },
  }, { "session_id", "message" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = true },
  handler = common.forward("send", prepare),
}
