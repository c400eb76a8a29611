-- agentd's socket API under bad input and between orchestrators: malformed lines, wrong types,
-- unknown and foreign sessions, hostile paths, oversize lines, cwd confinement (symlinks too),
-- watch supersede/cancel, restart refusal, and ctl on the same API.
-- needs: agent python3
local procs = require "procs"
local uv = require "luv"
local json = require "rmcp.lib.json"
local sock = require "rmcp.sock"
local channel = require "rmcp.channel"
local proc = require "rmcp.proc"
local support = require "agentd_support"

-- A raw NDJSON connection to agentd: send(line) and next() → the next decoded reply. Notifications
-- are skipped: agentd sends agent_event to every connection of an orchestrator, so the turn of a
-- session spawned on another connection may end between any two replies.
local function raw(t, path)
  local fd = assert(sock.connect(path))
  local inbox, waiter = {}, nil
  local ch = assert(channel.open(fd, {
    mode = "ndjson",
    on_line = function(line)
      local m = json.decode(line)
      if m.method ~= nil and m.id == nil then return end
      inbox[#inbox + 1] = m
      if waiter then local w = waiter; waiter = nil; w() end
    end,
    on_eof = function() end,
  }))
  t.defer(function() ch:close() end)
  local r = {}
  function r.send(line) ch:write(line) end
  function r.next()
    if #inbox == 0 then t.await(function(done) waiter = done end, 5000, "a reply from agentd") end
    return table.remove(inbox, 1)
  end
  function r.call(method, params, id)
    r.send(json.encode({ jsonrpc = "2.0", id = id or 1, method = method, params = params or {} }))
    return r.next()
  end
  return r
end

test("bad input gets clear JSON-RPC errors and never costs agentd or a session", function(t)
  local ctx = support.setup(t, { env = { REASONIX_MCP_MAX_LINE = "65536" },
    scenario = { rules = { { last_role = "user", text = "fine" } } } })
  local c = ctx.client()
  local sid = ctx.call(c, "spawn", { task = "keep me" }).session_id
  local pid = c.info.agentd_pid
  local r = raw(t, ctx.mcp_home .. "/agentd.sock")
  r.send("this is not json")
  t.eq(r.next().error.code, -32700)
  r.send("[1,2]")
  t.eq(r.next().error.code, -32600)
  local m = r.call("list")
  t.eq(m.error.code, -32002, "hello first")
  t.match(m.error.message, "hello")
  m = r.call("hello", { protocol = 99, orchestrator_id = "orch-a" })
  t.eq(m.error.code, -32002)
  t.match(m.error.message, "protocol mismatch")
  m = r.call("hello", { protocol = 1, orchestrator_id = 7 })
  t.eq(m.error.code, -32602)
  m = r.call("hello", { protocol = 1, orchestrator_id = "orch-a", project_dir = ctx.ws })
  t.eq(m.result.protocol, 1)
  local cases = {
    { "spawn", { task = 123 }, -32602, "task" },
    { "spawn", { task = "x", cwd = 5 }, -32602, "cwd" },
    { "spawn", { task = "x", tool_approval = "root" }, -32602, "tool_approval" },
    { "spawn", { task = "x", idle_timeout = "soon" }, -32602, "idle_timeout" },
    { "spawn", { task = "x", cwd = "/etc" }, -32003, "outside the project" },
    { "spawn", { task = "x", cwd = "../../../../etc" }, -32003, "outside the project" },
    { "spawn", { task = "x", cwd = "no/such/dir" }, -32602, "does not exist" },
    { "poll", { session_id = { 1 } }, -32602, "session_id" },
    { "poll", { session_id = "nope" }, -32001, "unknown session" },
    { "poll", { session_id = "../../etc/passwd" }, -32001, "unknown session" },
    { "transcript", { session_id = "../" .. sid }, -32001, "unknown session" },
    { "poll", { session_id = sid, max_events = "all" }, -32602, "max_events" },
    { "send", { session_id = sid, message = "" }, -32602, "message" },
    { "send", { session_id = sid, message = "x", expect = "maybe" }, -32602, "expect" },
    { "watch", { session_ids = "nope" }, -32001, "unknown session" },
    { "watch", { session_ids = {} }, -32602, "session_ids" },
    { "watch", { session_ids = { sid }, timeout = -1 }, -32602, "timeout" },
    { "respond_permission", { session_id = sid, option_id = "allow_once" }, -32006, "no pending decision" },
    { "no_such_method", {}, -32601, "method not found" },
  }
  for i, case in ipairs(cases) do
    m = r.call(case[1], case[2], 100 + i)
    t.eq(m.id, 100 + i)
    t.ok(m.error, case[1] .. " " .. json.encode(case[2]) .. " should fail")
    t.eq(m.error.code, case[3], case[1] .. " " .. json.encode(case[2]))
    t.match(m.error.message, case[4])
  end
  r.send(json.encode({ jsonrpc = "2.0", id = 500, method = "list", params = { 1, 2 } }))
  t.eq(r.next().error.code, -32602)
  r.send(json.encode({ jsonrpc = "2.0", id = 501, method = "spawn", params = { task = string.rep("x", 70000) } }))
  m = r.next()
  t.eq(m.error.code, -32600)
  t.match(m.error.message, "line too long")
  m = r.call("list", {}, 502)
  t.eq(m.id, 502, "the connection survives an oversize line")
  t.eq(m.result.sessions[1].session_id, sid)
  t.eq(ctx.call(c, "list", {}).sessions[1].session_id, sid)
  t.eq(c.info.agentd_pid, pid)
  t.ok(support.alive(pid))
end)

test("orchestrators are isolated: foreign ids look unknown, restart is refused", function(t)
  local ctx = support.setup(t, { scenario = { rules = { { last_role = "user", text = "mine" } } } })
  local a, b = ctx.client("orch-a"), ctx.client("orch-b")
  local sid = ctx.call(a, "spawn", { task = "A's work" }).session_id
  t.eq(#ctx.call(b, "list", {}).sessions, 0)
  local unknown = ctx.call_err(b, "poll", { session_id = "rx-000000000000" })
  for _, m in ipairs({ "poll", "stop", "send", "transcript", "resume", "respond_permission" }) do
    local err = ctx.call_err(b, m, { session_id = sid, message = "hi", option_id = "allow_once" })
    t.eq(err.code, unknown.code, m)
    t.eq((err.message:gsub(sid:gsub("%-", "%%-"), "ID")), (unknown.message:gsub("rx%-000000000000", "ID")),
      m .. ": same error as an unknown id")
  end
  t.eq(ctx.call_err(b, "watch", { session_ids = { sid } }).code, -32001)
  local err = ctx.call_err(b, "restart", {})
  t.eq(err.code, -32005)
  t.eq(err.message:find(sid, 1, true), nil, "never names another orchestrator's session")
  t.match(err.message, "other orchestrators have 1 agent")
  t.eq(ctx.call_err(b, "restart", { force = true }).code, -32005, "force does not end another orchestrator's agents")
  t.eq(ctx.call(a, "list", {}).sessions[1].session_id, sid)
end)

test("cwd confinement: project subdirs and allow_write dirs pass, outside and symlink escapes are refused", function(t)
  local outside = t.tmpdir("rmcp-outside")
  local allowed = t.tmpdir("rmcp-allowed")
  local ctx = support.setup(t, {
    home_opts = { extra_toml = '[sandbox]\nallow_write = ["' .. allowed .. '"]\n' },
    scenario = { rules = { { last_role = "user", text = "ok" } } },
  })
  local c = ctx.client()
  assert(uv.fs_mkdir(ctx.ws .. "/sub", 448))
  assert(uv.fs_symlink(outside, ctx.ws .. "/escape"))
  local err = ctx.call_err(c, "spawn", { task = "x", cwd = outside })
  t.eq(err.code, -32003)
  t.match(err.message, "REASONIX_MCP_ALLOW_ANY_CWD")
  err = ctx.call_err(c, "spawn", { task = "x", cwd = ctx.ws .. "/escape" })
  t.eq(err.code, -32003)
  t.match(err.message, "resolves to")
  err = ctx.call_err(c, "spawn", { task = "x", cwd = "escape" })
  t.eq(err.code, -32003, "a relative symlink escape too")
  local r = ctx.call(c, "spawn", { task = "x", cwd = "sub" })
  t.eq(r.cwd, uv.fs_realpath(ctx.ws .. "/sub"))
  r = ctx.call(c, "spawn", { task = "x", cwd = allowed })
  t.eq(r.cwd, uv.fs_realpath(allowed))
  t.eq(r.posture.allow_write[1], uv.fs_realpath(allowed))
  t.eq(#ctx.call(c, "list", {}).sessions, 2)
end)

test("watch: a newer watch supersedes, $/cancel and a dropped connection release it, terminal state stays pending", function(t)
  local ctx = support.setup(t, { scenario = { rules = {
    -- 2 s: both watches, the cancel and the dropped connection land while the turn runs
    { last_role = "user", user_contains = "SLOW", text = string.rep("w", 80), chunk = 2, delay = 0.05 },
  } } })
  local c = ctx.client()
  local sid = ctx.call(c, "spawn", { task = "SLOW" }).session_id
  local second_id, second, second_cb
  local first = table.pack(t.await(function(done)
    c:request("watch", { session_ids = { sid } }, done)
    second_id = c:request("watch", { session_ids = { sid } }, function(r, e)
      second = { r, e }
      if second_cb then second_cb() end
    end)
  end, 5000, "the first watch to end"))
  t.eq(first[1].superseded, true)
  c:cancel(second_id)
  if not second then t.await(function(done) second_cb = done end, 5000, "the cancelled watch to end") end
  t.eq(second[2].code, -32800)
  local other = ctx.client()
  t.ok(other:wait_connected())
  local dropped = table.pack(t.await(function(done)
    other:request("watch", { session_ids = { sid } }, done)
    -- the request is written before close: agentd sees the watch, then the connection drop
    other:close()
  end, 5000, "the dropped watch callback"))
  t.eq(dropped[1], nil)
  local res = ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  t.eq(res.stop_reason, "end_turn")
  t.eq(#res.message, 80)
end)

test("a keyed watch answer is kept until confirmed: its key gets it again, any watch once it is lost", function(t)
  local ctx = support.setup(t, { scenario = { rules = {
    { last_role = "user", user_contains = "TURN", text = "over: ", echo = "last_user" },
  } } })
  local a, b, plain, a2 = ctx.client(), ctx.client(), ctx.client(), ctx.client()
  local sid = ctx.call(a, "spawn", { task = "TURN one", keep_alive = true }).session_id
  local function watch(c, key, timeout, confirm)
    return ctx.call(c, "watch", { session_ids = { sid }, delivery_key = key, confirm = confirm ~= false, timeout = timeout })
  end
  local function turn(text, c, key, confirm)
    ctx.call(b, "send", { session_id = sid, message = text })
    local r = watch(c, key, nil, confirm).results[sid]
    t.match(r.message, text)
    return r
  end
  local first = watch(a, "L/n:1").results[sid]
  t.match(first.message, "TURN one")
  t.eq(watch(b, "L/n:2", 0).timed_out, true, "on its way (its connection lives): no other watch gets it")
  t.eq(watch(a, "L/n:1", 0).results[sid], first, "the same host request again: the same answer")
  a:notify("undelivered", { key = "L/n:1" })
  t.eq(watch(b, "L/n:3", 0).results[sid], first, "lost: the next watch gets it")
  b:notify("delivered", { key = "L/n:3" })
  t.eq(watch(b, "L/n:4", 0).timed_out, true, "confirmed: forgotten")
  -- the next answer goes out on a and stays on its way; a newer one on b does not push it out
  local second = turn("TURN two", a, "L/n:5")
  turn("TURN three", b, "L/n:6")
  b:notify("delivered", { key = "L/n:6" })
  -- a's connection closes with no word: the watch already waiting gets the answer at once
  local waiting = table.pack(t.await(function(done)
    b:request("watch", { session_ids = { sid }, delivery_key = "L/n:7", confirm = true }, done)
    ctx.call(b, "list", {}) -- b's lines are read in order: its watch now waits in agentd
    a:close()
  end, 5000, "the waiting watch to get the answer a's connection took down"))
  t.eq(waiting[1].results[sid], second)
  b:notify("undelivered", { key = "L/n:7" })
  t.eq(ctx.call(plain, "watch", { session_ids = { sid }, timeout = 0 }).results[sid], second, "a watch without a key gets a lost answer")
  t.eq(ctx.call(plain, "watch", { session_ids = { sid }, timeout = 0 }).timed_out, true, "and getting it was its confirmation")
  -- a request sent again gets its own answer even when an older one is lost
  local fifth = turn("TURN five", a2, "L/n:9")
  local sixth = turn("TURN six", a2, "L/n:10")
  b:notify("undelivered", { key = "L/n:9" })
  t.eq(watch(a2, "L/n:10", 0).results[sid], sixth, "its own first")
  a2:notify("delivered", { key = "L/n:10" })
  t.eq(watch(b, "L/n:11", 0).results[sid], fifth, "then the lost one")
  b:notify("delivered", { key = "L/n:11" })
  -- a launcher that never confirms (confirm absent): its answer is kept for its own re-send only
  local fourth = turn("TURN four", b, "L/n:8", false)
  b:notify("undelivered", { key = "L/n:8" })
  t.eq(ctx.call(plain, "watch", { session_ids = { sid }, timeout = 0 }).timed_out, true, "never lost")
  t.eq(watch(b, "L/n:8", 0, false).results[sid], fourth, "its re-send gets it again")
end)

test("a keyed poll answer is kept like a watch's: its key gets it again, the next poll once it is lost, never a watch", function(t)
  local ctx = support.setup(t, { scenario = { rules = {
    { last_role = "user", user_contains = "TURN", text = "over: ", echo = "last_user" },
  } } })
  local a, b, plain = ctx.client(), ctx.client(), ctx.client()
  local sid = ctx.call(a, "spawn", { task = "TURN one", keep_alive = true }).session_id
  ctx.watch_until(a, { sid }, function(_, x) return x.status == "idle" end)
  ctx.call(a, "send", { session_id = sid, message = "TURN two" })
  t.wait_for(function()
    return ctx.call(plain, "wait", { session_ids = { sid }, timeout = 1 }).sessions[sid].status == "idle"
  end, 10000, "the second turn to end (a wait consumes nothing)")
  local function poll(c, key)
    return ctx.call(c, "poll", { session_id = sid, delivery_key = key, confirm = true })
  end
  local first = poll(a, "L/n:1")
  t.match(first.message, "TURN two")
  t.eq(ctx.call(plain, "watch", { session_ids = { sid }, timeout = 0 }).results[sid].status, "idle", "the turn's end, taken")
  t.eq(poll(b, "L/n:2").message, nil, "on its way (its connection lives): no other poll gets it")
  b:notify("delivered", { key = "L/n:2" })
  t.eq(poll(a, "L/n:1"), first, "the same host request again: the same answer")
  a:notify("undelivered", { key = "L/n:1" })
  t.eq(ctx.call(b, "watch", { session_ids = { sid }, delivery_key = "L/n:3", confirm = true, timeout = 0 }).timed_out, true,
    "a watch never gets a poll's answer")
  t.eq(poll(b, "L/n:4"), first, "lost: the next poll gets it")
  b:notify("delivered", { key = "L/n:4" })
  t.eq(poll(b, "L/n:5").message, nil, "confirmed: forgotten")
end)

test("answers given again share the watch's max_result_bytes, each cut and flagged, down to the message", function(t)
  local ctx = support.setup(t, { env = { REASONIX_MCP_MAX_RESULT_BYTES = "9000" }, scenario = { rules = {
    { last_role = "user", user_contains = "LONG", text = string.rep("x", 3000) },
  } } })
  local a, b = ctx.client(), ctx.client()
  local ids = {}
  for i = 1, 3 do
    ids[i] = ctx.call(a, "spawn", { task = "LONG " .. i, keep_alive = true }).session_id
    -- a detailed watch of its own: its whole budget for the one result (the turn's copy of the
    -- text is cut first)
    local r = ctx.call(a, "watch", { session_ids = { ids[i] }, detail = true, delivery_key = "L/n:" .. i, confirm = true })
    local whole = r.results[ids[i]]
    t.eq(#whole.text, 3000, "alone its text fits whole")
    a:notify("undelivered", { key = "L/n:" .. i })
  end
  local r = ctx.call(b, "watch", { session_ids = ids, detail = true, delivery_key = "L/n:4", confirm = true, timeout = 0 })
  for _, sid in ipairs(ids) do
    local one = r.results[sid]
    t.ok(one, "every lost answer is given again")
    t.eq(one.result_truncated, true)
    t.eq(one.text_truncated, true)
    t.eq(one.message_truncated, true, "a third of the budget does not hold the 3000-byte message")
    t.ok(#json.encode(one) <= 3000, "each fits its third of the budget: " .. #json.encode(one))
  end
end)

test("ctl lists and polls the fleet over the same API; doctor checks the setup", function(t)
  local ctx = support.setup(t, { scenario = { rules = { { last_role = "user", text = "from ctl" } } } })
  local c = ctx.client("ctl-orch")
  local sid = ctx.call(c, "spawn", { task = "shown by ctl" }).session_id
  ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  -- Runs reasonix-mcp ctl with args; returns stdout, exit code.
  local function ctl(args)
    local out = {}
    local code = t.await(function(done)
      assert(proc.spawn({ file = require("rmcp.host").exe, args = args, stdin = "null", stdout = "pipe",
        stderr = "stdout", stdout_mode = "raw", cwd = ctx.ws,
        on_stdout = function(chunk) out[#out + 1] = chunk end, on_exit = function(code) done(code) end }))
    end, 10000, "ctl")
    return table.concat(out), code
  end
  local text, code = ctl({ "ctl", "--orchestrator", "ctl-orch", "--json", "list" })
  t.eq(code, 0, text)
  t.eq(json.decode(text).sessions[1].session_id, sid)
  text, code = ctl({ "ctl", "--orchestrator", "ctl-orch", "list" })
  t.eq(code, 0, text)
  t.ok(text:find(sid, 1, true), "the table shows the session")
  t.match(text, "idle")
  text, code = ctl({ "ctl", "--orchestrator", "someone-else", "poll", sid })
  t.eq(code, 1)
  t.match(text, "unknown session")
  text, code = ctl({ "doctor" })
  t.eq(code, 0, text)
  t.match(text, "%[ok  %] agent binary +" .. support.bin:gsub("%p", "%%%0") .. "  reasonix v")
  t.match(text, "%[ok  %] provider configured +providers with a key: mock")
  t.match(text, "%[ok  %] runtime dir")
  t.match(text, "%[ok  %] agentd +pid %d+, version")
  t.match(text, "agentd.log %(last")
end)

test("allow_write is read from [sandbox] only, single- or multi-line, comments ignored", function(t)
  local ownership = require "rmcp.agentd.ownership"
  local toml = table.concat({
    'allow_write = ["/not/this"]',
    "[sandbox]",
    'bash = "off"',
    "allow_write = [",
    '  "/a/b",  # first',
    "  '/c',",
    "]",
    "[other]",
    'allow_write = ["/nor/this"]',
  }, "\n")
  t.eq(ownership.allow_write_from_toml(toml), { "/a/b", "/c" })
  t.eq(ownership.allow_write_from_toml('[sandbox]\nallow_write = ["/x"]\n'), { "/x" })
  t.eq(ownership.inside("/a/bc", "/a/b"), false)
  t.eq(ownership.inside("/a/b/c", "/a/b"), true)
end)

test("an unreadable session file is listed as damaged with what remains, never resumed, never rewritten", function(t)
  local ctx = support.setup(t, { scenario = { rules = { { last_role = "user", text = "the answer" } } } })
  local c = ctx.client()
  local sid = ctx.call(c, "spawn", { task = "survivor" }).session_id
  ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  ctx.shutdown()
  local dir = ctx.mcp_home .. "/sessions/"
  local function write(name, text) local f = assert(io.open(dir .. name, "w")); f:write(text); f:close() end
  local function read(name) local f = assert(io.open(dir .. name)); local x = f:read("a"); f:close(); return x end
  -- cut short after its owner and cwd: listed, with the journal's turn
  local cut = string.format('{"id":"rx-cut000000001","owner":"orch-a","cwd":%q,"task":"half a ta', ctx.ws)
  write("rx-cut000000001.json", cut)
  write("rx-cut000000001.events.jsonl", '{"type":"turn_end","text":"what it said","t":1}\n')
  -- the metadata file of a real session lost: rebuilt from its journal (spawn names the owner)
  os.rename(dir .. sid .. ".json", dir .. sid .. ".json.lost")
  -- no owner anywhere, another orchestrator's, an id that does not match: not listed to orch-a
  write("rx-bad.json", "{not json")
  write("rx-wrong.json", '{"id":"rx-other","owner":"orch-b","cwd":"/"}')
  write("rx-empty.json", "")
  local rows = {}
  for _, r in ipairs(ctx.call(c, "list", {}).sessions) do rows[r.session_id] = r end
  local n = 0
  for _ in pairs(rows) do n = n + 1 end
  t.eq(n, 2, "the cut file and the lost one are listed to their owner")
  t.eq(rows["rx-cut000000001"].status, "exited")
  t.eq(rows["rx-cut000000001"].exit_reason, "damaged")
  t.match(rows["rx-cut000000001"].damaged, "unreadable session file %(not a JSON object%); recovered: owner, cwd; the journal holds 1 finished turn")
  t.eq(rows["rx-cut000000001"].cwd, ctx.ws)
  t.match(rows[sid].damaged, "unreadable session file %(missing%); recovered: owner, cwd; the journal holds 1 finished turn")
  local p = ctx.call(c, "poll", { session_id = sid, detail = true, include_full = true })
  t.match(p.full_text or "", "the answer", "its text comes back from the journal")
  local err = ctx.call_err(c, "resume", { session_id = "rx-cut000000001" })
  t.match(err.message, "cannot be resumed: its session file is unreadable %(not a JSON object%)")
  ctx.call(c, "stop", { session_id = "rx-cut000000001" })
  t.eq(read("rx-cut000000001.json"), cut, "the damaged file is kept as it was found")
  t.eq(uv.fs_stat(dir .. sid .. ".json"), nil, "nothing rewrote the lost one either")
  local b = ctx.call(ctx.client("orch-b"), "list", {}).sessions
  t.eq(#b, 1)
  t.match(b[1].damaged, "its id field is not rx%-wrong")
  local logtext = assert(io.open(ctx.mcp_home .. "/agentd.log")):read("a")
  t.match(logtext, "rx%-bad names no owner: not listed")
  t.match(logtext, "rx%-empty names no owner")
end)

test("a spawn the disk cannot hold fails before an agent starts, naming the path and the error", function(t)
  local ctx = support.setup(t, { scenario = { rules = { { last_role = "user", text = "ok" } } } })
  local sessions = ctx.mcp_home .. "/sessions"
  assert(sock.secure_dir(sessions))
  -- agentd runs in a private mount namespace where its sessions dir is a small tmpfs, filled up
  local script = 'mount -t tmpfs -o size=64k,mode=0700 tmpfs "$1" || exit 97; '
    .. 'dd if=/dev/zero of="$1/fill" bs=4k count=64 2>/dev/null; exec "$2" agentd'
  local exited
  local p = assert(proc.spawn({ file = "unshare", args = { "-m", "--propagation", "private", "sh", "-c", script,
    "sh", sessions, require("rmcp.host").exe }, stdin = "null", stdout = "inherit", stderr = "inherit",
    on_exit = function(code) exited = code end }))
  t.defer(function() if not exited then p:kill("TERM") end end)
  t.wait_for(function() return exited ~= nil or uv.fs_stat(ctx.mcp_home .. "/agentd.sock") ~= nil end, 5000,
    "agentd to listen")
  t.eq(exited, nil, "unshare + mount tmpfs must work here (root, util-linux); it exited " .. tostring(exited))
  local c = ctx.client(nil, nil, { autostart = false })
  local err = ctx.call_err(c, "spawn", { task = "no room" })
  t.match(err.message, "spawn failed: cannot save the session to " .. sessions:gsub("%p", "%%%0") .. "/rx%-%x+%.json: ENOSPC")
  t.eq(#ctx.call(c, "list", {}).sessions, 0, "nothing is left of it")
  t.eq(#ctx.prov:requests(), 0, "no agent ever asked the model")
  t.eq(#support.find_procs("acp", "REASONIX_MCP_HOME=" .. ctx.mcp_home), 0, "no agent process")
end)

-- Sets the soft file-size limit of process pid (bytes, or "unlimited"); fails loudly without prlimit.
local function fsize(t, pid, limit)
  local ok = os.execute(string.format("prlimit --pid %d --fsize=%s:", pid, limit))
  if not ok then t.fail("prlimit (util-linux) could not set RLIMIT_FSIZE of agentd " .. pid) end
end

test("a file-size limit fails spawn with EFBIG, not a kill; a later failed save is listed", function(t)
  local ctx = support.setup(t, { scenario = { rules = { { last_role = "user", text = "ok" } } } })
  local c = ctx.client()
  ctx.call(c, "list", {})
  local pid = c.info.agentd_pid
  t.defer(function() fsize(t, pid, "unlimited") end)
  fsize(t, pid, 64) -- any record is longer: write() stops short, then fails with EFBIG
  local err = ctx.call_err(c, "spawn", { task = "nowhere to keep it" })
  t.match(err.message, "^spawn failed: cannot save the session to .*/sessions/rx%-%x+%.json: EFBIG")
  t.eq(#ctx.call(c, "list", {}).sessions, 0, "nothing is left of it, and agentd still answers")
  fsize(t, pid, "unlimited")
  local sid = ctx.call(c, "spawn", { task = "fine" }).session_id
  ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  fsize(t, pid, 64)
  ctx.call(c, "send", { session_id = sid, message = "again" }) -- a turn: its deferred saves are refused
  ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  t.match(ctx.call(c, "list", {}).sessions[1].damaged or "", "metadata not saved: EFBIG",
    "the failed deferred save is shown")
end)

test("a session file with fields of the wrong type is repaired with a warning, never breaks a tool", function(t)
  local ctx = support.setup(t, { scenario = { rules = { { last_role = "user", text = "ok" } } } })
  local c = ctx.client()
  local sid = ctx.call(c, "spawn", { task = "fine" }).session_id
  ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  ctx.shutdown()
  local f = assert(io.open(ctx.mcp_home .. "/sessions/rx-damaged0001.json", "w"))
  f:write((json.encode({
    id = "rx-damaged0001", owner = "orch-a", cwd = ctx.ws, project_dir = ctx.ws, task = { "not", "text" },
    status = "exited", created_at = json.null, updated_at = "yesterday", last_text = 5, tool_approval = {},
    turns_total = "7", plan = { 1, { content = "step", status = "in_progress" } }, warnings = { 3 },
    terminal_pending = true, keep_alive = "yes",
  }):gsub("}$", ',"work_seconds":2e308}'))) -- reads as infinity, which JSON cannot hold
  f:close()
  local rows = ctx.call(c, "list", { include_task = true, detail = true }).sessions
  t.eq(#rows, 2, "both listed")
  local row = rows[1].session_id == "rx-damaged0001" and rows[1] or rows[2]
  t.eq(row.session_id, "rx-damaged0001")
  t.match(row.damaged, "damaged fields, reset to defaults: .*created_at %(null, want number%)")
  t.match(row.damaged, "last_text %(number, want string%)")
  t.match(row.damaged, "tool_approval %(table, want string%)")
  t.match(row.damaged, "task %(table, want string%)")
  t.match(row.damaged, "work_seconds %(infinite, want number%)")
  t.eq(row.task, "")
  local w = ctx.call(c, "watch", { session_ids = { "rx-damaged0001" } }).results["rx-damaged0001"]
  t.eq(w.status, "exited")
  local p = ctx.call(c, "poll", { session_id = "rx-damaged0001", detail = true })
  t.eq(p.status, "exited")
  local r = ctx.call(c, "resume", { session_id = "rx-damaged0001" })
  t.eq(r.status, "idle")
  ctx.call(c, "stop", { session_id = "rx-damaged0001" })
  local kept
  for _, x in ipairs(ctx.call(c, "list", { all = true }).sessions) do
    if x.session_id == "rx-damaged0001" then kept = x.damaged end
  end
  t.match(kept or "", "damaged fields", "the note is kept")
end)


test("a client that never reads its replies is not read either: agentd's memory stays bounded, others go on", function(t)
  local ctx = support.setup(t, { scenario = { rules = { { last_role = "user", text = "ok" } } } })
  local c = ctx.client()
  local big = string.rep("x", 64 * 1024)
  local sid = ctx.call(c, "spawn", { task = big }).session_id
  ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  local daemon = c.info.agentd_pid
  local before = procs.rss_kib(daemon)
  -- a hello, then 2000 lists of a 64 KB task (128 MB of replies) that are never read
  local fd = assert(sock.connect(ctx.mcp_home .. "/agentd.sock"))
  local hog = assert(channel.open(fd, { mode = "ndjson", on_line = function() end, on_eof = function() end }))
  hog:pause()
  t.defer(function() if not hog:is_closed() then hog:close() end end)
  hog:write(json.encode({ jsonrpc = "2.0", id = 0, method = "hello",
                          params = { protocol = 1, orchestrator_id = "orch-a", project_dir = ctx.ws } }))
  local req = json.encode({ jsonrpc = "2.0", id = 1, method = "list", params = { include_task = true } })
  local sent = 0
  t.await(function(done)
    local tick = uv.new_timer()
    tick:start(0, 5, function()
      for _ = 1, 50 do hog:write(req) end
      sent = sent + 50
      if sent >= 2000 then tick:close(); done() end
    end)
  end, 20000, "the hog's requests written")
  -- while the hog waits, another orchestrator is served at once
  local other = ctx.client("orch-b")
  local t0 = uv.now()
  t.eq(#ctx.call(other, "list", {}).sessions, 0)
  t.ok(uv.now() - t0 < 5000, "another client's hello+list took " .. (uv.now() - t0) .. " ms")
  local grown = procs.rss_kib(daemon) - before
  t.ok(grown < 32 * 1024, string.format("agentd grew %d KiB for a non-reading client", grown))
  hog:close()
  t.eq(ctx.call(c, "list", {}).sessions[1].session_id, sid, "agentd goes on after the hog leaves")
end)

test("a client with too many requests in flight is not read until one is answered; others go on", function(t)
  -- REASONIX_MCP_MAX_IN_FLIGHT=2: a connection may have 4 (twice that) unanswered
  local ctx = support.setup(t, { env = { REASONIX_MCP_MAX_IN_FLIGHT = "2" },
    scenario = { rules = { { last_role = "user", text = "ok" } } } })
  local c = ctx.client()
  local sid = ctx.call(c, "spawn", { task = "idle after this" }).session_id
  ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  local r = raw(t, ctx.mcp_home .. "/agentd.sock")
  t.eq(r.call("hello", { protocol = 1, orchestrator_id = "orch-a", project_dir = ctx.ws }, 0).result.protocol, 1)
  -- four waits that block until their timeout, then a list, all at once: the list is read only
  -- once a wait has ended (answered at once, it would come first)
  for id = 1, 4 do
    r.send(json.encode({ jsonrpc = "2.0", id = id, method = "wait", params = { session_ids = { sid }, timeout = 0.3 } }))
  end
  r.send(json.encode({ jsonrpc = "2.0", id = 5, method = "list", params = {} }))
  -- meanwhile another connection is served
  t.eq(ctx.call(c, "list", {}).sessions[1].session_id, sid)
  local first = r.next()
  t.ok(first.id ~= 5, "the list was answered before any of the 4 waits in flight ended")
  t.ok(first.result.timed_out, "a wait ends by its timeout")
  local seen = { [first.id] = true }
  for _ = 1, 4 do
    local m = r.next()
    seen[m.id] = true
    if m.id == 5 then t.eq(m.result.sessions[1].session_id, sid) end
  end
  t.eq(seen, { true, true, true, true, true }, "every request is answered")
end)

-- The environment of process pid as a map.
local function environ(pid)
  local f = assert(io.open("/proc/" .. pid .. "/environ", "r"))
  local text = f:read("a")
  f:close()
  local out = {}
  for k, v in text:gmatch("([^=%z]+)=([^%z]*)") do out[k] = v end
  return out
end

test("each orchestrator's agents run with its own environment; nothing of the daemon starter's leaks", function(t)
  local ctx = support.setup(t, { scenario = { rules = { { last_role = "user", text = "ok" } } } })
  -- orchestrator A starts agentd with a private token in its environment
  uv.os_setenv("RMCP_SPEC_TOKEN_A", "alpha")
  local env_a = uv.os_environ()
  local a = ctx.client("orch-a", nil, { env = env_a })
  local sa = ctx.call(a, "spawn", { task = "one" }).session_id
  uv.os_unsetenv("RMCP_SPEC_TOKEN_A")
  t.eq(environ(a.info.agentd_pid).RMCP_SPEC_TOKEN_A, "alpha", "agentd was started with A's token")
  local env_b = uv.os_environ()
  env_b.RMCP_SPEC_TOKEN_B = "beta"
  env_b.REASONIX_MCP_DEFAULT_LANGUAGE = "zh"
  local b = ctx.client("orch-b", nil, { env = env_b })
  local sb = ctx.call(b, "spawn", { task = "two" }).session_id
  local pid_of = {}
  for _, c in ipairs({ a, b }) do
    for _, row in ipairs(ctx.call(c, "list", { detail = true }).sessions) do pid_of[row.session_id] = row.agent_pid end
  end
  local ea, eb = environ(pid_of[sa]), environ(pid_of[sb])
  t.eq(ea.RMCP_SPEC_TOKEN_A, "alpha")
  t.eq(ea.RMCP_SPEC_TOKEN_B, nil)
  t.eq(eb.RMCP_SPEC_TOKEN_B, "beta", "B's agent has B's own variables")
  t.eq(eb.RMCP_SPEC_TOKEN_A, nil, "and nothing of A's")
  t.eq(ea.REASONIX_LANG, "en")
  t.eq(eb.REASONIX_LANG, "zh", "B's language default applies to B's agents only")
  -- a resume runs with the environment of the orchestrator that resumes
  ctx.call(b, "stop", { session_id = sb })
  ctx.call(b, "resume", { session_id = sb })
  for _, row in ipairs(ctx.call(b, "list", { detail = true }).sessions) do
    if row.session_id == sb then t.eq(environ(row.agent_pid).RMCP_SPEC_TOKEN_A, nil, "a resumed agent has none of A's") end
  end
  -- a hello whose env is not a map of strings is refused
  local bad = ctx.client("orch-c", nil, { env = { X = 1 } })
  t.match(ctx.call_err(bad, "list", {}).message, "env must be an object of strings")
end)

test("a workspace's reasonix.toml does not widen spawn confinement; the posture says when it widens the agent's", function(t)
  local outside = t.tmpdir("rmcp-widened")
  local ctx = support.setup(t, { scenario = { rules = { { last_role = "user", text = "ok" } } } })
  local f = assert(io.open(ctx.ws .. "/reasonix.toml", "w"))
  f:write('[sandbox]\nallow_write = ["' .. outside .. '", "/"]\n')
  f:close()
  t.defer(function() os.remove(ctx.ws .. "/reasonix.toml") end)
  local c = ctx.client()
  local err = ctx.call_err(c, "spawn", { task = "x", cwd = outside })
  t.eq(err.code, -32003, "a repository cannot switch confinement off for itself")
  err = ctx.call_err(c, "spawn", { task = "x", cwd = "/etc" })
  t.eq(err.code, -32003)
  -- what the agent itself reports is shown, with a warning naming the workspace file
  local posture = require("rmcp.agentd.posture").from_doctor({
    sandbox = { bash = "enforce", available = true, write_roots = { ctx.ws, outside } },
    config = { source_path = ctx.ws .. "/reasonix.toml" },
  }, ctx.ws)
  t.match(posture.warning, "workspace's own .*reasonix%.toml widens the agent's allow_write to " .. outside:gsub("%p", "%%%0"))
  local user = require("rmcp.agentd.posture").from_doctor({
    sandbox = { bash = "enforce", available = true, write_roots = { ctx.ws, outside } },
    config = { source_path = ctx.home.rxhome .. "/config.toml" },
  }, ctx.ws)
  t.eq(user.warning, nil, "the user's own config widening it is no news")
end)

test("REASONIX_MCP_ALLOW_ANY_CWD=1 lifts cwd confinement", function(t)
  local outside = t.tmpdir("rmcp-anywhere")
  local ctx = support.setup(t, { env = { REASONIX_MCP_ALLOW_ANY_CWD = "1" },
    scenario = { rules = { { last_role = "user", text = "ok" } } } })
  local c = ctx.client()
  t.eq(ctx.call(c, "spawn", { task = "x", cwd = outside }).cwd, uv.fs_realpath(outside))
end)

test("the routine scheduler starts with the first routine method when agentd has no routine", function(t)
  local ctx = support.setup(t)
  local c = ctx.client()
  local dir = ctx.mcp_home .. "/routines"
  t.eq(#ctx.call(c, "list", {}).sessions, 0)
  t.eq(uv.fs_stat(dir), nil, "no routine: the scheduler has not started (it makes its dir)")
  t.eq(ctx.call_err(c, "routine_nonexistent", {}).code, -32601, "an unknown routine_ method is not found")
  t.eq(uv.fs_stat(dir), nil)
  t.eq(#ctx.call(c, "routine_list", {}).routines, 0)
  t.ok(uv.fs_stat(dir), "the first routine method started the scheduler")
end)
