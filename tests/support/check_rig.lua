-- Self-check of the Lua side of the rig: reasonix_home.lua starts the mock provider and a private
-- home, the REAL agent answers one prompt through it, and the fake agent answers one too.
-- Runs as `reasonix-mcp script tests/support/check_rig.lua` (the project's binary is the only Lua it needs).
-- Prints "N passed, N failed"; exits non-zero on a failure; leaves no process behind.
local uv = require "luv"
local cjson = require "cjson"

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local rh = require "reasonix_home"

local passed, failed = 0, 0
local function check(cond, name, detail)
  if cond then passed = passed + 1 else failed = failed + 1 end
  print((cond and "ok   " or "FAIL ") .. name .. ((cond or not detail) and "" or (": " .. tostring(detail))))
end

-- A tiny ACP client over a spawned process: request(method, params) waits for the reply.
local function acp_spawn(cmd, args, env, cwd)
  local c = { pending = {}, updates = {}, next_id = 0, buf = "" }
  c.stdin, c.stdout = uv.new_pipe(false), uv.new_pipe(false)
  c.handle, c.pid = uv.spawn(cmd, { args = args, env = env, cwd = cwd, stdio = { c.stdin, c.stdout, nil },
    detached = true }, function(code)
    c.exit_code = code
    c.handle:close()
    if c.on_exit then c.on_exit(code) end
  end)
  assert(c.handle, c.pid)
  c.stdout:read_start(function(err, data)
    if err or not data then c.stdout:close(); return end
    c.buf = c.buf .. data
    for line in c.buf:gmatch("([^\n]*)\n") do
      local msg = cjson.decode(line)
      if msg.method == "session/update" then c.updates[#c.updates + 1] = msg.params.update end
      if msg.id ~= nil and msg.method == nil and c.pending[msg.id] then
        local co = c.pending[msg.id]
        c.pending[msg.id] = nil
        assert(coroutine.resume(co, msg))
      end
    end
    c.buf = c.buf:match("[^\n]*$")
  end)
  function c.request(method, params)
    c.next_id = c.next_id + 1
    c.pending[c.next_id] = coroutine.running()
    local line = cjson.encode({ jsonrpc = "2.0", id = c.next_id, method = method, params = params })
    c.stdin:write(line:gsub('"%[%]"', "[]") .. "\n")  -- "[]" marks an empty array
    return coroutine.yield()
  end
  function c.close()
    local co = coroutine.running()
    c.on_exit = function(code) assert(coroutine.resume(co, code)) end
    c.stdin:close()
    if c.exit_code then return c.exit_code end
    return coroutine.yield()
  end
  function c.text(kind)
    local out = {}
    for _, u in ipairs(c.updates) do
      if u.sessionUpdate == (kind or "agent_message_chunk") then out[#out + 1] = u.content.text end
    end
    return table.concat(out)
  end
  return c
end

local function turn(c, cwd, text)
  c.request("initialize", { protocolVersion = 1, clientCapabilities = {} })
  local new = c.request("session/new", { cwd = cwd, mcpServers = "[]" })
  if not new.result then return nil, new end
  return c.request("session/prompt", { sessionId = new.result.sessionId, prompt = { { type = "text", text = text } } })
end

local co = coroutine.create(function()
  local agent, why = rh.find_agent()
  check(agent ~= nil, "find_agent", why)
  local prov, err = rh.start_provider({ scenario = { rules = {
    { last_role = "user", user_contains = "HELLO", reasoning = "hmm", text = "hello from lua rig", chunk = 4 } } } })
  check(prov ~= nil, "start_provider reports a port", err)
  if not prov then return end
  local home = rh.make_home(prov.port)
  check(io.open(home.config_path) ~= nil, "make_home wrote config.toml")

  if agent then
    local c = acp_spawn(agent, { "acp" }, rh.env_list(home.env), home.workspace)
    local resp = turn(c, home.workspace, "HELLO lua")
    check(resp and resp.result and resp.result.stopReason == "end_turn", "real agent end_turn", cjson.encode(resp or {}))
    check(c.text() == "hello from lua rig", "real agent streamed text", c.text())
    check(c.text("agent_thought_chunk") == "hmm", "real agent streamed reasoning", c.text("agent_thought_chunk"))
    local reqs = prov:requests()
    check(#reqs == 1 and reqs[1].body.messages[#reqs[1].body.messages].content == "HELLO lua",
      "provider logged the request", #reqs)
    check(reqs[1] and reqs[1].headers.authorization == "Bearer mock-key", "api key sent",
      reqs[1] and cjson.encode(reqs[1].headers))
    check(c.close() == 0, "real agent exits 0 on EOF")
  end

  check(prov:set_scenario({ rules = { { text = "swapped" } } }) == true, "set_scenario")
  local st, body = rh.http(prov.port, "GET", "/_mock/scenario")
  check(st == 200 and body:find("swapped", 1, true), "scenario swapped", body)

  local fargs = { "script", rh.REPO .. "/tests/fake_agent/fake_acp.lua", "acp" }
  local f = acp_spawn(require("rmcp.host").exe, fargs, rh.env_list({ PATH = os.getenv("PATH"), FAKE_ACP_MODE = "normal",
    RMCP_TEST_RUN = os.getenv("RMCP_TEST_RUN") }), "/")
  local resp = turn(f, "/tmp", "echo me")
  check(resp and resp.result and resp.result.stopReason == "end_turn" and f.text() == "echo me", "fake agent echoes",
    f.text())
  check(f.close() == 0, "fake agent exits 0 on EOF")

  check(prov:stop() == 0 or prov.exited, "provider stopped")
  home.cleanup()
  check(uv.fs_stat(home.root) == nil, "home removed")
end)
local ok, err = coroutine.resume(co)
if not ok then failed = failed + 1; print("FAIL crashed: " .. tostring(err)) end

local function finish()
  print(string.format("%d passed, %d failed", passed, failed))
  io.stdout:flush()
  os.exit(failed == 0 and coroutine.status(co) == "dead" and 0 or 1)
end
-- The host runs the loop: report once the coroutine is done.
local t = uv.new_timer()
t:start(50, 50, function() if coroutine.status(co) == "dead" then t:close(); finish() end end)
