-- rmcp.lib.lazy: a stand-in that requires its module on the first field read, not before, and
-- then reads through to the module's own table (which hot reload keeps, changing its fields).
local lazy = require "rmcp.lib.lazy"

test("the module loads on the first field read, once, and reads go to its own table", function(t)
  local name = "rmcp_lazy_spec_probe"
  local loads = 0
  package.preload[name] = function()
    loads = loads + 1
    return { answer = 42 }
  end
  t.defer(function() package.preload[name], package.loaded[name] = nil, nil end)
  local m = lazy(name)
  t.eq(loads, 0, "nothing is loaded when the stand-in is made")
  t.eq(package.loaded[name], nil)
  t.eq(m.answer, 42)
  t.eq(loads, 1)
  t.eq(m.missing, nil)
  t.eq(loads, 1, "loaded once")
  -- a reload changes the fields of the module's table in place: the stand-in sees the new ones
  package.loaded[name].answer = 43
  t.eq(m.answer, 43)
end)

test("the MCP server answers initialize without loading the tool modules", function(t)
  local mcp_name, tools_name = "rmcp.server.mcp", "rmcp.tools"
  local saved_mcp, saved_tools = package.loaded[mcp_name], package.loaded[tools_name]
  t.defer(function() package.loaded[mcp_name], package.loaded[tools_name] = saved_mcp, saved_tools end)
  package.loaded[mcp_name], package.loaded[tools_name] = nil, nil
  local mcp = require(mcp_name)
  local sent = {}
  local server = mcp.new{ send = function(line) sent[#sent + 1] = line end, project_dir = "/tmp", version = "0" }
  server:receive('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"lazy","version":"1"}}}')
  t.eq(#sent, 1, "initialize answered")
  t.match(sent[1], '"protocolVersion":"2025%-06%-18"')
  t.eq(package.loaded[tools_name], nil, "the tool modules were not loaded to answer initialize")
end)

test("agentd starts without the agent setup, turns, events, sandbox, models, transcript, fleet and routine modules", function(t)
  local late = { "rmcp.agentd.session.setup", "rmcp.agentd.session.turns", "rmcp.agentd.session.events",
                 "rmcp.agentd.session.configure", "rmcp.agentd.session.sandbox", "rmcp.agentd.worktree",
                 "rmcp.agentd.sandbox_git", "rmcp.rules.acp_options", "rmcp.rules.usage_report",
                 "rmcp.agentd.session.index", "rmcp.agentd.session.usage", "rmcp.acp.client", "rmcp.agentd.posture", "rmcp.agentd.models",
                 "rmcp.agentd.transcript", "rmcp.rules.fleet", "rmcp.agentd.routines.scheduler",
                 "rmcp.agentd.routines.store", "rmcp.rules.routine_templates", "rmcp.lib.swap", "rmcp.rules.fit",
                 "rmcp.agentd.methods.worktree", "rmcp.agentd.methods.fleet", "rmcp.agentd.methods.observe",
                 "rmcp.agentd.methods.admin", "rmcp.agentd.methods.routines" }
  local saved = {}
  for name, m in pairs(package.loaded) do
    if name:match("^rmcp%.") then saved[name] = m end
  end
  t.defer(function()
    for name in pairs(package.loaded) do
      if name:match("^rmcp%.") then package.loaded[name] = nil end
    end
    for name, m in pairs(saved) do package.loaded[name] = m end
  end)
  for name in pairs(saved) do
    if name:match("^rmcp%.agentd") or name:match("^rmcp%.rules") or name:match("^rmcp%.acp") then package.loaded[name] = nil end
  end
  require "rmcp.agentd.main"
  t.ok(package.loaded["rmcp.agentd.api"] ~= nil and package.loaded["rmcp.agentd.session"] ~= nil, "the daemon's modules loaded")
  for _, name in ipairs(late) do t.eq(package.loaded[name], nil, name .. " waits for its first use") end
  -- the first use loads it
  local session = require "rmcp.agentd.session"
  t.eq(type(session.handover_state), "function")
  t.eq(package.loaded["rmcp.agentd.session.setup"], nil, "reading the facade loads nothing")
end)

test("sandbox-net starts its agent without the gate and the HTTP proxy, loaded by the first connection", function(t)
  local late = { "rmcp.sandboxed.gate", "rmcp.sandboxed.http_proxy", "rmcp.lib.stream_head" }
  local saved = {}
  for _, name in ipairs(late) do saved[name] = package.loaded[name] end
  t.defer(function() for _, name in ipairs(late) do package.loaded[name] = saved[name] end end)
  for _, name in ipairs(late) do package.loaded[name] = nil end
  package.loaded["rmcp.sandboxed.net"] = nil
  require "rmcp.sandboxed.net"
  for _, name in ipairs(late) do t.eq(package.loaded[name], nil, name .. " waits for the first connection") end
end)

test("agentd's index of the methods it loads later names each such module's methods, all of them", function(t)
  local api = require "rmcp.agentd.api"
  local named = {}
  for method, module in pairs(api.LATER) do
    named[module] = named[module] or {}
    named[module][method] = true
  end
  for module, methods in pairs(named) do
    local have = {}
    for name, fn in pairs(require("rmcp.agentd.methods." .. module)) do
      if type(fn) == "function" then have[name] = true end
    end
    t.eq(have, methods, "methods/" .. module .. ".lua: api.LATER names exactly its methods")
  end
end)
