-- agentd's own cost per request, with no MCP server in front of it (bench/README.md "Issue 39"):
--
--   reasonix-mcp script bench/agentd_calls.lua METHOD N [SESSIONS]
--
-- starts a private agentd (under callgrind when RMCP_CALLGRIND_OUT names the output file), spawns
-- SESSIONS fake agents (tests/fake_agent; default 0) and waits until each ended its first turn and
-- the daemon settled, then sends N requests of METHOD over its socket, one at a time: list, poll
-- (of the first session), send (to the first session, with the watch that takes its turn's end),
-- wake (a watch of the first session, then a send to it: the turn's end wakes the waiting watch, as
-- in bench/run.lua's watch wake-up), ping; spawn sends all N at once (the scale row's fleet start,
-- bench/scale.lua) and waits until each new session ended its first turn, beside the SESSIONS live
-- ones (RMCP_CALLGRIND_AGENT_LINES=1 counts the agents' lines a spawn brings, =all the whole
-- daemon). Then it shuts the daemon down and waits until it is gone. Run it for two N: the cost of
-- one call is (Ir(N2) - Ir(N1)) / (N2 - N1), start-up and teardown cancelled out.
local uv = require "luv"
local async = require "rmcp.lib.async"
local files = require "rmcp.lib.files"
local client = require "rmcp.clients.agentd"

local method, n, sessions = arg[1], tonumber(arg[2] or ""), tonumber(arg[3] or "0")
-- What one call of each METHOD sends (ids: the sessions spawned), answered before the next goes.
local requests = {
  list = function(c) return c:call("list", {}) end,
  poll = function(c, ids) return c:call("poll", { session_id = ids[1] }) end,
  ping = function(c) return c:call("ping", {}) end,
  send = function(c, ids)
    local r, err = c:call("send", { session_id = ids[1], message = "hi" })
    if not r then return nil, err end
    return c:call("watch", { session_ids = { ids[1] } })
  end,
  wake = function(c, ids)
    local r = async.map({ "watch", "send" }, 2, function(m)
      if m == "watch" then return c:call("watch", { session_ids = { ids[1] } }) end
      return c:call("send", { session_id = ids[1], message = "hi" })
    end)
    return r[1] and r[2]
  end,
}
if method ~= "spawn" and not requests[method] or not n or not sessions or ((method == "poll" or method == "send" or method == "wake") and sessions < 1) then
  io.stderr:write("usage: reasonix-mcp script bench/agentd_calls.lua list|poll|send|wake|ping|spawn N [SESSIONS] (poll, send, wake: SESSIONS >= 1)\n")
  os.exit(2)
end

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local REPO = uv.fs_realpath(here .. "/..") or (here .. "/..")
local EXE = require("rmcp.host").exe
local DIR = assert(uv.fs_mkdtemp("/tmp/rxa-XXXXXX"))

-- Writes an executable shell script at path that runs line.
local function write_script(path, line)
  local f = assert(io.open(path, "w"))
  f:write("#!/bin/sh\n", line, "\n")
  f:close()
  uv.fs_chmod(path, 493)
end

-- A private environment: homes under DIR, the fake agent as REASONIX_BIN, defaults for every limit.
local function private_env()
  for k in pairs(uv.os_environ()) do
    if (k:match("^REASONIX_MCP_") and k ~= "REASONIX_MCP_LUA_DIR") or k:match("^FAKE_ACP_") then uv.os_unsetenv(k) end
  end
  for _, d in ipairs({ "home", "rx", "ws" }) do assert(files.mkdir_p(DIR .. "/" .. d, tonumber("700", 8))) end
  write_script(DIR .. "/reasonix", string.format("exec '%s' script '%s/tests/fake_agent/fake_acp.lua' \"$@\"", EXE, REPO))
  uv.os_setenv("HOME", DIR .. "/home")
  uv.os_setenv("REASONIX_HOME", DIR .. "/rx")
  uv.os_setenv("REASONIX_BIN", DIR .. "/reasonix")
end

-- The command the client autostarts agentd with: ours, or ours under callgrind.
local function daemon_exe()
  local out = os.getenv("RMCP_CALLGRIND_OUT")
  if not out or out == "" then return EXE end
  -- (only what runs for a line of the socket is counted, and with RMCP_CALLGRIND_AGENT_LINES=1 for
  -- a line of an agent too: the daemon's timers are not, so what they do while the calls run, at
  -- times that vary, does not blur the count; =split counts the agents' lines alone, a file after
  -- each and one before each socket write, OUT.1, OUT.2, …: a line's work before and after the
  -- answer it wakes; =all counts the whole daemon, its timers too)
  local mode = os.getenv("RMCP_CALLGRIND_AGENT_LINES")
  local count = ({ ["1"] = "--toggle-collect=lchannel_on_line --toggle-collect=lproc_on_line", all = "",
                   split = "--toggle-collect=lproc_on_line --dump-after=lproc_on_line --dump-before=lchannel_write" })[mode]
    or "--toggle-collect=lchannel_on_line"
  write_script(DIR .. "/agentd-callgrind", string.format("exec valgrind --tool=callgrind --collect-atstart=%s "
    .. "%s --callgrind-out-file='%s' '%s' \"$@\"", count == "" and "yes" or "no", count, out, EXE))
  return DIR .. "/agentd-callgrind"
end

-- Waits until every session of ids ended its first turn.
local function first_turns(c, ids)
  local left = {}
  for _, id in ipairs(ids) do left[id] = true end
  while next(left) do
    local list = {}
    for id in pairs(left) do list[#list + 1] = id end
    local r = assert(c:call("watch", { session_ids = list }))
    for id, res in pairs(r.results or {}) do
      if res.status == "idle" or res.status == "exited" then left[id] = nil end
    end
  end
end

-- Sends n spawns at once (each cwd in dir) and waits for every answer, then for every first turn.
local function spawn_at_once(c, n, dir)
  local ids, answered = {}, 0
  async.await(function(resume)
    for i = 1, n do
      c:request("spawn", { task = "new " .. i, cwd = dir, model = "fake/fake-model", keep_alive = true }, function(r, err)
        ids[#ids + 1] = assert(r, tostring(err and err.message)).session_id
        answered = answered + 1
        if answered == n then resume() end
      end)
    end
  end)
  first_turns(c, ids)
end

local code = 0
async.run(function()
  private_env()
  local c = client.new({ home = DIR .. "/h", orchestrator_id = "bench-calls", project_dir = DIR .. "/ws", exe = daemon_exe(),
                         start_timeout_ms = 60000, client_info = { name = "agentd-calls" } })
  assert(c:wait_connected())
  local pid = c.info.agentd_pid
  local ids = {}
  for i = 1, sessions do ids[i] = assert(c:call("spawn", { task = "hi " .. i, cwd = DIR .. "/ws" })).session_id end
  first_turns(c, ids)
  async.sleep(3000) -- (what the agents' start left for the daemon to do is done before the calls)
  local t0 = uv.hrtime()
  if method == "spawn" then
    spawn_at_once(c, n, DIR .. "/ws")
  else
    for _ = 1, n do assert(requests[method](c, ids)) end
  end
  io.stderr:write(string.format("%d %s calls: %.1f us each (wall clock)\n", n, method, (uv.hrtime() - t0) / n / 1e3))
  assert(c:call("shutdown", {}))
  c:close()
  while uv.kill(pid, 0) == 0 do async.sleep(50) end
end, function(e)
  io.stderr:write("agentd_calls: ", tostring(e), "\n")
  code = 1
end)
uv.run()
os.execute("rm -rf '" .. DIR .. "'")
os.exit(code)
