-- reasonix_dashboard: make sure the fleet dashboard runs the current code, and say where it is.
local common = require "rmcp.tools.common"

return {
  name = "reasonix_dashboard",
  toolset = "fleet",
  title = "Fleet dashboard",
  description = "Start or reuse the fleet web page; its URL and password file.",
  inputSchema = common.object({}),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = true, openWorldHint = false },
  cli = {},
  handler = function(_, ctx)
    -- the fleet's daemon runs first: a dashboard looks at one, it never starts one
    local _, perr = ctx.agentd("ping")
    if perr then return nil, perr end
    local _, port = require("rmcp.clients.dashboard").address()
    return require("rmcp.clients.dashboard").ensure(port)
  end,
}
