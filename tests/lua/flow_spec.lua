-- Back-pressure pieces (lib/flow.lua, lib/jsonrpc.lua): a gate pauses all its readers while its
-- peer is behind and resumes them once it is not, a reader added while it holds starts paused, a
-- disabled gate never pauses again; a JSON-RPC peer counts the requests it has not answered yet,
-- a request settled without an answer (NO_ANSWER) included.
local flow = require "rmcp.lib.flow"
local jsonrpc = require "rmcp.lib.jsonrpc"

-- A stand-in for a channel: records pause and resume, reports queued bytes.
local function fake_channel()
  local c = { paused = false, closed = false, bytes = 0 }
  function c:pause() assert(not self.closed, "channel is closed"); self.paused = true end
  function c:resume() assert(not self.closed, "channel is closed"); self.paused = false end
  function c:is_closed() return self.closed end
  function c:queued() return self.bytes end
  return c
end

test("a gate pauses every reader while the peer is behind and resumes them once it is not", function(t)
  local out, a, b = fake_channel(), fake_channel(), fake_channel()
  local gate = flow.gate("spec", function() return flow.unread(out, "the spec") end)
  gate:add(a)
  gate:add(b)
  gate:check()
  t.eq(a.paused or b.paused, false, "nothing unread: reading goes on")
  out.bytes = flow.UNREAD
  gate:check()
  t.eq({ a.paused, b.paused, gate.held }, { true, true, true })
  t.match(flow.unread(out, "the spec"), "unread by the spec")
  local c = fake_channel()
  gate:add(c)
  t.ok(c.paused, "a reader added while the gate holds starts paused")
  b.closed = true
  gate:released()
  t.ok(a.paused, "still behind: no resume")
  out.bytes = flow.UNREAD - 1
  gate:released()
  t.eq({ a.paused, c.paused, gate.held }, { false, false, false }, "a closed reader is skipped and the rest resume")
  t.eq(gate.readers[b], nil, "the closed reader is forgotten")
end)

test("a gate holds for too many requests in flight; a disabled gate resumes and never pauses again", function(t)
  local n, r = 0, fake_channel()
  local gate = flow.gate("spec", function() return flow.too_many(n, 3, "calls") end)
  gate:add(r)
  n = 3
  gate:check()
  t.ok(r.paused)
  t.eq(flow.too_many(3, 3, "calls"), "3 calls in flight")
  t.eq(flow.too_many(2, 3), nil)
  gate:disable()
  t.eq(r.paused, false, "disable resumes even while behind")
  gate:check()
  t.eq(r.paused, false, "and never pauses again")
end)

test("a peer counts the requests it has not answered; NO_ANSWER settles one without a line", function(t)
  local lines, answered, held = {}, 0, {}
  local peer = jsonrpc.new{
    send = function(line) lines[#lines + 1] = line end,
    methods = {
      now = function(_, reply) reply({ ok = true }) end,
      later = function(_, reply) held[#held + 1] = reply end,
    },
    on_answered = function() answered = answered + 1 end,
  }
  peer:receive('{"jsonrpc":"2.0","id":1,"method":"later"}')
  peer:receive('{"jsonrpc":"2.0","id":2,"method":"later"}')
  peer:receive('{"jsonrpc":"2.0","method":"later"}') -- a notification is never in flight
  peer:receive('{"jsonrpc":"2.0","id":3,"method":"now"}')
  t.eq(peer:unanswered(), 2)
  t.eq(answered, 1)
  held[1]({ done = true })
  t.eq(peer:unanswered(), 1)
  held[2](jsonrpc.NO_ANSWER)
  t.eq(peer:unanswered(), 0)
  t.eq(answered, 3)
  t.eq(#lines, 2, "the answer to 3 and to 1; none for 2")
  t.eq(held[2]({ again = true }), false, "a reply runs once")
  t.eq(peer:unanswered(), 0)
end)
