-- Benchmark of reasonix-mcp: speed and memory of agentd and the MCP server, each measured next to a
-- baseline taken in the same run on the same machine, printed as a table with ratios and targets.
-- Run: build/reasonix-mcp script bench/run.lua [--quick] [--strict] [--no-real] [--json FILE]
--      (or: cmake --build build --target bench; RMCP_BENCH_ARGS=--quick for the short run)
-- Everything runs offline against the fake ACP agent (tests/fake_agent/fake_acp.lua) in a private
-- REASONIX_MCP_HOME under /tmp; the real agent row runs only when the pinned agent is installed.
-- Exit code: 2 the run crashed, 1 a process was left behind (or, with --strict, a target was missed),
-- else 0: a missed target is a FAIL mark in the table, not a failed command (timings depend on the host).
-- See bench/README.md for the rows, the targets and how to read the table.
local uv = require "luv"
local proc = require "rmcp.proc"
local sys = require "rmcp.sys"
local async = require "rmcp.lib.async"
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local client = require "rmcp.agentd_client"
local acp = require "rmcp.acp.client"
local contract = require "rmcp.rules.contract"
local host = require "rmcp.host"

-- ---- options -------------------------------------------------------------------------------

local QUICK, JSON_OUT, NO_REAL, STRICT = false, nil, false, false
do
  -- RMCP_BENCH_ARGS adds arguments (the cmake target passes none: RMCP_BENCH_ARGS=--quick there)
  local args = {}
  for _, a in ipairs(arg) do args[#args + 1] = a end
  for a in (os.getenv("RMCP_BENCH_ARGS") or ""):gmatch("%S+") do args[#args + 1] = a end
  local i = 1
  while args[i] do
    local a = args[i]
    if a == "--quick" then QUICK = true
    elseif a == "--json" and args[i + 1] then JSON_OUT = args[i + 1]; i = i + 1
    elseif a == "--no-real" then NO_REAL = true
    elseif a == "--strict" then STRICT = true
    else
      io.stderr:write("usage: reasonix-mcp script bench/run.lua [--quick] [--strict] [--no-real] [--json FILE]\n")
      return sys.stop(2)
    end
    i = i + 1
  end
end

-- Sizes of each phase (full run under ~2 min, --quick under ~30 s on 2 cores).
-- flood: chunk events per fake flood turn (also the unit of the memory phase: 2 floods = 100k unpolled
-- events, then mem_floods - 2 more to see whether memory keeps growing per unpolled turn).
local P = QUICK and {
  flood = 50000, flood_reps = 2, rtt = 500, mcp_rtt = 300, spawn_reps = 3, sessions = 50, mem_floods = 4, chatty = 5,
  real_reps = 3, deadline_s = 90,
} or {
  flood = 50000, flood_reps = 8, rtt = 5000, mcp_rtt = 3000, spawn_reps = 20, sessions = 50, mem_floods = 6, chatty = 10,
  real_reps = 7, deadline_s = 300,
}

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local REPO = uv.fs_realpath(here .. "/..") or (here .. "/..")
package.path = REPO .. "/tests/support/?.lua;" .. package.path
local procs = require "procs"
local EXE = host.exe
local FAKE = REPO .. "/tests/fake_agent/fake_acp.lua"

-- ---- small helpers -------------------------------------------------------------------------

local function now_s() return uv.hrtime() / 1e9 end

local function read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

local function write_file(path, text, mode)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
  if mode then uv.fs_chmod(path, mode) end
end

local function sh_quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- VmRSS / VmHWM of pid in KiB (nil when gone).
local function vm(pid, field)
  local s = read_file(string.format("/proc/%d/status", pid))
  return s and tonumber(s:match(field .. ":%s*(%d+)")) or nil
end
local function rss_kib(pid) return vm(pid, "VmRSS") end

local CLK_TCK = 100
do
  local p = io.popen("getconf CLK_TCK 2>/dev/null")
  if p then CLK_TCK = tonumber(p:read("l") or "") or 100; p:close() end
end

-- User+system CPU seconds of pid (from /proc/<pid>/stat; 1/CLK_TCK resolution).
local function cpu_of(pid)
  local s = read_file(string.format("/proc/%d/stat", pid))
  if not s then return nil end
  local rest = s:match("^%d+ %b() (.*)$")
  local f = {}
  for x in rest:gmatch("%S+") do f[#f + 1] = x end
  -- rest starts at field 3 (state); utime/stime are fields 14/15
  return (tonumber(f[12]) + tonumber(f[13])) / CLK_TCK
end

-- Our own CPU seconds (getrusage, µs resolution).
local function self_cpu()
  local r = uv.getrusage()
  return r.utime.sec + r.utime.usec / 1e6 + r.stime.sec + r.stime.usec / 1e6
end

-- Times measured and baseline calls alternately n times, after 20 warm-up pairs, so host load
-- hits both sides alike; returns both lists of seconds, sorted.
local function interleaved(n, measured, baseline)
  for _ = 1, 20 do measured(); baseline() end
  local m, b = {}, {}
  for i = 1, n do
    local t0 = uv.hrtime(); baseline(); b[i] = (uv.hrtime() - t0) / 1e9
    t0 = uv.hrtime(); measured(); m[i] = (uv.hrtime() - t0) / 1e9
  end
  table.sort(m); table.sort(b)
  return m, b
end

local function percentile(sorted, q)
  if #sorted == 0 then return 0 end
  local i = math.max(1, math.min(#sorted, math.ceil(q * #sorted)))
  return sorted[i]
end

local function median(list)
  local s = {}
  for i, v in ipairs(list) do s[i] = v end
  table.sort(s)
  if #s == 0 then return 0 end
  if #s % 2 == 1 then return s[(#s + 1) // 2] end
  return (s[#s // 2] + s[#s // 2 + 1]) / 2
end

local function env_list(map)
  local keys, out = {}, {}
  for k in pairs(map) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do out[#out + 1] = k .. "=" .. map[k] end
  return out
end

-- Our environment as a map, with extra applied (false removes a key).
local function env_with(extra)
  local m = {}
  for k, v in pairs(uv.os_environ()) do m[k] = v end
  for k, v in pairs(extra or {}) do m[k] = v or nil end
  return m
end

-- Runs fn(done) and waits up to ms for done(...); returns its values or nil, "timeout: what".
local function await_timeout(ms, what, start)
  local timer = uv.new_timer()
  local r = table.pack(async.await(function(resume)
    timer:start(ms, 0, function() resume("__timeout__") end)
    start(resume)
  end))
  if not timer:is_closing() then timer:close() end
  if r[1] == "__timeout__" then return nil, "timeout: " .. what end
  return table.unpack(r, 1, r.n)
end

-- ---- the run's private world ---------------------------------------------------------------

local LOAD0 = uv.loadavg() -- 1-minute load average when the run starts (printed in the header)
local RUN_ID = string.format("%d-%d", uv.os_getpid(), math.floor(uv.hrtime() % 1e9))
local DIR = assert(uv.fs_mkdtemp("/tmp/rxb-XXXXXX"))
local MCP_HOME = DIR .. "/h"
local WS = DIR .. "/ws"
local WRAPPER = DIR .. "/reasonix"
uv.fs_mkdir(WS, tonumber("755", 8))
write_file(WRAPPER, "#!/bin/sh\nexec " .. sh_quote(EXE) .. " script " .. sh_quote(FAKE) .. ' "$@"\n', tonumber("755", 8))
write_file(DIR .. "/idle.lua", [[
-- A bare reasonix-mcp script that idles until its stdin closes (the memory baseline).
local channel = require "rmcp.channel"
local sys = require "rmcp.sys"
local ch
ch = assert(channel.open(0, { mode = "raw", read = true, write = false, on_data = function() end,
  on_eof = function() ch:close(); sys.stop(0) end }))
]])

-- The real agent (optional row), looked up before REASONIX_BIN is pointed at the fake.
local REAL_AGENT = (function()
  local ok, rh = pcall(require, "reasonix_home")
  local bin = ok and rh.find_agent()
  if bin and uv.fs_access(bin, "X") then return bin end
  return nil
end)()

-- Every process this run starts inherits the marker, so leftovers can be found at the end.
-- Caps and knobs of the caller would skew the numbers; REASONIX_MCP_LUA_DIR (which Lua tree runs)
-- is kept, so two trees can be compared with one binary.
for k in pairs(uv.os_environ()) do
  if (k:match("^REASONIX_MCP_") and k ~= "REASONIX_MCP_LUA_DIR") or k:match("^FAKE_ACP_") then uv.os_unsetenv(k) end
end
local ENV0 = {
  RMCP_BENCH_RUN = RUN_ID, REASONIX_MCP_HOME = MCP_HOME, REASONIX_BIN = WRAPPER,
  FAKE_ACP_FLOOD = tostring(P.flood),
}
for k, v in pairs(ENV0) do uv.os_setenv(k, v) end

local rows, notes = {}, {}
local cleanups = {} -- run on a crash too (newest first)
local function note(fmt, ...) notes[#notes + 1] = string.format(fmt, ...) end

-- Units: memory in KiB, rates in events/s, times in seconds; these format them for the table.
local MiB = 1024
local function fmt_rate(v) return string.format("%.1fk ev/s", v / 1000) end
local function fmt_us(v) return string.format("%.1f us", v * 1e6) end
local function fmt_ms(v) return string.format("%.1f ms", v * 1e3) end
local function fmt_mib(v) return string.format("%.2f MiB", v / MiB) end
local units = { [fmt_rate] = "events/s", [fmt_us] = "s", [fmt_ms] = "s", [fmt_mib] = "KiB" }

-- Adds a result row. r: section, what, value, base, fmt (one of the above), target =
-- { on = "ratio"|"value", op = "<="|">=", limit, text }. ratio = value / base.
local function row(r)
  r.unit = units[r.fmt]
  if r.value and r.base and r.base ~= 0 then r.ratio = r.value / r.base end
  local t = r.target
  if t and r.value then
    local x = t.on == "ratio" and r.ratio or r.value
    if x == nil then r.pass = false
    elseif t.op == "<=" then r.pass = x <= t.limit
    else r.pass = x >= t.limit end
  end
  rows[#rows + 1] = r
  io.stderr:write(string.format("bench: %s: %s\n", r.what, r.value and string.format("%.6g", r.value) or "n/a"))
end

local function phase(name) io.stderr:write("bench: -- ", name, "\n") end

-- ---- raw baselines (no agentd) --------------------------------------------------------------

-- RSS of an idle bare `reasonix-mcp script` process.
local function bare_rss()
  local p = assert(proc.spawn({ file = EXE, args = { "script", DIR .. "/idle.lua" }, env = env_list(env_with()),
    stdin = "pipe", stdout = "null", stderr = "inherit", stdout_mode = "raw", on_exit = function() end }))
  async.sleep(300)
  local kib = rss_kib(p:pid())
  p.stdin:shutdown()
  return kib
end

-- Raw flood: the fake agent's N session/update lines read through rmcp.proc's NDJSON framing with
-- no processing (a count and a substring test for the prompt's answer). Returns lines/s, our CPU
-- per line, the agent's CPU per line.
local function raw_flood(n)
  local phase_, sid, lines, on_setup, on_done = "setup", nil, 0, nil, nil
  local p
  p = assert(proc.spawn({
    file = WRAPPER, args = { "acp" }, cwd = WS, env = env_list(env_with({ FAKE_ACP_FLOOD = tostring(n) })),
    stdin = "pipe", stdout = "pipe", stderr = { file = DIR .. "/raw-agent.err", append = true },
    on_line = function(line)
      if phase_ == "count" then
        lines = lines + 1
        if line:find('"stopReason"', 1, true) then phase_ = "done"; on_done() end
        return
      end
      if phase_ == "setup" then
        local msg = json.decode(line)
        if type(msg) == "table" and msg.id == 2 and type(msg.result) == "table" then
          sid = msg.result.sessionId
          phase_ = "ready"
          on_setup()
        end
      end
    end,
    on_exit = function() end,
  }))
  assert(await_timeout(10000, "raw agent setup", function(resume)
    on_setup = function() resume(true) end
    p.stdin:write('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}')
    p.stdin:write('{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"' .. WS .. '","mcpServers":[]}}')
  end))
  async.sleep(50) -- let the setup notifications pass
  local t0, c0, a0 = now_s(), self_cpu(), cpu_of(p:pid())
  local ok, err = await_timeout(60000, "raw flood", function(resume)
    on_done = function() resume(true) end
    phase_ = "count"
    p.stdin:write(json.encode({ jsonrpc = "2.0", id = 3, method = "session/prompt",
      params = { sessionId = sid, prompt = { { type = "text", text = "[fake:flood] raw" } } } }))
  end)
  assert(ok, err)
  local dt, cpu, acpu = now_s() - t0, self_cpu() - c0, cpu_of(p:pid()) - a0
  p.stdin:shutdown()
  return n / dt, cpu / n, acpu / n, lines
end

-- Raw spawn: the agent started directly with the ACP client (no daemon): initialize, session/new,
-- the same first prompt agentd sends, until the prompt's answer. Returns seconds.
local function raw_turn(bin, cwd, env, task)
  local t0 = now_s()
  local agent = assert(acp.start({ bin = bin, args = { "acp" }, cwd = cwd, env = env, on_update = function() end }))
  local _, ierr = agent:initialize({ name = "bench", version = "0" })
  assert(not ierr, "initialize: " .. tostring(ierr))
  local res, nerr = agent:call("session/new", { cwd = cwd, mcpServers = json.array() })
  assert(res, "session/new: " .. tostring(nerr))
  local r, perr = agent:call("session/prompt", { sessionId = res.sessionId,
    prompt = { { type = "text", text = contract.first_prompt(task) } } })
  assert(r, "session/prompt: " .. tostring(perr))
  local dt = now_s() - t0
  async.await(function(resume) agent:stop(resume) end)
  return dt
end

-- ---- agentd --------------------------------------------------------------------------------

local turn_waiters = {} -- session id -> fn(params) for the next agent_event turn_end

local function on_notification(method, params)
  if method == "agent_event" and type(params) == "table" and params.event == "turn_end" then
    local w = turn_waiters[params.session_id]
    if w then turn_waiters[params.session_id] = nil; w(params) end
  end
end

local daemons = {} -- home -> { pid, client }

local function connect(home, project, orch)
  local c = client.connect({ home = home, orchestrator_id = orch or "bench", project_dir = project,
    client_info = { name = "bench", version = "0" }, on_notification = on_notification, start_timeout_ms = 10000 })
  local ok, err = c:wait_connected()
  assert(ok, "agentd: " .. tostring(err))
  daemons[home] = daemons[home] or { pid = math.tointeger(c.info.agentd_pid) or c.info.agentd_pid, clients = {} }
  table.insert(daemons[home].clients, c)
  return c, daemons[home].pid
end

local function call(c, method, params)
  local r, err = c:call(method, params)
  if not r then error(string.format("%s failed: %s (%s)", method, tostring(err and err.message), tostring(err and err.code)), 0) end
  return r
end

-- Watches ids until each has reported a finished turn (or exit); returns the results by id.
local function watch_all(c, ids)
  local left, got = {}, {}
  for _, id in ipairs(ids) do left[id] = true end
  while next(left) do
    local list = {}
    for id in pairs(left) do list[#list + 1] = id end
    local r = call(c, "watch", { session_ids = list, timeout = 60 })
    if r.timed_out then error("watch timed out with " .. #list .. " session(s) still running", 0) end
    for sid, res in pairs(r.results or {}) do
      if res.status ~= "running" and res.status ~= "starting" then
        left[sid] = nil
        got[sid] = res
        if res.status == "exited" then error("session " .. sid .. " exited: " .. tostring(res.error_text), 0) end
      end
    end
  end
  return got
end

local function shutdown_daemon(home)
  local dmn = daemons[home]
  if not dmn then return end
  daemons[home] = nil
  for _, c in ipairs(dmn.clients) do c:close() end
  local c = client.new({ home = home, orchestrator_id = "bench-teardown", autostart = false })
  if c:wait_connected() then
    c:call("shutdown", {})
    c:close()
  else
    c:close()
  end
  for _ = 1, 100 do
    if not procs.alive(dmn.pid) then return true end
    async.sleep(50)
  end
  io.stderr:write("bench: agentd ", dmn.pid, " did not exit; killing it\n")
  uv.kill(dmn.pid, "sigkill")
  return false
end

-- ---- MCP server over stdio -----------------------------------------------------------------

local function start_mcp_server(env)
  local peer, p
  p = assert(proc.spawn({
    file = EXE, args = { "server" }, cwd = WS, env = env_list(env),
    stdin = "pipe", stdout = "pipe", stderr = { file = DIR .. "/server.log", append = true },
    on_line = function(line) peer:receive(line) end,
    on_exit = function(code) if peer then peer:close("server exited " .. tostring(code)) end end,
  }))
  peer = jsonrpc.new({ name = "bench-mcp", send = function(line) p.stdin:write(line) end })
  local r, err = async.request(peer, "initialize", { protocolVersion = "2025-06-18", capabilities = {},
    clientInfo = { name = "bench", version = "0" } })
  assert(r, "MCP initialize: " .. tostring(err))
  peer:notify("notifications/initialized", {})
  return peer, p
end

-- ---- the phases ----------------------------------------------------------------------------

local function run()
  local t_start = now_s()

  -- 1. memory baseline: a bare script process
  phase("baselines")
  local bare = bare_rss()
  note("bare `reasonix-mcp script` idle RSS: %.2f MiB", bare / MiB)

  -- 4. agentd idle
  phase("agentd idle and memory")
  local c, apid = connect(MCP_HOME, WS)
  async.sleep(300)
  local idle = rss_kib(apid)
  row({ section = "memory", what = "agentd RSS, idle", value = idle, base = bare, fmt = fmt_mib,
        target = { on = "ratio", op = "<=", limit = 1.5, text = "<= 1.5x bare" } })

  -- 5. N live sessions (fake agents, first turn done)
  local ids = {}
  local answered, failed, first_err = 0, 0, nil
  async.await(function(resume)
    for i = 1, P.sessions do
      c:request("spawn", { task = "hi " .. i, model = "fake/fake-model" }, function(r, err)
        if r then ids[#ids + 1] = r.session_id else failed, first_err = failed + 1, first_err or err end
        answered = answered + 1
        if answered == P.sessions then resume() end
      end)
    end
  end)
  if failed > 0 then
    error(string.format("%d of %d spawns failed; the first: %s", failed, P.sessions,
      tostring(first_err and first_err.message or first_err)), 0)
  end
  watch_all(c, ids)
  async.sleep(200)
  local with_sessions = rss_kib(apid)
  local per = (with_sessions - idle) / P.sessions
  row({ section = "memory", what = string.format("agentd RSS per live session (%d)", P.sessions), value = per,
        base = bare, fmt = fmt_mib, target = { on = "value", op = "<=", limit = 0.25 * MiB, text = "<= 0.25 MiB" } })
  note("agentd RSS with %d live sessions: %.2f MiB (idle %.2f MiB)", P.sessions, with_sessions / MiB, idle / MiB)

  -- 6. unpolled floods on one session: growth over the first 100k chunk events (the event buffer
  -- fills and then drops the oldest), then growth per further unpolled flood turn, which a bounded
  -- session keeps near zero; and the turn texts a detailed poll hands back after all of them.
  local msid = call(c, "spawn", { task = "mem", model = "fake/fake-model" }).session_id
  watch_all(c, { msid })
  async.sleep(100)
  local before = rss_kib(apid)
  local after = {}
  for k = 1, P.mem_floods do
    local ok, err = await_timeout(60000, "flood turn end", function(resume)
      turn_waiters[msid] = resume
      call(c, "send", { session_id = msid, message = "[fake:flood] mem " .. k })
    end)
    assert(ok, err)
    async.sleep(100)
    after[k] = rss_kib(apid)
  end
  row({ section = "memory", what = string.format("agentd RSS growth, %dk unpolled chunks", 2 * P.flood // 1000),
        value = after[2] - before, base = bare, fmt = fmt_mib,
        target = { on = "value", op = "<=", limit = 16 * MiB, text = "<= 16 MiB" } })
  local further = P.mem_floods - 2
  row({ section = "memory", what = string.format("  then per further unpolled %dk-chunk turn (%d)", P.flood // 1000, further),
        value = (after[P.mem_floods] - after[2]) / further, base = bare, fmt = fmt_mib,
        target = { on = "value", op = "<=", limit = 0.25 * MiB, text = "<= 0.25 MiB" } })
  local p = call(c, "poll", { session_id = msid, detail = true, max_events = 200 })
  local held = 0
  for _, t in ipairs(p.turns or {}) do held = held + #(t.text or "") end
  row({ section = "memory", what = string.format("  turn text held for the unpolled session (%d turns)", #(p.turns or {})),
        value = held / 1024, base = bare, fmt = fmt_mib,
        target = { on = "value", op = "<=", limit = 0.4 * MiB, text = "<= 0.4 MiB" } })
  note("unpolled flood session: %d chunks counted, %d events dropped, detailed poll %d KiB; agentd VmHWM %.1f MiB",
    p.counters and p.counters.chunks or -1, p.events_dropped or -1, #(json.encode(p) or "") // 1024,
    (vm(apid, "VmHWM") or 0) / MiB)

  -- 6b. chatty fleet: `chatty` of the live sessions flood at once while one watch waits for their
  -- turn ends (the normal orchestrator loop); RSS growth per session afterwards. Runs after the
  -- rows above because the heap it leaves behind would hide their growth.
  local chatty = {}
  for i = 1, P.chatty do chatty[i] = ids[i] end
  local rss_before_chatty = rss_kib(apid)
  for _, sid in ipairs(chatty) do call(c, "send", { session_id = sid, message = "[fake:flood] chatty" }) end
  watch_all(c, chatty)
  async.sleep(200)
  row({ section = "memory", what = string.format("agentd RSS growth per session, %d flooding at once", P.chatty),
        value = (rss_kib(apid) - rss_before_chatty) / P.chatty, base = bare, fmt = fmt_mib,
        target = { on = "value", op = "<=", limit = 2 * MiB, text = "<= 2 MiB" } })
  note("after the chatty floods: agentd RSS %.1f MiB, VmHWM %.1f MiB", rss_kib(apid) / MiB, (vm(apid, "VmHWM") or 0) / MiB)

  -- stop them all: the timing phases run on a daemon with tombstones only
  local stopping = #ids + 1
  ids[#ids + 1] = msid
  async.await(function(resume)
    for _, sid in ipairs(ids) do
      c:request("stop", { session_id = sid }, function()
        stopping = stopping - 1
        if stopping == 0 then resume() end
      end)
    end
  end)

  -- 7. spawn → first turn end: raw agent, through agentd, and through a second agentd whose home is
  -- on tmpfs (shows what the synchronous fsync of every session save costs on this disk); the three
  -- take turns so they share the host's conditions.
  phase("spawn to first turn end")
  local shm = uv.fs_stat("/dev/shm") and uv.fs_mkdtemp("/dev/shm/rxb-XXXXXX")
  local c3
  if shm then
    cleanups[#cleanups + 1] = function() os.execute("rm -rf " .. sh_quote(shm)) end
    c3 = connect(shm .. "/h", WS)
  end
  local function spawn_once(cl)
    local t0 = now_s()
    local sid = call(cl, "spawn", { task = "hi", model = "fake/fake-model" }).session_id
    watch_all(cl, { sid })
    local dt = now_s() - t0
    call(cl, "stop", { session_id = sid })
    return dt
  end
  local fake_env = env_list(env_with())
  local raw_spawn, disk_spawn, shm_spawn = {}, {}, {}
  for i = 1, P.spawn_reps do
    raw_spawn[i] = raw_turn(WRAPPER, WS, fake_env, "hi")
    disk_spawn[i] = spawn_once(c)
    if c3 then shm_spawn[i] = spawn_once(c3) end
  end
  row({ section = "latency", what = "spawn -> first turn end (fake agent, median)", value = median(disk_spawn),
        base = median(raw_spawn), fmt = fmt_ms, target = { on = "ratio", op = "<=", limit = 2.5, text = "<= 2.5x raw" } })
  if c3 then
    row({ section = "latency", what = "  same, agentd home on tmpfs (no fsync cost)", value = median(shm_spawn),
          base = median(raw_spawn), fmt = fmt_ms, target = { on = "ratio", op = "<=", limit = 2.5, text = "<= 2.5x raw" } })
    shutdown_daemon(shm .. "/h")
    os.execute("rm -rf " .. sh_quote(shm))
    table.remove(cleanups)
  end

  -- 8. ingest throughput: flood through agentd to the turn end seen by a watch
  phase("event ingest")
  local fsid = call(c, "spawn", { task = "flood", model = "fake/fake-model" }).session_id
  watch_all(c, { fsid })
  local best_rate, best_cpu = 0, math.huge
  local raw_rate, raw_cpu, raw_agent_cpu = 0, math.huge, math.huge
  for _ = 1, P.flood_reps do
    local rate, cpu, acpu = raw_flood(P.flood)
    raw_rate, raw_cpu, raw_agent_cpu = math.max(raw_rate, rate), math.min(raw_cpu, cpu), math.min(raw_agent_cpu, acpu)
    local t0, c0 = now_s(), cpu_of(apid)
    call(c, "send", { session_id = fsid, message = "[fake:flood] go" })
    watch_all(c, { fsid })
    local dt, cpu = now_s() - t0, cpu_of(apid) - c0
    best_rate = math.max(best_rate, P.flood / dt)
    best_cpu = math.min(best_cpu, cpu / P.flood)
  end
  row({ section = "throughput", what = string.format("event ingest, %dk chunks to turn end", P.flood // 1000),
        value = best_rate, base = raw_rate, fmt = fmt_rate,
        target = { on = "ratio", op = ">=", limit = 0.3, text = ">= 0.3x raw" } })
  row({ section = "throughput", what = "agentd CPU per chunk event", value = best_cpu, base = raw_cpu, fmt = fmt_us,
        target = { on = "value", op = "<=", limit = 15e-6, text = "<= 15 us" } })
  note("raw framing: %.0f lines/s; fake agent CPU %.2f us/line; agentd CPU measured from /proc (1/%d s ticks)",
    raw_rate, raw_agent_cpu * 1e6, CLK_TCK)

  -- 9. poll round trip on the socket, interleaved with the trivial-method baseline
  phase("round trips")
  local polls, nops = interleaved(P.rtt, function() call(c, "poll", { session_id = fsid }) end,
    function() call(c, "$/cancel", { id = -1 }) end)
  row({ section = "latency", what = "agentd socket: poll (idle session) p50", value = percentile(polls, 0.5),
        base = percentile(nops, 0.5), fmt = fmt_us, target = { on = "ratio", op = "<=", limit = 1.5, text = "<= 1.5x trivial" } })
  row({ section = "latency", what = "agentd socket: poll p99", value = percentile(polls, 0.99),
        base = percentile(nops, 0.99), fmt = fmt_us, target = { on = "ratio", op = "<=", limit = 3, text = "<= 3x trivial" } })

  -- 10. the same through the MCP server over stdio, against MCP ping
  local peer, sp = start_mcp_server(env_with({ REASONIX_MCP_ORCHESTRATOR_ID = "bench" }))
  local function mcp_poll()
    local r, err = async.request(peer, "tools/call", { name = "reasonix_poll", arguments = { session_id = fsid } })
    assert(r and not r.isError, "reasonix_poll: " .. tostring(err or (r and r.content and r.content[1].text)))
  end
  local function mcp_ping() assert(async.request(peer, "ping", {})) end
  local mpolls, mpings = interleaved(P.mcp_rtt, mcp_poll, mcp_ping)
  row({ section = "latency", what = "MCP stdio: tools/call reasonix_poll p50", value = percentile(mpolls, 0.5),
        base = percentile(mpings, 0.5), fmt = fmt_us, target = { on = "ratio", op = "<=", limit = 5, text = "<= 5x ping" } })
  row({ section = "latency", what = "MCP stdio: tools/call reasonix_poll p99", value = percentile(mpolls, 0.99),
        base = percentile(mpings, 0.99), fmt = fmt_us, target = { on = "ratio", op = "<=", limit = 8, text = "<= 8x ping" } })
  local server_rss = rss_kib(sp:pid())
  row({ section = "memory", what = "MCP server RSS after the round trips", value = server_rss, base = bare, fmt = fmt_mib,
        target = { on = "ratio", op = "<=", limit = 2, text = "<= 2x bare" } })
  sp.stdin:shutdown()
  await_timeout(5000, "MCP server exit", function(resume)
    local t = uv.new_timer()
    t:start(20, 20, function() if not sp:running() then t:close(); resume(true) end end)
  end)
  call(c, "stop", { session_id = fsid })

  -- 11. the real agent on the offline provider (optional)
  phase("real agent")
  local rh = require "reasonix_home"
  local real = not NO_REAL and REAL_AGENT
  if real then
    local prov = assert(rh.start_provider({ scenario = { { last_role = "user", text = "ok" } } }))
    cleanups[#cleanups + 1] = function() prov:stop() end
    local home = rh.make_home(prov.port, { root = DIR .. "/rx" })
    local renv = {}
    for k, v in pairs(home.env) do renv[k] = v end
    renv.RMCP_BENCH_RUN = RUN_ID
    -- a second daemon whose agents are the real binary (agentd passes its own env to agents)
    local saved = {}
    local set = { REASONIX_BIN = real, HOME = home.home, REASONIX_HOME = home.rxhome, MOCK_API_KEY = "mock-key",
                  REASONIX_LANG = "en" }
    for k, v in pairs(set) do saved[k] = os.getenv(k) or false; uv.os_setenv(k, v) end
    local home2 = DIR .. "/h2"
    local c2 = connect(home2, home.workspace)
    for k, v in pairs(saved) do if v then uv.os_setenv(k, v) else uv.os_unsetenv(k) end end
    local raw_real, via, doctor = {}, {}, {}
    for i = 1, P.real_reps do
      raw_real[i] = raw_turn(real, home.workspace, env_list(renv), "hi")
      local t0 = now_s()
      local sid = call(c2, "spawn", { task = "hi", model = "mock/mock-model" }).session_id
      watch_all(c2, { sid })
      via[i] = now_s() - t0
      call(c2, "stop", { session_id = sid })
      -- the sandbox probe agentd runs (and waits for) on every spawn, alone
      t0 = now_s()
      await_timeout(10000, "doctor", function(resume)
        local dp = proc.spawn({ file = real, args = { "doctor", "--json" }, cwd = home.workspace, env = env_list(renv),
          stdin = "null", stdout = "null", stderr = "null", on_exit = function() resume(true) end })
        if not dp then resume(false) end
      end)
      doctor[i] = now_s() - t0
    end
    note("real agent: `reasonix doctor --json` alone (the posture probe every spawn waits for): %.0f ms median",
      median(doctor) * 1e3)
    row({ section = "latency", what = "spawn -> first turn end (real agent, median)", value = median(via),
          base = median(raw_real), fmt = fmt_ms, target = { on = "ratio", op = "<=", limit = 1.5, text = "<= 1.5x raw" } })
    shutdown_daemon(home2)
    table.remove(cleanups)
    prov:stop()
  else
    note("real agent row skipped: %s", NO_REAL and "--no-real" or "agent not installed (scripts/install-agent.sh)")
  end

  shutdown_daemon(MCP_HOME)
  note("run took %.1f s (%s mode)", now_s() - t_start, QUICK and "quick" or "full")
end

-- ---- report --------------------------------------------------------------------------------

local function pad(s, n) s = tostring(s); return s .. string.rep(" ", math.max(0, n - #s)) end
local function lpad(s, n) s = tostring(s); return string.rep(" ", math.max(0, n - #s)) .. s end

local function report(crashed, left)
  local head = { "what", "measured", "baseline", "ratio", "target", "" }
  local cells = {}
  for _, r in ipairs(rows) do
    cells[#cells + 1] = {
      r.what, r.value and r.fmt(r.value) or "n/a", r.base and r.fmt(r.base) or "-",
      r.ratio and string.format("%.2fx", r.ratio) or "-", r.target and r.target.text or "-",
      r.pass == nil and "" or (r.pass and "PASS" or "FAIL"),
    }
  end
  local w = {}
  for i, h in ipairs(head) do w[i] = #h end
  for _, c in ipairs(cells) do for i, v in ipairs(c) do w[i] = math.max(w[i], #v) end end
  local out = {}
  local rev = ""
  local gp = io.popen("git -C " .. sh_quote(REPO) .. " rev-parse --short HEAD 2>/dev/null")
  if gp then rev = gp:read("l") or ""; gp:close() end
  local un = uv.os_uname()
  local l1 = uv.loadavg()
  out[#out + 1] = string.format("reasonix-mcp bench (%s) %s  %s %s, %d cpu(s), load %.1f at start, %.1f at end  %s",
    QUICK and "--quick" or "full", rev, un.sysname, un.release, #(uv.cpu_info() or {}), LOAD0, l1,
    os.date("!%Y-%m-%dT%H:%M:%SZ"))
  local function line(c)
    return pad(c[1], w[1]) .. "  " .. lpad(c[2], w[2]) .. "  " .. lpad(c[3], w[3]) .. "  " .. lpad(c[4], w[4]) ..
      "  " .. pad(c[5], w[5]) .. "  " .. c[6]
  end
  out[#out + 1] = line(head)
  out[#out + 1] = string.rep("-", w[1] + w[2] + w[3] + w[4] + w[5] + 14)
  for _, c in ipairs(cells) do out[#out + 1] = line(c) end
  for _, n in ipairs(notes) do out[#out + 1] = "  * " .. n end
  if crashed then out[#out + 1] = "  ! the run crashed: " .. tostring(crashed) end
  for _, p in ipairs(left) do out[#out + 1] = string.format("  ! process left behind (killed): pid %d: %s", p.pid, p.cmd) end
  if #left == 0 then out[#out + 1] = "  * no process left behind" end
  print(table.concat(out, "\n"))
  io.stdout:flush()
  if JSON_OUT then
    local list = json.array()
    for _, r in ipairs(rows) do
      list[#list + 1] = { section = r.section, what = r.what, unit = r.unit, value = r.value, baseline = r.base, ratio = r.ratio,
                          target = r.target and r.target.text, pass = r.pass }
    end
    write_file(JSON_OUT, json.encode({ mode = QUICK and "quick" or "full", rev = rev, rows = list,
      notes = json.array(notes), leftovers = #left, crashed = crashed and tostring(crashed) or nil }) .. "\n")
  end
end

async.run(function()
  local watchdog = uv.new_timer()
  local crashed
  watchdog:start(P.deadline_s * 1000, 0, function()
    io.stderr:write("bench: over the ", P.deadline_s, " s deadline; stopping everything\n")
    for _, p in ipairs(procs.find("RMCP_BENCH_RUN=" .. RUN_ID)) do uv.kill(p.pid, "sigkill") end
    os.execute("rm -rf " .. sh_quote(DIR))
    sys.stop(2)
  end)
  local ok, err = xpcall(run, debug.traceback)
  if not ok then
    crashed = err
    io.stderr:write("bench: crashed: ", tostring(err), "\n")
    for home in pairs(daemons) do pcall(shutdown_daemon, home) end
    for i = #cleanups, 1, -1 do pcall(cleanups[i]) end
  end
  local left
  for _ = 1, 50 do
    left = procs.find("RMCP_BENCH_RUN=" .. RUN_ID)
    if #left == 0 then break end
    async.sleep(100)
  end
  for _, p in ipairs(left) do uv.kill(p.pid, "sigkill") end
  watchdog:close()
  report(crashed, left)
  os.execute("rm -rf " .. sh_quote(DIR))
  local failed = false
  for _, r in ipairs(rows) do if r.pass == false then failed = true end end
  sys.stop(crashed and 2 or ((#left > 0 or (STRICT and failed)) and 1 or 0))
end)
