-- The MCP tools, in the order tools/list shows them. Each module is {name, title, description,
-- inputSchema, outputSchema, annotations, long?, handler(ctx, args, done)}; handlers hold no state.
-- Tools that user policies add (their `tools` hook, lua/POLICY.md) follow the built-in ones.
local async = require "rmcp.lib.async"
local log = require "rmcp.lib.log"
local hooks = require "rmcp.policy.hooks"

local M = {}

M.modules = {
  "spawn", "resume", "models", "send", "poll", "transcript", "watch", "wait", "list",
  "respond_permission", "stop", "restart_agentd", "restart_mcp_server",
}

-- The ctx a policy tool's handler(args, ctx) gets: agentd access for this orchestrator (calls wait
-- inside the handler's coroutine), the project dir and the orchestrator id.
local function policy_ctx(ctx)
  local c = { project_dir = ctx.project_dir, orchestrator_id = ctx.server.orchestrator_id }
  -- Calls agentd method (the tool names without reasonix_, PROTOCOL.md); returns result or nil, err.
  function c.agentd(method, params)
    return async.await(function(resume) ctx:agentd(method, params or {}, resume) end)
  end
  -- Sends several agentd calls at once; returns {result = ..., error = ...} for each, in order.
  function c.agentd_all(calls)
    local out, left = {}, #calls
    if left == 0 then return out end
    return async.await(function(resume)
      for i, call in ipairs(calls) do
        ctx:agentd(call[1] or call.method, call[2] or call.params or {}, function(result, err)
          out[i] = { result = result, error = err }
          left = left - 1
          if left == 0 then resume(out) end
        end)
      end
    end)
  end
  return c
end

-- Wraps tool t of policy p (handler(args, ctx) returning result, or nil and a message) as a tool.
function M.from_policy(t, p)
  return {
    name = t.name, title = t.title, description = t.description, inputSchema = t.inputSchema,
    outputSchema = t.outputSchema, annotations = t.annotations, long = t.long, policy = p.path,
    handler = function(ctx, args, done)
      async.run(function()
        local result, err = t.handler(args, policy_ctx(ctx))
        if result == nil then
          return done(nil, err ~= nil and tostring(err) or ("policy tool " .. t.name .. " returned no result"))
        end
        done(result)
      end, function(e)
        log.error("policy tool %s (%s) raised: %s", t.name, p.path, tostring(e))
        done(nil, "policy tool failed: " .. tostring(e):match("^[^\n]*"))
      end)
    end,
  }
end

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
    local tool = M.from_policy(pt.tool, pt.policy)
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
