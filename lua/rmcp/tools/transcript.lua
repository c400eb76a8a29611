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
  handler = common.forward("transcript"),
}
