-- reasonix_spawn: start an agent in agentd on a task; returns at once with the session id and posture.
local common = require "rmcp.server.tools.common"

local properties = common.agent_options(true)
properties.task = { type = "string", minLength = 1 }
properties.cwd = { type = "string" }
properties.keep_alive = common.keep_alive
properties.idle_timeout = common.idle_timeout()
properties.isolate = { type = "string", enum = { "none", "worktree" }, default = require("rmcp.config").default("isolate"),
                       description = "worktree: own git worktree + branch; see reasonix_diff." }
properties.strict = { type = "boolean", default = false, description = "Explicit options the agent lacks fail the spawn." }

return {
  name = "reasonix_spawn",
  title = "Spawn agent",
  description = "Start a coding agent on task in the background; returns session_id and sandbox posture at "
    .. "once. Then reasonix_watch your ids.",
  inputSchema = common.object(properties, { "task" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = true },
  handler = common.forward("spawn"),
}
