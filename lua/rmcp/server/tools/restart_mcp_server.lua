-- reasonix_restart_mcp_server: ask the supervising launcher for a fresh server process.
-- Under a launcher (issue #5) the server answers, then exits and the launcher starts a new one and
-- replays the handshake. Without one (the host runs `reasonix-mcp server`, or the in-process launcher
-- of today) nothing could bring the server back, so the call says so instead of pretending.
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_restart_mcp_server",
  title = "Restart this MCP server",
  description = "Restart this orchestrator's MCP server process (to load new server code) through its "
    .. "launcher; agent sessions live in the daemon and are unaffected. Reports when no supervising "
    .. "launcher is present; then restart the MCP server from your MCP host instead.",
  inputSchema = common.object({}),
  outputSchema = common.result({ restarting = { type = "boolean" }, message = { type = "string" } }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = true, openWorldHint = false },
  handler = function(ctx, _args, done)
    if not ctx.supervised then
      return done(nil, "No supervising launcher: this server runs in-process (the restarting launcher lands "
        .. "with issue #5), so it cannot restart itself. Restart the MCP server from your MCP host (for "
        .. "example /mcp in Claude Code); agent sessions keep running in agentd.")
    end
    done({ restarting = true, message = "The launcher is starting a fresh MCP server; agent sessions are unaffected." })
    ctx:exit_after_reply(0)
  end,
}
