-- reasonix_watch: the orchestrator's wake-up call — blocks until a session finishes, needs a decision or dies.
local common = require "rmcp.server.tools.common"

local properties = common.poll_options()
properties.session_ids = common.session_ids()
properties.timeout = { type = "number", minimum = 0, description = "Seconds; default none." }
properties.detail = { type = "boolean", default = false, description = "Poll-shaped results (text, turns, events)." }

return {
  name = "reasonix_watch",
  title = "Watch agents",
  description = "Block until any session finishes a turn, exits or needs a decision; returns results[id] "
    .. "(status, stop_reason, message, permission_request, plan, current_work, error_text). One watch per "
    .. "fleet: a newer one supersedes it; undelivered results wait.",
  inputSchema = common.object(properties, { "session_ids" }),
  outputSchema = common.result(),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = false },
  long = true,
  -- the request key lets agentd answer again a watch whose answer died with the server
  handler = common.forward("watch", function(args, ctx)
    local params = common.blocking(args, ctx)
    params.delivery_key = ctx.request_key
    return params
  end),
}
