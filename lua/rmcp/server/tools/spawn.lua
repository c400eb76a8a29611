-- reasonix_spawn: start an agent in agentd on a task; returns at once with the session id and posture.
local config = require "rmcp.config"
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_spawn",
  title = "Spawn a Reasonix agent",
  description = "Start a Reasonix coding agent on `task` and return at once with its session_id and the "
    .. "effective sandbox posture (check posture before assigning work that must run commands or write "
    .. "outside cwd). The agent works in the background daemon. Then keep reasonix_watch([session_id, ...]) "
    .. "in flight: it returns when the agent finishes, needs a decision, or dies. cwd must be the project "
    .. "dir, a subdir, or a [sandbox] allow_write dir. Spawn several agents for parallel work.",
  inputSchema = common.object({
    task = { type = "string", minLength = 1, description = "What the agent should do: the full prompt, with acceptance criteria." },
    cwd = { type = "string", minLength = 1,
            description = "Working directory (absolute, or relative to the project dir). Default: the project dir." },
    model = { type = "string", minLength = 1, default = config.default("model"),
              description = "provider/model ref; reasonix_models lists valid refs and their efforts." },
    work_mode = { type = "string", enum = { "economy", "balanced", "delivery" }, default = config.default("work_mode"),
                  description = "economy: lean tool surface; balanced: complete default; delivery: requires acceptance criteria and review/verification evidence." },
    tool_approval = { type = "string", enum = { "ask", "auto", "yolo" }, default = config.default("tool_approval"),
                      description = "yolo: approve everything except protected decisions; auto: follow configured permission rules; ask: relay gated tool calls as permission requests (answer with reasonix_respond_permission)." },
    effort = { type = "string", enum = { "auto", "disabled", "low", "medium", "high", "xhigh", "max" },
               default = config.default("effort"),
               description = "Reasoning effort; valid values depend on the model (supported_efforts in reasonix_models). The default is skipped (see skipped_options) when the model offers no effort." },
    keep_alive = common.keep_alive,
    idle_timeout = common.idle_timeout(),
  }, { "task" }),
  outputSchema = common.spawn_result(),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = true },
  handler = common.forward("spawn"),
}
