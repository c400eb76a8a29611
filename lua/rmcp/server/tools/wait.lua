-- reasonix_wait: legacy output-sensitive long poll; watch is the primary wake-up call.
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_wait",
  title = "Wait for agent output",
  description = "Legacy long poll: block until any of session_ids produces output, finishes a turn or raises "
    .. "a permission request; returns only the ready ids, so follow with reasonix_poll. Prefer reasonix_watch, "
    .. "which returns the results directly.",
  inputSchema = common.object({
    session_ids = common.session_ids(),
    timeout = { type = "number", minimum = 0,
                description = "Seconds to wait before returning timed_out=true. Default: no timeout." },
  }, { "session_ids" }),
  outputSchema = common.result({
    ready = { type = "array", items = { type = "string" } },
    timed_out = { type = "boolean" },
  }, { "ready" }),
  annotations = { readOnlyHint = true, openWorldHint = false },
  long = true,
  handler = common.forward("wait", common.blocking),
}
