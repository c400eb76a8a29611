-- reasonix_wait: legacy output-sensitive long poll; watch is the primary wake-up call.
local common = require "rmcp.tools.common"

return {
  name = "reasonix_wait",
  title = "Wait for output",
  description = "Legacy long poll: ready ids, statuses; consumes nothing.",
  inputSchema = common.object({
    session_ids = common.session_ids(),
    timeout = { type = "number", minimum = 0, default = 30 },
  }, { "session_ids" }),
  annotations = { readOnlyHint = true, openWorldHint = false },
  cli = { positional = { "session_ids..." } },
  long = true,
  -- Doc-only: docs/tools.md is generated from it (scripts/gen-docs.lua); tools/list never sends it.
  doc = {
    args = {
      { "session_ids", "The sessions." },
      { "timeout", "Seconds before it returns." },
    },
    result = {
      { "woke", "false: the timeout ended it." },
      { "ready[]", "The sessions with new output, a turn end or a decision." },
      { "sessions", "{[session_id] = {status, stop_reason?, permission_request?}}." },
      { "timed_out", "true when the timeout ended it." },
    },
    notes = "Consumes nothing; reasonix_watch is the wake-up call to use.",
  },
  handler = common.forward("wait", common.blocking),
}
