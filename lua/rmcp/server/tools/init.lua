-- The MCP tools, in the order tools/list shows them. Each module is {name, title, description,
-- inputSchema, outputSchema, annotations, long?, handler(ctx, args, done)}; handlers hold no state.
local M = {}

M.modules = {
  "spawn", "resume", "models", "send", "poll", "transcript", "watch", "wait", "list",
  "respond_permission", "stop", "restart_agentd", "restart_mcp_server",
}

-- Returns the tool definitions in order, and a name -> definition map.
function M.load()
  local list, by_name = {}, {}
  for _, mod in ipairs(M.modules) do
    local tool = require("rmcp.server.tools." .. mod)
    list[#list + 1] = tool
    by_name[tool.name] = tool
  end
  return list, by_name
end

return M
