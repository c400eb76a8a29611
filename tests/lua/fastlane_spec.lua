-- The launcher's hot path in C (rmcp.fastlane, core/fastlane.c) on real pipes, with `cat` as the
-- server (it writes back what it is sent, so the spec plays the server by writing its answers to
-- cat): which host lines it takes and which it leaves to Lua, answers and plain notifications
-- back to the host, the requests it hands over when closed, ids the caller holds, and the receipt
-- hook of a watch or poll.
local proc = require "rmcp.proc"
local fastlane = require "rmcp.fastlane"
local lane_support = require "lane_support"

-- A host pipe pair, the server (cat) and a lane between them. Returns the rig: host(line) writes a
-- host line; lua_host and lua_server collect the lines the lane left to Lua; to_host what it wrote
-- to the host; receipts the hook's calls; answer(line) makes the server write line.
local function rig(t, max_in_flight)
  local r = { lua_host = {}, lua_server = {}, to_host = {}, receipts = {}, settled = 0 }
  local input, out = lane_support.host_pipes(t, r)
  r.server = assert(proc.spawn{ file = "cat", stdin = "pipe", stdout = "pipe", stderr = "inherit",
    stdout_mode = "ndjson", on_line = function(line) r.lua_server[#r.lua_server + 1] = line end,
    on_exit = function() end })
  t.defer(function() r.server:kill("KILL") end)
  r.lane = fastlane.new{ host = out, input = input, max_in_flight = max_in_flight or 64,
    on_settle = function() r.settled = r.settled + 1 end,
    on_receipt = function(id, queued) r.receipts[#r.receipts + 1] = { id, queued } end }
  r.lane:watch(r.server, 1)
  function r.answer(line) assert(r.server.stdin:write(line)) end
  return r
end

-- A request line of the host.
local function request(id, method, params)
  local p = params and (',"params":' .. params) or ""
  return '{"jsonrpc":"2.0","id":' .. id .. ',"method":"' .. method .. '"' .. p .. "}"
end

test("an open lane relays plain requests and their answers; the rest goes to Lua", function(t)
  local r = rig(t)
  r.lane:open(r.server.stdin, 1)
  t.ok(r.lane:is_open())
  r.host(request(1, "ping"))
  -- params first, as the SDK writes it
  r.host('{"method":"tools/call","params":{"name":"reasonix_list","arguments":{"a":[1,{"b":"}"}]}},"jsonrpc":"2.0","id":2}')
  r.host(request(3, "tools/call", '{"name":"reasonix_send","_meta":{"progressToken":"t-1"}}'))
  r.host(request('"s"', "ping"))
  r.host(request(4, "initialize", "{}"))
  r.host('{"jsonrpc":"2.0","method":"notifications/initialized"}')
  t.wait_for(function() return #r.lua_server == 2 end, 5000, "the relayed requests echoed by the server")
  t.eq(r.lua_server[1], request(1, "ping"))
  t.match(r.lua_server[2], '"id":2}$')
  t.wait_for(function() return #r.lua_host == 4 end, 5000, "the other lines in Lua")
  t.match(r.lua_host[1], "progressToken")
  t.eq(r.lua_host[2], request('"s"', "ping"))
  t.eq(r.lane:count(), 2)
  r.answer('{"jsonrpc":"2.0","id":2,"result":{"content":[]}}')
  r.answer('{"jsonrpc":"2.0","method":"notifications/message","params":{}}')
  r.answer('{"jsonrpc":"2.0","method":"$/rmcp/restart","params":{}}')
  r.answer('{"jsonrpc":"2.0","id":9,"result":{}}')
  t.wait_for(function() return #r.to_host == 2 and #r.lua_server == 4 end, 5000, "the answers")
  t.eq(r.to_host, { '{"jsonrpc":"2.0","id":2,"result":{"content":[]}}',
    '{"jsonrpc":"2.0","method":"notifications/message","params":{}}' })
  t.eq(r.lua_server[3], '{"jsonrpc":"2.0","method":"$/rmcp/restart","params":{}}', "private: Lua's")
  t.eq(r.lua_server[4], '{"jsonrpc":"2.0","id":9,"result":{}}', "not relayed by the lane: Lua's")
  t.eq(r.lane:count(), 1)
end)

test("a host's own _meta, a thread and an integer progress token go through the lane, which knows the token", function(t)
  local r = rig(t)
  r.lane:open(r.server.stdin, 1)
  local function call(id, meta)
    return '{"method":"tools/call","params":{"name":"reasonix_list","arguments":{},"_meta":' .. meta .. '},"jsonrpc":"2.0","id":' .. id .. "}"
  end
  r.host(call(1, '{"claudecode/toolUseId":"toolu_1","progressToken":7}'))
  r.host(call(2, '{"callId":"call_1","x-codex-turn-metadata":{"thread_id":"t"},"threadId":"t","progressToken":1}'))
  local lua_lines = {
    -- a watch's or poll's thread names its receipt's orchestrator: Lua's
    '{"method":"tools/call","params":{"name":"reasonix_poll","_meta":{"threadId":"t"}},"jsonrpc":"2.0","id":6}',
    call(3, '{"progressToken":"seven"}'),                  -- not an integer: Lua routes its progress
    call(4, '{"progressToken":1,"progressToken":2}'),      -- two tokens
    call(5, '{"progressToken":1},"_meta":{"callId":"c"}'), -- two _meta
  }
  for _, line in ipairs(lua_lines) do r.host(line) end
  t.wait_for(function() return #r.lua_server == 2 and #r.lua_host == #lua_lines end, 5000, "two relayed, the rest in Lua")
  t.eq(r.lua_host, lua_lines)
  t.eq({ r.lane:count(), r.lane:has_token(7), r.lane:has_token(1), r.lane:has_token(8), r.lane:has_token("7") },
    { 2, true, true, false, false })
  r.answer('{"jsonrpc":"2.0","id":1,"result":{"content":[]}}')
  t.wait_for(function() return #r.to_host == 1 end, 5000, "the answer")
  t.eq({ r.lane:count(), r.lane:has_token(7) }, { 1, false }, "an answered request's token is gone")
end)

test("closing hands back the unanswered requests in order; a closed lane takes nothing", function(t)
  local r = rig(t)
  local first = r.lane:next_seq()
  r.lane:open(r.server.stdin, 1)
  r.host(request(1, "ping"))
  r.host(request(2, "tools/list"))
  t.wait_for(function() return #r.lua_server == 2 end, 5000, "both relayed")
  local taken = r.lane:close()
  t.eq({ #taken, taken[1].line, taken[2].line }, { 2, request(1, "ping"), request(2, "tools/list") })
  t.ok(first < taken[1].seq and taken[1].seq < taken[2].seq, "arrival numbers shared with the caller")
  t.eq({ r.lane:count(), r.lane:is_open() }, { 0, false })
  r.host(request(3, "ping"))
  r.answer('{"jsonrpc":"2.0","id":1,"result":{}}')
  t.wait_for(function() return #r.lua_host == 1 and #r.lua_server == 3 end, 5000, "both lines in Lua")
  t.eq(#r.to_host, 0)
end)

test("an id the caller holds and the in-flight limit leave a request to Lua", function(t)
  local r = rig(t, 3)
  r.lane:open(r.server.stdin, 1)
  r.lane:held(5, 1)
  r.host(request(5, "ping"))
  r.host(request(6, "ping"))
  r.host(request(7, "ping")) -- 1 held + 1 relayed + this one reach the limit
  t.wait_for(function() return #r.lua_host == 2 and #r.lua_server == 1 end, 5000, "the lines")
  t.eq(r.lua_host, { request(5, "ping"), request(7, "ping") })
  r.lane:held(7, 1) -- (as the ledger does with what it takes)
  r.answer('{"jsonrpc":"2.0","id":6,"result":{}}')
  t.wait_for(function() return #r.to_host == 1 end, 5000, "the answer")
  t.eq(r.settled, 1, "an answer at the limit tells the caller")
  r.lane:held(5, -1)
  r.host(request(5, "ping"))
  t.wait_for(function() return #r.lua_server == 2 end, 5000, "relayed once let go")
  t.eq(r.lua_server[2], request(5, "ping"))
end)

test("a watch or poll goes through the lane and its receipt to the caller", function(t)
  local r = rig(t)
  r.lane:open(r.server.stdin, 1)
  r.host(request(1, "tools/call", '{"name":"reasonix_poll","arguments":{"session_id":"x"}}'))
  r.host(request(2, "tools/call", '{"name":"reasonix_watch","arguments":{"session_ids":["x"]}}'))
  t.wait_for(function() return #r.lua_server == 2 end, 5000, "both relayed")
  t.eq(r.receipts, { { 1 }, { 2 } }, "each request is told as it goes")
  r.answer('{"jsonrpc":"2.0","id":1,"result":{}}')
  r.answer('{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"x"}}')
  t.wait_for(function() return #r.to_host == 2 end, 5000, "the answers")
  t.eq(r.receipts, { { 1 }, { 2 }, { 1, 0 } }, "a result written in full; an error has no receipt")
end)
