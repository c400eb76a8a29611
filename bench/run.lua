-- Benchmark of reasonix-mcp: speed and memory of agentd and the MCP server, each measured next to a
-- baseline taken in the same run on the same machine, printed as a table with ratios and targets.
-- Run: build/reasonix-mcp script bench/run.lua [--quick] [--strict] [--no-real] [--json FILE] [--ours EXE]
--      (or: cmake --build build --target bench; RMCP_BENCH_ARGS=--quick for the short run)
-- Baselines: a bare `reasonix-mcp script` (memory), the fake or real agent driven directly (spawn,
-- ingest), and for every MCP row the Node SDK's reference server and the floor (bench/floor.c, a C
-- relay over our hops), all driven by one bare C client (bench/client.c). Everything runs offline in
-- a private REASONIX_MCP_HOME under /tmp; the real agent rows run when the pinned agent is installed.
-- Exit code: 2 the run crashed, 3 a dependency is missing (its rows are skipped), 1 a process was left
-- behind (or, with --strict, a target was missed), else 0: a missed target is a FAIL mark in the
-- table, not a failed command (timings depend on the host). See bench/README.md.
local uv = require "luv"
local proc = require "rmcp.proc"
local sys = require "rmcp.sys"
local async = require "rmcp.lib.async"
local json = require "rmcp.lib.json"
local files = require "rmcp.lib.files"
local client = require "rmcp.clients.agentd"
local acp = require "rmcp.acp.client"
local contract = require "rmcp.rules.contract"
local rules_spawn = require "rmcp.rules.spawn"
local host = require "rmcp.host"

-- ---- options -------------------------------------------------------------------------------

local QUICK, JSON_OUT, NO_REAL, STRICT = os.getenv("RMCP_BENCH_QUICK") == "1", nil, false, false
local OURS_ARG = nil -- --ours: another build's reasonix-mcp measured as ours (before/after tables)
local PHASES = { memory = true, spawn = true, sandbox = true, ingest = true, mcp = true, dashboard = true, real = true,
                 forecast = true }
local USAGE = "usage: reasonix-mcp script bench/run.lua [--quick] [--strict] [--no-real] [--json FILE] "
  .. "[--only memory,spawn,sandbox,ingest,mcp,dashboard,real,forecast,agents,scale] [--scale] [--ours EXE]\n"
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
    elseif a == "--ours" and args[i + 1] then OURS_ARG = args[i + 1]; i = i + 1
    elseif a == "--scale" then PHASES.scale = true -- bench/scale.lua: a fleet of 1,000 (never by default)
    elseif a == "--only" and args[i + 1] then
      PHASES = {}
      for name in args[i + 1]:gmatch("[^,]+") do PHASES[name] = true end
      i = i + 1
    else
      io.stderr:write(USAGE)
      return sys.stop(2)
    end
    i = i + 1
  end
end

-- Sizes of each phase (full run ~2 min, --quick under a minute on 2 cores).
-- flood: chunk events per fake flood turn (also the unit of the memory phase: 2 floods = 100k unpolled
-- events, then mem_floods - 2 more to see whether memory keeps growing per unpolled turn).
-- mcp_rtt: interleaved rounds of every MCP round-trip case; cold: starts of each server; wake: turns.
-- paint: page loads of the dashboard (and of its floor); dash_events: turn ends watched on the page.
local P = QUICK and {
  flood = 50000, flood_reps = 3, spawn_reps = 3, sessions = 50, mem_floods = 4, chatty = 5,
  mcp_rtt = 300, mcp_warm = 30, cold = 3, list_sessions = 20, wake = 40, paint = 5, dash_events = 10,
  real_reps = 2, fleet = 8, fleet_reps = 1, forecast_reps = 3, deadline_s = 150,
} or {
  flood = 50000, flood_reps = 8, spawn_reps = 20, sessions = 50, mem_floods = 6, chatty = 10,
  mcp_rtt = 3000, mcp_warm = 100, cold = 10, list_sessions = 20, wake = 200, paint = 15, dash_events = 40,
  real_reps = 5, fleet = 8, fleet_reps = 3, forecast_reps = 5, deadline_s = 420,
}
if PHASES.scale then P.deadline_s = P.deadline_s + 1200 end

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local REPO = uv.fs_realpath(here .. "/..") or (here .. "/..")
package.path = REPO .. "/tests/support/?.lua;" .. package.path
local procs = require "procs"
local EXE = host.exe
local BUILD = EXE:match("^(.*)/[^/]*$") or "."
-- What the rows measure as ours: this build, or --ours EXE (its launcher, MCP server, agentd and
-- dashboard). The harness, the fake agent, the bare-script baseline and the floor stay on this build.
local OURS = OURS_ARG and (uv.fs_realpath(OURS_ARG) or OURS_ARG) or EXE
if not uv.fs_access(OURS, "X") then
  io.stderr:write("--ours " .. OURS .. ": not an executable file\n")
  return sys.stop(2)
end
local FAKE = REPO .. "/tests/fake_agent/fake_acp.lua"
local CLIENT = BUILD .. "/bench-client"
local FLOOR = BUILD .. "/bench-floor"
local PEER_JS = REPO .. "/bench/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

-- ---- small helpers -------------------------------------------------------------------------

local function now_s() return uv.hrtime() / 1e9 end

local function write_file(path, text, mode)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
  if mode then uv.fs_chmod(path, mode) end
end

local function sh_quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- The first executable named name on PATH, or nil.
local function on_path(name)
  for dir in (os.getenv("PATH") or ""):gmatch("[^:]+") do
    if uv.fs_access(dir .. "/" .. name, "X") then return dir .. "/" .. name end
  end
  return nil
end

-- VmRSS / VmHWM of pid in KiB (nil when gone).
local function vm(pid, field)
  local s = files.read(string.format("/proc/%d/status", pid))
  return s and tonumber(s:match(field .. ":%s*(%d+)")) or nil
end
local function rss_kib(pid) return vm(pid, "VmRSS") end

-- How another process's CPU time is read: the scheduler's own count of the time it ran, in ns
-- (/proc/<pid>/schedstat), else user+system time in clock ticks (/proc/<pid>/stat), whose 1/100 s
-- steps are a large part of a short measurement.
local SCHEDSTAT = files.read("/proc/self/schedstat") ~= nil
local CLK_TCK = 100
if not SCHEDSTAT then
  local p = io.popen("getconf CLK_TCK 2>/dev/null")
  if p then CLK_TCK = tonumber(p:read("l") or "") or 100; p:close() end
end
local CPU_CLOCK = SCHEDSTAT and "ns, /proc/PID/schedstat" or string.format("1/%d s ticks", CLK_TCK)

-- CPU seconds pid has used (see SCHEDSTAT), nil when it is gone.
local function cpu_of(pid)
  if SCHEDSTAT then
    local s = files.read(string.format("/proc/%d/schedstat", pid))
    return s and tonumber(s:match("^(%d+)")) / 1e9 or nil
  end
  local s = files.read(string.format("/proc/%d/stat", pid))
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

-- Runs fn(i) for i = 1..n in coroutines of their own and waits for all; re-raises the first error.
local function all(n, fn)
  local left, failure = n, nil
  async.await(function(resume)
    local function one_done()
      left = left - 1
      if left == 0 then resume() end
    end
    for i = 1, n do
      async.run(function() fn(i); one_done() end, function(err) failure = failure or err; one_done() end)
    end
  end)
  if failure then error(failure, 0) end
end

-- ---- the run's private world ---------------------------------------------------------------

local LOAD0 = uv.loadavg() -- 1-minute load average when the run starts (printed in the header)
local RUN_ID = string.format("%d-%d", uv.os_getpid(), math.floor(uv.hrtime() % 1e9))
local DIR = assert(uv.fs_mkdtemp("/tmp/rxb-XXXXXX"))
local MCP_HOME = DIR .. "/h"
local WS = DIR .. "/ws"
local WRAPPER = DIR .. "/reasonix"
local STAMP = DIR .. "/stamp"        -- the fake agent's turn-end stamps (watch wake-up row)
local FLOOR_DIR = DIR .. "/floor"    -- the floor's socket and canned answers
uv.fs_mkdir(WS, tonumber("755", 8))
uv.fs_mkdir(FLOOR_DIR, tonumber("700", 8))
write_file(WRAPPER, "#!/bin/sh\nexec " .. sh_quote(EXE) .. " script " .. sh_quote(FAKE) .. ' "$@"\n', tonumber("755", 8))
write_file(DIR .. "/idle.lua", [[
-- A bare reasonix-mcp script that idles until its stdin closes (the memory baseline).
local channel = require "rmcp.channel"
local sys = require "rmcp.sys"
local ch
ch = assert(channel.open(0, { mode = "raw", read = true, write = false, on_data = function() end,
  on_eof = function() ch:close(); sys.stop(0) end }))
]])

-- The real agent (optional rows), looked up before REASONIX_BIN is pointed at the fake.
local REAL_AGENT = (function()
  local ok, rh = pcall(require, "reasonix_home")
  local bin = ok and rh.find_agent()
  if bin and uv.fs_access(bin, "X") then return bin end
  return nil
end)()

-- What the MCP rows need beyond reasonix-mcp; each missing piece is a `!` line and exit code 3.
local NODE = on_path("node")
local missing = {}
if not uv.fs_access(CLIENT, "X") or not uv.fs_access(FLOOR, "X") then
  missing[#missing + 1] = string.format("%s and %s (cmake --build %s: targets bench-client, bench-floor)",
    CLIENT, FLOOR, BUILD)
end
if not NODE then missing[#missing + 1] = "node on PATH (scripts/install-deps.sh installs nodejs)" end
if not uv.fs_stat(PEER_JS) then
  missing[#missing + 1] = "the Node peer " .. PEER_JS .. " (scripts/install-deps.sh: npm ci --prefix bench)"
end

-- What the dashboard rows need: the browser and its driver (the end-to-end suite installs it).
local CHROMIUM = "/usr/bin/chromium"
local PLAYWRIGHT = REPO .. "/tests/e2e/node_modules/playwright-core/package.json"
local dash_missing = {}
if not uv.fs_access(CHROMIUM, "X") then dash_missing[#dash_missing + 1] = CHROMIUM .. " (scripts/install-deps.sh installs chromium)" end
if not uv.fs_stat(PLAYWRIGHT) then dash_missing[#dash_missing + 1] = "playwright-core (scripts/install-deps.sh: npm ci --prefix tests/e2e)" end
if not NODE then dash_missing[#dash_missing + 1] = "node on PATH" end
for _, m in ipairs(dash_missing) do missing[#missing + 1] = m end

-- Every process this run starts inherits the marker, so leftovers can be found at the end.
-- Caps and knobs of the caller would skew the numbers; REASONIX_MCP_LUA_DIR (which Lua tree runs)
-- is kept, so two trees can be compared with one binary.
for k in pairs(uv.os_environ()) do
  if (k:match("^REASONIX_MCP_") and k ~= "REASONIX_MCP_LUA_DIR") or k:match("^FAKE_ACP_") then uv.os_unsetenv(k) end
end
local ENV0 = {
  RMCP_BENCH_RUN = RUN_ID, REASONIX_MCP_HOME = MCP_HOME, REASONIX_BIN = WRAPPER,
  FAKE_ACP_FLOOD = tostring(P.flood), FAKE_ACP_STAMP = STAMP,
  REASONIX_MCP_DASHBOARD_AUTOSTART = "0", -- the rows measure the server and agentd alone
  -- the fake agent (our binary, its Lua tree and the fake's script) stays readable in a sandbox
  -- wherever the checkout is (a sandbox hides /tmp and the home)
  REASONIX_MCP_SANDBOX_READ = REPO .. ":" .. BUILD,
}
for k, v in pairs(ENV0) do uv.os_setenv(k, v) end

local rows, notes, problems = {}, {}, {}
local cleanups = {} -- run on a crash too (newest first)
local function note(fmt, ...) notes[#notes + 1] = string.format(fmt, ...) end

-- Units: memory in KiB, rates in events/s, times in seconds, sizes in bytes; these format them.
local MiB = 1024
local function fmt_rate(v) return string.format("%.1fk ev/s", v / 1000) end
local function fmt_us(v) return string.format("%.1f us", v * 1e6) end
local function fmt_ms(v) return string.format("%.1f ms", v * 1e3) end
local function fmt_mib(v) return string.format("%.2f MiB", v / MiB) end
local function fmt_bytes(v) return string.format("%d B", v) end
local units = { [fmt_rate] = "events/s", [fmt_us] = "s", [fmt_ms] = "s", [fmt_mib] = "KiB", [fmt_bytes] = "bytes" }

-- Adds a result row. r: section, what, value, base, fmt (one of the above), ahead (the ratio is
-- base / value: how many times faster than the baseline; else value / base), target =
-- { on = "ratio"|"value"|"over" (value - base), op = "<="|">=", limit, text }.
local function row(r)
  r.unit = units[r.fmt]
  if r.value and r.base and r.base ~= 0 and r.value ~= 0 then
    r.ratio = r.ahead and r.base / r.value or r.value / r.base
  end
  local t = r.target
  if t and r.value then
    local x = (t.on == "ratio" and r.ratio) or (t.on == "over" and r.base and r.value - r.base) or (t.on == "value" and r.value) or nil
    if x == nil then r.pass = false
    elseif t.op == "<=" then r.pass = x <= t.limit
    else r.pass = x >= t.limit end
  end
  rows[#rows + 1] = r
  io.stderr:write(string.format("bench: %s: %s\n", r.what, r.value and string.format("%.6g", r.value) or "n/a"))
end

local function phase(name) io.stderr:write("bench: -- ", name, "\n") end

-- ---- raw baselines (no agentd) --------------------------------------------------------------

-- RSS of an idle bare `reasonix-mcp script` process: the median of BARE_SAMPLES run at once (identical
-- processes read up to 0.2 MiB apart here, as their share of the C library's pages differs), and the
-- lowest and highest of them.
local BARE_SAMPLES = 5
local function bare_rss()
  local ps = {}
  for i = 1, BARE_SAMPLES do
    ps[i] = assert(proc.spawn({ file = EXE, args = { "script", DIR .. "/idle.lua" }, env = env_list(env_with()),
      stdin = "pipe", stdout = "null", stderr = "inherit", stdout_mode = "raw", on_exit = function() end }))
  end
  async.sleep(300)
  local kib = {}
  for i, p in ipairs(ps) do kib[i] = rss_kib(p:pid()) end
  for _, p in ipairs(ps) do p.stdin:shutdown() end
  return median(kib), math.min(table.unpack(kib)), math.max(table.unpack(kib))
end

-- A fake agent read raw: one session, whose floods are read through rmcp.proc's NDJSON framing with
-- no processing (a count and a substring test for the prompt's answer). The fake builds a session's
-- flood once, so the same raw agent serves every rep. Returns an object with :flood() -> lines/s,
-- our CPU per line, the agent's CPU per line; and :close().
local function raw_flooder()
  local state, sid, on_setup, on_done = "setup", nil, nil, nil
  local p = assert(proc.spawn({
    file = WRAPPER, args = { "acp" }, cwd = WS, env = env_list(env_with()),
    stdin = "pipe", stdout = "pipe", stderr = { file = DIR .. "/raw-agent.err", append = true },
    on_line = function(line)
      if state == "count" then
        if line:find('"stopReason"', 1, true) then state = "idle"; on_done() end
        return
      end
      if state == "setup" then
        local msg = json.decode(line)
        if type(msg) == "table" and msg.id == 2 and type(msg.result) == "table" then
          sid = msg.result.sessionId
          state = "idle"
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
  local n_prompt = 2
  local self = {}
  function self.flood()
    local t0, c0, a0 = now_s(), self_cpu(), cpu_of(p:pid())
    n_prompt = n_prompt + 1
    local ok, err = await_timeout(60000, "raw flood", function(resume)
      on_done = function() resume(true) end
      state = "count"
      p.stdin:write(json.encode({ jsonrpc = "2.0", id = n_prompt, method = "session/prompt",
        params = { sessionId = sid, prompt = { { type = "text", text = "[fake:flood] raw" } } } }))
    end)
    assert(ok, err)
    local dt, cpu, acpu = now_s() - t0, self_cpu() - c0, cpu_of(p:pid()) - a0
    return P.flood / dt, cpu / P.flood, acpu / P.flood
  end
  function self.close() p.stdin:shutdown() end
  return self
end

-- The options agentd would use for a spawn with params (defaults filled as in agentd).
local function spawn_options(params)
  return assert(rules_spawn.options(params))
end

-- Raw spawn: the agent started directly with the ACP client (no daemon): initialize, session/new,
-- the same session/set_config_option calls agentd makes for o (rules.spawn decides them), the same
-- first prompt, until the prompt's answer. Returns seconds since t0 (default: the call) and the agent
-- (still running: the caller stops it).
local function raw_turn(bin, cwd, env, task, o, t0)
  t0 = t0 or now_s()
  local agent = assert(acp.start({ bin = bin, args = { "acp" }, cwd = cwd, env = env, on_update = function() end }))
  local _, ierr = agent:initialize({ name = "bench", version = "0" })
  assert(not ierr, "initialize: " .. tostring(ierr))
  local res, nerr = agent:call("session/new", { cwd = cwd, mcpServers = json.array() })
  assert(res, "session/new: " .. tostring(nerr))
  local options = res.configOptions or {}
  for _, key in ipairs(o and rules_spawn.order or {}) do
    local step = rules_spawn.step(key, o, options)
    if step.set then
      local r = agent:call("session/set_config_option", { sessionId = res.sessionId, configId = step.id, value = step.set })
      if type(r) == "table" and type(r.configOptions) == "table" then options = r.configOptions end
    end
  end
  local r, perr = agent:call("session/prompt", { sessionId = res.sessionId,
    prompt = { { type = "text", text = contract.first_prompt(task) } } })
  assert(r, "session/prompt: " .. tostring(perr))
  return now_s() - t0, agent
end

-- Stops agents (from raw_turn) and waits until each has exited.
local function stop_agents(agents)
  all(#agents, function(i) async.await(function(resume) agents[i]:stop(resume) end) end)
end

-- ---- agentd --------------------------------------------------------------------------------

local turn_waiters = {} -- session id -> fn(params) for the next agent_event turn_end

local function on_notification(method, params)
  if method == "agent_event" and type(params) == "table" and params.event == "turn_end" then
    local w = turn_waiters[params.session_id]
    if w then turn_waiters[params.session_id] = nil; w(params) end
  end
end

local daemons = {} -- home -> { pid, clients }

local function connect(home, project, orch)
  local c = client.connect({ home = home, orchestrator_id = orch or "bench", project_dir = project,
    client_info = { name = "bench", version = "0" }, on_notification = on_notification, start_timeout_ms = 10000,
    exe = OURS_ARG and OURS or nil })
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

-- Spawns n sessions on c at once (fake or real agents per the daemon's env); returns their ids.
local function spawn_many(c, n, params)
  local ids, failed, first_err, answered = {}, 0, nil, 0
  async.await(function(resume)
    for i = 1, n do
      local p = {}
      for k, v in pairs(params) do p[k] = v end
      p.task = (params.task or "hi") .. (n > 1 and (" " .. i) or "")
      c:request("spawn", p, function(r, err)
        if r then ids[#ids + 1] = r.session_id else failed, first_err = failed + 1, first_err or err end
        answered = answered + 1
        if answered == n then resume() end
      end)
    end
  end)
  if failed > 0 then
    error(string.format("%d of %d spawns failed; the first: %s", failed, n,
      tostring(first_err and first_err.message or first_err)), 0)
  end
  return ids
end

-- Stops the sessions ids on c, all at once, and waits for the answers.
local function stop_many(c, ids)
  if #ids == 0 then return end
  local left = #ids
  async.await(function(resume)
    for _, sid in ipairs(ids) do
      c:request("stop", { session_id = sid }, function()
        left = left - 1
        if left == 0 then resume() end
      end)
    end
  end)
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

-- ---- the MCP rows: bench-client against ours, the Node peer and the floor -------------------

-- A JSON-RPC request line for the client's plan ("@ID@" is the client's id).
local function request(method, params)
  local body = params and (',"params":' .. assert(json.encode(params))) or ""
  return '{"jsonrpc":"2.0","id":@ID@,"method":"' .. method .. '"' .. body .. "}"
end
local function tool_call(name, args) return request("tools/call", { name = name, arguments = args or {} }) end

-- The same call as Claude Code sends it: with its _meta (its own id and a progress token) on every
-- call, captured from tests/hosts.
local function host_call(name, args)
  return request("tools/call", { name = name, arguments = args or {},
                                 _meta = { ["claudecode/toolUseId"] = "toolu_bench", progressToken = 1 } })
end

-- The plan lines that start the three servers (ours through the launcher, as a host runs it).
local function plan_servers(which)
  local all_servers = {
    ours = { "server", "ours", OURS },
    peer = { "server", "peer", NODE or "node", PEER_JS, "stdio" },
    floor = { "server", "floor", FLOOR, "launch", FLOOR_DIR .. "/s.sock", FLOOR_DIR },
  }
  local out = {}
  for _, name in ipairs(which) do out[#out + 1] = table.concat(all_servers[name], "\t") end
  return out
end

local client_runs = 0

-- Runs `bench-client MODE` on plan (a list of lines) in the workspace with env (a map); returns its
-- results: cases by label, servers by name.
local function run_client(mode, plan, rounds, warm, env)
  client_runs = client_runs + 1
  local path = string.format("%s/plan-%d", DIR, client_runs)
  write_file(path, table.concat(plan, "\n") .. "\n")
  local lines, code = {}, nil
  local err_file = DIR .. "/client.err"
  local ok, err = await_timeout(P.deadline_s * 1000, "bench-client " .. mode, function(resume)
    local p, serr = proc.spawn({ file = CLIENT, args = { mode, path, tostring(rounds), tostring(warm or 0) },
      cwd = WS, env = env_list(env), stdin = "null", stdout = "pipe",
      stderr = { file = err_file, append = true },
      on_line = function(line) lines[#lines + 1] = line end,
      on_exit = function(c) code = c; resume(true) end })
    if not p then resume(nil, serr) end
  end)
  assert(ok, "bench-client: " .. tostring(err))
  if code ~= 0 then
    local tail = (files.read(err_file) or ""):sub(-600)
    error(string.format("bench-client %s exited %s: %s", mode, tostring(code), tail), 0)
  end
  local out = { cases = {}, servers = {} }
  for _, line in ipairs(lines) do
    local r = assert(json.decode(line))
    if r.case then out.cases[r.case] = r else out.servers[r.server] = r end
  end
  for label, r in pairs(out.cases) do
    if r.errors > 0 then
      problems[#problems + 1] = string.format("%s: %d of %d round trips failed; the first: %s", label, r.errors,
        r.n, tostring(r.error))
    end
  end
  return out
end

-- The result value of a reply line our server wrote ({"jsonrpc":"2.0","id":N,"result":R}; a build
-- measured with --ours may order the members otherwise: its result is then encoded again).
local function result_of(path)
  local line = assert(files.read(path), "no reply captured in " .. path):gsub("\n$", "")
  local res = line:match('^{"jsonrpc":"2%.0","id":%d+,"result":(.*)}$')
  if not res and OURS_ARG then
    local msg = json.decode(line)
    res = type(msg) == "table" and msg.result ~= nil and json.encode(msg.result) or nil
  end
  assert(res and json.decode(res), "unexpected reply envelope: " .. line:sub(1, 200))
  return res
end

-- Captures our replies to requests (label -> request) and writes them as the floor's canned
-- answers (label -> file name in FLOOR_DIR); returns the result bytes by label.
local function capture_for_floor(env, wanted)
  local plan = plan_servers({ "ours" })
  for label, w in pairs(wanted) do
    plan[#plan + 1] = table.concat({ "case", label, "ours", w.request }, "\t")
    plan[#plan + 1] = table.concat({ "dump", label, DIR .. "/capture-" .. w.file }, "\t")
  end
  run_client("rtt", plan, 1, 0, env)
  local sizes = {}
  for label, w in pairs(wanted) do
    local res = result_of(DIR .. "/capture-" .. w.file)
    write_file(FLOOR_DIR .. "/" .. w.file .. ".json", res)
    sizes[label] = #res
  end
  return sizes
end

-- Seconds from microseconds the client reports.
local function s_of(us) return us / 1e6 end

-- A note line with p50 / p99 of the named cases.
local function note_cases(res, labels)
  local parts = {}
  for _, l in ipairs(labels) do
    local r = res.cases[l]
    if r then parts[#parts + 1] = string.format("%s %.0f/%.0f", l, r.p50, r.p99) end
  end
  note("p50/p99 us: %s", table.concat(parts, ", "))
end

-- ---- the phases ----------------------------------------------------------------------------

local function run_memory(bare)
  phase("agentd idle and memory")
  local c, apid = connect(MCP_HOME, WS)
  async.sleep(300)
  local idle = rss_kib(apid)
  row({ section = "memory", what = "agentd RSS, idle", value = idle, base = bare, fmt = fmt_mib,
        target = { on = "ratio", op = "<=", limit = 1.5, text = "<= 1.5x bare" } })

  -- N live sessions (fake agents, first turn done)
  local ids = spawn_many(c, P.sessions, { task = "hi", model = "fake/fake-model" })
  watch_all(c, ids)
  async.sleep(200)
  local with_sessions = rss_kib(apid)
  local per = (with_sessions - idle) / P.sessions
  row({ section = "memory", what = string.format("agentd RSS per live session (%d)", P.sessions), value = per,
        base = bare, fmt = fmt_mib, target = { on = "value", op = "<=", limit = 0.25 * MiB, text = "<= 0.25 MiB" } })
  note("agentd RSS with %d live sessions: %.2f MiB (idle %.2f MiB)", P.sessions, with_sessions / MiB, idle / MiB)

  -- unpolled floods on one session: growth over the first 100k chunk events (the event buffer
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

  -- chatty fleet: `chatty` of the live sessions flood at once while one watch waits for their
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
  ids[#ids + 1] = msid
  stop_many(c, ids)
  return c, apid
end

-- spawn → first turn end, fake agent: raw and through agentd take turns.
local function run_fake_spawn(c)
  phase("spawn to first turn end")
  local raw, via = {}, {}
  local fake_env = env_list(env_with())
  for i = 1, P.spawn_reps do
    local dt, agent = raw_turn(WRAPPER, WS, fake_env, "hi")
    raw[i] = dt
    stop_agents({ agent })
    local t0 = now_s()
    local sid = call(c, "spawn", { task = "hi", model = "fake/fake-model" }).session_id
    watch_all(c, { sid })
    via[i] = now_s() - t0
    call(c, "stop", { session_id = sid })
  end
  row({ section = "latency", what = "spawn -> first turn end (fake agent, median)", value = median(via),
        base = median(raw), fmt = fmt_ms, target = { on = "ratio", op = "<=", limit = 2.5, text = "<= 2.5x raw" } })
end

-- What a sandbox adds to a spawn: spawn -> first turn end of the fake agent through agentd in each
-- sandbox level against the same without one, the levels taking turns, in a git checkout (as most
-- agents run: its git dir is shown and guarded, your identity read).
local function run_sandbox_spawn(c)
  phase("sandboxed spawn")
  local repo = WS .. "/repo"
  uv.fs_mkdir(repo, tonumber("755", 8))
  assert(os.execute("git init -q " .. sh_quote(repo)), "git init")
  local levels = { "none", "workspace", "strict" }
  local times = { none = {}, workspace = {}, strict = {} }
  for i = 1, P.spawn_reps do
    for k = 0, #levels - 1 do
      local level = levels[(i + k) % #levels + 1]
      local t0 = now_s()
      local r = call(c, "spawn", { task = "hi", model = "fake/fake-model", sandbox = level, cwd = repo })
      assert(r.posture.enforced.sandbox == level, "spawn in sandbox " .. level .. " ran in " .. tostring(r.posture.enforced.sandbox))
      watch_all(c, { r.session_id })
      times[level][i] = now_s() - t0
      call(c, "stop", { session_id = r.session_id })
    end
  end
  local base = median(times.none)
  for _, level in ipairs({ "workspace", "strict" }) do
    row({ section = "latency", what = "spawn -> first turn end, sandbox " .. level .. " (fake agent, median)",
          value = median(times[level]), base = base, fmt = fmt_ms,
          target = { on = "over", op = "<=", limit = 0.015, text = "<= 15 ms over none" } })
  end
end

-- Ingest: floods through agentd to the turn end seen by a watch, against the same fake read raw.
local function run_ingest(c, apid)
  phase("event ingest")
  local fsid = call(c, "spawn", { task = "flood", model = "fake/fake-model" }).session_id
  watch_all(c, { fsid })
  local raw = raw_flooder()
  -- the first flood of each builds its lines in the fake: not measured
  raw.flood()
  call(c, "send", { session_id = fsid, message = "[fake:flood] warm" })
  watch_all(c, { fsid })
  local best_rate, best_cpu = 0, math.huge
  local raw_rate, raw_cpu, raw_agent_cpu = 0, math.huge, math.huge
  for _ = 1, P.flood_reps do
    local rate, cpu, acpu = raw.flood()
    raw_rate, raw_cpu, raw_agent_cpu = math.max(raw_rate, rate), math.min(raw_cpu, cpu), math.min(raw_agent_cpu, acpu)
    local t0, c0 = now_s(), cpu_of(apid)
    call(c, "send", { session_id = fsid, message = "[fake:flood] go" })
    watch_all(c, { fsid })
    local dt, cpu = now_s() - t0, cpu_of(apid) - c0
    best_rate = math.max(best_rate, P.flood / dt)
    best_cpu = math.min(best_cpu, cpu / P.flood)
  end
  raw.close()
  row({ section = "throughput", what = string.format("event ingest, %dk chunks to turn end (best)", P.flood // 1000),
        value = best_rate, base = raw_rate, fmt = fmt_rate,
        target = { on = "value", op = ">=", limit = 100000, text = ">= 100k ev/s" } })
  row({ section = "throughput", what = "agentd CPU per chunk event (best)", value = best_cpu, base = raw_cpu, fmt = fmt_us,
        target = { on = "value", op = "<=", limit = 6e-6, text = "<= 6 us" } })
  note("ingest baseline: the fake's pre-built flood read raw (NDJSON framing only), %.0f lines/s, %.2f us of our CPU "
    .. "per line; the fake's own CPU %.2f us/line; agentd CPU from /proc (%s)",
    raw_rate, raw_cpu * 1e6, raw_agent_cpu * 1e6, CPU_CLOCK)
  call(c, "stop", { session_id = fsid })
end

local free_port = require("ports").free

-- Wall-clock ms at the moment of uv.hrtime() value mono_ns (the page's clock is the wall clock).
local function wall_ms_of(mono_ns)
  local sec, usec = uv.gettimeofday()
  return sec * 1e3 + usec / 1e3 - (uv.hrtime() - mono_ns) / 1e6
end

-- The dashboard rows: the first paint of a 50-agent fleet, an agent's turn end reaching the page,
-- and what a page costs agentd while its agent floods, each against its floor (bench/dashboard.mjs
-- drives chromium).
local function run_dashboard(c, apid)
  phase("dashboard")
  if #dash_missing > 0 then
    for _, m in ipairs(dash_missing) do problems[#problems + 1] = "missing: " .. m .. "; the dashboard rows are skipped" end
    return
  end
  local ids = spawn_many(c, P.sessions, { task = "dash", model = "fake/fake-model", keep_alive = true })
  watch_all(c, ids)
  local port, password = free_port(), "bench-" .. RUN_ID
  local url = string.format("http://127.0.0.1:%d/", port)
  local dash = assert(proc.spawn({ file = OURS, args = { "dashboard" }, cwd = WS, stdin = "null", stdout = "null",
    stderr = { file = DIR .. "/dashboard.err", append = true }, on_exit = function() end,
    env = env_list(env_with({ REASONIX_MCP_DASHBOARD_PORT = tostring(port), REASONIX_MCP_DASHBOARD_PASSWORD = password })) }))
  cleanups[#cleanups + 1] = function() dash:kill("TERM") end
  local dashboard = require "rmcp.clients.dashboard"
  local up
  for _ = 1, 100 do
    local r = dashboard.get(port, "/healthz", 1000)
    up = r and r.status == 200 and json.decode(r.body).agentd
    if up then break end
    async.sleep(50)
  end
  assert(up, "the dashboard did not come up connected to agentd; see " .. DIR .. "/dashboard.err")
  local answers = {}
  local browser = assert(proc.spawn({ file = NODE, args = { REPO .. "/bench/dashboard.mjs", url, tostring(P.sessions), tostring(P.paint) },
    cwd = WS, stdin = "pipe", stdout = "pipe", stderr = { file = DIR .. "/browser.err", append = true },
    env = env_list(env_with({ BENCH_DASHBOARD_PASSWORD = password })),
    on_line = function(line) local w = table.remove(answers, 1); if w then w(json.decode(line)) end end,
    on_exit = function() for _, w in ipairs(answers) do w({ error = "the browser driver exited; see " .. DIR .. "/browser.err" }) end end }))
  cleanups[#cleanups + 1] = function() browser.stdin:shutdown() end
  -- the next line the driver prints (after sending cmd, when given)
  local function answer(cmd, what)
    local r = assert(await_timeout(60000, what, function(resume)
      answers[#answers + 1] = resume
      if cmd then browser.stdin:write(json.encode(cmd)) end
    end))
    assert(not r.error, r.error)
    return r
  end
  local paints = answer(nil, "first paints")
  row({ section = "dashboard", what = string.format("first paint, %d agents (median)", P.sessions),
        value = median(paints.paint) / 1e3, base = median(paints.floor) / 1e3, fmt = fmt_ms,
        target = { on = "value", op = "<=", limit = 0.3, text = "<= 300 ms" } })
  note("dashboard first paint: navigation start to the frame after the list shows every agent; baseline the same page "
    .. "as rendered, saved without its script (the browser's own floor); %d loads of each", P.paint)

  -- an agent's turn end: at the fake agent -> a host's watch, and -> the page's timeline
  local sid = ids[1]
  answer({ cmd = "select", id = sid }, "select an agent")
  local to_page, to_watch = {}, {}
  for i = 1, P.dash_events do
    answer({ cmd = "arm" }, "arm")
    call(c, "send", { session_id = sid, message = "[fake:stamp] look " .. i })
    watch_all(c, { sid })
    local watched = uv.hrtime()
    local seen = answer({ cmd = "seen" }, "the turn end on the page").seen
    local stamp = tonumber(files.read(STAMP):match("%d+"))
    to_watch[i] = (watched - stamp) / 1e9
    to_page[i] = (seen - wall_ms_of(stamp)) / 1e3
  end
  row({ section = "dashboard", what = "turn end at the agent -> shown on the page (median)", value = median(to_page),
        base = median(to_watch), fmt = fmt_ms, target = { on = "value", op = "<=", limit = 0.1, text = "<= 100 ms" } })
  note("dashboard event latency baseline: the same turn end reaching a host's watch through agentd (%d turns)", P.dash_events)

  -- agentd's CPU for a flood turn of the agent the page shows, against the same turn with one more
  -- watch (on another agent) instead of the page
  local function flood_cpu(n)
    local best = math.huge
    for _ = 1, n do
      local c0 = cpu_of(apid)
      call(c, "send", { session_id = sid, message = "[fake:flood] dash" })
      watch_all(c, { sid })
      best = math.min(best, cpu_of(apid) - c0)
    end
    return best
  end
  flood_cpu(1) -- the fake builds its flood once
  -- (the two in blocks, not turn by turn: a flood turn leaves garbage that the next allocations
  -- collect, so taking turns charged one arm's turn to the other, and the page's requests at a turn's
  -- end pay it first: 1.13-1.20x taking turns against 1.03-1.04x in blocks, the page's requests
  -- made without a browser)
  local reps = QUICK and 3 or 6
  local with_page = flood_cpu(reps)
  answer({ cmd = "blank" }, "leave the page")
  local extra = call(c, "spawn", { task = "extra", model = "fake/fake-model", keep_alive = true }).session_id
  watch_all(c, { extra })
  c:request("send", { session_id = extra, message = "[fake:hang] wait" }, function() end)
  local c2 = connect(MCP_HOME, WS, "bench")
  local extra_watch = c2:request("watch", { session_ids = { extra }, timeout = 600 }, function() end)
  local with_watch = flood_cpu(reps)
  c2:cancel(extra_watch)
  row({ section = "dashboard", what = string.format("agentd CPU of a %dk-chunk turn the page shows (best)", P.flood // 1000),
        value = with_page, base = with_watch, fmt = fmt_ms,
        target = { on = "ratio", op = "<=", limit = 1.1, text = "<= 1.1x one more watch" } })
  note("dashboard cost baseline: the same flood turn with the page closed and one more watch waiting on another agent; "
    .. "agentd CPU from /proc (%s), best of %d", CPU_CLOCK, reps)
  browser.stdin:shutdown()
  stop_many(c, ids)
  call(c, "stop", { session_id = extra })
  dash:kill("TERM")
end

-- The target of every MCP round trip: what our code adds stays under half of what the hops cost.
local AT_FLOOR = { on = "ratio", op = "<=", limit = 1.5, text = "<= 1.5x floor" }

-- The round trips on one idle agent each, against the floor answering our captured replies:
-- reasonix_poll of poll_sid, and reasonix_send to send_sid (before each send, untimed, a watch takes
-- the previous send's turn end, so every send finds its agent idle).
local function run_idle_calls(env, poll_sid, send_sid)
  local POLL = tool_call("reasonix_poll", { session_id = poll_sid })
  local SEND = tool_call("reasonix_send", { session_id = send_sid, message = "hi" })
  local WATCH = tool_call("reasonix_watch", { session_ids = { send_sid }, timeout = 30 })
  -- the captured send starts a turn too: the first watch below takes its end
  local sizes = capture_for_floor(env, {
    ["ours poll"] = { request = POLL, file = "reasonix_poll_idle" },
    ["ours send"] = { request = SEND, file = "reasonix_send_idle" },
  })
  local plan = plan_servers({ "ours", "floor" })
  local function line(...) plan[#plan + 1] = table.concat({ ... }, "\t") end
  line("case", "ours poll", "ours", POLL); line("case", "floor poll", "floor", tool_call("reasonix_poll_idle"))
  line("case", "ours host poll", "ours", host_call("reasonix_poll", { session_id = poll_sid }))
  line("case", "ours send", "ours", SEND); line("pre", "ours send", WATCH)
  line("case", "floor send", "floor", tool_call("reasonix_send_idle")); line("pre", "floor send", tool_call("watch_pre"))
  -- the same floor doing a send's work beside its answer: a journal line first, then a turn at its
  -- agent, which answers at once (bench/floor.c `work:`)
  line("case", "floor send work", "floor", tool_call("work:reasonix_send_idle")); line("pre", "floor send work", tool_call("watch_pre"))
  local r = run_client("rtt", plan, math.max(100, P.mcp_rtt // 4), P.mcp_warm // 2, env).cases
  row({ section = "mcp", what = string.format("reasonix_poll, idle agent (%d B), vs the floor (p50)", sizes["ours poll"]),
        value = s_of(r["ours poll"].p50), base = s_of(r["floor poll"].p50), fmt = fmt_us, target = AT_FLOOR })
  row({ section = "mcp", what = "  same, as Claude Code sends it (_meta), vs the floor", value = s_of(r["ours host poll"].p50),
        base = s_of(r["floor poll"].p50), fmt = fmt_us, target = AT_FLOOR })
  row({ section = "mcp", what = "reasonix_send to an idle agent, vs the floor (p50)", value = s_of(r["ours send"].p50),
        base = s_of(r["floor send"].p50), fmt = fmt_us, target = AT_FLOOR })
  row({ section = "mcp", what = "  same, vs the floor doing a send's work (journal, a turn at its agent)", value = s_of(r["ours send"].p50),
        base = s_of(r["floor send work"].p50), fmt = fmt_us, target = AT_FLOOR })
  note_cases({ cases = r }, { "ours poll", "ours host poll", "floor poll", "ours send", "floor send", "floor send work" })
end

-- The MCP rows: cold start, round trips with 0 and 20 sessions, poll and send, watch wake-up, server RSS.
local function run_mcp(bare)
  phase("MCP: ours through the launcher, the Node peer, the floor")
  if #missing > 0 then
    for _, m in ipairs(missing) do problems[#problems + 1] = "missing: " .. m .. "; the MCP rows are skipped" end
    return
  end
  local env = env_with({ REASONIX_MCP_ORCHESTRATOR_ID = "bench-mcp" })
  -- the floor's daemon, up for the whole phase (stdin EOF stops it)
  local fd = assert(proc.spawn({ file = FLOOR, args = { "daemon", FLOOR_DIR .. "/s.sock", FLOOR_DIR },
    env = env_list(env), stdin = "pipe", stdout = "null", stderr = { file = DIR .. "/floor.err", append = true },
    stdout_mode = "raw", on_exit = function() end }))
  cleanups[#cleanups + 1] = function() fd.stdin:shutdown() end
  for _ = 1, 100 do
    if uv.fs_stat(FLOOR_DIR .. "/s.sock") then break end
    async.sleep(10)
  end

  local LIST, ECHO = tool_call("reasonix_list"), tool_call("echo", { message = "hi" })
  local sizes = capture_for_floor(env, {
    ["ours tools/list"] = { request = request("tools/list"), file = "tools_list" },
    ["ours list"] = { request = LIST, file = "reasonix_list" },
  })

  -- cold start: a fresh server per round, start -> initialize result
  local cold = run_client("cold", plan_servers({ "ours", "peer", "floor" }), P.cold, 0, env)
  local co, cp, cf = cold.servers.ours, cold.servers.peer, cold.servers.floor
  row({ section = "mcp", what = "cold start -> initialize result (p50)", value = s_of(co.p50), base = s_of(cp.p50),
        fmt = fmt_ms, ahead = true, target = { on = "ratio", op = ">=", limit = 30, text = ">= 30x peer" } })
  note("cold start p50: ours %.1f ms, Node peer %.1f ms, floor %.1f ms (%d starts each)", co.p50 / 1e3, cp.p50 / 1e3,
    cf.p50 / 1e3, P.cold)

  -- round trips, 0 sessions: every case of every server takes turns, round by round
  local plan = plan_servers({ "ours", "peer", "floor" })
  local function case(label, srv, req) plan[#plan + 1] = table.concat({ "case", label, srv, req }, "\t") end
  case("ours ping", "ours", request("ping")); case("peer ping", "peer", request("ping"))
  case("floor ping", "floor", request("ping"))
  case("ours tools/list", "ours", request("tools/list")); case("peer tools/list", "peer", request("tools/list"))
  case("floor tools/list", "floor", request("tools/list"))
  case("ours list", "ours", LIST); case("peer echo", "peer", ECHO); case("floor list", "floor", LIST)
  case("ours host list", "ours", host_call("reasonix_list"))
  plan[#plan + 1] = table.concat({ "dump", "peer tools/list", DIR .. "/capture-peer-tools" }, "\t")
  local rt = run_client("rtt", plan, P.mcp_rtt, P.mcp_warm, env)
  local R = rt.cases
  -- against the peer, context only: issue 39 found the C floor over these hops only ~2x the peer, so
  -- issue 9's >= 4x (ping) and >= 2.5x (list) cannot be met; the floor rows hold the targets
  row({ section = "mcp", what = "ping (p50)", value = s_of(R["ours ping"].p50), base = s_of(R["peer ping"].p50),
        fmt = fmt_us, ahead = true })
  row({ section = "mcp", what = "  same, vs the floor", value = s_of(R["ours ping"].p50), base = s_of(R["floor ping"].p50),
        fmt = fmt_us, target = AT_FLOOR })
  row({ section = "mcp", what = "reasonix_list, 0 sessions, vs the peer's echo (p50)", value = s_of(R["ours list"].p50),
        base = s_of(R["peer echo"].p50), fmt = fmt_us, ahead = true })
  row({ section = "mcp", what = "  same, vs the floor", value = s_of(R["ours list"].p50), base = s_of(R["floor list"].p50),
        fmt = fmt_us, target = AT_FLOOR })
  row({ section = "mcp", what = "  same, as Claude Code sends it (_meta), vs the floor", value = s_of(R["ours host list"].p50),
        base = s_of(R["floor list"].p50), fmt = fmt_us, target = AT_FLOOR })
  row({ section = "mcp", what = "tools/list (p50)", value = s_of(R["ours tools/list"].p50),
        base = s_of(R["peer tools/list"].p50), fmt = fmt_us, ahead = true,
        target = { on = "ratio", op = ">=", limit = 3, text = ">= 3x peer" } })
  -- the SDK writes {"result":R,"jsonrpc":"2.0","id":N}
  local peer_line = (files.read(DIR .. "/capture-peer-tools") or ""):gsub("\n$", "")
  local peer_tools = #(peer_line:match('^{"result":(.*),"jsonrpc":"2%.0","id":%d+}$') or peer_line)
  row({ section = "mcp", what = "  tools/list result size", value = sizes["ours tools/list"], base = peer_tools,
        fmt = fmt_bytes, target = { on = "value", op = "<=", limit = 8192, text = "<= 8192 B" } })
  note("tools/list: %d B as a host gets it, every tool listed", sizes["ours tools/list"])
  note_cases(rt, { "ours ping", "peer ping", "floor ping", "ours list", "ours host list", "peer echo", "floor list", "ours tools/list",
    "peer tools/list", "floor tools/list" })
  local ours_srv, peer_srv = rt.servers.ours, rt.servers.peer
  local server_rss = ours_srv.rss_kib[2]
  row({ section = "memory", what = "MCP server RSS after the round trips", value = server_rss, base = bare, fmt = fmt_mib,
        target = { on = "ratio", op = "<=", limit = 2, text = "<= 2x bare" } })
  note("RSS after the round trips: ours %.1f MiB (launcher %.1f + server %.1f), Node peer %.1f MiB",
    (ours_srv.rss_kib[1] + (server_rss or 0)) / MiB, ours_srv.rss_kib[1] / MiB, (server_rss or 0) / MiB,
    peer_srv.rss_kib[1] / MiB)

  -- 20 sessions of this orchestrator: reasonix_list against the floor with our own reply canned
  local cm = connect(MCP_HOME, WS, "bench-mcp")
  local ids = spawn_many(cm, P.list_sessions, { task = "listed", model = "fake/fake-model" })
  watch_all(cm, ids)
  local LIST_N = "reasonix_list_" .. P.list_sessions
  local sizes_n = capture_for_floor(env, { ["ours list N"] = { request = LIST, file = LIST_N } })
  plan = plan_servers({ "ours", "floor" })
  case("ours list N", "ours", LIST)
  case("floor list N", "floor", tool_call(LIST_N))
  local rn = run_client("rtt", plan, math.max(100, P.mcp_rtt // 2), P.mcp_warm, env)
  row({ section = "mcp", what = string.format("reasonix_list, %d sessions (%d B), vs the floor (p50)", P.list_sessions,
          sizes_n["ours list N"]), value = s_of(rn.cases["ours list N"].p50), base = s_of(rn.cases["floor list N"].p50),
        fmt = fmt_us, target = AT_FLOOR })
  note_cases(rn, { "ours list N", "floor list N" })
  run_idle_calls(env, ids[2], ids[3])

  -- watch wake-up: reasonix_send starts a stamp turn (untimed), reasonix_watch waits for it; the
  -- interval runs from the fake's stamp (just before it writes the turn's answer) to the reply here.
  -- The floor's daemon does the same with a canned watch answer after 20 ms.
  local wsid = ids[1]
  plan = plan_servers({ "ours", "floor" })
  case("ours wake", "ours", tool_call("reasonix_watch", { session_ids = { wsid }, timeout = 30 }))
  plan[#plan + 1] = table.concat({ "pre", "ours wake", tool_call("reasonix_send", { session_id = wsid,
    message = "[fake:stamp] wake" }) }, "\t")
  plan[#plan + 1] = table.concat({ "stamp", "ours wake", STAMP }, "\t")
  case("floor wake", "floor", tool_call("stamp_watch"))
  plan[#plan + 1] = table.concat({ "stamp", "floor wake", FLOOR_DIR .. "/stamp" }, "\t")
  local rw = run_client("rtt", plan, P.wake, 3, env)
  row({ section = "mcp", what = "watch wake-up: turn end at the agent -> result (p50)", value = s_of(rw.cases["ours wake"].p50),
        base = s_of(rw.cases["floor wake"].p50), fmt = fmt_us, target = AT_FLOOR })
  note_cases(rw, { "ours wake", "floor wake" })
  stop_many(cm, ids)
  fd.stdin:shutdown()
  table.remove(cleanups)
end

-- The real agent on the offline provider: one spawn at a time, then a fleet spawned at once.
local function run_real()
  phase("real agent")
  local rh = require "reasonix_home"
  local real = not NO_REAL and REAL_AGENT
  if not real then
    note("real agent rows skipped: %s", NO_REAL and "--no-real" or "agent not installed (scripts/install-agent.sh)")
    return
  end
  local prov = assert(rh.start_provider({ scenario = { { last_role = "user", text = "ok" } } }))
  cleanups[#cleanups + 1] = function() prov:stop() end
  local home = rh.make_home(prov.port, { root = DIR .. "/rx" })
  -- a second daemon whose agents are the real binary; agentd passes its own env to agents, and the
  -- raw agents get that same env (a smaller one changes the agent's own start-up time)
  local saved = {}
  local set = { REASONIX_BIN = real, HOME = home.home, REASONIX_HOME = home.rxhome, MOCK_API_KEY = "mock-key",
                REASONIX_LANG = "en" }
  for k, v in pairs(home.env) do if set[k] == nil then set[k] = v end end
  local renv_list = env_list(env_with(set))
  for k, v in pairs(set) do saved[k] = os.getenv(k) or false; uv.os_setenv(k, v) end
  local home2 = DIR .. "/h2"
  local c2 = connect(home2, home.workspace)
  for k, v in pairs(saved) do if v then uv.os_setenv(k, v) else uv.os_unsetenv(k) end end
  local params = { task = "hi", model = "mock/mock-model" }
  local o = spawn_options(params)

  -- Waits (up to 5 s) until no real agent of this run is alive, so no rep pays for the last one's exit.
  local function settle()
    for _ = 1, 100 do
      if #procs.find("RMCP_BENCH_RUN=" .. RUN_ID, real) == 0 then return end
      async.sleep(50)
    end
  end
  -- raw and through agentd take turns, and which goes first alternates per rep
  local function raw_one()
    local dt, agent = raw_turn(real, home.workspace, renv_list, "hi", o)
    stop_agents({ agent })
    return dt
  end
  local function via_one()
    local t0 = now_s()
    local sid = call(c2, "spawn", params).session_id
    watch_all(c2, { sid })
    local dt = now_s() - t0
    call(c2, "stop", { session_id = sid })
    settle()
    return dt
  end
  local raw1, via1 = {}, {}
  for i = 1, P.real_reps do
    if i % 2 == 1 then raw1[i] = raw_one(); via1[i] = via_one() else via1[i] = via_one(); raw1[i] = raw_one() end
  end
  row({ section = "latency", what = "spawn -> first turn end (real agent, median)", value = median(via1),
        base = median(raw1), fmt = fmt_ms, target = { on = "ratio", op = "<=", limit = 1.5, text = "<= 1.5x raw" } })

  -- a fleet at once: until the last first turn ended; raw agents get the same config calls
  local function raw_fleet()
    local t0 = now_s()
    local agents, done = {}, {}
    all(P.fleet, function(k)
      local dt, agent = raw_turn(real, home.workspace, renv_list, "hi", o, t0)
      agents[k], done[k] = agent, dt
    end)
    stop_agents(agents)
    return math.max(table.unpack(done))
  end
  local function via_fleet()
    local t0 = now_s()
    local ids = spawn_many(c2, P.fleet, params)
    watch_all(c2, ids)
    local dt = now_s() - t0
    stop_many(c2, ids)
    settle()
    return dt
  end
  local rawf, viaf = {}, {}
  for i = 1, P.fleet_reps do
    if i % 2 == 1 then rawf[i] = raw_fleet(); viaf[i] = via_fleet() else viaf[i] = via_fleet(); rawf[i] = raw_fleet() end
  end
  row({ section = "latency", what = string.format("%d real agents spawned at once -> all first turns end (median)", P.fleet),
        value = median(viaf), base = median(rawf), fmt = fmt_ms,
        target = { on = "ratio", op = "<=", limit = 1.15, text = "<= 1.15x raw" } })
  note("real agent baselines: the agent driven directly with initialize, session/new, the set_config_option calls "
    .. "agentd makes for {model=mock/mock-model} and the first prompt")
  shutdown_daemon(home2)
  table.remove(cleanups)
  prov:stop()
end

-- The conflict forecast of a fleet (issue 36) on a repository of FC_DIRS x FC_FILES files: FC_BRANCHES
-- branches off main, each changing a file of its own dir and one of five shared files (groups of
-- four branches change the same line: 30 colliding pairs), main one commit further. Returns the
-- repository and the fake worktree sessions the forecast reads (it needs only repo, branch, head).
local FC_DIRS, FC_FILES, FC_BRANCHES = 30, 100, 20
local function forecast_repo()
  local r = DIR .. "/fc"
  assert(uv.fs_mkdir(r, tonumber("755", 8)))
  for d = 1, FC_DIRS do
    assert(uv.fs_mkdir(string.format("%s/d%d", r, d), tonumber("755", 8)))
    for f = 1, FC_FILES do
      local lines = {}
      for l = 1, 40 do lines[l] = string.format("d%d f%d line %d", d, f, l) end
      write_file(string.format("%s/d%d/f%d.txt", r, d, f), table.concat(lines, "\n") .. "\n")
    end
  end
  local commit = "git -c user.email=b@e -c user.name=bench commit -q"
  local script = { "set -e", "cd " .. sh_quote(r), "git init -q -b main", "git add -A", commit .. " -m base" }
  for b = 1, FC_BRANCHES do
    script[#script + 1] = string.format("git checkout -q -b fc/b%d main", b)
    script[#script + 1] = string.format("sed -i 's/line 7$/b%d/' d%d/f1.txt d%d/f%d.txt", b, b, (b % FC_DIRS) + 1, 50 + b)
    script[#script + 1] = string.format("sed -i 's/line 9$/hot b%d/' d%d/f99.txt", b, (b - 1) // 4 + 1)
    script[#script + 1] = string.format("%s -am b%d", commit, b)
  end
  script[#script + 1] = "git checkout -q main && sed -i 's/line 1$/main/' d30/f100.txt && " .. commit .. " -am main"
  assert(os.execute(table.concat(script, "\n") .. "\n") == true, "the forecast's repository could not be made")
  local sessions = {}
  for b = 1, FC_BRANCHES do
    sessions[b] = { id = "fc-" .. b, worktree = { repo = r, branch = "fc/b" .. b, head = "main", state = "ready", path = r } }
  end
  return r, sessions
end

-- The forecast of 20 branches (agentd/integrate/forecast.lua, called in this process as agentd
-- calls it: merge-trees a few at a time, ahead/behind, the hunks of each colliding pair) against the
-- same count of bare `git merge-tree` runs in a shell loop, one after another (each branch against
-- main, each pair); best of forecast_reps each.
local function run_forecast()
  phase("forecast")
  local forecast = require "rmcp.agentd.integrate.forecast"
  local r, sessions = forecast_repo()
  local pairs_n = FC_BRANCHES * (FC_BRANCHES - 1) // 2
  local loop = string.format("cd %s && for i in $(seq 1 %d); do git merge-tree --write-tree --name-only --messages -z main fc/b$i; done; "
    .. "for i in $(seq 1 %d); do for j in $(seq $((i+1)) %d); do git merge-tree --write-tree --name-only --messages -z fc/b$i fc/b$j; "
    .. "done; done", sh_quote(r), FC_BRANCHES, FC_BRANCHES, FC_BRANCHES)
  local ours, raw, last = math.huge, math.huge, nil
  for _ = 1, P.forecast_reps do
    local t0 = now_s()
    last = assert(forecast.run(sessions))
    ours = math.min(ours, now_s() - t0)
    t0 = now_s()
    local res = require("rmcp.lib.command").run("sh", { "-c", loop .. " >/dev/null" }, { timeout_ms = 120000 })
    assert(res and res.code == 0, "the merge-tree loop failed")
    raw = math.min(raw, now_s() - t0)
  end
  assert(#last.pairs == 30, "30 colliding pairs forecast, got " .. #last.pairs)
  row({ section = "latency", what = string.format("forecast, %d branches x %d files (best)", FC_BRANCHES, FC_DIRS * FC_FILES),
        value = ours, base = raw, fmt = fmt_ms, target = { on = "ratio", op = "<=", limit = 1.5, text = "<= 1.5x raw loop" } })
  note("forecast: %d merge-trees (%d against main, %d pairs), %d colliding pairs with their hunks, %d at a time; "
    .. "baseline: the %d merge-trees alone in a shell loop", FC_BRANCHES + pairs_n, FC_BRANCHES, pairs_n, #last.pairs,
    forecast.parallel, FC_BRANCHES + pairs_n)
end

local function run()
  local t_start = now_s()
  phase("baselines")
  local bare, bare_lo, bare_hi = bare_rss()
  note("bare `reasonix-mcp script` idle RSS: %.2f MiB (median of %d at once; %.2f-%.2f)", bare / MiB, BARE_SAMPLES,
    bare_lo / MiB, bare_hi / MiB)
  local c, apid
  if PHASES.memory then c, apid = run_memory(bare) else c, apid = connect(MCP_HOME, WS) end
  if PHASES.spawn then run_fake_spawn(c) end
  if PHASES.sandbox then run_sandbox_spawn(c) end
  if PHASES.ingest then run_ingest(c, apid) end
  if PHASES.mcp then run_mcp(bare) end
  if PHASES.dashboard then run_dashboard(c, apid) end
  if PHASES.real then run_real() end
  if PHASES.forecast then run_forecast() end
  if PHASES.agents then dofile(REPO .. "/bench/agents.lua")({ repo = REPO, exe = OURS, node = NODE, row = row, note = note, fmt_ms = fmt_ms }) end
  if PHASES.scale then
    phase("scale")
    dofile(REPO .. "/bench/scale.lua")({ DIR = DIR, WS = WS, EXE = EXE, WRAPPER = WRAPPER, STAMP = STAMP, FLOOR = FLOOR,
      FLOOR_DIR = FLOOR_DIR, MiB = MiB, bare = bare, cleanups = cleanups, async = async, now_s = now_s, all = all,
      row = row, note = note, note_cases = note_cases, fmt_us = fmt_us, fmt_ms = fmt_ms, fmt_mib = fmt_mib, s_of = s_of,
      rss_kib = rss_kib, vm = vm, cpu_of = cpu_of, env_list = env_list, env_with = env_with, connect = connect,
      call = call, spawn_many = spawn_many, watch_all = watch_all, stop_many = stop_many, raw_turn = raw_turn,
      stop_agents = stop_agents, shutdown_daemon = shutdown_daemon, tool_call = tool_call, plan_servers = plan_servers,
      run_client = run_client, capture_for_floor = capture_for_floor })
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
  -- The short commit of the git tree at path tree ("" when it has none).
  local function rev_of(tree)
    local gp = io.popen("git -C " .. sh_quote(tree) .. " rev-parse --short HEAD 2>/dev/null")
    if not gp then return "" end
    local r = gp:read("l") or ""
    gp:close()
    return r
  end
  local rev = rev_of(REPO)
  -- a build measured with --ours: the commit of the tree its build directory sits in
  if OURS_ARG then rev = string.format("%s, ours %s (%s)", rev, rev_of((OURS:match("^(.*)/[^/]*$") or ".") .. "/.."), OURS) end
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
  for _, p in ipairs(problems) do out[#out + 1] = "  ! " .. p end
  if crashed then out[#out + 1] = "  ! the run crashed: " .. tostring(crashed) end
  for _, p in ipairs(left) do out[#out + 1] = string.format("  ! process left behind (killed): pid %d: %s", p.pid, p.cmd) end
  if #left == 0 then out[#out + 1] = "  * no process left behind" end
  print(table.concat(out, "\n"))
  io.stdout:flush()
  if JSON_OUT then
    local list = json.array()
    for _, r in ipairs(rows) do
      list[#list + 1] = { section = r.section, what = r.what, unit = r.unit, value = r.value, baseline = r.base, ratio = r.ratio,
                          ratio_kind = r.ahead and "baseline/measured" or "measured/baseline",
                          target = r.target and r.target.text, pass = r.pass }
    end
    write_file(JSON_OUT, json.encode({ mode = QUICK and "quick" or "full", rev = rev, rows = list,
      notes = json.array(notes), problems = json.array(problems), leftovers = #left,
      crashed = crashed and tostring(crashed) or nil }) .. "\n")
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
  local code = 0
  if crashed then code = 2
  elseif #missing > 0 then code = 3
  elseif #left > 0 or (STRICT and failed) then code = 1 end
  sys.stop(code)
end)
