-- reasonix_watch: the orchestrator's wake-up call — blocks until a session finishes, needs a decision or dies.
local common = require "rmcp.tools.common"

local properties = common.poll_options()
properties.session_ids = common.session_ids()
properties.timeout = { type = "number", minimum = 0 }
properties.detail = { type = "boolean", description = "Results as poll's." }

return {
  name = "reasonix_watch",
  title = "Watch agents",
  description = "Block until a session ends a turn, exits or needs a decision; results[id]. A newer watch "
    .. "supersedes it.",
  inputSchema = common.object(properties, { "session_ids" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = false },
  cli = { positional = { "session_ids..." } },
  long = true,
  answer_kept = true,
  handler = common.forward("watch", function(args, ctx)
    return common.keep_answer(common.blocking(args, ctx), ctx)
  end),
}
