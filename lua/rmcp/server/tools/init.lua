-- The MCP tools, in the order tools/list shows them. A tool is {name, title, description,
-- inputSchema, outputSchema, annotations, toolset?, long?, handler(args, ctx) -> result | nil, message} (the
-- handler runs in a coroutine; ctx is server/mcp.lua's, lua/POLICY.md documents it); handlers hold no
-- state. Tools that user policies add (their `tools` hook) are tools of the same shape and follow the
-- built-in ones.
local log = require "rmcp.lib.log"
local hooks = require "rmcp.policy.hooks"

local M = {}

M.modules = {
  "spawn", "spawn_fleet", "resume", "resume_fleet", "configure", "models", "send", "broadcast", "poll", "transcript",
  "watch", "wait", "list",
  "respond_permission", "stop", "diff", "worktree", "restart_agentd", "restart_mcp_server", "toolsets", "dashboard",
  "routine_create", "routine_templates", "routine_from_template", "routine_list", "routine_configure", "routine_run",
  "routine_stop", "routine_delete",
}

-- Returns the tool definitions in order, and a name -> definition map. A policy tool with the name of
-- a built-in one replaces it in place.
function M.load()
  local list, by_name = {}, {}
  for _, mod in ipairs(M.modules) do
    local tool = require("rmcp.server.tools." .. mod)
    list[#list + 1] = tool
    by_name[tool.name] = tool
  end
  for _, pt in ipairs(hooks.tools()) do
    local tool = { policy = pt.policy.path } -- a copy, marked with the policy file it came from
    for k, v in pairs(pt.tool) do tool[k] = v end
    local old = by_name[tool.name]
    if old then
      for i, x in ipairs(list) do if x == old then list[i] = tool end end
      log.info("tool %s replaced by policy %s", tool.name, pt.policy.path)
    else
      list[#list + 1] = tool
    end
    by_name[tool.name] = tool
  end
  return list, by_name
end

-- Reload self-check: every listed module loads and is a well-formed tool, names are unique.
function M.selfcheck()
  local seen = {}
  for _, mod in ipairs(M.modules) do
    local tool = require("rmcp.server.tools." .. mod)
    require("rmcp.server.tools.common").check_tool(tool, "rmcp.server.tools." .. mod)
    if seen[tool.name] then return false, "tool " .. tool.name .. " is listed twice" end
    seen[tool.name] = true
  end
  return true
end

return M
