-- reasonix_poll: what changed in one session since the last poll (lean by default).
local common = require "rmcp.tools.common"

local properties = common.poll_options()
properties.session_id = common.session_id()
properties.detail = { type = "boolean", description = "Adds text, turns, events." }

return {
  name = "reasonix_poll",
  title = "Poll agent",
  description = "One session's news since the last poll (consumed), as watch's.",
  inputSchema = common.object(properties, { "session_id" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = false },
  cli = { positional = { "session_id" }, flags = { thought = "include_thought" } },
  answer_kept = true,
  -- Doc-only: docs/tools.md is generated from it (scripts/gen-docs.lua); tools/list never sends it.
  doc = {
    args = {
      { "session_id", "The session." },
      { "detail", "Adds text, turns, events, counters, config." },
      { "include_events", "Event types to keep; implies detail." },
      { "exclude_events", "Event types to drop; implies detail." },
      { "include_thought", "Adds thought and full_thought (the agent's reasoning)." },
      { "include_full", "Adds full_text (the turn's whole text)." },
      { "max_events", "Most events returned; over 200 is clamped (max_events_clamped); implies detail." },
    },
    result = {
      { "session_id, status", "The session and its status." },
      { "message, message_truncated", "The last turn's answer (compact)." },
      { "stop_reason", "Why the last turn ended: end_turn, cancelled, error, process_exited, …" },
      { "exit_reason", "When exited or orphaned: stopped, cleaned_up, crashed, daemon_died, daemon_reload, daemon_restart, budget, damaged." },
      { "plan, current_work", "The agent's plan, and what it does now (only while it works)." },
      { "permission_request", "A pending decision: {request_id, kind (permission or question), tool_call, options[{optionId, name, kind}], asking?}." },
      { "error_text", "The last error (an agent's error message, or its exit and stderr tail)." },
      { "health", "When blocked or stalled: {state, quiet_s, workspace_lease_holder?}." },
      { "usage", "{turn, total, cost?, currency?, estimated?, warning?, budget?}." },
      { "changes", "Isolated agents: {files, insertions, deletions, commits, untracked}." },
      { "text, text_truncated, turns[], turns_truncated, turns_dropped", "detail: the text since the last poll and the turns that ended ({text, stop_reason})." },
      { "events[], events_filtered, events_dropped, counters, transcript_path, config", "detail: the events and bookkeeping." },
      { "thought, full_thought, full_text", "With include_thought / include_full (each with *_truncated)." },
      { "result_truncated", "true when the result was cut to REASONIX_MCP_MAX_RESULT_BYTES (the least needed parts first, each cut flagged)." },
    },
    notes = "Only a result that shows events consumes them: a lean poll leaves them for the next detailed one.",
  },
  handler = common.forward("poll", common.keep_answer),
}
