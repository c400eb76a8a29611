-- agentd's kept answers given in C (rmcp.answerlane, core/answerlane.c) on a real socket pair, the
-- spec playing the client: a request with params {} of the method whose answer was kept is answered
-- from the kept text under its own id, and Lua does not see it; any other line, and every line once
-- the kept answer is stale (answerlane.changed(), its time over, a reload event queued, the lane
-- closed), goes to Lua.
local uv = require "luv"
local channel = require "rmcp.channel"
local answerlane = require "rmcp.answerlane"

-- agentd's end (a channel whose lines the lane sees first; those it leaves land in r.lua), the
-- client's end (r.send(line), its lines in r.got), the lane, and a reload queue stand-in: a pipe
-- whose read end is readable once r.reload_event() wrote to it.
local function rig(t)
  local r = { lua = {}, got = {} }
  local pair = uv.socketpair(nil, nil, { nonblock = true }, { nonblock = true })
  local agentd = assert(channel.open(pair[1], { on_line = function(line) r.lua[#r.lua + 1] = line end }))
  local client = assert(channel.open(pair[2], { on_line = function(line) r.got[#r.got + 1] = line end }))
  local queue = uv.pipe({ nonblock = true }, { nonblock = true })
  r.watch_fd = queue.read
  r.lane = answerlane.new(agentd)
  t.defer(function()
    r.lane:close()
    agentd:close()
    client:close()
    uv.fs_close(queue.read)
    uv.fs_close(queue.write)
  end)
  function r.send(line) assert(client:write(line)) end
  function r.reload_event() uv.fs_write(queue.write, "x") end
  function r.keep(method, text, for_ns) r.lane:keep(method, text, r.watch_fd, uv.hrtime() + (for_ns or 60e9)) end
  -- sends lines and waits until each was answered by the lane or reached Lua
  function r.exchange(lines)
    local want = #r.got + #r.lua + #lines
    for _, line in ipairs(lines) do r.send(line) end
    t.wait_for(function() return #r.got + #r.lua == want end, 5000, "every line answered or in Lua")
  end
  return r
end

-- A request line of the client.
local function request(id, method, params)
  return '{"jsonrpc":"2.0","id":' .. id .. ',"method":"' .. method .. '","params":' .. (params or "{}") .. "}"
end

test("a kept answer is given under each request's id, without Lua", function(t)
  local r = rig(t)
  r.keep("list", '{"sessions":[],"counts":{}}')
  r.exchange({ request(7, "list"), request(123456789012345, "list") })
  t.eq(r.got, { '{"jsonrpc":"2.0","id":7,"result":{"sessions":[],"counts":{}}}',
                '{"jsonrpc":"2.0","id":123456789012345,"result":{"sessions":[],"counts":{}}}' })
  t.eq(r.lua, {})
  t.eq(r.lane:taken(), 2)
end)

test("any other request goes to Lua", function(t)
  local r = rig(t)
  r.keep("list", "{}")
  local lines = {
    request(1, "list", '{"all":true}'),                 -- params not {}
    request(2, "list", "{ }"),                          -- {} spelt otherwise
    request(3, "poll"),                                 -- nothing kept for it
    '{"jsonrpc":"2.0","id":"4","method":"list","params":{}}', -- a string id
    '{"jsonrpc":"2.0","id":05,"method":"list","params":{}}',  -- a leading zero
    '{"jsonrpc":"2.0","id":1234567890123456,"method":"list","params":{}}', -- past 15 digits
    '{"id":6,"jsonrpc":"2.0","method":"list","params":{}}',   -- members in another order
    '{"jsonrpc":"2.0","id":8,"method":"list"}',               -- no params
    '{"jsonrpc":"2.0","method":"list","params":{}}',          -- a notification
  }
  r.exchange(lines)
  t.eq(r.lua, lines)
  t.eq({ r.got, r.lane:taken() }, { {}, 0 })
end)

test("a change, its time or a reload event ends a kept answer", function(t)
  local r = rig(t)
  r.keep("list", '{"n":1}')
  answerlane.changed()
  r.exchange({ request(1, "list") })
  t.eq(r.lua, { request(1, "list") }, "kept before a change")

  r.keep("list", '{"n":2}')
  r.exchange({ request(2, "list") })
  t.eq(r.got, { '{"jsonrpc":"2.0","id":2,"result":{"n":2}}' }, "kept again after it")

  r.keep("list", '{"n":3}', 0)
  r.exchange({ request(3, "list") })
  t.eq(r.lua[2], request(3, "list"), "its time over")

  r.keep("list", '{"n":4}')
  r.reload_event()
  r.exchange({ request(4, "list") })
  t.eq(r.lua[3], request(4, "list"), "a reload event queued")
  t.eq(#r.got, 1)
end)

test("a closed lane leaves every line to Lua", function(t)
  local r = rig(t)
  r.keep("list", '{"n":1}')
  r.lane:close()
  r.lane:keep("list", '{"n":2}', r.watch_fd, uv.hrtime() + 60e9) -- (nothing: it is closed)
  r.exchange({ request(1, "list") })
  t.eq({ r.lua, r.got }, { { request(1, "list") }, {} })
end)

test("a keep replaces the answer kept before, of any method", function(t)
  local r = rig(t)
  r.keep("list", '"a"')
  r.keep("models", '"b"')
  r.exchange({ request(1, "list"), request(2, "models") })
  t.eq(r.lua, { request(1, "list") })
  t.eq(r.got, { '{"jsonrpc":"2.0","id":2,"result":"b"}' })
end)
