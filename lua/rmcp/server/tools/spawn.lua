-- reasonix_spawn: start an agent in agentd on a task; returns at once with the session id and posture.
local config = require "rmcp.config"
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_spawn",
  title = "Spawn agent",
  description = "Start a coding agent on task in the background; returns session_id and sandbox posture at "
    .. "once. Then reasonix_watch your ids.",
  inputSchema = common.object({
    task = { type = "string", minLength = 1 },
    cwd = { type = "string" },
    model = { type = "string", default = config.default("model") },
    work_mode = { type = "string", enum = { "economy", "balanced", "delivery" }, default = config.default("work_mode") },
    tool_approval = { type = "string", enum = { "ask", "auto", "yolo" }, default = config.default("tool_approval"),
                      description = "ask: gated tool calls become permission requests." },
    effort = { type = "string", enum = { "auto", "disabled", "low", "medium", "high", "xhigh", "max" },
               default = config.default("effort") },
    keep_alive = common.keep_alive,
    idle_timeout = common.idle_timeout(),
  }, { "task" }),
  outputSchema = common.result(),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = true },
  handler = common.forward("spawn"),
}
