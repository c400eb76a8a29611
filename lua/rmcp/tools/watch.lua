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
  -- Doc-only: docs/tools.md is generated from it (scripts/gen-docs.lua); tools/list never sends it.
  doc = {
    args = {
      { "session_ids", "The sessions to watch (at most 64 in one call fit every spawn)." },
      { "timeout", "Seconds before it returns with timed_out; none by default (it blocks until something happens)." },
      { "detail", "true: each result as a detailed poll's (text, turns, events)." },
      { "include_events", "Event types to keep; implies detail." },
      { "exclude_events", "Event types to drop; implies detail." },
      { "include_thought", "Add the agent's reasoning (thought, full_thought)." },
      { "include_full", "Add the turn's whole text (full_text)." },
      { "max_events", "Most events returned; over 200 is clamped (max_events_clamped); implies detail." },
    },
    result = {
      { "results", "{[session_id] = result} for each session that woke it: status, stop_reason?, message? (compact: first and last half kept), message_truncated?, permission_request?, plan?, current_work?, error_text?, exit_reason?, health?, usage?, changes?, integration?, background_recovery?, decision_repeated? (a decision shown again after a failed answer or a closed form), decision_reminder? (still unanswered), transcript_path." },
      { "superseded", "true: a newer watch over these sessions took over; this one returned at once." },
      { "timed_out", "true: the timeout ended it." },
    },
    notes = "Returns when a watched session ends a turn, exits, dies, needs a decision, becomes stalled, or takes an integration step; a terminal state stays pending until a watch delivers it. A decision wakes a connection's watch once, then again after a failed answer, a dismissed form, or every 5 minutes (REASONIX_MCP_DECISION_REMIND_S). While it blocks it sends notifications/progress every ~10 s when the call carried a progressToken.",
  },
  handler = common.forward("watch", common.blocking_kept),
}
