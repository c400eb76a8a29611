-- The one tool table: every capability, as MCP tools (tools/list shows them in this order) and as
-- `reasonix-mcp ctl` verbs (ctl/main.lua builds its commands from the same definitions). A tool is
-- {name, title, description, inputSchema, annotations, toolset?, long?, answer_kept?, hidden?,
-- cli, doc?, handler(args, ctx) -> result | nil, message}: the handler runs in a coroutine, ctx is the
-- server's or ctl's (docs/policies.md documents it); handlers hold no state. `cli` says how the verb
-- reads a shell's words ({verb?, aliases?, positional?, flags?, switches?, sub?, every_orchestrator?})
-- or why there is none ({none = "why"}); `doc` ({args = {{name, what}}, result = {{field, what}},
-- notes?}) is for docs/tools.md alone (scripts/gen-docs.lua), never sent. Tools that user policies
-- add (their `tools` hook) have the same shape and follow the built-in ones; names an earlier
-- surface had still answer (renamed.lua).
local log = require "rmcp.lib.log"
local tool_shape = require "rmcp.lib.tool_shape"
local hooks = require "rmcp.policy.hooks"
local toolsets = require "rmcp.rules.toolsets"

local M = {}

M.modules = {
  "spawn", "watch", "respond_permission", "send", "poll", "list", "stop", "resume", "configure",
  "transcript", "wait", "models", "worktree", "routine", "dashboard", "restart_agentd", "restart_mcp_server",
  "toolsets",
}

-- The built-in tools: in order, by name (renamed names included), by module name, and the renamed
-- ones in name order.
function M.builtin()
  local list, by_name, by_module = {}, {}, {}
  for _, mod in ipairs(M.modules) do
    local tool = require("rmcp.tools." .. mod)
    list[#list + 1] = tool
    by_name[tool.name], by_module[mod] = tool, tool
  end
  local renamed = require("rmcp.tools.renamed").tools(by_module)
  for _, tool in ipairs(renamed) do by_name[tool.name] = tool end
  return list, by_name, by_module, renamed
end

-- Returns the tool definitions in order and a name -> definition map (renamed names included), with
-- the tools user policies add. A policy tool with the name of a built-in one replaces it in place.
function M.load()
  local list, by_name = M.builtin()
  for _, pt in ipairs(hooks.tools()) do
    local tool = { policy = pt.policy.path } -- a copy, marked with the policy file it came from
    for k, v in pairs(pt.tool) do tool[k] = v end
    local old = by_name[tool.name]
    if old and not old.renamed_to then
      for i, x in ipairs(list) do if x == old then list[i] = tool end end
      log.info("tool %s replaced by policy %s", tool.name, pt.policy.path)
    else
      list[#list + 1] = tool
    end
    by_name[tool.name] = tool
  end
  return list, by_name
end

-- Raises with what is wrong when tool (from where) is not a well-formed tool of this table.
function M.check(tool, where)
  tool_shape.check(tool, where, toolsets.known)
  local cli = tool.cli
  if type(cli) ~= "table" then error(where .. ": tool " .. tool.name .. ": cli must say its ctl verb or why none", 0) end
  if cli.none ~= nil and (type(cli.none) ~= "string" or next(cli, next(cli)) ~= nil and cli.none == "") then
    error(where .. ": tool " .. tool.name .. ": cli.none must say why there is no ctl verb", 0)
  end
end

-- Reload self-check: every listed module loads and is a well-formed tool, names are unique.
function M.selfcheck()
  local seen = {}
  for _, mod in ipairs(M.modules) do
    local tool = require("rmcp.tools." .. mod)
    M.check(tool, "rmcp.tools." .. mod)
    if seen[tool.name] then return false, "tool " .. tool.name .. " is listed twice" end
    seen[tool.name] = true
  end
  return true
end

return M
