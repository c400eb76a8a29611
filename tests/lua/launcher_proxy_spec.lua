-- The launcher's routing rules (lua/rmcp/launcher/: router, ledger, supervisor, wire) with fake server children:
-- handshake replay with swallowed answers, repeatable calls moved or re-sent and mutating ones
-- kept or failed, buffering order, cancel routing, first-answer-wins across a swap, server->host id
-- renaming, private messages, a failed candidate, give-up, and shutdown. The real processes are
-- tested in tests/e2e/launcher.test.mjs.
local uv = require "luv"
local json = require "rmcp.lib.json"
local wire = require "rmcp.launcher.wire"
local proxy_mod = require "rmcp.launcher.proxy"
local child_mod = require "rmcp.launcher.child"

local with_env = require("testing").with_env

-- A proxy wired to fake children; returns {p, host (decoded lines to the host), kids, exit_code}.
local function rig()
  local r = { host = {}, raw = {}, kids = {} }
  r.p = proxy_mod.new{
    send_host = function(line)
      r.raw[#r.raw + 1] = line
      r.host[#r.host + 1] = assert(json.decode(line))
      return r.queued or 0 -- bytes left in the queue to the host (a test sets r.queued)
    end,
    on_exit = function(code) r.exit_code = code end,
    spawn_child = function(o)
      if r.refuse then return nil, "ENOENT: no such file" end
      local c = {
        n = o.n, pid = 100 + o.n, started = uv.now(), timers = {}, own = {}, server_reqs = {},
        exited = false, stdin_closed = false, got = {}, raw = {},
      }
      function c:send(line)
        if self.exited or self.stdin_closed then return false end
        if line:find('"$/rmcp/launcher"', 1, true) then
          -- what the launcher does for its servers: said before anything else, kept out of got
          self.greeted = #self.raw == 0
          return true
        end
        self.raw[#self.raw + 1] = line
        self.got[#self.got + 1] = assert(json.decode(line))
        return true
      end
      function c:stop() self.stdin_closed = true end
      function c:kill() self.stdin_closed = true end
      function c:describe_exit() return "exit code " .. tostring(self.code) end
      -- the server writes a message
      function c:say(msg) o.on_line(self, type(msg) == "string" and msg or assert(json.encode(msg))) end
      -- the server exits
      function c:exit(code)
        self.exited, self.code = true, code or 0
        for _, tm in pairs(self.timers) do child_mod.cancel_timer(tm) end
        o.on_exit(self, self.code, 0)
      end
      -- answers the replayed initialize it got
      function c:answer_init(version)
        for _, m in ipairs(self.got) do
          if m.method == "initialize" then
            self:say({ jsonrpc = "2.0", id = m.id, result = { protocolVersion = version or "2025-11-25", capabilities = {} } })
          end
        end
      end
      r.kids[#r.kids + 1] = c
      return c
    end,
  }
  -- the host writes a message
  function r.send(msg) r.p:from_host(type(msg) == "string" and msg or assert(json.encode(msg))) end
  -- host messages with id (responses) or method
  function r.answers(id)
    local out = {}
    for _, m in ipairs(r.host) do if m.id == id and m.method == nil then out[#out + 1] = m end end
    return out
  end
  function r.notes(method)
    local out = {}
    for _, m in ipairs(r.host) do if m.method == method then out[#out + 1] = m end end
    return out
  end
  r.p:start()
  return r
end

-- The messages a fake child got with this method (and, for tools/call, this tool).
local function got(c, method, tool)
  local out = {}
  for _, m in ipairs(c.got) do
    if m.method == method and (not tool or (m.params and m.params.name == tool)) then out[#out + 1] = m end
  end
  return out
end

local INIT = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
  .. '"capabilities":{"roots":{"listChanged":true},"x":[]},"clientInfo":{"name":"spec","version":"1"}}}'

-- Runs the handshake through the first child.
local function handshake(r)
  local a = r.kids[1]
  r.send(INIT)
  a:say({ jsonrpc = "2.0", id = 0, result = { protocolVersion = "2025-11-25", capabilities = {} } })
  r.send({ jsonrpc = "2.0", method = "notifications/initialized" })
  return a
end

local function call(id, tool, args)
  return { jsonrpc = "2.0", id = id, method = "tools/call", params = { name = tool, arguments = args or {} } }
end

test("wire: the top-level id is found and replaced in place; nested ids, strings and [] are untouched", function(t)
  local line = '{"params":{"id":7,"s":"a\\"}{[","list":[],"o":{}} , "id" : "x\\"y", "method":"m"}'
  t.eq(wire.raw_id(line), '"x\\"y"')
  t.eq(wire.replace_id(line, "42"), '{"params":{"id":7,"s":"a\\"}{[","list":[],"o":{}} , "id" : 42, "method":"m"}')
  t.eq(wire.raw_id('{"jsonrpc":"2.0","id":12,"result":{}}'), "12")
  t.eq(wire.raw_id('{"jsonrpc":"2.0","id":-1.5e3}'), "-1.5e3")
  t.eq(wire.raw_id('{"jsonrpc":"2.0","method":"x"}'), nil)
  t.eq(wire.raw_id('[{"id":1}]'), nil)
  t.eq(wire.raw_id('{"id":'), nil)
  local jsonrpc = require "rmcp.lib.jsonrpc"
  t.eq(jsonrpc.id_key(1.0), jsonrpc.id_key(1))
  t.ne(jsonrpc.id_key(1), jsonrpc.id_key("1"))
  t.ne(jsonrpc.id_key(1.5), jsonrpc.id_key("1.5"))
  t.ne(jsonrpc.id_key("n:1.5"), jsonrpc.id_key(1.5))
  t.eq(type(jsonrpc.id_key(0 / 0)), "string", "a NaN id (cjson reads NaN) still makes a table key")
  t.eq(jsonrpc.id_key(require("rmcp.lib.json").null), nil)
  t.ok(wire.repeatable("tools/call", { name = "reasonix_watch" }))
  t.ok(not wire.repeatable("tools/call", { name = "reasonix_spawn" }))
  t.ok(wire.repeatable("tools/list", {}))
  t.ok(not wire.repeatable("x/unknown", {}))
  t.ok(wire.superseded({ result = { structuredContent = { superseded = true } } }))
  t.ok(wire.superseded({ result = { content = { { type = "text", text = '{"superseded":true}' } } } }))
  t.ok(not wire.superseded({ result = { structuredContent = { results = {} } } }))
end)

test("wire: the tools whose answers get a receipt are the built-in tools that say answer_kept", function(t)
  -- two processes hold this fact: the launcher's list and the server's tool definitions
  local builtin = {}
  for _, mod in ipairs(require("rmcp.tools").modules) do
    local tool = require("rmcp.tools." .. mod)
    if tool.answer_kept then builtin[tool.name] = true end
  end
  t.eq(builtin, wire.RECEIPT_TOOLS)
  t.ok(builtin.reasonix_watch and builtin.reasonix_poll, "watch and poll keep their answers")
end)

test("a swap replays the handshake verbatim, swallows its answers and moves a watch; spawn drains on the old server", function(t)
  local r = rig()
  local a = handshake(r)
  r.send({ jsonrpc = "2.0", id = 1, method = "logging/setLevel", params = { level = "debug" } })
  a:say({ jsonrpc = "2.0", id = 1, result = {} })
  r.send(call(2, "reasonix_watch", { session_ids = { "s1" } }))
  r.send(call(3, "reasonix_spawn", { task = "x" }))
  r.p:swap("test swap")
  local b = r.kids[2]
  t.ok(b, "a candidate started")
  -- the replay is the host's own line with our id: [] survives
  t.eq(#b.raw, 1)
  t.match(b.raw[1], '"x":%[%]')
  t.match(b.raw[1], '^{"jsonrpc":"2.0","id":"rmcp%-launcher%-%d+","method":"initialize"')
  t.eq(#got(b, "tools/call"), 0, "nothing but the replay before it answered")
  -- host requests still go to the old server while the new one starts
  r.send({ jsonrpc = "2.0", id = 4, method = "ping" })
  t.eq(#got(a, "ping"), 1)
  a:say({ jsonrpc = "2.0", id = 4, result = {} })
  local before = #r.host
  b:answer_init()
  t.eq(#r.host, before + 1, "only our restart notice reached the host")
  t.eq(r.host[#r.host].method, "notifications/message")
  t.eq(r.host[#r.host].params.data.event.event, "mcp_server_restarted")
  t.eq(r.host[#r.host].params.data.event.old_pid, a.pid)
  t.eq(#got(b, "notifications/initialized"), 1)
  t.eq(#got(b, "logging/setLevel"), 1)
  t.match(got(b, "logging/setLevel")[1].id, "^rmcp%-launcher%-")
  b:say({ jsonrpc = "2.0", id = got(b, "logging/setLevel")[1].id, result = {} })
  -- the watch moved (cancelled on the old server), the spawn stayed
  t.eq(#got(b, "tools/call", "reasonix_watch"), 1)
  t.eq(got(b, "tools/call", "reasonix_watch")[1].id, 2)
  t.eq(#got(b, "tools/call", "reasonix_spawn"), 0)
  local cancels = got(a, "notifications/cancelled")
  t.eq(#cancels, 1)
  t.eq(cancels[1].params.requestId, 2)
  t.ok(not a.stdin_closed, "the old server drains its spawn first")
  a:say('{"jsonrpc":"2.0","id":3,"result":{"content":[]}}')
  t.eq(#r.answers(3), 1)
  t.match(r.raw[#r.raw], '"content":%[%]', "answers pass through verbatim")
  t.ok(a.stdin_closed, "drained: its stdin is closed")
  -- the new server's copy superseded the old watch in agentd: that answer is dropped (a real server
  -- drops it itself once it read our cancel); the new answer goes through
  a:say({ jsonrpc = "2.0", id = 2, result = { structuredContent = { results = {}, superseded = true } } })
  t.eq(#r.answers(2), 0)
  b:say({ jsonrpc = "2.0", id = 2, result = { structuredContent = { results = { s1 = {} } } } })
  t.eq(#r.answers(2), 1)
  b:say({ jsonrpc = "2.0", id = 2, result = {} })
  t.eq(#r.answers(2), 1, "never a second answer")
  a:exit(0)
  t.eq(r.p:pids(), { b.pid })
end)

test("first answer wins across a swap: the old server's real result is kept and the copy cancelled", function(t)
  local r = rig()
  local a = handshake(r)
  r.send(call(5, "reasonix_watch"))
  r.send(call(6, "reasonix_watch"))
  r.p:swap("race")
  local b = r.kids[2]
  b:answer_init()
  -- watch 5: the old server had its result in the pipe before our cancel
  a:say({ jsonrpc = "2.0", id = 5, result = { structuredContent = { results = { s = { status = "idle" } } } } })
  t.eq(#r.answers(5), 1)
  local bc = got(b, "notifications/cancelled")
  t.eq(#bc, 1)
  t.eq(bc[1].params.requestId, 5)
  -- watch 6: the old one was superseded by the new server's copy: dropped
  a:say({ jsonrpc = "2.0", id = 6, result = { structuredContent = { results = {}, superseded = true } } })
  t.eq(#r.answers(6), 0)
  b:say({ jsonrpc = "2.0", id = 6, result = { structuredContent = { results = { s = {} } } } })
  t.eq(#r.answers(6), 1)
end)

test("a crash re-sends repeatable calls after the replay, fails mutating ones, and keeps the host's order", function(t)
  local r = rig()
  local a = handshake(r)
  r.send(call(1, "reasonix_poll", { session_id = "s" }))
  r.send(call(2, "reasonix_send", { session_id = "s", message = "m" }))
  r.send({ jsonrpc = "2.0", id = 3, method = "tools/list" })
  a:exit(137)
  local err = r.answers(2)[1]
  t.ok(err and err.error, "the send got an error at once")
  t.eq(err.error.code, -32000)
  t.match(err.error.message, "^reasonix_send: the MCP server restarted while this call was in flight %(it exited: exit code 137%); check reasonix_list/reasonix_poll before retrying")
  t.eq(#r.answers(1), 0)
  local b = t.wait_for(function() return r.kids[2] end, 2000, "the restart (no delay after a first crash)")
  -- arriving while the new server starts: buffered, delivered after the re-sent ones
  r.send({ jsonrpc = "2.0", id = 4, method = "ping" })
  r.send({ jsonrpc = "2.0", method = "notifications/roots/list_changed" })
  t.eq(#b.got, 1, "only the replayed initialize so far")
  b:answer_init()
  local order = {}
  for _, m in ipairs(b.got) do order[#order + 1] = m.method .. (m.id and ("#" .. tostring(m.id)) or "") end
  t.eq(order, { "initialize#" .. b.got[1].id, "notifications/initialized", "tools/call#1", "tools/list#3", "ping#4",
                "notifications/roots/list_changed" })
  local notice = r.notes("notifications/message")
  t.eq(notice[#notice].params.data.event.old_pid, a.pid)
  t.eq(notice[#notice].params.data.event.new_pid, b.pid)
end)

test("progress for a token only the lane knows goes to the host while its request is in flight there", function(t)
  local r = rig()
  local a = handshake(r)
  a.pipes = function() return "stdin of a", "stdout of a" end
  local relayed = {} -- the lane's requests in flight: progress token -> true
  local seq = 0
  r.p:use_lane({
    open = function() end, close = function() return {} end, held = function() end, count = function() return 0 end,
    next_seq = function() seq = seq + 1; return seq end,
    has_token = function(_, token) return relayed[token] == true end,
  })
  r.p:sync_lane()
  local function progress(token, n)
    a:say({ jsonrpc = "2.0", method = "notifications/progress", params = { progressToken = token, progress = n } })
  end
  relayed[5] = true
  progress(5, 1)
  progress(6, 1)
  progress("5", 1)
  t.eq(#r.notes("notifications/progress"), 1, "the lane's token alone")
  local c = call(7, "reasonix_watch")
  c.params._meta = { progressToken = 5 } -- Lua's request with the same token: both pass
  r.send(c)
  progress(5, 2)
  t.eq(#r.notes("notifications/progress"), 2)
  a:say({ jsonrpc = "2.0", id = 7, result = {} })
  progress(5, 3)
  t.eq(#r.notes("notifications/progress"), 3, "Lua's answered, the lane's still in flight")
  relayed[5] = nil
  progress(5, 4)
  t.eq(#r.notes("notifications/progress"), 3, "no progress after the lane's answer")
end)

test("progress goes to the host only from the server that owns the call", function(t)
  local r = rig()
  local a = handshake(r)
  local c = call(7, "reasonix_watch")
  c.params._meta = { progressToken = "tok" }
  r.send(c)
  a:say({ jsonrpc = "2.0", method = "notifications/progress", params = { progressToken = "tok", progress = 1 } })
  t.eq(#r.notes("notifications/progress"), 1)
  r.p:swap("progress")
  local b = r.kids[2]
  b:answer_init()
  a:say({ jsonrpc = "2.0", method = "notifications/progress", params = { progressToken = "tok", progress = 2 } })
  t.eq(#r.notes("notifications/progress"), 1, "the old server's progress is dropped")
  b:say({ jsonrpc = "2.0", method = "notifications/progress", params = { progressToken = "tok", progress = 1 } })
  t.eq(#r.notes("notifications/progress"), 2)
  b:say({ jsonrpc = "2.0", id = 7, result = {} })
  b:say({ jsonrpc = "2.0", method = "notifications/progress", params = { progressToken = "tok", progress = 9 } })
  t.eq(#r.notes("notifications/progress"), 2, "no progress after the answer")
end)

test("host cancels reach the owner; a buffered request that is cancelled is never sent", function(t)
  local r = rig()
  local a = handshake(r)
  r.send(call(8, "reasonix_watch"))
  r.send({ jsonrpc = "2.0", method = "notifications/cancelled", params = { requestId = 8 } })
  t.eq(#got(a, "notifications/cancelled"), 1)
  a:exit(1)
  local b = t.wait_for(function() return r.kids[2] end, 2000, "restart")
  r.send(call(9, "reasonix_watch"))
  r.send({ jsonrpc = "2.0", method = "notifications/cancelled", params = { requestId = 9 } })
  b:answer_init()
  t.eq(#got(b, "tools/call"), 0, "neither the cancelled watch nor the buffered one went out")
  t.eq(#got(b, "notifications/cancelled"), 0)
end)

test("server->host requests get our ids, answers go back renamed, a dead server's requests are withdrawn", function(t)
  local r = rig()
  local a = handshake(r)
  a:say('{"id":1,"jsonrpc":"2.0","method":"elicitation/create","params":{"requestedSchema":{"required":[]}}}')
  local el = r.notes("elicitation/create")[1]
  t.ok(el, "forwarded")
  t.match(r.raw[#r.raw], '"required":%[%]')
  local hid_a = el.id
  r.p:swap("ids")
  local b = r.kids[2]
  b:answer_init()
  -- a is retiring but was drained at once: its open elicitation is withdrawn at the host
  t.ok(a.stdin_closed)
  local withdrawn = r.notes("notifications/cancelled")
  t.eq(#withdrawn, 1)
  t.eq(withdrawn[1].params.requestId, hid_a)
  -- the new server reuses id 1: no collision at the host
  b:say('{"id":1,"jsonrpc":"2.0","method":"elicitation/create","params":{}}')
  local hid_b = r.notes("elicitation/create")[2].id
  t.ne(hid_b, hid_a)
  -- the host answers both: the dead one is dropped, the live one reaches b with b's id
  r.send({ jsonrpc = "2.0", id = hid_a, result = { action = "accept" } })
  r.send({ jsonrpc = "2.0", id = hid_b, result = { action = "decline" } })
  t.eq(#a.got, 2, "the answer for the dead server was dropped (a got only initialize and initialized)")
  local ans = b.got[#b.got]
  t.eq(ans.id, 1)
  t.eq(ans.result.action, "decline")
  -- a server withdrawing its own request: the cancel is renamed too
  b:say('{"id":2,"jsonrpc":"2.0","method":"elicitation/create","params":{}}')
  local hid_b2 = r.notes("elicitation/create")[3].id
  b:say({ jsonrpc = "2.0", method = "notifications/cancelled", params = { requestId = 2, reason = "turn ended" } })
  local last = r.host[#r.host]
  t.eq(last.method, "notifications/cancelled")
  t.eq(last.params.requestId, hid_b2)
end)

test("$/rmcp/restart is never forwarded; it swaps only from the active server", function(t)
  local r = rig()
  local a = handshake(r)
  local n = #r.host
  a:say({ jsonrpc = "2.0", method = "$/rmcp/restart", params = { reason = "reasonix_restart_mcp_server" } })
  t.eq(#r.host, n)
  local b = r.kids[2]
  t.ok(b, "a candidate started")
  b:say({ jsonrpc = "2.0", method = "$/rmcp/restart", params = {} })
  t.eq(#r.kids, 2, "the candidate cannot ask")
  b:answer_init()
  t.match(r.host[#r.host].params.data.event.reason, "reasonix_restart_mcp_server")
  t.eq(#r.host, n + 1)
end)

test("a candidate that fails keeps the old server; a second trigger during a start runs after it", function(t)
  local r = rig()
  local a = handshake(r)
  r.p:swap("one")
  r.p:swap("two") -- while one is starting
  local b = r.kids[2]
  b:say({ jsonrpc = "2.0", id = b.got[1].id, error = { code = -32602, message = "unsupported version" } })
  t.ok(b.stdin_closed, "the failed candidate is stopped")
  b:exit(0)
  local warn = r.host[#r.host]
  t.eq(warn.params.level, "warning")
  t.eq(warn.params.data.event.event, "mcp_server_swap_failed")
  t.match(warn.params.data.event.error, "unsupported version")
  local c = r.kids[3]
  t.ok(c, "the queued swap started")
  t.eq(c.reason, "two")
  r.send({ jsonrpc = "2.0", id = 11, method = "ping" })
  t.eq(#got(a, "ping"), 1, "the old server still serves")
  c:answer_init()
  t.ok(a.stdin_closed)
end)

test("quick crashes in a row end in errors for every call in flight and exit code 1", function(t)
  with_env({ REASONIX_MCP_LAUNCHER_MAX_CRASHES = "3", REASONIX_MCP_LAUNCHER_BACKOFF_MS = "5" }, function()
    local r = rig()
    local a = handshake(r)
    r.send(call(1, "reasonix_watch"))
    a:exit(1)
    local b = t.wait_for(function() return r.kids[2] end, 2000, "restart 1")
    b:exit(1)
    r.refuse = true -- the next start fails at spawn (counts as a quick crash too)
    t.wait_for(function() return r.exit_code end, 2000, "give up")
    t.eq(r.exit_code, 1)
    local err = r.answers(1)[1]
    t.ok(err and err.error)
    t.match(err.error.message, "^reasonix_watch: the MCP server keeps exiting %(3 times in a row")
    t.eq(r.notes("notifications/message")[1].params.data.event.event, "mcp_server_gave_up")
  end)
end)

test("host EOF stops every child and exits once they are gone; calls still owned get an error", function(t)
  local r = rig()
  local a = handshake(r)
  r.send(call(1, "reasonix_spawn"))
  r.p:stop(0, "the host closed stdin")
  t.ok(a.stdin_closed)
  t.eq(r.exit_code, nil, "waits for the child")
  r.send({ jsonrpc = "2.0", id = 2, method = "ping" })
  t.eq(#got(a, "ping"), 0, "nothing more is read from the host")
  a:say({ jsonrpc = "2.0", id = 1, result = {} })
  t.eq(#r.answers(1), 1, "a last answer still reaches the host")
  a:exit(0)
  t.eq(r.exit_code, 0)
end)

test("a request whose id cannot be routed (object, array, fraction) goes to the server unrecorded", function(t)
  local r = rig()
  local a = handshake(r)
  for _, line in ipairs({ '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', '{"jsonrpc":"2.0","id":[1],"method":"ping"}',
                          '{"jsonrpc":"2.0","id":1.5,"method":"ping"}', '[]' }) do
    r.send(line)
    t.eq(a.raw[#a.raw], line, "passed on verbatim")
    a:say('{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}')
  end
  t.eq(#r.answers(json.null), 4, "each null-id answer reaches the host")
  t.eq(r.p:in_flight(), 0, "nothing waits for an answer that cannot come")
  local seen = #r.host
  r.p:stop(0, "the host closed stdin")
  a:exit(0)
  t.eq(#r.host, seen, "no late error for them at shutdown")
end)

test("a watch or poll answer's receipt goes to its server right behind the answer, and again through the next server", function(t)
  local r = rig()
  local a = handshake(r)
  local function receipts(c)
    local out = {}
    for _, m in ipairs(got(c, "$/rmcp/answered")) do out[#out + 1] = { m.params.id, m.params.delivered } end
    return out
  end
  r.send(call(5, "reasonix_watch"))
  a:say({ jsonrpc = "2.0", id = 5, result = { structuredContent = { results = { s = { status = "idle" } } } } })
  t.eq(#r.answers(5), 1)
  t.eq(receipts(a), { { 5, true } })
  r.send(call(6, "reasonix_poll"))
  a:say({ jsonrpc = "2.0", id = 6, result = { structuredContent = { status = "idle" } } })
  t.eq(receipts(a), { { 5, true }, { 6, true } }, "a poll's answer is kept by agentd too")
  r.send(call(8, "reasonix_list"))
  a:say({ jsonrpc = "2.0", id = 8, result = { structuredContent = { sessions = {} } } })
  t.eq(#receipts(a), 2, "only watch and poll answers have a receipt")
  -- a conversation's watch: its receipt names the conversation (the server's orchestrator for it)
  local threaded = call(9, "reasonix_watch")
  threaded.params._meta = { threadId = "th-1" }
  r.send(threaded)
  a:say({ jsonrpc = "2.0", id = 9, result = { structuredContent = { results = { s = {} } } } })
  local last = got(a, "$/rmcp/answered")
  t.eq(last[#last].params, { id = 9, delivered = true, thread_id = "th-1" })
  -- the host sends id 9 again (MCP forbids it, some do): the old receipt is not sent for the new one
  r.send(call(9, "reasonix_watch"))
  -- cancelled by the host before its answer came: dropped, and said so
  r.send(call(10, "reasonix_watch"))
  r.send({ jsonrpc = "2.0", method = "notifications/cancelled", params = { requestId = 10 } })
  a:say({ jsonrpc = "2.0", id = 10, result = { structuredContent = { results = { s = {} } } } })
  t.eq(#r.answers(10), 0)
  t.eq(receipts(a), { { 5, true }, { 6, true }, { 9, true }, { 10, false } })
  -- the server dies, maybe before passing them on: the next one gets them first
  r.send(call(12, "reasonix_watch"))
  a:exit(137)
  local b = t.wait_for(function() return r.kids[2] end, 2000, "the restart")
  b:answer_init()
  t.eq(b.greeted, true, "every server hears first that its launcher reports receipts")
  t.eq(receipts(b), { { 5, true }, { 6, true }, { 10, false } }, "sent again, but not the reused id's")
  local order = {}
  for _, m in ipairs(b.got) do order[#order + 1] = m.method .. (m.id and ("#" .. tostring(m.id)) or "") end
  t.eq(order, { "initialize#" .. b.got[1].id, "notifications/initialized", "$/rmcp/answered", "$/rmcp/answered",
                "$/rmcp/answered", "tools/call#9", "tools/call#12" })
  -- a receipt waiting for a server is dropped too when its id comes again
  r.send(call(20, "reasonix_watch"))
  b:say({ jsonrpc = "2.0", id = 20, result = { structuredContent = { results = { s = {} } } } })
  b:exit(137)
  local c = t.wait_for(function() return r.kids[3] end, 2000, "the second restart")
  r.send(call(20, "reasonix_watch"))
  c:answer_init()
  local ids = {}
  for _, m in ipairs(got(c, "$/rmcp/answered")) do ids[#ids + 1] = m.params.id end
  t.eq(ids, { 5, 6, 10 }, "b's receipts again, but not the old one of id 20")
  -- an answer the host's pipe has not taken yet waits in our queue: its receipt follows the flush
  r.queued = 4096
  local told = #got(c, "$/rmcp/answered")
  r.send(call(30, "reasonix_poll"))
  c:say({ jsonrpc = "2.0", id = 30, result = { structuredContent = { status = "idle" } } })
  r.send(call(31, "reasonix_watch"))
  c:say({ jsonrpc = "2.0", id = 31, result = { structuredContent = { results = { s = {} } } } })
  t.eq(#r.answers(30), 1)
  t.eq(#got(c, "$/rmcp/answered"), told, "no word while they are only queued")
  r.send(call(31, "reasonix_watch")) -- (id 31 again: the queued answer's word is dropped)
  r.queued = 0
  r.p:host_flushed()
  local flushed = got(c, "$/rmcp/answered")
  t.eq(#flushed, told + 1)
  t.eq(flushed[told + 1].params, { id = 30, delivered = true }, "confirmed once the pipe took it")
  -- the host cannot speak for the launcher
  local before = #c.got
  r.send({ jsonrpc = "2.0", method = "$/rmcp/answered", params = { id = 12, delivered = false } })
  r.send({ jsonrpc = "2.0", method = "$/rmcp/launcher", params = { answer_fates = false } })
  t.eq(#c.got, before, "neither reached the server")
end)
