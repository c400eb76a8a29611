-- reasonix_list: this orchestrator's fleet, with aggregate status counts.
local common = require "rmcp.tools.common"

return {
  name = "reasonix_list",
  title = "List agents",
  description = "Your sessions and counts; all=true adds older finished ones.",
  inputSchema = common.object({
    include_task = { type = "boolean" },
    pending_only = { type = "boolean" },
    detail = { type = "boolean" },
    all = { type = "boolean" },
    limit = { type = "integer", default = 50 },
    cursor = { type = "string" },
  }),
  annotations = { readOnlyHint = true, openWorldHint = false },
  cli = { flags = { task = "include_task" } },
  -- Doc-only: docs/tools.md is generated from it (scripts/gen-docs.lua); tools/list never sends it.
  doc = {
    args = {
      { "include_task", "Each row's whole task (else a preview)." },
      { "pending_only", "Only sessions at work, waiting for a decision, or with an uncollected result." },
      { "detail", "Rows add effort, tool_approval, work_mode, profile, error_text, idle_timeout, queued_config, agent_pid, plan, current_work and, for an isolated agent, worktree, changes and its last forecast." },
      { "all", "Every session, older finished ones too." },
      { "limit", "Rows a page (1–500)." },
      { "cursor", "next_cursor of the previous page." },
    },
    result = {
      { "sessions[]", "Newest first: {session_id, status, agent? (none: reasonix), cwd, task (a preview), model, health?, usage?, pending_decision?, stop_reason?, exit_reason?, created_at, updated_at, keep_alive?, terminal_pending? (a result no watch collected yet), integration?, damaged?, transcript_path}." },
      { "counts", "{status = n} over all your sessions." },
      { "hidden", "Your sessions the default view leaves out (finished and collected): all=true shows them." },
      { "usage", "Your sessions' spend together, and today (the orchestrator's spend today)." },
      { "next_cursor", "Pass it as cursor for the next page." },
      { "reload_pending, reload", "While a daemon upgrade waits: what it waits for." },
    },
  },
  handler = common.forward("list"),
}
