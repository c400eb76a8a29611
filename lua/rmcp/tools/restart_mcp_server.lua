-- reasonix_restart_mcp_server: ask the supervising launcher for a fresh server process.
-- Under a launcher the server tells it with the private notification `$/rmcp/restart` (never
-- forwarded to the host) and answers; the launcher starts a new server, replays the handshake into
-- it, then lets this one finish its other calls and stops it. Without one (the host runs
-- `reasonix-mcp server`) nothing could bring the server back, so the call says so instead of pretending.
local common = require "rmcp.tools.common"

return {
  name = "reasonix_restart_mcp_server",
  title = "Restart MCP server",
  description = "Restart this MCP server via its launcher; agents go on.",
  inputSchema = common.object({}),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = false },
  cli = { none = "a shell has no MCP server of its own: the host restarts its server (a new binary is picked up by the launcher at once)" },
  -- Doc-only: docs/tools.md is generated from it (scripts/gen-docs.lua); tools/list never sends it.
  doc = {
    args = {},
    result = {
      { "restarting", "true: the launcher is starting a fresh server." },
      { "message", "What happens; agent sessions are unaffected." },
    },
  },
  handler = function(_args, ctx)
    if not ctx.restart_server("reasonix_restart_mcp_server") then
      return nil, "No supervising launcher: the host runs `reasonix-mcp server` directly, so nothing can "
        .. "restart it. Restart the MCP server from your MCP host (for example /mcp in Claude Code); agent "
        .. "sessions keep running in agentd. Register the bare `reasonix-mcp` command to get restarts."
    end
    return { restarting = true, message = "The launcher is starting a fresh MCP server; agent sessions are unaffected." }
  end,
}
