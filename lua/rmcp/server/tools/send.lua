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
  title = "Send a message to an agent",
  description = "Send a message to an agent; it is never dropped. While a turn runs it is queued as mid-turn "
    .. "guidance (steer); when the agent is idle it starts a new turn. expect=\"steer\" refuses to start a new "
    .. "turn; expect=\"new_turn\" refuses to steer a running one. Exited sessions need reasonix_resume first. "
    .. "Then reasonix_watch the session.",
  inputSchema = common.object({
    session_id = common.session_id(),
    message = { type = "string", minLength = 1, description = "The guidance or the next task." },
    expect = { type = "string", enum = { "any", "steer", "new_turn" }, default = "any",
               description = "any: steer or new turn, whichever applies; steer / new_turn: fail instead of the other." },
  }, { "session_id", "message" }),
  outputSchema = common.result({
    session_id = { type = "string" },
    delivered = { type = "string", enum = { "steer", "new_turn" } },
    status = { type = "string" },
  }, { "session_id" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = true },
  handler = common.forward("send", prepare),
}
