-- The bench's scale phase (`bench/run.lua --scale`, or `--only scale`; never part of --quick): one
-- agentd holding a fleet of fake agents (1,000 live sessions by default, RMCP_BENCH_SCALE_N), and
-- daemons restarted over 100, 1,000 and 10,000 finished sessions. Each row sits next to a baseline
-- measured in the same run: a bare process, the fake agents started without agentd, the floor
-- (bench/floor.c), or the same measure at the smallest size (the rows that must stay flat).
-- run.lua passes its helpers in b (see the call there); the rows are documented in bench/README.md.
local uv = require "luv"
local files = require "rmcp.lib.files"
local json = require "rmcp.lib.json"
local proc = require "rmcp.proc"

-- A rate in sessions per second (the table's cell).
local function fmt_per_s(v) return string.format("%.1f /s", v) end

-- p-th percentile (0..100) of list (nearest rank).
local function pct(list, p)
  local s = {}
  for i, v in ipairs(list) do s[i] = v end
  table.sort(s)
  if #s == 0 then return 0 end
  return s[math.max(1, math.ceil(#s * p / 100))]
end

-- The sizes: live sessions, raw agents of the spawn baseline, round trips of each MCP case, walks
-- of all pages, the idle window, and the retained histories whose restart and list are compared.
local function sizes()
  local n = tonumber(os.getenv("RMCP_BENCH_SCALE_N") or "") or 1000
  return { live = n, raw = n, rtt = 300, walks = 50, idle_s = 10, watch_ids = math.min(64, n),
           wake = 100, retained = { 100, 1000, 10000 }, restarts = 3, lists = 50 }
end

-- Seconds of CPU pid used over secs of wall time (the scheduler's ns count, as run.lua's cpu_of).
local function cpu_over(b, pids, secs)
  local c0 = {}
  for i, pid in ipairs(pids) do c0[i] = b.cpu_of(pid) end
  b.async.sleep(math.floor(secs * 1000))
  local out = {}
  for i, pid in ipairs(pids) do out[i] = (b.cpu_of(pid) or 0) - (c0[i] or 0) end
  return out
end

-- Spawn rate: Z.raw fake agents started at once without agentd (initialize, session/new, the first
-- prompt: the ACP client in this process), against Z.live spawned at once through agentd until the
-- last first turn ended; both in sessions/s. Returns the live ids.
local function spawn_rows(b, Z, c, apid)
  local t0 = b.now_s()
  local agents = {}
  b.all(Z.raw, function(k)
    local _, agent = b.raw_turn(b.WRAPPER, b.WS, b.env_list(b.env_with()), "hi", nil, t0)
    agents[k] = agent
  end)
  local raw_rate = Z.raw / (b.now_s() - t0)
  b.stop_agents(agents)
  t0 = b.now_s()
  local cpu0 = b.cpu_of(apid)
  local ids = b.spawn_many(c, Z.live, { task = "scale", model = "fake/fake-model", keep_alive = true })
  b.watch_all(c, ids)
  local dt, acpu = b.now_s() - t0, b.cpu_of(apid) - cpu0
  local rate = Z.live / dt
  b.row({ section = "scale", what = string.format("spawn rate, %d at once -> all first turns end", Z.live),
          value = rate, base = raw_rate, fmt = fmt_per_s,
          target = { on = "ratio", op = ">=", limit = 0.5, text = ">= 0.5x raw" } })
  b.note("scale spawn: agentd's CPU %.2f ms per spawn (%.0f%% of the %.1f s); baseline: %d fake agents started at once "
    .. "without agentd (initialize, session/new, first prompt)", acpu * 1e3 / Z.live,
    acpu * 100 / dt, dt, Z.raw)
  return ids
end

-- RSS per live session and agentd's CPU while the whole fleet idles (against a bare process's).
local function idle_rows(b, Z, apid, idle_rss)
  b.async.sleep(500)
  local live_rss = b.rss_kib(apid)
  b.row({ section = "scale", what = string.format("agentd RSS per live session (%d)", Z.live),
          value = (live_rss - idle_rss) / Z.live, base = b.bare, fmt = b.fmt_mib,
          target = { on = "ratio", op = "<=", limit = 0.05, text = "<= 0.05x bare" } })
  b.note("scale: agentd RSS %.1f MiB with %d live sessions (%.1f MiB before the first), VmHWM %.1f MiB",
    live_rss / b.MiB, Z.live, idle_rss / b.MiB, (b.vm(apid, "VmHWM") or 0) / b.MiB)
  local bare = assert(proc.spawn({ file = b.EXE, args = { "script", b.DIR .. "/idle.lua" }, env = b.env_list(b.env_with()),
    stdin = "pipe", stdout = "null", stderr = "inherit", stdout_mode = "raw", on_exit = function() end }))
  b.async.sleep(1000)
  local cpu = cpu_over(b, { apid, bare:pid() }, Z.idle_s)
  bare.stdin:shutdown()
  b.row({ section = "scale", what = string.format("agentd CPU over %d s, %d live sessions idle", Z.idle_s, Z.live),
          value = cpu[1], base = cpu[2], fmt = b.fmt_ms,
          target = { on = "over", op = "<=", limit = 0.01, text = "<= 10 ms over bare" } })
end

-- reasonix_list's first page through the MCP server against the floor answering our captured
-- page; and every page (cursor to cursor) through agentd's own protocol against the first page's
-- time the same way, times the pages.
local function list_rows(b, Z, c, env)
  local LIST = b.tool_call("reasonix_list")
  local sizes_ = b.capture_for_floor(env, { ["ours list scale"] = { request = LIST, file = "reasonix_list_scale" } })
  local plan = b.plan_servers({ "ours", "floor" })
  plan[#plan + 1] = table.concat({ "case", "ours list scale", "ours", LIST }, "\t")
  plan[#plan + 1] = table.concat({ "case", "floor list scale", "floor", b.tool_call("reasonix_list_scale") }, "\t")
  local r = b.run_client("rtt", plan, Z.rtt, 20, env)
  local o, f = r.cases["ours list scale"], r.cases["floor list scale"]
  local what = string.format("reasonix_list, %d live, first page (%d B)", Z.live, sizes_["ours list scale"])
  b.row({ section = "scale", what = what .. " (p50)", value = b.s_of(o.p50), base = b.s_of(f.p50), fmt = b.fmt_us,
          target = { on = "ratio", op = "<=", limit = 3, text = "<= 3x floor" } })
  b.row({ section = "scale", what = "  same (p99)", value = b.s_of(o.p99), base = b.s_of(f.p99), fmt = b.fmt_us,
          target = { on = "ratio", op = "<=", limit = 3, text = "<= 3x floor" } })
  -- (all = false, the default view, on every page: a list with no params at all may be given from
  -- the answer agentd kept, agentd/answers.lua, and this row is about what a cursor costs agentd's Lua)
  local firsts, walks, cursored, pages = {}, {}, {}, 0
  for i = 1, Z.walks do
    local t0 = b.now_s()
    b.call(c, "list", { all = false })
    firsts[#firsts + 1] = b.now_s() - t0
    local cursor, n, walk0 = nil, 0, b.now_s()
    repeat
      t0 = b.now_s()
      local page = b.call(c, "list", { all = false, cursor = cursor })
      local took = b.now_s() - t0
      if cursor then cursored[#cursored + 1] = took else firsts[#firsts + 1] = took end
      cursor, n = page.next_cursor, n + 1
    until not cursor
    walks[i], pages = b.now_s() - walk0, n
  end
  local first50 = pct(firsts, 50)
  b.row({ section = "scale", what = string.format("list, all %d pages through agentd (p50)", pages), value = pct(walks, 50),
          base = first50 * pages, fmt = b.fmt_ms, target = { on = "ratio", op = "<=", limit = 1.5, text = "<= 1.5x pages x first" } })
  -- (per page: the worst of 20 whole walks against the worst of 20 first pages x the pages flipped
  -- between 0.31x and 2.94x from one run to the next)
  b.row({ section = "scale", what = "  a page after a cursor (p99)", value = pct(cursored, 99), base = pct(firsts, 99), fmt = b.fmt_us,
          target = { on = "ratio", op = "<=", limit = 1.5, text = "<= 1.5x first page" } })
end

-- One reasonix_watch over Z.watch_ids ids woken by one turn end (a [fake:stamp] turn of the first),
-- from the fake's stamp to the result at the client, against the same watch over that one id.
local function watch_rows(b, Z, ids, env)
  local plan = b.plan_servers({ "ours", "floor" })
  local many, one = {}, ids[Z.watch_ids + 1] or ids[#ids]
  for i = 1, Z.watch_ids do many[i] = ids[i] end
  local function wake_case(label, watched, sid)
    plan[#plan + 1] = table.concat({ "case", label, "ours", b.tool_call("reasonix_watch", { session_ids = watched, timeout = 30 }) }, "\t")
    plan[#plan + 1] = table.concat({ "pre", label, b.tool_call("reasonix_send", { session_id = sid, message = "[fake:stamp] w" }) }, "\t")
    plan[#plan + 1] = table.concat({ "stamp", label, b.STAMP }, "\t")
  end
  wake_case("ours wake many", many, many[1])
  wake_case("ours wake one", { one }, one)
  plan[#plan + 1] = table.concat({ "case", "floor wake", "floor", b.tool_call("stamp_watch") }, "\t")
  plan[#plan + 1] = table.concat({ "stamp", "floor wake", b.FLOOR_DIR .. "/stamp" }, "\t")
  local r = b.run_client("rtt", plan, Z.wake, 3, env)
  local m, o = r.cases["ours wake many"], r.cases["ours wake one"]
  local what = string.format("watch over %d ids, %d live, woken by one turn end", Z.watch_ids, Z.live)
  b.row({ section = "scale", what = what .. " (p50)", value = b.s_of(m.p50), base = b.s_of(o.p50), fmt = b.fmt_us,
          target = { on = "ratio", op = "<=", limit = 1.2, text = "<= 1.2x one id" } })
  b.row({ section = "scale", what = "  same (p99)", value = b.s_of(m.p99), base = b.s_of(o.p99), fmt = b.fmt_us,
          target = { on = "ratio", op = "<=", limit = 1.2, text = "<= 1.2x one id" } })
  b.note_cases(r, { "ours wake many", "ours wake one", "floor wake" })
end

-- Writes count finished sessions into home's sessions dir, each a copy of the record and journal
-- of session id in dir src with its own id and an older updated_at, one second apart.
local function forge_history(src, id, home, count)
  local rec = assert(files.read(src .. "/" .. id .. ".json"), "no record of " .. id)
  local journal = files.read(src .. "/" .. id .. ".events.jsonl") or ""
  local dir = home .. "/sessions"
  uv.fs_mkdir(home, tonumber("700", 8))
  uv.fs_mkdir(dir, tonumber("700", 8))
  local t = json.decode(rec).updated_at
  local pattern = id:gsub("%p", "%%%0")
  for i = 1, count do
    local nid = string.format("%s-h%05d", id:sub(1, 40), i)
    local text = rec:gsub(pattern, nid):gsub('"updated_at":[%d.]+', string.format('"updated_at":%.3f', t - i))
      :gsub('"created_at":[%d.]+', string.format('"created_at":%.3f', t - i - 1))
    local f = assert(io.open(dir .. "/" .. nid .. ".json", "wb"))
    f:write(text)
    f:close()
    f = assert(io.open(dir .. "/" .. nid .. ".events.jsonl", "wb"))
    f:write((journal:gsub(pattern, nid)))
    f:close()
  end
end

-- Restart time (shutdown, then a client's autostart until hello) and list time (the default view,
-- and all=true's first page) of a daemon over each retained history, against the smallest.
local function retained_rows(b, Z, template_dir, template_id)
  local restart, stop, list_all, list_view, first_list, killed = {}, {}, {}, {}, {}, 0
  for _, count in ipairs(Z.retained) do
    local home = string.format("%s/r%d", b.DIR, count)
    forge_history(template_dir, template_id, home, count)
    local c = b.connect(home, b.WS, "bench-scale")
    local best, best_stop = math.huge, math.huge
    for _ = 1, Z.restarts do
      local t0 = b.now_s()
      if not b.shutdown_daemon(home) then killed = killed + 1 end
      best_stop = math.min(best_stop, b.now_s() - t0)
      t0 = b.now_s()
      c = b.connect(home, b.WS, "bench-scale")
      best = math.min(best, b.now_s() - t0)
    end
    local t_first = b.now_s()
    local got = b.call(c, "list", { all = true })
    first_list[count] = b.now_s() - t_first
    local total = 0
    for _, n in pairs(got.counts or {}) do total = total + n end
    assert(total == count, string.format("a daemon over %d retained sessions lists %d", count, total))
    local ta, tv = {}, {}
    for i = 1, Z.lists do
      local t0 = b.now_s()
      b.call(c, "list", { all = true })
      ta[i] = b.now_s() - t0
      t0 = b.now_s()
      b.call(c, "list", {})
      tv[i] = b.now_s() - t0
    end
    restart[count], stop[count], list_all[count], list_view[count] = best, best_stop, pct(ta, 50), pct(tv, 50)
    b.shutdown_daemon(home)
  end
  local small = Z.retained[1]
  for i = #Z.retained, 2, -1 do
    local n = Z.retained[i]
    local label = i == #Z.retained and "" or "  "
    b.row({ section = "scale", what = string.format("%sagentd restart, %d finished sessions retained (best of %d)", label, n, Z.restarts),
            value = restart[n], base = restart[small], fmt = b.fmt_ms,
            target = { on = "ratio", op = "<=", limit = 1.5, text = string.format("<= 1.5x %d", small) } })
    b.row({ section = "scale", what = string.format("%sagentd shutdown, %d retained (best of %d)", label, n, Z.restarts),
            value = stop[n], base = stop[small], fmt = b.fmt_ms,
            target = { on = "ratio", op = "<=", limit = 1.5, text = string.format("<= 1.5x %d", small) } })
    b.row({ section = "scale", what = string.format("%slist all=true first page, %d retained (p50)", label, n),
            value = list_all[n], base = list_all[small], fmt = b.fmt_ms,
            target = { on = "ratio", op = "<=", limit = 1.5, text = string.format("<= 1.5x %d", small) } })
    b.row({ section = "scale", what = string.format("%slist default view, %d retained (p50)", label, n),
            value = list_view[n], base = list_view[small], fmt = b.fmt_ms,
            target = { on = "ratio", op = "<=", limit = 1.5, text = string.format("<= 1.5x %d", small) } })
  end
  b.note("scale restart: shutdown, then a client's autostart until its hello is answered; retained sessions are "
    .. "copies of one finished fake session (record and journal), REASONIX_MCP_RETAIN_MAX raised so all are kept; "
    .. "shutdown: the shutdown request until the pid is gone (%d daemons did not exit within 5 s and were killed)", killed)
  local firsts = {}
  for _, n in ipairs(Z.retained) do firsts[#firsts + 1] = string.format("%d: %.1f ms", n, first_list[n] * 1e3) end
  b.note("scale restart: the first list all=true after the last restart (it waits for the finished sessions a start "
    .. "takes in after hello), by retained count: %s", table.concat(firsts, ", "))
end

-- The agent command of the scale daemon: run.lua's fake agent wrapper, answering `doctor --json` as
-- the real agent does (bash sandboxed, nothing writable beyond the cwd). The fake alone fails that
-- probe, and a failed probe is not cached (agentd/posture.lua): every burst of spawns would pay one
-- more process start that a real agent's cached posture does not.
local function agent_with_doctor(b)
  local path = b.DIR .. "/reasonix-scale"
  local doctor = [[if [ "$1" = doctor ]; then echo '{"version":"fake","sandbox":{"bash":"enforce","available":true,]]
    .. [["write_roots":[],"network":"allow"}}'; exit 0; fi]]
  local text = assert(files.read(b.WRAPPER)):gsub("^#!/bin/sh\n", function(head) return head .. doctor .. "\n" end)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
  uv.fs_chmod(path, tonumber("755", 8))
  return path
end

-- The phase: b holds run.lua's helpers and paths.
return function(b)
  local Z = sizes()
  proc.raise_nofile() -- the raw spawn baseline holds three pipes per agent here too
  local home = b.DIR .. "/hs"
  uv.os_setenv("REASONIX_BIN", agent_with_doctor(b))
  uv.os_setenv("REASONIX_MCP_RETAIN_MAX", "100000")
  local env = b.env_with({ REASONIX_MCP_ORCHESTRATOR_ID = "bench-scale", REASONIX_MCP_HOME = home })
  local c, apid = b.connect(home, b.WS, "bench-scale")
  b.async.sleep(300)
  local idle_rss = b.rss_kib(apid)
  local ids = spawn_rows(b, Z, c, apid)
  idle_rows(b, Z, apid, idle_rss)
  local floor = assert(proc.spawn({ file = b.FLOOR, args = { "daemon", b.FLOOR_DIR .. "/s.sock", b.FLOOR_DIR },
    env = b.env_list(env), stdin = "pipe", stdout = "null", stderr = { file = b.DIR .. "/floor-scale.err", append = true },
    stdout_mode = "raw", on_exit = function() end }))
  b.cleanups[#b.cleanups + 1] = function() floor.stdin:shutdown() end
  for _ = 1, 100 do
    if uv.fs_stat(b.FLOOR_DIR .. "/s.sock") then break end
    b.async.sleep(10)
  end
  list_rows(b, Z, c, env)
  watch_rows(b, Z, ids, env)
  floor.stdin:shutdown()
  table.remove(b.cleanups)
  b.stop_many(c, ids)
  b.call(c, "poll", { session_id = ids[1] }) -- collected: the retained copies are history, hidden by default
  b.shutdown_daemon(home)
  retained_rows(b, Z, home .. "/sessions", ids[1])
  uv.os_unsetenv("REASONIX_MCP_RETAIN_MAX")
  uv.os_setenv("REASONIX_BIN", b.WRAPPER)
end
