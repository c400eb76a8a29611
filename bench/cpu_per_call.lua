-- Where a round trip's time and CPU go, ours against the floor (bench/README.md "Where the poll,
-- send and wake-up rows stand"):
--
--   reasonix-mcp script bench/cpu_per_call.lua poll|send|wake N [ROUNDS]
--
-- starts a private agentd with one fake session, and the floor's daemon (bench/floor.c), then runs
-- bench-client (bench/client.c) ROUNDS times (default 3) on each side in turn, ours through the
-- launcher as a host runs it: N calls and then N/5, so that each side's start cancels out. Each call
-- is a reasonix_poll of the idle session, a reasonix_send to it (an untimed watch takes its turn's
-- end first, as in bench/run.lua), or the wake-up (an untimed send starts a stamp turn; the time
-- runs from the fake agent's stamp to the watch's result). Per side it prints the p50 of the N run
-- and the CPU per call: the chain (bench-client, the launcher and the MCP server: this process's
-- reaped children, /proc/self/stat, 1/100 s ticks) and the daemon (agentd or the floor's daemon,
-- /proc/PID/schedstat). A row of bench/run.lua says whether we are within 1.5x of the floor; this
-- says in which process we are not.
local uv = require "luv"
local proc = require "rmcp.proc"
local async = require "rmcp.lib.async"
local files = require "rmcp.lib.files"
local json = require "rmcp.lib.json"
local client = require "rmcp.clients.agentd"

local kind, n, rounds = arg[1], tonumber(arg[2] or ""), tonumber(arg[3] or "3")
if (kind ~= "poll" and kind ~= "send" and kind ~= "wake") or not n or n < 50 or not rounds then
  io.stderr:write("usage: reasonix-mcp script bench/cpu_per_call.lua poll|send|wake N [ROUNDS] (N >= 50)\n")
  os.exit(2)
end

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local REPO = uv.fs_realpath(here .. "/..") or (here .. "/..")
local EXE = require("rmcp.host").exe
local BUILD = EXE:match("^(.*)/[^/]*$")
local CLIENT, FLOOR = BUILD .. "/bench-client", BUILD .. "/bench-floor"
local DIR = assert(uv.fs_mkdtemp("/tmp/rxc-XXXXXX"))
local ORCH = "bench-cpu"

-- Writes text to path (0600, or mode: its permission bits).
local function write_file(path, text, mode)
  assert(files.write_atomic(path, text, false))
  if mode then uv.fs_chmod(path, mode) end
end

-- A private environment: homes under DIR, the fake agent as REASONIX_BIN, defaults for every limit.
local function private_env()
  for k in pairs(uv.os_environ()) do
    if (k:match("^REASONIX_MCP_") and k ~= "REASONIX_MCP_LUA_DIR") or k:match("^FAKE_ACP_") then uv.os_unsetenv(k) end
  end
  for _, d in ipairs({ "home", "rx", "ws", "h", "floor" }) do assert(files.mkdir_p(DIR .. "/" .. d, tonumber("700", 8))) end
  write_file(DIR .. "/reasonix", string.format("#!/bin/sh\nexec '%s' script '%s/tests/fake_agent/fake_acp.lua' \"$@\"\n",
    EXE, REPO), tonumber("755", 8))
  local env = { HOME = DIR .. "/home", REASONIX_HOME = DIR .. "/rx", REASONIX_BIN = DIR .. "/reasonix",
                REASONIX_MCP_HOME = DIR .. "/h", REASONIX_MCP_ORCHESTRATOR_ID = ORCH, FAKE_ACP_STAMP = DIR .. "/stamp",
                REASONIX_MCP_DASHBOARD_AUTOSTART = "0", REASONIX_MCP_SANDBOX_READ = REPO .. ":" .. BUILD }
  for k, v in pairs(env) do uv.os_setenv(k, v) end
end

-- The ns pid has run (/proc/PID/schedstat), or nil when it is gone.
local function run_ns(pid)
  local s = files.read(string.format("/proc/%d/schedstat", pid))
  return s and tonumber(s:match("^(%d+)")) or nil
end

-- The user+system seconds of this process's reaped children (/proc/self/stat cutime + cstime).
local function children_s()
  local rest = assert(files.read("/proc/self/stat")):match("^%d+ %b() (.*)$")
  local f = {}
  for x in rest:gmatch("%S+") do f[#f + 1] = x end
  return (tonumber(f[14]) + tonumber(f[15])) / 100 -- (rest starts at field 3: cutime and cstime are 16 and 17)
end

-- A JSON-RPC tools/call line for the client's plan ("@ID@" is the client's id).
local function tool_call(name, args)
  local line = json.encode({ jsonrpc = "2.0", id = 0, method = "tools/call", params = { name = name, arguments = args or {} } })
  return (line:gsub('"id":0', '"id":@ID@', 1))
end

-- Runs bench-client rtt on plan lines (N rounds, 20 warm); returns the p50 of the case (µs).
local function run_client(plan, rounds_n)
  local path = DIR .. "/plan"
  write_file(path, table.concat(plan, "\n") .. "\n")
  local out, code = {}, nil
  async.await(function(resume)
    assert(proc.spawn({ file = CLIENT, args = { "rtt", path, tostring(rounds_n), "20" }, cwd = DIR .. "/ws",
      stdin = "null", stdout = "pipe", stderr = { file = DIR .. "/client.err", append = true },
      on_line = function(line) out[#out + 1] = line end,
      on_exit = function(c) code = c; resume() end }))
  end)
  assert(code == 0, "bench-client exited " .. tostring(code) .. ": " .. (files.read(DIR .. "/client.err") or ""):sub(-400))
  for _, line in ipairs(out) do
    local r = json.decode(line)
    if r and r.case then
      assert(r.errors == 0, tostring(r.error))
      return r.p50
    end
  end
  error("bench-client reported no case")
end

-- The plan lines of one side's case: ours (the launcher and our server) or the floor's.
local function plan_of(side, sid)
  local plan = {}
  local function line(...) plan[#plan + 1] = table.concat({ ... }, "\t") end
  if side == "ours" then
    line("server", "s", EXE)
    if kind == "poll" then
      line("case", "c", "s", tool_call("reasonix_poll", { session_id = sid }))
    elseif kind == "send" then
      line("case", "c", "s", tool_call("reasonix_send", { session_id = sid, message = "hi" }))
      line("pre", "c", tool_call("reasonix_watch", { session_ids = { sid }, timeout = 30 }))
    else
      line("case", "c", "s", tool_call("reasonix_watch", { session_ids = { sid }, timeout = 30 }))
      line("pre", "c", tool_call("reasonix_send", { session_id = sid, message = "[fake:stamp] wake" }))
      line("stamp", "c", DIR .. "/stamp")
    end
  else
    line("server", "s", FLOOR, "launch", DIR .. "/f.sock", DIR .. "/floor")
    if kind == "poll" then
      line("case", "c", "s", tool_call("reasonix_poll_idle"))
    elseif kind == "send" then
      line("case", "c", "s", tool_call("reasonix_send_idle"))
      line("pre", "c", tool_call("watch_pre"))
    else
      line("case", "c", "s", tool_call("stamp_watch"))
      line("stamp", "c", DIR .. "/floor/stamp")
    end
  end
  return plan
end

-- One side's run of N and of N/5: p50 (µs) and CPU per call (µs) of the chain and of daemon pid.
local function measure(side, sid, daemon_pid)
  local small = n // 5
  local cpu = {}
  local p50
  for _, count in ipairs({ small, n }) do
    local c0, d0 = children_s(), run_ns(daemon_pid)
    p50 = run_client(plan_of(side, sid), count)
    cpu[count] = { chain = children_s() - c0, daemon = (run_ns(daemon_pid) - d0) / 1e9 }
  end
  local per = function(k) return (cpu[n][k] - cpu[small][k]) / (n - small) * 1e6 end
  return { p50 = p50, chain = per("chain"), daemon = per("daemon") }
end

-- The canned answers of the floor (its tool names are ours with what they stand for): ours as
-- the fake session gives them, so both sides move the same bytes.
local function can_floor_answers(c, sid)
  local poll = assert(c:call("poll", { session_id = sid }))
  write_file(DIR .. "/floor/reasonix_poll_idle.json", json.encode({ content = { { type = "text", text = json.encode(poll) } },
                                                                  structuredContent = poll }))
  local sent = { session_id = sid, delivered = "new_turn", status = "idle" }
  write_file(DIR .. "/floor/reasonix_send_idle.json", json.encode({ content = { { type = "text", text = json.encode(sent) } },
                                                                  structuredContent = sent }))
end

local code = 0
local agentd_pid, floor -- (stopped on an error too)
async.run(function()
  private_env()
  local c = client.new({ home = DIR .. "/h", orchestrator_id = ORCH, project_dir = DIR .. "/ws", exe = EXE,
                         start_timeout_ms = 60000, client_info = { name = "cpu-per-call" } })
  assert(c:wait_connected())
  agentd_pid = c.info.agentd_pid
  local sid = assert(c:call("spawn", { task = "hi", cwd = DIR .. "/ws", model = "fake/fake-model" })).session_id
  assert(c:call("watch", { session_ids = { sid } }))
  can_floor_answers(c, sid)
  floor = assert(proc.spawn({ file = FLOOR, args = { "daemon", DIR .. "/f.sock", DIR .. "/floor" }, stdin = "pipe",
    stdout = "null", stderr = { file = DIR .. "/floor.err", append = true }, stdout_mode = "raw", on_exit = function() end }))
  while not uv.fs_stat(DIR .. "/f.sock") do async.sleep(10) end
  async.sleep(1000) -- (what the session's start left for agentd to do is done first)
  print(string.format("%s, N %d: p50 and CPU per call (us); chain = bench-client + launcher + MCP server", kind, n))
  print(string.format("%-6s %8s %8s %8s   %-6s %8s %8s %8s", "ours", "p50", "chain", "agentd", "floor", "p50", "chain", "daemon"))
  for _ = 1, rounds do
    local o = measure("ours", sid, agentd_pid)
    local f = measure("floor", sid, floor:pid())
    print(string.format("%-6s %8.1f %8.1f %8.1f   %-6s %8.1f %8.1f %8.1f", "", o.p50, o.chain, o.daemon, "", f.p50, f.chain,
      f.daemon))
  end
  floor.stdin:shutdown()
  assert(c:call("shutdown", {}))
  c:close()
  while uv.kill(agentd_pid, 0) == 0 do async.sleep(50) end
  agentd_pid, floor = nil, nil
end, function(e)
  io.stderr:write("cpu_per_call: ", tostring(e), "\n")
  code = 1
  if floor then floor:kill() end
  if agentd_pid then uv.kill(agentd_pid, "sigterm") end
  uv.stop() -- (the client's connection would keep the loop running)
end)
uv.run()
os.execute("rm -rf '" .. DIR .. "'")
os.exit(code)
