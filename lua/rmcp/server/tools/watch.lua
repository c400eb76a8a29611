-- reasonix_watch: the orchestrator's wake-up call — blocks until a session finishes, needs a decision or dies.
local common = require "rmcp.server.tools.common"

local properties = common.poll_options()
properties.session_ids = common.session_ids()
properties.timeout = { type = "number", minimum = 0 }
properties.detail = { type = "boolean", default = false, description = "Results as poll's." }

return {
  name = "reasonix_watch",
  title = "Watch agents",
  description = "Block until a session finishes a turn, exits or needs a decision; returns results[id] "
    .. "(status, message, permission_request, …). A newer watch supersedes it; undelivered results wait.",
  inputSchema = common.object(properties, { "session_ids" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = false },
  long = true,
  answer_kept = true,
  handler = common.forward("watch", function(args, ctx)
    return common.keep_answer(common.blocking(args, ctx), ctx)
  end),
}
