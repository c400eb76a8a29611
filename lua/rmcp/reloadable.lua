-- Which built-in modules may be hot-reloaded (lib/reload.lua swaps them in place) and the check a
-- freshly built one must pass first. They hold no state: what state they use lives in tables the
-- daemon or server owns. Sessions, connections, the watch registry, the agentd client, the policy
-- loader and the MCP session are not here: their modules keep live state or class tables that
-- instances point at.
local M = {}

M.prefixes = { "rmcp.rules.", "rmcp.tools." }
M.modules = {
  ["rmcp.config"] = true, ["rmcp.tools"] = true, ["rmcp.lib.schema"] = true,
  ["rmcp.server.relay"] = true, ["rmcp.server.tool_view"] = true, ["rmcp.server.elicitation"] = true, ["rmcp.server.orchestrator"] = true,
  ["rmcp.agentd.transcript"] = true, ["rmcp.agentd.posture"] = true, ["rmcp.agentd.ownership"] = true,
  ["rmcp.agentd.models"] = true, ["rmcp.policy.hooks"] = true, ["rmcp.policy.api"] = true,
  ["rmcp.policy.check"] = true,
  -- the routines: their state is d.routines, the scheduler's timer calls through its module table
  ["rmcp.agentd.routines.store"] = true, ["rmcp.agentd.routines.scheduler"] = true,
  ["rmcp.agentd.methods.routines"] = true,
}

-- Raises with the reason when a freshly built module is not fit to replace the loaded one: a tool
-- module (one that rmcp.tools lists) must be a well-formed tool.
function M.check(name, value, path)
  local tool = name:match("^rmcp%.tools%.(.+)$")
  if not tool then return end
  local tools = require "rmcp.tools"
  for _, listed in ipairs(tools.modules) do
    if listed == tool then return tools.check(value, path) end
  end
end

-- The options lib/reload's init takes for these modules.
function M.options()
  return { prefixes = M.prefixes, modules = M.modules, check = M.check }
end

return M
