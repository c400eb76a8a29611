-- reasonix_transcript: what an agent actually did (tool calls, files touched), from our own journal.
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_transcript",
  title = "Agent activity transcript",
  description = "Summarize what an agent actually did: tool calls with arguments, files written/read, bash "
    .. "commands, roles, work duration and the last text. Use it to review or rebase an agent's work. "
    .. "(Reasonix does not persist token usage; these are activity metrics.)",
  inputSchema = common.object({
    session_id = common.session_id(),
    max_tool_calls = { type = "integer", minimum = 0, default = 100,
                       description = "Most recent tool calls to include." },
  }, { "session_id" }),
  outputSchema = common.result({
    session_id = { type = "string" },
    tool_calls = {
      type = "array",
      items = { type = "object", properties = {
        tool = { type = "string" }, kind = { type = "string" }, title = { type = "string" },
        args = {}, status = { type = "string" } } },
    },
    files = {
      type = "object",
      properties = {
        written = { type = "array", items = { type = "string" } },
        read = { type = "array", items = { type = "string" } },
        bash = { type = "array", items = { type = "string" } },
      },
    },
    roles = { type = "object" },
    work_duration_s = { type = "number" },
    last_text = { type = "string" },
    transcript_path = { type = "string" },
  }, { "session_id" }),
  annotations = { readOnlyHint = true, openWorldHint = false },
  handler = common.forward("transcript"),
}
