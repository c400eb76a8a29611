-- A live handover closes every client connection: what a client sent that agentd had not read by
-- then is not lost and not done twice. agentd answers what it read, says goodbye, and the client
-- sends the rest once more to the new image. agentd runs from a private copy of the binary so the
-- test can replace it (cp to a temp name + mv, as an install does).
-- needs: agent python3
local uv = require "luv"
local support = require "agentd_support"

local BIN = os.getenv("RMCP_BIN") or require("rmcp.host").exe

-- How many chat requests the model got whose last message is the user's and holds marker: one per
-- turn asked for it.
local function turns_asking(ctx, marker)
  local n = 0
  for _, req in ipairs(ctx.prov:requests()) do
    local last = req.body.messages[#req.body.messages]
    if last.role == "user" and type(last.content) == "string" and last.content:find(marker, 1, true) then n = n + 1 end
  end
  return n
end

test("a live handover waits while a request agentd read is not answered yet; a blocked watch does not hold it", function(t)
  local handover = require "rmcp.agentd.handover"
  local jsonrpc = require "rmcp.lib.jsonrpc"
  local held = {}
  local peer = jsonrpc.new({ send = function() end, on_request = function(method, _, reply) held[method] = reply end })
  local conn = { id = 7, peer = peer, requests = {} }
  local d = { sessions = {}, conns = { [conn] = true }, pid = uv.os_getpid() }
  local function why()
    local _, reason = handover.blocker(d)
    return tostring(reason)
  end
  peer:receive('{"jsonrpc":"2.0","id":1,"method":"watch","params":{}}')
  conn.requests[1] = function() end -- (watch.lua keeps the cancel of each long request it holds)
  t.ok(not why():find("connection", 1, true), "a blocked watch holds nothing: " .. why())
  peer:receive('{"jsonrpc":"2.0","id":2,"method":"spawn","params":{}}')
  t.eq(why(), "a request of connection 7 is being answered")
  held.spawn({ session_id = "s" })
  t.ok(not why():find("connection", 1, true), "answered, the spawn holds nothing: " .. why())
end)

test("a spawn and a send agentd has not read when a live handover closes the connection answer once, from the new image", function(t)
  local env = {
    REASONIX_MCP_LIVE_HANDOVER = "1", REASONIX_MCP_RELOAD_GRACE_MS = "100", REASONIX_MCP_RELOAD_SETTLE_MS = "50",
    REASONIX_MCP_RELOAD_CHECK_MS = "20", REASONIX_MCP_LOG_MAX_BYTES = "",
    -- agentd reads nothing more of a connection with 2 requests unanswered: two blocked watches
    -- keep the spawn and the send sent after them unread until the handover closes the connection
    REASONIX_MCP_MAX_IN_FLIGHT = "1",
  }
  local ctx = support.setup(t, { env = env, scenario = { rules = { { last_role = "user", text = "ok" } } } })
  local exe = t.tmpdir("rmcp-bin") .. "/reasonix-mcp"
  assert(os.execute(string.format("cp '%s' '%s'", BIN, exe)))
  -- the host gives its watches up when the connection drops (the new image would read nothing
  -- behind them either): what it sent after them is what the handover must carry
  local watches, dropped_at, back_at = {}, nil, nil
  local c
  c = ctx.client("orch-a", nil, { exe = exe, on_disconnect = function()
    dropped_at = dropped_at or uv.now()
  end, on_connect = function()
    if dropped_at and not back_at then back_at = uv.now() end
    for _, id in ipairs(watches) do c:cancel(id) end
  end })
  local a = ctx.call(c, "spawn", { task = "first", keep_alive = true }).session_id
  local b = ctx.call(c, "spawn", { task = "second", keep_alive = true }).session_id
  ctx.watch_each(c, { a, b }, function(_, x) return x.status == "idle" end)
  local pid = c.info.agentd_pid
  for _, sid in ipairs({ a, b }) do
    watches[#watches + 1] = c:request("watch", { session_ids = { sid }, timeout = 120 }, function() end)
  end
  local answers = {}
  for _, call in ipairs({ { "spawn", { task = "SPAWNED once", keep_alive = true } },
                          { "send", { session_id = a, message = "SENT once" } } }) do
    c:request(call[1], call[2], function(r, err)
      answers[#answers + 1] = { method = call[1], result = r, error = err and err.message }
    end)
  end

  -- the new binary, installed the way an install does: under a temp name, renamed over the old
  assert(os.execute(string.format("cp '%s' '%s.new' && chmod 755 '%s.new' && mv '%s.new' '%s'", BIN, exe, exe, exe, exe)))
  local new_ino = uv.fs_stat(exe).ino
  t.wait_for(function()
    local st = uv.fs_stat(string.format("/proc/%d/exe", pid))
    return st and st.ino == new_ino
  end, 10000, "agentd to re-execute the new binary")
  t.wait_for(function() return #answers >= 2 end, 20000, "the spawn and the send to be answered")
  local t_back, t_answered = back_at - dropped_at, uv.now() - dropped_at
  table.sort(answers, function(x, y) return x.method < y.method end)
  t.eq(answers[1].method, "send")
  t.eq(answers[1].error, nil, "the send was answered, not failed")
  t.eq(answers[2].method, "spawn")
  t.eq(answers[2].error, nil, "the spawn was answered, not failed")
  local spawned = answers[2].result.session_id
  t.eq(c.info.agentd_pid, pid, "the new image answered them: the same pid, exec")

  ctx.watch_each(c, { a, spawned }, function(_, x) return x.status == "idle" and x.message == "ok" end)
  local sessions = ctx.call(c, "list", { all = true }).sessions
  t.eq(#sessions, 3, "exactly one session more: the spawn ran once")
  t.eq(turns_asking(ctx, "SPAWNED once"), 1, "the spawned session's turn ran once")
  t.eq(turns_asking(ctx, "SENT once"), 1, "the message made one turn")
  t.eq(#answers, 2, "each answered once")
  local log = io.open(ctx.mcp_home .. "/agentd.log"):read("a")
  t.eq(log:match("another agentd owns[^\n]*"), nil, "the client waited for the new image instead of starting a daemon")
  io.write(string.format("# live handover: connected to the new image %d ms after the old one closed the connection; "
    .. "the spawn and the send answered after %d ms\n", t_back, t_answered))
end)
