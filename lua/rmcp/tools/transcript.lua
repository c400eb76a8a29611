-- reasonix_transcript: what an agent actually did (tool calls, files touched), from our own journal.
local common = require "rmcp.tools.common"

return {
  name = "reasonix_transcript",
  title = "Agent transcript",
  description = "What an agent did: tool calls, files, bash, work time, last text.",
  inputSchema = common.object({
    session_id = common.session_id(),
    max_tool_calls = { type = "integer", minimum = 0, default = 100 },
  }, { "session_id" }),
  annotations = { readOnlyHint = true, openWorldHint = false },
  cli = { positional = { "session_id" } },
  -- Doc-only: docs/tools.md is generated from it (scripts/gen-docs.lua); tools/list never sends it.
  doc = {
    args = {
      { "session_id", "The session." },
      { "max_tool_calls", "Most tool calls listed (the newest)." },
    },
    result = {
      { "session_id", "The session." },
      { "tool_calls[]", "{tool, kind, title, args, status, tool_call_id}." },
      { "tool_calls_total, tool_calls_truncated", "How many there were, and whether the list was cut." },
      { "files", "{written[], read[], bash[]}: what it touched and ran." },
      { "roles", "Counts by role." },
      { "work_duration_s", "Time spent in turns." },
      { "last_text", "Its last answer." },
      { "policy_decisions[]", "Requests a policy's permission hook answered." },
      { "transcript_path", "The journal it was read from (our own, independent of the agent's storage)." },
    },
  },
  handler = common.forward("transcript"),
}
