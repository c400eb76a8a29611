-- agentd reload: a replaced binary queues a safe reload (running turns, pending decisions, undelivered
-- results and keep_alive agents hold it; a binary that does not run is refused), then a fresh daemon
-- from the new binary takes over and sessions resume; restart refuses live agents unless forced; and
-- C-level stderr follows the rotated log. agentd runs from a private copy of the binary so the test
-- can replace it (cp to a temp name + mv, as an install does).
-- needs: agent python3
local uv = require "luv"
local support = require "agentd_support"

local BIN = os.getenv("RMCP_BIN") or require("rmcp.host").exe

-- Fast reload timings for tests; the log bound back to its default.
local reload_env = { REASONIX_MCP_RELOAD_GRACE_MS = "100", REASONIX_MCP_RELOAD_SETTLE_MS = "50",
                     REASONIX_MCP_RELOAD_CHECK_MS = "20", REASONIX_MCP_LOG_MAX_BYTES = "" }

local ask_rules = {
  { last_role = "user", user_contains = "ASKQ", tool_calls = { { name = "ask", arguments = { questions = { {
    header = "Library", question = "Which library?", multiSelect = false,
    options = { { label = "requests" }, { label = "httpx" } } } } } } } },
  { last_tool_name = "ask", text = "Got: ", echo = "tool_result" },
}

-- Rules: the question above, a ~2 s SLOW turn, RECALL echoing the history, "ok" for the rest.
local function scenario()
  local rules = {
    { last_role = "user", user_contains = "SLOW", text = string.rep("s", 40), chunk = 2, delay = 0.1 },
    { last_role = "user", user_contains = "RECALL", text = "recalled: ", echo = "all" },
  }
  for _, r in ipairs(ask_rules) do rules[#rules + 1] = r end
  rules[#rules + 1] = { last_role = "user", text = "ok" }
  return { rules = rules }
end

-- Copies the built binary into a private dir; returns its path.
local function install_copy(t)
  local exe = t.tmpdir("rmcp-bin") .. "/reasonix-mcp"
  assert(os.execute(string.format("cp '%s' '%s'", BIN, exe)))
  return exe
end

-- Replaces exe the way an install does: the new file under a temp name, renamed over it.
local function replace(exe, content_from)
  assert(os.execute(string.format("cp '%s' '%s.new' && chmod 755 '%s.new' && mv '%s.new' '%s'",
    content_from or BIN, exe, exe, exe, exe)))
end

-- The binary process pid runs (what /proc says; " (deleted)" once replaced).
local function exe_of(pid)
  return uv.fs_readlink(string.format("/proc/%d/exe", pid))
end

-- Waits until c's agentd has re-executed exe (the same pid, exe's binary); returns the pid.
local function wait_exec(t, c, exe)
  local new_ino = uv.fs_stat(exe).ino
  local pid = c.info.agentd_pid
  t.wait_for(function()
    local st = uv.fs_stat(string.format("/proc/%d/exe", pid))
    return st and st.ino == new_ino
  end, 5000, "agentd to re-execute the new binary")
  return pid
end

-- list rows by session id, and the list result.
local function rows(ctx, c)
  local r = ctx.call(c, "list", { all = true })
  local by = {}
  for _, row in ipairs(r.sessions) do by[row.session_id] = row end
  return by, r
end

-- What the model received in the last chat request, as one text.
local function last_history(ctx)
  local reqs = ctx.prov:requests()
  local out = {}
  for _, m in ipairs(reqs[#reqs].body.messages) do
    if type(m.content) == "string" then out[#out + 1] = m.content end
  end
  return table.concat(out, "\n")
end

-- Waits until the queued reload waits for exactly the entries in want: a set whose keys are the
-- entry strings (value true), or a list of alternatives (value: the other strings that may stand for
-- the same session instead, e.g. a turn that ended before the check but is not collected yet).
local function wait_blockers(t, ctx, c, want, what)
  local last
  return t.wait_for(function()
    local r = ctx.call(c, "list", {})
    last = r.reload
    if not (r.reload_pending and r.reload) then return false end
    local got, matched = {}, 0
    for _, w in ipairs(r.reload.waiting_for) do got[w] = true end
    for k, alt in pairs(want) do
      local found = got[k]
      for _, a in ipairs(type(alt) == "table" and alt or {}) do found = found or got[a] end
      if not found then return false end
      matched = matched + 1
    end
    if #r.reload.waiting_for ~= matched then return false end
    return r.reload
  end, 5000, function() return what .. " (last seen: " .. require("testing").show(last) .. ")" end)
end

test("a new binary queues a reload that waits for a running turn, a decision and a keep_alive agent; then a fresh daemon takes over and sessions resume", function(t)
  local ctx = support.setup(t, { env = reload_env, scenario = scenario() })
  local exe = install_copy(t)
  local c = ctx.client("orch-a", nil, { exe = exe })
  local slow = ctx.call(c, "spawn", { task = "SLOW work" }).session_id
  local ask = ctx.call(c, "spawn", { task = "ASKQ me" }).session_id
  local kept = ctx.call(c, "spawn", { task = "keep me", keep_alive = true }).session_id
  ctx.watch_until(c, { ask }, function(_, x) return x.permission_request ~= nil end)
  ctx.watch_until(c, { kept }, function(_, x) return x.status == "idle" end)
  local old = c.info.agentd_pid
  t.eq(exe_of(old), exe)

  local t0 = uv.now()
  replace(exe)
  -- (on a loaded machine the ~2 s SLOW turn may end before the reload is queued: uncollected, it
  -- holds the reload just the same)
  local rl = wait_blockers(t, ctx, c, { [slow .. ": running"] = { slow .. ": result not delivered" },
                                        [ask .. ": awaiting_decision"] = true,
                                        [kept .. ": keep_alive"] = true }, "the reload to be queued behind three sessions")
  local t_queued = uv.now() - t0
  t.match(rl.reason, "changed")
  t.eq(rl.state, "waiting")
  -- hello carries it too (doctor prints it); another orchestrator sees only a count
  local other = ctx.client("orch-b", nil, { exe = exe })
  t.ok(other:wait_connected())
  t.eq(other.info.reload.pending, true)
  t.eq(other.info.reload.waiting_for, { "3 session(s) of other orchestrators" })
  other:close()

  -- the decision is answered, both turns complete and their results are delivered by watches
  ctx.call(c, "respond_permission", { session_id = ask, option_id = "q1:2" })
  t.match(ctx.watch_until(c, { ask }, function(_, x) return x.status == "idle" end).message, "httpx")
  t.eq(ctx.watch_until(c, { slow }, function(_, x) return x.status == "idle" end).message, string.rep("s", 40))
  wait_blockers(t, ctx, c, { [kept .. ": keep_alive"] = true }, "only the keep_alive agent to hold the reload")
  t.eq(c.info.agentd_pid, old, "nothing interrupted: the same daemon")
  t.ok(support.alive(old))

  -- stopping the keep_alive agent lets it go
  local t1 = uv.now()
  ctx.call(c, "stop", { session_id = kept })
  t.wait_for(function() return not support.alive(old) end, 5000, "the old agentd to hand over and exit")
  local by, list = rows(ctx, c)
  local t_handover = uv.now() - t1
  local fresh = c.info.agentd_pid
  t.ne(fresh, old, "a fresh daemon")
  t.eq(exe_of(fresh), exe, "running the new binary")
  t.eq(list.reload, nil)
  t.eq(by[slow].status, "exited")
  t.eq(by[slow].exit_reason, "daemon_reload")
  t.eq(by[ask].exit_reason, "daemon_reload")
  t.eq(by[kept].exit_reason, "stopped")
  -- one daemon: after its goodbye the clients wait for the fresh daemon the old one starts
  t.wait_for(function() return #support.find_procs("agentd", "REASONIX_MCP_HOME=" .. ctx.mcp_home) == 1 end, 3000, "one daemon")

  -- the closed session resumes with its history
  t.eq(ctx.call(c, "resume", { session_id = ask }).status, "idle")
  ctx.call(c, "send", { session_id = ask, message = "RECALL what I picked" })
  t.match(ctx.watch_until(c, { ask }, function(_, x) return x.status == "idle" end).message, "^recalled:")
  t.match(last_history(ctx), "Library: httpx", "the resumed agent sent the earlier answer to the model")
  io.write(string.format("# reload queued %d ms after the rename; fresh daemon answering %d ms after the last blocker stopped\n",
    t_queued, t_handover))
end)

test("an undelivered result holds the reload until polled; a binary that does not run is refused and the daemon stays", function(t)
  local ctx = support.setup(t, { env = reload_env, scenario = scenario() })
  local exe = install_copy(t)
  local c = ctx.client("orch-a", nil, { exe = exe })
  local sid = ctx.call(c, "spawn", { task = "hello" }).session_id
  t.wait_for(function() return rows(ctx, c)[sid].status == "idle" end, 10000, "the turn to end (undelivered)")
  local old = c.info.agentd_pid
  local broken = t.tmpdir("rmcp-broken") .. "/reasonix-mcp"
  local f = assert(io.open(broken, "w"))
  f:write("#!/bin/sh\necho 'not today' >&2\nexit 3\n")
  f:close()
  replace(exe, broken)
  wait_blockers(t, ctx, c, { [sid .. ": result not delivered"] = true }, "the reload to wait for the undelivered result")
  t.eq(ctx.call(c, "poll", { session_id = sid }).message, "ok")
  local rl = t.wait_for(function()
    local r = ctx.call(c, "list", {})
    return r.reload and r.reload.error and r.reload
  end, 5000, "the broken binary to be refused")
  t.match(rl.error, "not today")
  t.eq(rl.pending, false)
  -- doctor says so too
  local out = {}
  local code = t.await(function(done)
    assert(require("rmcp.proc").spawn({
      file = BIN, args = { "doctor" }, stdin = "null", stdout = "pipe", stdout_mode = "raw", stderr = "null",
      on_stdout = function(chunk) out[#out + 1] = chunk end, on_exit = function(c) done(c) end,
    }))
  end, 20000, "doctor")
  t.match(table.concat(out), "%[FAIL%] agentd reload +new binary refused: .*not today")
  t.eq(code, 1)
  t.ok(support.alive(old))
  t.eq(c.info.agentd_pid, old)
  t.eq(rows(ctx, c)[sid].status, "idle", "the agent was left alone")
  -- a good binary afterwards goes through
  replace(exe)
  t.wait_for(function() return not support.alive(old) end, 5000, "the old agentd to hand over")
  local by = rows(ctx, c)
  t.ne(c.info.agentd_pid, old)
  t.eq(by[sid].exit_reason, "daemon_reload")
end)

test("a watch answer the host may not have got holds the reload: on its way, then lost, until a watch takes it and it is confirmed", function(t)
  local ctx = support.setup(t, { env = reload_env, scenario = scenario() })
  local exe = install_copy(t)
  local c = ctx.client("orch-a", nil, { exe = exe })
  local sid = ctx.call(c, "spawn", { task = "hello" }).session_id
  local first = ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  -- the next turn's answer goes to a watch of a launcher that confirms, and no word comes yet
  ctx.call(c, "send", { session_id = sid, message = "again" })
  local answer = ctx.call(c, "watch", { session_ids = { sid }, delivery_key = "L/n:1", confirm = true }).results[sid]
  t.eq(answer.message, first.message)
  t.eq(answer.status, "idle")
  local old = c.info.agentd_pid
  replace(exe)
  wait_blockers(t, ctx, c, { [sid .. ": result on its way to the host"] = true }, "the reload to wait for the answer on its way")
  c:notify("undelivered", { key = "L/n:1" })
  wait_blockers(t, ctx, c, { [sid .. ": result lost on its way to the host (the next watch gets it)"] = true },
    "the reload to wait for the lost answer")
  t.eq(ctx.call(c, "watch", { session_ids = { sid }, delivery_key = "L/n:2", confirm = true, timeout = 0 }).results[sid], answer,
    "the next watch gets the lost answer")
  t.ok(support.alive(old), "still the same daemon while the answer is on its way again")
  c:notify("delivered", { key = "L/n:2" })
  t.wait_for(function() return not support.alive(old) end, 5000, "the old agentd to hand over once the host has it")
  t.eq(rows(ctx, c)[sid].exit_reason, "daemon_reload")
end)

test("live handover waits for a watch answer on its way and takes a lost one along to the new image", function(t)
  local env = { REASONIX_MCP_LIVE_HANDOVER = "1" }
  for k, v in pairs(reload_env) do env[k] = v end
  local ctx = support.setup(t, { env = env, scenario = scenario() })
  t.defer(function() uv.os_unsetenv("REASONIX_MCP_LIVE_HANDOVER") end)
  local exe = install_copy(t)
  local c = ctx.client("orch-a", nil, { exe = exe })
  local lost = ctx.call(c, "spawn", { task = "lost one", keep_alive = true }).session_id
  local sent = ctx.call(c, "spawn", { task = "sent one", keep_alive = true }).session_id
  for _, sid in ipairs({ lost, sent }) do ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end) end
  local function turn(sid, key)
    ctx.call(c, "send", { session_id = sid, message = "ok " .. key })
    return ctx.call(c, "watch", { session_ids = { sid }, delivery_key = key, confirm = true }).results[sid]
  end
  local lost_answer = turn(lost, "L/n:1")
  c:notify("undelivered", { key = "L/n:1" })
  turn(sent, "L/n:2")
  local old_ino = uv.fs_stat(string.format("/proc/%d/exe", c.info.agentd_pid)).ino
  replace(exe)
  wait_blockers(t, ctx, c, { [sent .. ": an answer on its way to the host"] = true }, "the handover to wait for the answer on its way")
  t.eq(uv.fs_stat(string.format("/proc/%d/exe", c.info.agentd_pid)).ino, old_ino, "not handed over yet")
  c:notify("delivered", { key = "L/n:2" })
  local pid = wait_exec(t, c, exe)
  t.eq(ctx.call(c, "watch", { session_ids = { lost }, delivery_key = "L/n:3", confirm = true, timeout = 0 }).results[lost], lost_answer,
    "the new image gives the lost answer to the next watch")
  c:notify("delivered", { key = "L/n:3" })
  t.eq(ctx.call(c, "watch", { session_ids = { lost, sent }, timeout = 0 }).timed_out, true, "nothing else was carried over")
  t.eq(c.info.agentd_pid, pid, "the same pid: exec")
end)

test("live handover: an agent a spawn named keeps its own profile in the new image (a message for its turn still queues)", function(t)
  local env = { REASONIX_MCP_LIVE_HANDOVER = "1" }
  for k, v in pairs(reload_env) do env[k] = v end
  local ctx = support.setup(t, { env = env, scenario = scenario() })
  t.defer(function() uv.os_unsetenv("REASONIX_MCP_LIVE_HANDOVER") end)
  support.write_policy(ctx, "mine.lua", string.format("return { agents = { mine = { argv = { %q, 'acp' }, profile = 'acp' } } }", support.bin))
  local exe = install_copy(t)
  local c = ctx.client("orch-a", nil, { exe = exe })
  local sid = ctx.call(c, "spawn", { task = "hello", agent = "mine", keep_alive = true }).session_id
  ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  -- the acp profile queues a message for a running turn (reasonix's would steer it in)
  local function queues(key)
    ctx.call(c, "send", { session_id = sid, message = "SLOW " .. key })
    t.wait_for(function() return rows(ctx, c)[sid].status == "running" end, 10000, "the slow turn to run")
    local delivered = ctx.call(c, "send", { session_id = sid, message = "ok " .. key }).delivered
    ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" and x.message == "ok" end)
    return delivered
  end
  t.eq(queues("before"), "queued")
  replace(exe)
  wait_exec(t, c, exe)
  t.eq(queues("after"), "queued", "the adopted agent kept its agent's profile")
  ctx.call(c, "stop", { session_id = sid })
end)

test("an install behind a symlink: repointing it reloads agentd into the new target", function(t)
  local ctx = support.setup(t, { env = reload_env, scenario = scenario() })
  local dir = t.tmpdir("rmcp-links")
  for _, v in ipairs({ "v1", "v2" }) do
    assert(uv.fs_mkdir(dir .. "/" .. v, 448))
    assert(os.execute(string.format("cp '%s' '%s/%s/reasonix-mcp'", BIN, dir, v)))
  end
  local link = dir .. "/reasonix-mcp"
  assert(uv.fs_symlink(dir .. "/v1/reasonix-mcp", link))
  local c = ctx.client("orch-a", nil, { exe = link })
  local sid = ctx.call(c, "spawn", { task = "hello" }).session_id
  ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  local old = c.info.agentd_pid
  t.eq(exe_of(old), dir .. "/v1/reasonix-mcp")
  -- repoint the link the way an installer does: a new link under a temp name, renamed over it
  assert(uv.fs_symlink(dir .. "/v2/reasonix-mcp", link .. ".new"))
  assert(uv.fs_rename(link .. ".new", link))
  t.wait_for(function() return not support.alive(old) end, 5000, "the old agentd to hand over")
  t.eq(rows(ctx, c)[sid].exit_reason, "daemon_reload")
  t.eq(exe_of(c.info.agentd_pid), dir .. "/v2/reasonix-mcp", "the fresh daemon runs the new target")
end)

test("restart: refused while agents are live unless force; force stops them and the next call reaches a fresh daemon where they resume", function(t)
  local ctx = support.setup(t, { env = reload_env, scenario = scenario() })
  local a, b = ctx.client("orch-a"), ctx.client("orch-b")
  local mine = ctx.call(a, "spawn", { task = "REMEMBER codeword PELICAN", keep_alive = true }).session_id
  ctx.watch_until(a, { mine }, function(_, x) return x.status == "idle" end)
  local err = ctx.call_err(a, "restart", {})
  t.eq(err.code, -32005)
  t.ok(err.message:find(mine .. " (keep_alive)", 1, true), "names my agent a reload would wait for: " .. err.message)
  t.match(err.message, "force=true")
  local theirs = ctx.call(b, "spawn", { task = "SLOW other" }).session_id
  err = ctx.call_err(a, "restart", { force = true })
  t.eq(err.code, -32005, "force does not end another orchestrator's agents")
  t.eq(err.message:find(theirs, 1, true), nil, "never names them")
  t.match(err.message, "other orchestrators have 1 agent")
  ctx.call(b, "stop", { session_id = theirs })
  local old = a.info.agentd_pid
  t.eq(ctx.call(a, "restart", { force = true }).restarting, true)
  t.wait_for(function() return not support.alive(old) end, 5000, "the old agentd to exit")
  -- the next call of each client reaches the fresh daemon by itself
  local mine_row = rows(ctx, a)[mine]
  local theirs_row = rows(ctx, b)[theirs]
  t.ne(a.info.agentd_pid, old)
  t.eq(a.info.agentd_pid, b.info.agentd_pid)
  t.eq(mine_row.status, "exited")
  t.eq(mine_row.exit_reason, "daemon_restart")
  t.eq(theirs_row.exit_reason, "stopped", "stopped by its own orchestrator")
  t.eq(ctx.call(a, "resume", { session_id = mine }).status, "idle")
  ctx.call(a, "send", { session_id = mine, message = "RECALL the codeword" })
  t.match(ctx.watch_until(a, { mine }, function(_, x) return x.status == "idle" end).message, "^recalled:")
  t.match(last_history(ctx), "codeword PELICAN", "the resumed agent sent the earlier history to the model")
  -- with nothing live, a plain restart goes through
  ctx.call(a, "stop", { session_id = mine })
  local second = a.info.agentd_pid
  t.eq(ctx.call(a, "restart", {}).restarting, true)
  t.wait_for(function() return not support.alive(second) end, 5000, "the second agentd to exit")
  t.eq(#ctx.call(a, "list", { all = true }).sessions, 1)
  t.ne(a.info.agentd_pid, second)
end)

test("live handover: a new binary takes a running turn, a pending decision and a keep_alive agent along (same pid, same agents, no chunk lost)", function(t)
  local env = { REASONIX_MCP_LIVE_HANDOVER = "1" }
  for k, v in pairs(reload_env) do env[k] = v end
  local sc = scenario()
  sc.rules[1].text = string.rep("s", 160) -- ~8 s: the exec lands mid-turn even on a loaded machine
  local ctx = support.setup(t, { env = env, scenario = sc })
  t.defer(function() uv.os_unsetenv("REASONIX_MCP_LIVE_HANDOVER") end)
  local exe = install_copy(t)
  local c = ctx.client("orch-a", nil, { exe = exe })
  local ask = ctx.call(c, "spawn", { task = "ASKQ me" }).session_id
  local kept = ctx.call(c, "spawn", { task = "keep me", keep_alive = true }).session_id
  ctx.watch_until(c, { ask }, function(_, x) return x.permission_request ~= nil end)
  ctx.watch_until(c, { kept }, function(_, x) return x.status == "idle" end)
  -- the streaming turn starts last, and the exec follows its first output: the whole stream is
  -- left for the handover, however slowly the others started
  local slow = ctx.call(c, "spawn", { task = "SLOW work" }).session_id
  t.ok(ctx.call(c, "wait", { session_ids = { slow } }).woke, "the slow turn streams")
  local pids = {}
  for _, row in ipairs(ctx.call(c, "list", { detail = true }).sessions) do pids[row.session_id] = row.agent_pid end
  local old = c.info.agentd_pid
  t.eq(rows(ctx, c)[slow].status, "running")

  local t0 = uv.now()
  replace(exe)
  local new_ino = uv.fs_stat(exe).ino
  t.wait_for(function()
    local st = uv.fs_stat(string.format("/proc/%d/exe", old))
    return st and st.ino == new_ino
  end, 5000, "agentd to re-execute the new binary")
  local by = {}
  for _, row in ipairs(ctx.call(c, "list", { detail = true }).sessions) do by[row.session_id] = row end
  local t_back = uv.now() - t0
  t.eq(c.info.agentd_pid, old, "the same pid: exec, not a new daemon")
  for _, sid in ipairs({ slow, ask, kept }) do t.eq(by[sid].agent_pid, pids[sid], "the same agent process") end
  t.eq(by[slow].status, "running")
  t.eq(by[ask].status, "awaiting_decision")
  t.eq(by[ask].pending_decision.kind, "question")
  t.eq(by[kept].status, "idle")

  -- the decision is answered through the new image, the turn that spanned the exec ends whole
  ctx.call(c, "respond_permission", { session_id = ask, option_id = "q1:2" })
  t.match(ctx.watch_until(c, { ask }, function(_, x) return x.status == "idle" end).message, "httpx")
  t.eq(ctx.watch_until(c, { slow }, function(_, x) return x.status == "idle" end).message, string.rep("s", 160),
    "every chunk of the turn, before and after the exec")
  ctx.call(c, "send", { session_id = kept, message = "RECALL" })
  t.match(ctx.watch_until(c, { kept }, function(_, x) return x.status == "idle" end).message, "^recalled:")
  -- one daemon: after its goodbye the clients wait for the new image instead of starting another
  t.wait_for(function() return #support.find_procs("agentd", "REASONIX_MCP_HOME=" .. ctx.mcp_home) == 1 end, 3000, "one daemon")
  t.eq(uv.fs_stat(ctx.mcp_home .. "/agentd.handover.json"), nil, "the state file is gone")
  -- the adopted agents are still tied to the daemon: killing it kills them (PDEATHSIG survived exec)
  uv.kill(old, "sigkill")
  t.wait_for(function()
    for _, pid in pairs(pids) do if support.alive(pid) then return false end end
    return true
  end, 2000, "every adopted agent to die with agentd", 10)
  io.write(string.format("# live handover: the new image answered %d ms after the rename, with 3 live agents\n", t_back))
end)

test("after a log rotation the daemon's stdout and stderr point at the fresh agentd.log", function(t)
  local ctx = support.setup(t, { env = { REASONIX_MCP_LOG_MAX_BYTES = "600" } })
  local log = ctx.mcp_home .. "/agentd.log"
  local c = ctx.client()
  t.ok(c:wait_connected())
  local pid = c.info.agentd_pid
  -- every hello is a log line: connect until the log has rotated at least once
  for i = 1, 12 do
    local x = ctx.client("orch-" .. i)
    t.ok(x:wait_connected())
    x:close()
  end
  t.ok(uv.fs_stat(log .. ".1"), "the log rotated")
  for _, fd in ipairs({ 1, 2 }) do
    t.eq(uv.fs_readlink(string.format("/proc/%d/fd/%d", pid, fd)), log, "fd " .. fd .. " follows the rotation")
  end
end)
