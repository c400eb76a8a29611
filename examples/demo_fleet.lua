-- Demo orchestrator, the README's main job: drives reasonix-mcp exactly as an MCP host would
-- (stdio, the official tool names), spawns a small fleet, steers one agent mid-turn, answers an
-- agent's question, watches until every agent is done and prints what each produced.
-- With no real provider configured (or RMCP_DEMO_OFFLINE=1) it runs on the offline provider in
-- tests/provider with scripted model replies; everything it starts lives in a private temp dir and
-- is stopped at the end.
--   reasonix-mcp script examples/demo_fleet.lua
local uv = require "luv"
local proc = require "rmcp.proc"
local sys = require "rmcp.sys"
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local async = require "rmcp.lib.async"
local host = require "rmcp.host"

local repo = (debug.getinfo(1, "S").source:match("^@(.*)/examples/") or ".")
package.path = repo .. "/tests/support/?.lua;" .. package.path
local rig = require "reasonix_home"

-- Scripted model replies for the offline run: a plan, a question, and a slow answer to steer.
local SCENARIO = {
  { last_role = "user", user_contains = "STEER-DEMO", text = "Steer received: switching the output to a table." },
  { last_role = "user", user_contains = "release notes",
    tool_calls = { { name = "todo_write", arguments = { todos = {
      { content = "Collect merged changes", status = "completed" },
      { content = "Group them by area", status = "in_progress" },
      { content = "Write the notes", status = "pending" } } } } } },
  { last_tool_name = "todo_write", reasoning = "Grouping the changes.",
    text = "Release notes drafted: 3 features, 2 fixes, 1 breaking change." },
  { last_role = "user", user_contains = "HTTP client",
    tool_calls = { { name = "ask", arguments = { questions = { {
      header = "Library", question = "Which HTTP library should the client use?", multiSelect = false,
      options = { { label = "curl", description = "battle-tested" }, { label = "libsoup" } } } } } } } },
  { last_tool_name = "ask", text = "Going ahead with the answer: ", echo = "tool_result" },
  { last_role = "user", user_contains = "changelog",
    text = "Scanning the changelog section by section, this takes a while ...", chunk = 4, delay = 0.15 },
}

local TASKS = {
  { name = "notes", task = "Draft the release notes for the last sprint." },
  { name = "client", task = "Sketch an HTTP client module; ask me which library to use." },
  { name = "scan", task = "Summarise the changelog." },
}

-- Prints one line of demo narration.
local function say(fmt, ...) io.stdout:write(string.format(fmt, ...), "\n"); io.stdout:flush() end

-- True when the user's own Reasonix config names a provider (then the demo uses it for real).
local function real_provider_configured()
  if os.getenv("RMCP_DEMO_OFFLINE") == "1" then return false end
  local rxhome = os.getenv("REASONIX_HOME") or ((os.getenv("HOME") or "") .. "/.reasonix")
  local f = io.open(rxhome .. "/config.toml")
  if not f then return false end
  local text = f:read("a"); f:close()
  return text:find("%[%[providers%]%]") ~= nil
end

-- Starts `reasonix-mcp server` and returns a JSON-RPC peer speaking MCP to it over its stdio.
local function start_server(env, cwd)
  local peer
  local p = assert(proc.spawn{
    file = host.exe, args = { "server" }, cwd = cwd, env = env,
    stdin = "pipe", stdout = "pipe", stderr = "inherit",
    on_line = function(line) peer:receive(line) end,
    on_exit = function(code) if peer then peer:close("server exited with " .. tostring(code)) end end,
  })
  peer = jsonrpc.new{ name = "demo", send = function(line) p.stdin:write(line) end,
    on_notification = function() end }
  return p, peer
end

-- Calls an MCP tool and returns its structured result (raises on a tool error).
local function call(peer, tool, args)
  local r, err = async.request(peer, "tools/call", { name = tool, arguments = args or {} })
  if not r then error(tool .. ": " .. tostring(err), 0) end
  if r.isError then error(tool .. ": " .. ((r.content or {})[1] or {}).text, 0) end
  return r.structuredContent or json.decode(r.content[1].text)
end

-- The whole demo, inside a coroutine.
local function demo()
  local tmp = assert(uv.fs_mkdtemp("/tmp/rmcp-demo-XXXXXX"))
  local cleanup = {}
  local function finish(code)
    for i = #cleanup, 1, -1 do pcall(cleanup[i]) end
    rig.rmtree(tmp)
    sys.stop(code)
  end
  local ok, err = xpcall(function()
    local env = {}
    for k, v in pairs(uv.os_environ()) do env[k] = v end
    env.REASONIX_MCP_HOME = tmp .. "/mcp"
    env.REASONIX_MCP_ORCHESTRATOR_ID = "demo"
    env.REASONIX_MCP_DEFAULT_TOOL_APPROVAL = "auto"
    env.REASONIX_MCP_LOG_LEVEL = env.REASONIX_MCP_LOG_LEVEL or "warn"
    local workspace = tmp .. "/ws"
    assert(uv.fs_mkdir(workspace, 448))
    if real_provider_configured() then
      say("== using your configured Reasonix provider")
    else
      say("== no provider configured: starting the offline provider (scripted replies)")
      local prov = assert(rig.start_provider{ scenario = SCENARIO })
      cleanup[#cleanup + 1] = function() prov:stop() end
      local home = rig.make_home(prov.port, { root = tmp })
      for k, v in pairs(home.env) do env[k] = v end
      env.REASONIX_MCP_DEFAULT_MODEL = "mock/mock-model"
      workspace = home.workspace
    end
    env.REASONIX_BIN = env.REASONIX_BIN or rig.find_agent()
    local envlist = {}
    for k, v in pairs(env) do envlist[#envlist + 1] = k .. "=" .. v end

    local server, peer = start_server(envlist, workspace)
    cleanup[#cleanup + 1] = function() server.stdin:shutdown() end
    local init = assert(async.request(peer, "initialize", { protocolVersion = "2025-06-18",
      capabilities = {}, clientInfo = { name = "demo-orchestrator", version = "1" } }))
    peer:notify("notifications/initialized", {})
    say("== connected to %s %s (MCP %s)", init.serverInfo.name, init.serverInfo.version, init.protocolVersion)

    local ids, names = {}, {}
    cleanup[#cleanup + 1] = function()
      for _, sid in ipairs(ids) do pcall(call, peer, "reasonix_stop", { session_id = sid }) end
      local c = require("rmcp.clients.agentd").new{ home = env.REASONIX_MCP_HOME, orchestrator_id = "demo",
        project_dir = workspace, autostart = false }
      c:call("shutdown", {})
    end
    for _, t in ipairs(TASKS) do
      local r = call(peer, "reasonix_spawn", { task = t.task, keep_alive = true })
      ids[#ids + 1] = r.session_id
      names[r.session_id] = t.name
      say("spawned %-7s %s  model=%s approval=%s sandbox=%s", t.name, r.session_id, tostring(r.model),
        tostring(r.tool_approval), tostring((r.posture or {}).sandbox))
    end

    -- Steer the slow one as soon as it is running.
    local scan = ids[3]
    for _ = 1, 100 do
      local p = call(peer, "reasonix_poll", { session_id = scan })
      if p.status == "running" and p.message then break end
      async.sleep(100)
    end
    local sent = call(peer, "reasonix_send", { session_id = scan, message = "STEER-DEMO: give the result as a table" })
    say("steered scan: delivered as %s", sent.delivered)

    local open = {}
    for _, sid in ipairs(ids) do open[#open + 1] = sid end
    while #open > 0 do
      local w = call(peer, "reasonix_watch", { session_ids = open })
      local rest = {}
      for _, sid in ipairs(open) do
        local r = w.results[sid]
        if r and r.permission_request then
          local pr = r.permission_request
          local choice = pr.options[1]
          say("%-7s asks: %s -> answering %q", names[sid], pr.tool_call and pr.tool_call.title or "?", choice.name)
          call(peer, "reasonix_respond_permission", { session_id = sid, option_id = choice.optionId })
          rest[#rest + 1] = sid
        elseif r then
          say("%-7s %s (%s): %s", names[sid], r.status, tostring(r.stop_reason), (r.message or ""):gsub("\n", " "))
          if r.error_text then say("        error: %s", r.error_text) end
          if r.plan then
            for _, e in ipairs(r.plan) do say("        [%s] %s", e.status, e.content) end
          end
        else
          rest[#rest + 1] = sid
        end
      end
      open = rest
    end
    local fleet = call(peer, "reasonix_list", {})
    local counts = {}
    for k, v in pairs(fleet.counts or {}) do counts[#counts + 1] = string.format("%s=%d", k, v) end
    say("== fleet: %d session(s): %s", #fleet.sessions, table.concat(counts, " "))
  end, debug.traceback)
  if not ok then io.stderr:write("demo failed: ", tostring(err), "\n") end
  finish(ok and 0 or 1)
end

async.run(demo)
