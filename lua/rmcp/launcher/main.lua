-- The command MCP hosts register (`reasonix-mcp` with no subcommand). For now it runs the server in
-- this same process: no supervision, no restart on upgrade, no handshake replay — that launcher is
-- issue #5. Registering the bare command today keeps host configurations valid when it lands.
local M = {}

function M.main(args)
  return require("rmcp.server.main").main(args)
end

return M
