-- reasonix_list: this orchestrator's fleet, with aggregate status counts.
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_list",
  title = "List your agents",
  description = "List this orchestrator's sessions (live and exited/resumable): session_id, status, cwd, a "
    .. "short task preview, transcript_path, pending decision; plus counts per status. Use it to recover "
    .. "session ids after a restart, then reasonix_watch them again. pending_only=true keeps only sessions "
    .. "that are active, blocked on a decision, or have an uncollected result.",
  inputSchema = common.object({
    include_task = { type = "boolean", default = false, description = "Give full task prompts instead of previews." },
    pending_only = { type = "boolean", default = false,
                     description = "Only active, decision-blocked or uncollected terminal sessions." },
    detail = { type = "boolean", default = false, description = "Add per-session configuration and counters." },
  }),
  outputSchema = common.result({
    sessions = {
      type = "array",
      items = {
        type = "object",
        properties = {
          session_id = { type = "string" }, status = { type = "string" }, cwd = { type = "string" },
          task = { type = "string" }, transcript_path = { type = "string" },
          pending_decision = {},
        },
      },
    },
    counts = { type = "object", additionalProperties = { type = "integer" } },
    reload_pending = { type = "boolean", description = "A daemon reload is queued (see reload.waiting_for)." },
    reload = { type = "object", description = "Queued daemon reload: reason, state, waiting_for[] (what holds it)." },
  }, { "sessions" }),
  annotations = { readOnlyHint = true, openWorldHint = false },
  handler = common.forward("list"),
}
