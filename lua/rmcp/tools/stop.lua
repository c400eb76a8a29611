-- reasonix_stop: cancel, close and kill an agent; it stays listed and resumable.
local common = require "rmcp.tools.common"

return {
  name = "reasonix_stop",
  title = "Stop agent",
  description = "Cancel the turn and end the agent; it stays resumable.",
  inputSchema = common.object({ session_id = common.session_id() }, { "session_id" }),
  annotations = { readOnlyHint = false, destructiveHint = true, idempotentHint = true, openWorldHint = false },
  cli = { positional = { "session_id" } },
  -- Doc-only: docs/tools.md is generated from it (scripts/gen-docs.lua); tools/list never sends it.
  doc = {
    args = {
      { "session_id", "The session to stop." },
    },
    result = {
      { "session_id", "The session." },
      { "status", "exited." },
      { "exit_reason", "stopped." },
    },
    notes = "Cancels the running turn and ends the agent process; the session stays listed and resumable, and its worktree stays.",
  },
  handler = common.forward("stop"),
}
