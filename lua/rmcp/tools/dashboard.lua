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
  -- Doc-only: docs/tools.md is generated from it (scripts/gen-docs.lua); tools/list never sends it.
  doc = {
    args = {},
    result = {
      { "url", "Where the page is (http://127.0.0.1:8746/ by default)." },
      { "password", "Where its password is: REASONIX_MCP_DASHBOARD_PASSWORD, or the file dashboard.password in the runtime dir." },
      { "started, replaced", "Whether this call started it, and replaced one of another version." },
      { "pid, version", "The dashboard process and its version." },
    },
    notes = "Reuses a dashboard that runs this version and replaces one that runs another.",
  },
  handler = function(_, ctx)
    -- the fleet's daemon runs first: a dashboard looks at one, it never starts one
    local _, perr = ctx.agentd("ping")
    if perr then return nil, perr end
    local _, port = require("rmcp.clients.dashboard").address()
    return require("rmcp.clients.dashboard").ensure(port)
  end,
}
