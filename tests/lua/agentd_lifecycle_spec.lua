-- agentd as a process: one daemon per home under racing autostarts, survival across a daemon kill
-- (list + resume), no agent left when agentd is killed, six agents at once, idle cleanup.
-- needs: agent python3
local uv = require "luv"
local async = require "rmcp.lib.async"
local support = require "agentd_support"

test("two simultaneous autostarts start one daemon", function(t)
  local ctx = support.setup(t)
  local a, b = ctx.client("orch-a"), ctx.client("orch-b")
  local ra, rb
  -- both connect at the same moment: neither finds a socket, both start agentd
  t.await(function(both)
    local n = 0
    local function one() n = n + 1; if n == 2 then both() end end
    async.run(function() ra = { a:wait_connected() }; one() end)
    async.run(function() rb = { b:wait_connected() }; one() end)
  end, 8000, "both clients to connect")
  t.eq(ra[1], true, tostring(ra[2]))
  t.eq(rb[1], true, tostring(rb[2]))
  t.eq(a.info.agentd_pid, b.info.agentd_pid)
  -- losers of the lock race have exited; exactly one agentd runs for this home
  t.wait_for(function()
    return #support.find_procs("agentd", "REASONIX_MCP_HOME=" .. ctx.mcp_home) == 1
  end, 15000, "a single agentd process")
  local st = uv.fs_stat(ctx.mcp_home)
  t.eq(st.mode & 511, 448, "home is 0700")
end)

test("kill -9 agentd leaves no agent behind within 1 s", function(t)
  local ctx = support.setup(t, { scenario = { rules = {
    { last_role = "user", user_contains = "SLOW", text = string.rep("s", 100), chunk = 2, delay = 0.1 },
  } } })
  local c = ctx.client()
  local ids = {}
  for i = 1, 2 do ids[i] = ctx.call(c, "spawn", { task = "HELLO " .. i }).session_id end
  ids[3] = ctx.call(c, "spawn", { task = "SLOW" }).session_id
  local pids = {}
  for _, row in ipairs(ctx.call(c, "list", { detail = true }).sessions) do pids[#pids + 1] = row.agent_pid end
  t.eq(#pids, 3)
  local daemon = c.info.agentd_pid
  c:close()
  uv.kill(daemon, "sigkill")
  t.wait_for(function()
    for _, pid in ipairs(pids) do if support.alive(pid) then return false end end
    return true
  end, 1000, "every agent to die with agentd", 10)
  t.wait_for(function() return not support.alive(daemon) end, 1000, "agentd gone")
end)

test("turns not yet polled survive a kill -9 of agentd, and come back once, not twice", function(t)
  local ctx = support.setup(t, { scenario = { rules = {
    { last_role = "user", user_contains = "ONE", text = "first answer" },
    { last_role = "user", user_contains = "TWO", text = "second answer" },
    { last_role = "user", user_contains = "THREE", text = "third answer" },
  } } })
  local c = ctx.client()
  -- list does not drain: three turns end and nobody polls or watches them
  local function status()
    for _, row in ipairs(ctx.call(c, "list", {}).sessions) do return row.status end
  end
  local sid = ctx.call(c, "spawn", { task = "ONE" }).session_id
  t.wait_for(function() return status() == "idle" end, 10000, "turn 1 ended", 20)
  for _, word in ipairs({ "TWO", "THREE" }) do
    t.eq(ctx.call(c, "send", { session_id = sid, message = word }).delivered, "new_turn")
    t.wait_for(function() return status() == "idle" end, 10000, word .. " ended", 20)
  end
  local function kill_agentd()
    local daemon = c.info.agentd_pid
    uv.kill(daemon, "sigkill")
    t.wait_for(function() return not support.alive(daemon) end, 2000, "agentd gone")
  end
  kill_agentd()
  local p = ctx.call(c, "poll", { session_id = sid, detail = true })
  t.eq(p.status, "orphaned")
  local texts = {}
  for _, tu in ipairs(p.turns or {}) do texts[#texts + 1] = tu.text end
  t.eq(texts, { "first answer", "second answer", "third answer" }, "every undelivered turn, in order")
  t.eq(#(ctx.call(c, "poll", { session_id = sid, detail = true }).turns or {}), 0, "delivered once")
  kill_agentd()
  t.eq(#(ctx.call(c, "poll", { session_id = sid, detail = true }).turns or {}), 0, "not again after a second restart")
end)

test("after agentd is killed and restarted, list shows every session and resume works", function(t)
  local ctx = support.setup(t, { scenario = { rules = {
    { last_role = "user", user_contains = "REMEMBER", text = "noted the codeword" },
    { last_role = "user", user_contains = "SLOW", text = string.rep("s", 100), chunk = 2, delay = 0.1 },
    { last_role = "user", user_contains = "RECALL", text = "recalled: ", echo = "all" },
  } } })
  local c = ctx.client()
  local done_id = ctx.call(c, "spawn", { task = "REMEMBER codeword PELICAN" }).session_id
  ctx.watch_until(c, { done_id }, function(_, x) return x.status == "idle" end)
  local busy_id = ctx.call(c, "spawn", { task = "SLOW" }).session_id
  local stopped_id = ctx.call(c, "spawn", { task = "REMEMBER other" }).session_id
  ctx.call(c, "stop", { session_id = stopped_id })
  local daemon = c.info.agentd_pid
  uv.kill(daemon, "sigkill")
  t.wait_for(function() return not support.alive(daemon) end, 2000, "agentd gone")
  -- the next request reconnects, starting a fresh daemon
  local list = ctx.call(c, "list", {})
  t.ne(c.info.agentd_pid, daemon)
  local by_id = {}
  for _, row in ipairs(list.sessions) do by_id[row.session_id] = row end
  t.eq(by_id[done_id].status, "orphaned")
  t.eq(by_id[busy_id].status, "orphaned")
  t.eq(by_id[stopped_id].status, "exited")
  t.eq(ctx.call(c, "poll", { session_id = done_id, include_full = true }).full_text, "noted the codeword",
    "the session's text survives the daemon's death (read back from the journal)")
  local w = ctx.call(c, "watch", { session_ids = { busy_id } })
  t.eq(w.results[busy_id].status, "orphaned")
  local r = ctx.call(c, "resume", { session_id = done_id })
  t.eq(r.status, "idle")
  t.eq(ctx.call(c, "send", { session_id = done_id, message = "RECALL it" }).delivered, "new_turn")
  local res = ctx.watch_until(c, { done_id }, function(_, x) return x.status == "idle" end)
  t.match(res.message, "^recalled:")
  local reqs = ctx.prov:requests()
  local last = reqs[#reqs].body.messages
  t.match(last[#last].content, "RECALL it")
  local history, contracts = {}, 0
  for _, m in ipairs(last) do
    if type(m.content) == "string" then
      history[#history + 1] = m.content
      if m.role == "user" and m.content:find("status contract", 1, true) then contracts = contracts + 1 end
    end
  end
  t.match(table.concat(history, "\n"), "codeword PELICAN", "the resumed agent sent the earlier history to the model")
  t.eq(contracts, 1, "the status contract is not added again after resume")
  local tr = ctx.call(c, "transcript", { session_id = done_id })
  t.eq(tr.roles.user, 2)
  t.eq(tr.last_text:sub(1, 9), "recalled:")
end)

test("resuming after agentd died: a death notice the host may have got is not given again, a queued new turn is not doubled", function(t)
  local ctx = support.setup(t, { scenario = { rules = {
    { last_role = "user", user_contains = "TURN", text = "over: ", echo = "last_user" },
  } } })
  local a, b = ctx.client(), ctx.client()
  local sid = ctx.call(a, "spawn", { task = "TURN one", keep_alive = true }).session_id
  ctx.watch_until(a, { sid }, function(_, x) return x.status == "idle" end)
  local daemon = a.info.agentd_pid
  uv.kill(daemon, "sigkill")
  t.wait_for(function() return not support.alive(daemon) end, 2000, "agentd gone")
  -- the death notice goes out on a, and the launcher's word on it is lost with its server
  local notice = ctx.call(a, "watch", { session_ids = { sid }, delivery_key = "L/n:1", confirm = true }).results[sid]
  t.eq(notice.status, "orphaned")
  a:notify("undelivered", { key = "L/n:1" })
  -- the host resumes it (so it had the notice) and sends two new turns while the agent starts
  local answers = {}
  t.await(function(done)
    local function answered(name)
      return function(r, e)
        answers[name] = { r, e }
        if answers.resume and answers.first and answers.second then done() end
      end
    end
    b:request("resume", { session_id = sid }, answered("resume"))
    b:request("send", { session_id = sid, message = "TURN two", expect = "new_turn" }, answered("first"))
    b:request("send", { session_id = sid, message = "TURN three", expect = "new_turn" }, answered("second"))
  end, 20000, "the resume and both sends answered")
  t.ok(answers.resume and answers.resume[1], "resumed")
  t.eq(answers.first[1].delivered, "new_turn", "the first message sent while starting starts the next turn")
  t.eq(answers.second[2] and answers.second[2].code, -32004, "a second expect=new_turn would be steered into it: refused")
  local w = ctx.call(b, "watch", { session_ids = { sid }, delivery_key = "L/n:2", confirm = true }).results[sid]
  t.eq(w.status, "idle", "the next watch gets the new turn, not the death notice again")
  t.match(w.message, "TURN two")
  t.eq(w.message:find("TURN three", 1, true), nil, "the refused message went nowhere")
  -- a host that learns of the next death by polling (a poll leaves the death pending for watches)
  -- and resumes: a watch while the agent starts waits for news, it does not wake for the old death
  daemon = b.info.agentd_pid
  uv.kill(daemon, "sigkill")
  t.wait_for(function() return not support.alive(daemon) end, 2000, "agentd gone again")
  t.eq(ctx.call(b, "poll", { session_id = sid }).status, "orphaned")
  local during = {}
  t.await(function(done)
    b:request("resume", { session_id = sid }, function(r, e)
      during.resume = { r, e }
      if during.watch then done() end
    end)
    b:request("watch", { session_ids = { sid }, timeout = 0 }, function(r, e)
      during.watch = { r, e }
      if during.resume then done() end
    end)
  end, 20000, "the resume and the watch answered")
  t.ok(during.resume[1], "resumed again")
  t.eq(during.watch[1] and during.watch[1].timed_out, true, "nothing new while it starts")
end)

test("a request written after agentd died, before its EOF was read, goes on a new connection (any method)", function(t)
  local ctx = support.setup(t)
  local c = ctx.client()
  ctx.call(c, "list", {})
  local daemon = c.info.agentd_pid
  uv.kill(daemon, "sigkill")
  -- wait without running the loop, so the client has not read the EOF: until every thread of agentd
  -- is gone (its descriptors close with the last one, not with the main thread)
  local function threads()
    local dir = uv.fs_scandir("/proc/" .. daemon .. "/task")
    local n = 0
    while dir and uv.fs_scandir_next(dir) do n = n + 1 end
    return n
  end
  local deadline = uv.hrtime() + 2e9
  while (support.alive(daemon) or threads() > 1) and uv.hrtime() < deadline do uv.sleep(5) end
  t.ok(not support.alive(daemon) and threads() <= 1, "agentd gone, every thread")
  -- spawn is not retry-safe (a lost answer may mean it ran), but this one never left the process
  local r = ctx.call(c, "spawn", { task = "HELLO after the restart" })
  t.match(r.session_id, "%S", "spawned on a fresh daemon")
  t.ne(c.info.agentd_pid, daemon)
end)

test("six agents at once", function(t)
  local ctx = support.setup(t, { scenario = { rules = {
    { last_role = "user", user_contains = "AGENT", text = "done: ", echo = "last_user", chunk = 8, delay = 0.02 },
  } } })
  local c = ctx.client()
  local pending, failures = {}, {}
  t.await(function(all)
    local spawned = 0
    for i = 1, 6 do
      c:request("spawn", { task = "AGENT-" .. i }, function(r, err)
        if r then pending[r.session_id] = i else failures[#failures + 1] = err.message end
        spawned = spawned + 1
        if spawned == 6 then all() end
      end)
    end
  end, 20000, "six spawns")
  t.eq(failures, {})
  local finished = {}
  while next(pending) do
    local watch_ids = {}
    for sid in pairs(pending) do watch_ids[#watch_ids + 1] = sid end
    local r = ctx.call(c, "watch", { session_ids = watch_ids })
    for sid, res in pairs(r.results) do
      if res.status == "idle" then
        t.match(res.message, "AGENT%-" .. pending[sid])
        finished[#finished + 1] = sid
        pending[sid] = nil
      end
    end
  end
  t.eq(#finished, 6)
  local counts = ctx.call(c, "list", {}).counts
  t.eq(counts.idle, 6)
end)

test("idle cleanup: idle_timeout 0 leaves an exited tombstone, keep_alive exempts", function(t)
  local ctx = support.setup(t, { scenario = { rules = { { last_role = "user", text = "ok" } } } })
  local c = ctx.client()
  local gone = ctx.call(c, "spawn", { task = "one", idle_timeout = 0 }).session_id
  local kept = ctx.call(c, "spawn", { task = "two", idle_timeout = 0, keep_alive = true }).session_id
  local res = ctx.watch_until(c, { gone }, function(_, x) return x.status == "exited" end)
  t.eq(res.stop_reason, "end_turn")
  ctx.watch_until(c, { kept }, function(_, x) return x.status == "idle" end)
  local rows = {}
  for _, row in ipairs(ctx.call(c, "list", { detail = true, all = true }).sessions) do rows[row.session_id] = row end
  t.eq(rows[gone].status, "exited")
  t.eq(rows[kept].status, "idle")
  t.ok(rows[kept].agent_pid)
end)

test("SIGTERM shuts down cleanly: agents end, socket removed, sessions kept; the log stays bounded", function(t)
  local ctx = support.setup(t, { env = { REASONIX_MCP_LOG_MAX_BYTES = "800" },
    scenario = { rules = { { last_role = "user", text = "ok" } } } })
  local c = ctx.client()
  local ids = {}
  for i = 1, 2 do ids[i] = ctx.call(c, "spawn", { task = "task " .. i }).session_id end
  local pids = {}
  for _, row in ipairs(ctx.call(c, "list", { detail = true }).sessions) do pids[#pids + 1] = row.agent_pid end
  local daemon = c.info.agentd_pid
  uv.kill(daemon, "sigterm")
  t.wait_for(function() return not support.alive(daemon) end, 5000, "agentd to exit on SIGTERM")
  for _, pid in ipairs(pids) do t.ok(not support.alive(pid), "agent gone") end
  t.eq(uv.fs_stat(ctx.mcp_home .. "/agentd.sock"), nil, "socket removed")
  t.ok(uv.fs_stat(ctx.mcp_home .. "/agentd.log.1"), "log rotated once")
  t.ok(uv.fs_stat(ctx.mcp_home .. "/agentd.log").size < 800 + 600)
  local rows = ctx.call(c, "list", {}).sessions
  t.eq(#rows, 2)
  for _, row in ipairs(rows) do t.eq(row.status, "orphaned") end
  t.ne(c.info.agentd_pid, daemon)
end)

test("forced restart by the only orchestrator with live agents: a fresh daemon, sessions resumable", function(t)
  local ctx = support.setup(t, { scenario = { rules = { { last_role = "user", text = "ok" } } } })
  local c = ctx.client()
  local sid = ctx.call(c, "spawn", { task = "before restart", keep_alive = true }).session_id
  ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  local daemon = c.info.agentd_pid
  t.eq(ctx.call_err(c, "restart", {}).code, -32005, "refused while a keep_alive agent is live (as a reload waits for it)")
  t.eq(ctx.call(c, "restart", { force = true }).restarting, true)
  t.wait_for(function() return not support.alive(daemon) end, 5000, "old agentd to exit")
  local row = ctx.call(c, "list", { all = true }).sessions[1]
  t.ne(c.info.agentd_pid, daemon)
  t.eq(row.status, "exited")
  t.eq(row.exit_reason, "daemon_restart")
  t.eq(ctx.call(c, "resume", { session_id = sid }).status, "idle")
end)

test("an autostart that cannot bring agentd up fails with a clear error naming the log", function(t)
  local ctx = support.setup(t)
  local c = ctx.client("orch-a", nil, { exe = "/bin/true", start_timeout_ms = 400 })
  local ok, err = c:wait_connected()
  t.eq(ok, nil)
  t.match(err, "agentd did not answer")
  t.ok(err:find(ctx.mcp_home .. "/agentd.log", 1, true), "names the log")
  local r, rerr = c:call("list", {})
  t.eq(r, nil)
  t.match(rerr.message, "agentd did not answer")
end)

test("an unused agentd exits after the idle period; a live session or a connected client keeps it, an observer does not", function(t)
  local ctx = support.setup(t, { env = { REASONIX_MCP_DAEMON_IDLE_EXIT = "1" },
                                 scenario = { rules = { { last_role = "user", text = "ok" } } } })
  local c = ctx.client()
  t.ok(c:wait_connected())
  local daemon = c.info.agentd_pid
  -- Staying up has no event to wait for: look again after 2.5 idle periods.
  t.sleep(2500)
  t.ok(support.alive(daemon), "a connected client keeps agentd up")
  local sid = ctx.call(c, "spawn", { task = "hello" }).session_id
  ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  c:close()
  t.sleep(2500)
  t.ok(support.alive(daemon), "a live (idle) session keeps agentd up with no client")
  -- an observer (the dashboard) looks at the fleet and does not keep it up; it hears the daemon go
  local exiting
  local watcher = ctx.client("dashboard", nil, { observer = true, autostart = false, on_notification = function(method, params)
    if method == "agentd_exiting" then exiting = params end
  end })
  t.ok(watcher:wait_connected())
  local c2 = ctx.client()
  ctx.call(c2, "stop", { session_id = sid })
  c2:close()
  -- exited sessions are not live: the daemon goes within the period (+10%)
  t.wait_for(function() return not support.alive(daemon) end, 5000, "unused agentd to exit by itself")
  t.ok(exiting, "the observer was told")
  t.match(exiting.reason, "no live session")
  watcher:close()
  local log = assert(io.open(ctx.mcp_home .. "/agentd.log")):read("a")
  t.match(log, "no live session and no connection for 1s")
  local c3 = ctx.client()
  local row = ctx.call(c3, "list", { all = true }).sessions[1]
  t.ne(c3.info.agentd_pid, daemon, "the next client starts a fresh daemon")
  t.eq(row.session_id, sid)
  t.eq(row.status, "exited")
end)

test("every file agentd keeps in its home is owner-only, the log and its rotation included", function(t)
  local ctx = support.setup(t, { scenario = { rules = { { last_role = "user", text = "ok" } } },
                                 env = { REASONIX_MCP_LOG_MAX_BYTES = "600" } })
  local c = ctx.client()
  local id = ctx.call(c, "spawn", { task = "one" }).session_id
  ctx.watch_until(c, { id }, function(_, x) return x.status == "idle" end)
  -- the spawn alone logs more than 600 bytes: the log has rotated
  local seen, checked = {}, 0
  local function walk(dir)
    local scan = assert(uv.fs_scandir(dir))
    while true do
      local name, kind = uv.fs_scandir_next(scan)
      if not name then break end
      local path = dir .. "/" .. name
      -- agentd is live: a temp file of an atomic write may be renamed away once listed
      local st = uv.fs_lstat(path)
      seen[name] = st ~= nil
      if not st then
        t.match(name, "%.tmp%d*$", "only a temp file may vanish while the home is read: " .. path)
      elseif kind == "directory" then
        t.eq(st.mode & 511, 448, path .. " is 0700")
        walk(path)
      elseif kind == "file" then
        t.eq(st.mode & 511, 384, path .. " is 0600")
        checked = checked + 1
      end
    end
  end
  walk(ctx.mcp_home)
  t.ok(seen["agentd.log"] and seen["agentd.log.1"], "the log rotated")
  t.ok(checked >= 4, "log, rotated log, session record and journal were checked")
end)

test("the log sink creates and rotates owner-only files (agentd run in front, where the umask decided)", function(t)
  local dir = assert(uv.fs_mkdtemp((os.getenv("TMPDIR") or "/tmp") .. "/rmcp-log-XXXXXX"))
  t.defer(function()
    for _, n in ipairs({ "a.log", "a.log.1" }) do os.remove(dir .. "/" .. n) end
    uv.fs_rmdir(dir)
  end)
  local sink = require("rmcp.agentd.main").rotating_sink(dir .. "/a.log", 100)
  for i = 1, 5 do sink(string.format("line %d %s\n", i, string.rep("x", 40))) end
  for _, n in ipairs({ "a.log", "a.log.1" }) do
    local st = assert(uv.fs_stat(dir .. "/" .. n), n .. " exists")
    t.eq(st.mode & 511, 384, n .. " is 0600")
  end
  -- 46-byte lines, 100 bytes at most: lines 1-2, 3-4 (now .1), 5 (the log); no temp name is left
  local function read(n)
    local f = assert(io.open(dir .. "/" .. n))
    local text = f:read("a")
    f:close()
    return text
  end
  t.match(read("a.log.1"), "^line 3 x+\nline 4 x+\n$")
  t.match(read("a.log"), "^line 5 x+\n$")
  local names, scan = {}, assert(uv.fs_scandir(dir))
  for name in function() return uv.fs_scandir_next(scan) end do names[#names + 1] = name end
  table.sort(names)
  t.eq(names, { "a.log", "a.log.1" })
end)
