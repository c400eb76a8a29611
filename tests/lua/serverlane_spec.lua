-- The MCP server's hot path in C (rmcp.serverlane, core/serverlane.c) on real pipes, the spec
-- playing agentd at the other end of a socket pair: which host calls it takes and which it leaves to Lua, the request agentd gets (a kept answer's
-- receipt spliced in), the host's result against server/tool_view.lua's, an error handed to Lua
-- with its call, and the calls a close hands over.
local uv = require "luv"
local json = require "rmcp.lib.json"
local channel = require "rmcp.channel"
local serverlane = require "rmcp.serverlane"
local lane_mod = require "rmcp.server.lane"
local lane_support = require "lane_support"
local view = require "rmcp.server.tool_view"

local LIST = { name = "reasonix_list", method = "list", props = {
  { name = "all", kind = "boolean" }, { name = "limit", kind = "integer", minimum = 1, maximum = 500 },
  { name = "cursor", kind = "string" }, { name = "sort", kind = "string", enum = { "new", "old" } },
  { name = "tags", kind = "lua" }, { name = "ids", kind = "strings", min_items = 1 } } }
local POLL = { name = "reasonix_poll", method = "poll", keep = true,
  props = { { name = "session_id", kind = "string", required = true } } }

-- Host pipes, agentd's end of a socket pair, and a lane between them. Returns the rig: host(line)
-- writes a host line; lua_host and lua_agentd collect the lines the lane left to Lua; to_host what
-- it wrote to the host; requests what agentd read; adopted the calls the lane handed over;
-- answer(line) makes agentd write line.
local function rig(t, opts)
  opts = opts or {}
  local r = { lua_host = {}, lua_agentd = {}, to_host = {}, requests = {}, adopted = {}, settled = 0 }
  local input, out = lane_support.host_pipes(t, r)
  local pair = uv.socketpair(nil, nil, { nonblock = true }, { nonblock = true })
  r.link = assert(channel.open(pair[1], { on_line = function(line) r.lua_agentd[#r.lua_agentd + 1] = line end }))
  local agentd = assert(channel.open(pair[2], { on_line = function(line) r.requests[#r.requests + 1] = line end }))
  t.defer(function()
    for _, c in ipairs({ r.link, agentd }) do c:close() end
  end)
  r.peer = { unanswered_n = 0 }
  r.by_key = {}
  r.lane = serverlane.new{ host = out, input = input, peer = r.peer, max_in_flight = opts.max_in_flight or 64,
    on_settle = function() r.settled = r.settled + 1 end,
    on_adopt = function(call) r.adopted[#r.adopted + 1] = call end,
    on_window = function() if r.on_window then r.on_window() end end }
  r.lane:set_tools({ LIST, POLL })
  function r.open(extra)
    local o = { agentd = r.link, by_key = r.by_key, structured = true, until_ns = uv.hrtime() + 60e9 }
    for k, v in pairs(extra or {}) do o[k] = v end
    r.lane:open(o)
  end
  function r.answer(line) assert(agentd:write(line)) end
  function r.agentd_gone() agentd:close() end
  return r
end

-- A tools/call line of the host.
local function call(id, name, args)
  return '{"jsonrpc":"2.0","id":' .. id .. ',"method":"tools/call","params":{"name":"' .. name .. '"'
    .. (args and (',"arguments":' .. args) or "") .. "}}"
end

-- The agentd id of the lane's first request.
local ID = serverlane.FIRST_ID

test("the lane takes a plain call of its tools, writes agentd its arguments as they came", function(t)
  local r = rig(t)
  r.open()
  r.host(call(1, "reasonix_list", '{"all": true ,"limit":5,"sort":"new", "ids":[ "a", "b\\"c" ]}'))
  r.host(call(2, "reasonix_list"))
  r.host(call(3, "reasonix_poll", '{"session_id":"s-1"}'))
  t.wait_for(function() return #r.requests == 3 end, 5000, "the requests at agentd")
  t.eq(r.requests, {
    '{"jsonrpc":"2.0","id":' .. ID .. ',"method":"list","params":{"all": true ,"limit":5,"sort":"new", "ids":[ "a", "b\\"c" ]}}',
    '{"jsonrpc":"2.0","id":' .. (ID + 1) .. ',"method":"list","params":{}}',
    '{"jsonrpc":"2.0","id":' .. (ID + 2) .. ',"method":"poll","params":{"session_id":"s-1"}}',
  })
  t.eq({ r.lane:count(), r.lane:taken(), #r.lua_host }, { 3, 3, 0 })
end)

test("anything the checks do not know goes to Lua", function(t)
  local r = rig(t)
  r.open()
  local lines = {
    call(1, "reasonix_list", '{"limit":0}'),           -- under the minimum
    call(2, "reasonix_list", '{"limit":5.0}'),         -- not a plain integer
    call(3, "reasonix_list", '{"sort":"sideways"}'),   -- not in the enum
    call(4, "reasonix_list", '{"sort":"n\\u0065w"}'),  -- an escaped spelling
    call(5, "reasonix_list", '{"tags":["a"]}'),        -- a property the lane does not check
    call(16, "reasonix_list", '{"ids":[]}'),           -- fewer items than minItems
    call(17, "reasonix_list", '{"ids":["a",1]}'),      -- not only strings
    call(6, "reasonix_list", '{"nope":1}'),            -- unknown
    call(7, "reasonix_list", '{"all":true,"all":false}'), -- repeated
    call(8, "reasonix_list", '{"cursor":null}'),       -- null: Lua drops it
    call(9, "reasonix_list", '{"cursor":"é"}'),        -- not ASCII
    call(10, "reasonix_list", "[]"),                   -- not an object
    call(11, "reasonix_poll", "{}"),                   -- a required argument missing
    call(12, "reasonix_stop", '{"session_id":"x"}'),   -- not a lane tool
    '{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"reasonix_list","_meta":{"threadId":"t"}}}',
    '{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"reasonix_list"}}',
    '{"jsonrpc":"2.0","id":14,"method":"tools/list"}',
  }
  for _, line in ipairs(lines) do r.host(line) end
  r.by_key[15] = {} -- a call of Lua's with this id is in flight
  r.host(call(15, "reasonix_list"))
  t.wait_for(function() return #r.lua_host == #lines + 1 end, 5000, "every line in Lua")
  t.eq(r.lua_host[#lines + 1], call(15, "reasonix_list"))
  t.eq(r.lane:taken(), 0)
end)

test("a host's _meta: its own members and a progress token are taken, unless the tool blocks; a threadId is Lua's", function(t)
  local r = rig(t)
  local WATCH = { name = "reasonix_watch", method = "watch", keep = true, blocking = true,
    props = { { name = "session_ids", kind = "strings", required = true, min_items = 1 } } }
  r.lane:set_tools({ LIST, WATCH })
  r.open()
  local function with_meta(id, name, meta, args)
    return '{"method":"tools/call","params":{"name":"' .. name .. '","arguments":' .. (args or "{}") .. ',"_meta":' .. meta
      .. '},"jsonrpc":"2.0","id":' .. id .. "}"
  end
  local taken = {
    with_meta(1, "reasonix_list", '{"claudecode/toolUseId":"toolu_5","progressToken":5}'), -- Claude Code's
    with_meta(2, "reasonix_list", '{"callId":"call_1","x-codex-turn-metadata":{"thread_id":"t-1"}}'), -- Codex's
    with_meta(3, "reasonix_watch", '{"callId":"c"}', '{"session_ids":["s-1"]}'),
  }
  local lua_lines = {
    with_meta(4, "reasonix_watch", '{"progressToken":4}', '{"session_ids":["s-1"]}'), -- its progress is Lua's
    with_meta(5, "reasonix_list", '{"threadId":"t-1"}'),            -- names the orchestrator
    with_meta(6, "reasonix_list", '{"thread\\u0049d":"t-1"}'),    -- an escaped key
    with_meta(7, "reasonix_list", "null"),                          -- not an object
    with_meta(8, "reasonix_list", '{"progressToken":1},"_meta":{"threadId":"t"}'), -- cjson keeps the last
  }
  for _, line in ipairs(taken) do r.host(line) end
  for _, line in ipairs(lua_lines) do r.host(line) end
  t.wait_for(function() return #r.requests == #taken and #r.lua_host == #lua_lines end, 5000, "taken and Lua's")
  t.eq(r.lua_host, lua_lines)
  t.eq(json.decode(r.requests[3]).method, "watch")
end)

test("a ping is answered while the lane is open, as server/mcp.lua answers it; closed, Lua answers", function(t)
  local r = rig(t)
  r.open()
  r.host('{"jsonrpc":"2.0","id":21,"method":"ping"}')
  r.host('{"jsonrpc":"2.0","id":22,"method":"ping","params":{"_meta":{"progressToken":1}}}')
  t.wait_for(function() return #r.to_host == 1 and #r.lua_host == 1 end, 5000, "the ping answered, the other in Lua")
  t.eq(r.to_host[1], '{"jsonrpc":"2.0","id":21,"result":{}}')
  r.lane:close()
  r.host('{"jsonrpc":"2.0","id":23,"method":"ping"}')
  t.wait_for(function() return #r.lua_host == 2 end, 5000, "the ping in Lua")
  t.eq({ #r.to_host, r.lane:taken() }, { 1, 0 })
end)

test("agentd's result reaches the host as tool_view makes it; an error goes to Lua with its call", function(t)
  local r = rig(t)
  r.open()
  r.host(call(7, "reasonix_list"))
  r.host(call(8, "reasonix_poll", '{"session_id":"x"}'))
  t.wait_for(function() return #r.requests == 2 end, 5000, "the requests")
  local raw = '{"sessions":[{"cwd":"/a/b","task":"say \\"hi\\"\\n","u":"\\u00e9\u{7f}"}],"counts":{}}'
  r.answer('{"jsonrpc":"2.0","id":' .. ID .. ',"result":' .. raw .. "}")
  local err = '{"jsonrpc":"2.0","id":' .. (ID + 1) .. ',"error":{"code":-32001,"message":"unknown session x"}}'
  r.answer(err)
  t.wait_for(function() return #r.to_host == 1 and #r.lua_agentd == 1 end, 5000, "the answers")
  local want = view.result({}, json.raw(raw), "2025-06-18")
  t.eq(json.decode(r.to_host[1]), { jsonrpc = "2.0", id = 7, result = json.decode(json.encode(want)) })
  -- the text block is raw as json.encode quotes it, structuredContent raw itself
  t.eq(r.to_host[1], '{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":' .. json.encode(raw)
    .. '}],"structuredContent":' .. raw .. "}}")
  t.eq(r.lua_agentd[1], err, "Lua reads the error as the answer of the call it adopted")
  t.eq(r.adopted, { { id = 8, aid = ID + 1, tool = "reasonix_poll", args = '{"session_id":"x"}' } })
  t.eq(r.lane:count(), 0)
end)

test("before 2025-06-18 the result has no structuredContent", function(t)
  local r = rig(t)
  r.open{ structured = false }
  r.host(call(1, "reasonix_list"))
  t.wait_for(function() return #r.requests == 1 end, 5000, "the request")
  r.answer('{"jsonrpc":"2.0","id":' .. ID .. ',"result":{"a":"/"}}')
  t.wait_for(function() return #r.to_host == 1 end, 5000, "the result")
  t.eq(r.to_host[1], '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\\"a\\":\\"/\\"}"}]}}')
  t.eq(json.decode(r.to_host[1]).result, json.decode(json.encode(view.result({}, json.raw('{"a":"/"}'), "2025-03-26"))))
end)

test("a kept answer's request carries the receipt key and confirm as receipts:ask adds them", function(t)
  local r = rig(t)
  r.open{ key_prefix = "4242/n:", confirm = true }
  r.host(call(3, "reasonix_poll", '{ "session_id":"x" }'))
  r.host(call(4, "reasonix_list", "{}"))
  t.wait_for(function() return #r.requests == 2 end, 5000, "the requests")
  local sent = json.decode(r.requests[1])
  t.eq(sent.params, { session_id = "x", delivery_key = "4242/n:3", confirm = true })
  t.eq(json.decode(r.requests[2]).params, {}, "list keeps no answer")
  r.open{ key_prefix = "4242/n:" }
  r.host('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"arguments":{"session_id":"y"},"name":"reasonix_poll"}}')
  t.wait_for(function() return #r.requests == 3 end, 5000, "the request")
  t.eq(json.decode(r.requests[3]).params, { session_id = "y", delivery_key = "4242/n:5" })
end)

test("close hands over the calls in flight; no window, a queued reload event or the limit leave calls to Lua", function(t)
  local r = rig(t, { max_in_flight = 4 })
  r.open()
  r.host(call(1, "reasonix_list", '{"all":true}'))
  r.peer.unanswered_n = 1
  r.host(call(2, "reasonix_list"))
  r.host(call(3, "reasonix_list")) -- 1 in Lua + 2 in the lane + this one reach the limit
  t.wait_for(function() return #r.requests == 2 and #r.lua_host == 1 end, 5000, "the lines")
  t.ok(r.settled >= 1, "reaching the limit tells the gates")
  t.ok(r.lane:has(1) and not r.lane:has(3))
  local taken = r.lane:close()
  t.eq(taken, { { id = 1, aid = ID, tool = "reasonix_list", args = '{"all":true}' },
                { id = 2, aid = ID + 1, tool = "reasonix_list" } })
  t.eq({ r.lane:is_open(), r.lane:count() }, { false, 0 })
  r.answer('{"jsonrpc":"2.0","id":' .. ID .. ',"result":{}}')
  r.peer.unanswered_n = 0
  r.open{ until_ns = uv.hrtime() - 1 }
  r.host(call(4, "reasonix_list"))
  local events = uv.pipe({ nonblock = true }, { nonblock = true }) -- (as the reload queue with an event)
  uv.fs_write(events.write, "x")
  r.open{ watch_fd = events.read }
  r.host(call(5, "reasonix_list"))
  t.wait_for(function() return #r.lua_host == 3 and #r.lua_agentd == 1 end, 5000, "the lines")
  t.eq(r.lua_agentd[1], '{"jsonrpc":"2.0","id":' .. ID .. ',"result":{}}', "a closed lane's answer is Lua's")
  t.eq(#r.to_host, 0)
  uv.fs_close(events.read)
  uv.fs_close(events.write)
end)

test("only a forwarding tool with a schema of plain properties is a lane tool", function(t)
  local common = require "rmcp.tools.common"
  local list = require "rmcp.tools.list"
  local e = lane_mod.entry("reasonix_list", list)
  t.eq({ e.method, e.keep, #e.props }, { "list", false, 6 })
  local poll = lane_mod.entry("reasonix_poll", require "rmcp.tools.poll")
  t.eq(poll.keep, true)
  local kinds = {}
  for _, p in ipairs(poll.props) do kinds[p.name] = p.kind .. (p.required and "!" or "") end
  t.eq(kinds, { session_id = "string!", detail = "boolean", include_events = "strings", exclude_events = "strings",
                include_thought = "boolean", include_full = "boolean", max_events = "integer" })
  local watch = lane_mod.entry("reasonix_watch", require "rmcp.tools.watch")
  t.eq({ watch.method, watch.keep }, { "watch", true }, "blocking and kept: a line with a progress token is Lua's")
  local wk = {}
  for _, p in ipairs(watch.props) do wk[p.name] = p.kind .. (p.required and "!" or "") .. (p.min_items or "") end
  t.eq({ wk.session_ids, wk.timeout, wk.include_events }, { "strings!1", "integer", "strings" })
  t.eq(lane_mod.entry("x", { handler = list.handler, inputSchema = list.inputSchema, policy = "p.lua" }), nil)
  local loose = { type = "object", properties = {} }
  t.eq(lane_mod.entry("x", { handler = common.forward("list"), inputSchema = loose }), nil, "unknown arguments allowed")
  local odd = common.object({ id = { type = "array", items = { type = "integer" } } }, { "id" })
  t.eq(lane_mod.entry("x", { handler = common.forward("list"), inputSchema = odd }), nil, "a required array of numbers")
  local prepared = common.forward("list", function(args) return args end)
  t.eq(lane_mod.entry("x", { handler = prepared, inputSchema = list.inputSchema }), nil, "a prepare of its own")
end)

test("a tool that forwards only some of its calls is a lane tool for those: send to one session", function(t)
  local send = lane_mod.entry("reasonix_send", require "rmcp.tools.send")
  local kinds = {}
  for _, p in ipairs(send.props) do
    kinds[p.name] = p.kind .. (p.required and "!" or "") .. (p.nonempty and "+" or "") .. (p.enum and table.concat(p.enum, "|") or "")
  end
  t.eq({ send.method, send.keep, kinds }, { "send", false,
    { session_id = "string!", message = "string!+", expect = "stringsteer|new_turn" } })
  local r = rig(t)
  r.lane:set_tools({ send })
  r.open()
  r.host(call(1, "reasonix_send", '{"session_id":"s-1","message":"go on"}'))
  r.host(call(2, "reasonix_send", '{"session_id":"s-1","message":"x","expect":"new_turn"}'))
  local lua_lines = {
    call(3, "reasonix_send", '{"session_id":"s-1","message":""}'),              -- empty: Lua's schema error
    call(4, "reasonix_send", '{"session_id":"s-1","message":"x","expect":"any"}'), -- any: Lua drops it
    call(5, "reasonix_send", '{"session_ids":["s-1"],"message":"x"}'),          -- many: a broadcast
    call(6, "reasonix_send", '{"session_id":"s-1","message":"x","parallelism":2}'), -- Lua refuses it
    call(7, "reasonix_send", '{"message":"x"}'),                                -- no session: Lua's error
  }
  for _, line in ipairs(lua_lines) do r.host(line) end
  t.wait_for(function() return #r.requests == 2 and #r.lua_host == #lua_lines end, 5000, "two at agentd, the rest in Lua")
  t.eq(r.requests, {
    '{"jsonrpc":"2.0","id":' .. ID .. ',"method":"send","params":{"session_id":"s-1","message":"go on"}}',
    '{"jsonrpc":"2.0","id":' .. (ID + 1) .. ',"method":"send","params":{"session_id":"s-1","message":"x","expect":"new_turn"}}',
  })
  t.eq(r.lua_host, lua_lines)
end)

test("a request the link refuses outright (agentd gone, its end not read yet) goes to Lua", function(t)
  local r = rig(t)
  r.open()
  r.agentd_gone()
  r.host(call(1, "reasonix_list"))
  t.wait_for(function() return #r.lua_host == 1 end, 5000, "the line in Lua")
  t.eq({ r.lane:taken(), r.lane:count() }, { 0, 0 })
end)

test("a call past the window asks Lua's reload check first, and is taken if the lane is open again", function(t)
  local r = rig(t)
  r.open{ until_ns = uv.hrtime() - 1 }
  local checks = 0
  r.on_window = function()
    checks = checks + 1
    r.open() -- (the check found nothing: a new window)
  end
  r.host(call(1, "reasonix_list"))
  t.wait_for(function() return #r.requests == 1 end, 5000, "the request")
  t.eq({ checks, r.lane:taken() }, { 1, 1 })
  r.open{ until_ns = uv.hrtime() - 1 }
  r.on_window = function()
    checks = checks + 1
    t.eq(#r.lane:close(), 1, "sync hands over the calls before a new tool table")
    r.lane:set_tools({ LIST }) -- (a reload's: this line is Lua's)
    r.open()
  end
  r.host(call(2, "reasonix_list"))
  t.wait_for(function() return #r.lua_host == 1 end, 5000, "the line in Lua")
  t.eq({ checks, r.lane:taken(), r.lane:is_open() }, { 2, 1, true })
end)

-- (last: it swaps tools/common.lua in anew, which forgets the forwards the tools above were made with)
test("a call handed over after a hot reload of tools/common.lua goes on as the lane sent it", function(t)
  local list = require "rmcp.tools.list"
  local entry = lane_mod.entry("reasonix_list", list)
  local ok = require("rmcp.lib.swap").build({ "rmcp.tools.common" }, {
    reloadable = function(n) return n == "rmcp.tools.common" end, stamps = {}, stamp = function() return 0 end,
    path_of = function(n) return package.searchpath(n, package.path) end })
  t.ok(ok, "tools/common.lua built anew")
  t.eq(require("rmcp.tools.common").forwarded(list.handler), nil, "the reload forgot the old tool's forward")
  local adopted = {}
  local calls = require("rmcp.server.calls").new()
  local server = { calls = calls, call_orchestrator = function() return "orch" end,
    peer = { reply_to = function() return function() end end },
    link = function() return { adopt = function(_, aid, method, params) adopted[#adopted + 1] = { aid, method, params } end } end }
  calls:adopt(server, list, entry, { all = true }, 7, ID)
  t.eq(adopted, { { ID, "list", { all = true } } })
end)
