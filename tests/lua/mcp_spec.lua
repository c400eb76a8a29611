-- The MCP session (server/mcp.lua) in process, with a scripted agentd link: version negotiation,
-- what needs initialize first, the cached tool list, argument errors, agentd's results passed through
-- undecoded, agentd errors made actionable, cancellation and the client's log level. Every line the
-- server writes must be an id-first envelope (the launcher routes by that prefix).
local json = require "rmcp.lib.json"
local with_env = require("testing").with_env
local jsonrpc = require "rmcp.lib.jsonrpc"
local mcp = require "rmcp.server.mcp"

require("rmcp.lib.log").set_sink(function() end) -- the server's info lines are not what is tested

-- A server whose writes land in out (decoded, with .line the text) and whose agentd link answers
-- every request with answer(method, params, raw) -> result, err (nil, nil: no answer yet);
-- supervised: as under the launcher.
local function server(t, answer, supervised)
  local out, calls, cancelled, links, notes = {}, {}, {}, {}, {}
  local link = { conn = true }
  function link.notify(_, method, params) notes[#notes + 1] = { method = method, params = params } end
  function link.request(_, method, params, cb, raw)
    calls[#calls + 1] = { method = method, params = params, raw = raw, cb = cb }
    local result, err = answer(method, params, raw)
    if result ~= nil or err ~= nil then cb(result, err) end
    return #calls
  end
  function link.cancel(_, id) cancelled[#cancelled + 1] = id end
  function link.close() end
  local s = mcp.new{
    send = function(line)
      t.ok(jsonrpc.envelope(line), "an id-first envelope: " .. line:sub(1, 80))
      local msg = assert(json.decode(line))
      msg.line = line
      out[#out + 1] = msg
    end,
    project_dir = "/tmp/project", version = "9.9.9", supervised = supervised,
    link = function(_, orch) links[#links + 1] = orch; return link end,
  }
  local ctx = { s = s, out = out, calls = calls, cancelled = cancelled, next_id = 0, links = links, notes = notes }
  -- Sends a request and returns the server's answer (the last line written for its id).
  function ctx.request(method, params)
    ctx.next_id = ctx.next_id + 1
    local id = ctx.next_id
    s:receive(json.encode({ jsonrpc = "2.0", id = id, method = method, params = params }))
    for i = #out, 1, -1 do
      if out[i].id == id then return out[i] end
    end
    return nil
  end
  function ctx.notify(method, params)
    s:receive(json.encode({ jsonrpc = "2.0", method = method, params = params }))
  end
  function ctx.init(version, caps)
    local r = ctx.request("initialize", { protocolVersion = version or "2025-11-25", capabilities = caps or {},
                                          clientInfo = { name = "spec-client", version = "1" } })
    ctx.notify("notifications/initialized")
    return r
  end
  return ctx
end

test("initialize negotiates the version, says who we are and refuses a second initialize", function(t)
  local c = server(t, function() end)
  local r = c.init("2025-06-18")
  t.eq(r.result.protocolVersion, "2025-06-18")
  t.eq(r.result.serverInfo.name, "reasonix-mcp")
  t.eq(r.result.serverInfo.version, "9.9.9")
  t.match(r.result.instructions, "reasonix_watch")
  t.eq(c.request("initialize", { protocolVersion = "2025-06-18" }).error.code, jsonrpc.INVALID_REQUEST)
  local old = server(t, function() end).init("2024-11-05").result
  t.eq(old.instructions, nil, "no instructions before 2025-03-26")
  t.eq(old.serverInfo.title, nil, "no title before 2025-06-18")
  t.eq(server(t, function() end).init("2099-01-01").result.protocolVersion, mcp.VERSIONS[1], "an unknown version gets ours")
  t.eq(server(t, function() end).request("initialize", { protocolVersion = 5 }).error.code, jsonrpc.INVALID_PARAMS)
end)

test("before initialize only ping and discovery answer; the rest say to initialize", function(t)
  local c = server(t, function() end)
  t.eq(c.request("ping").result, {})
  t.eq(c.request("server/discover").result.supportedVersions[1], mcp.VERSIONS[1])
  for _, m in ipairs({ "tools/list", "tools/call", "logging/setLevel" }) do
    local r = c.request(m, { name = "reasonix_list" })
    t.eq(r.error.code, -32002, m)
    t.match(r.error.message, "initialize first")
  end
end)

test("tools/list is encoded once per version and shows only non-default annotations", function(t)
  local c = server(t, function() end)
  c.init("2025-11-25")
  local a = c.request("tools/list")
  local b = c.request("tools/list")
  t.eq(a.line:gsub('"id":%d+', ""), b.line:gsub('"id":%d+', ""), "the same bytes both times")
  local bytes = #json.encode(a.result.tools)
  t.ok(bytes <= 8192, "the default listing fits 8 KB: " .. bytes)
  local by = {}
  for _, tool in ipairs(a.result.tools) do by[tool.name] = tool end
  t.eq(by.reasonix_poll.annotations, { destructiveHint = false, openWorldHint = false }, "a poll consumes: not read-only")
  t.eq(by.reasonix_list.annotations, { readOnlyHint = true, openWorldHint = false })
  t.eq(by.reasonix_spawn.outputSchema, nil, "no placeholder outputSchema")
  t.eq(by.reasonix_spawn.title, nil, "no title: hosts show the name")
  local old = server(t, function() end)
  old.init("2025-03-26")
  local tools = old.request("tools/list").result.tools
  t.eq(tools[1].annotations, { destructiveHint = false }, "no title in annotations either")
end)

local toolsets_case

test("one surface: every tool listed from the start; REASONIX_MCP_TOOLSETS lists fewer; renamed names answer", function(t)
  with_env({ REASONIX_MCP_HOME = t.tmpdir("toolsets"), REASONIX_MCP_TOOLSETS = false }, function() toolsets_case(t) end)
end)

-- The body of the tool sets case, in a private home.
toolsets_case = function(t)
  local names = function(r)
    local out, n = {}, 0
    for _, tool in ipairs(r.result.tools) do out[tool.name] = true; n = n + 1 end
    return out, n
  end
  local c = server(t, function(method) if method == "routine_list" then return json.raw('{"routines":[]}') end end)
  c.init("2025-11-25")
  local listed, n = names(c.request("tools/list"))
  t.eq(n, 17, "every capability in 17 tools")
  t.ok(listed.reasonix_spawn and listed.reasonix_watch and listed.reasonix_routine and listed.reasonix_worktree
    and listed.reasonix_dashboard and listed.reasonix_configure, "the loop and the rest, from the start")
  for _, gone in ipairs({ "reasonix_toolsets", "reasonix_routine_create", "reasonix_broadcast", "reasonix_diff", "reasonix_spawn_fleet" }) do
    t.eq(listed[gone], nil, gone .. " is not listed")
  end
  -- a renamed tool still answers its name with the old result (a host that cached the old list keeps working)
  local r = c.request("tools/call", { name = "reasonix_routine_list", arguments = {} })
  t.eq(r.result.structuredContent, { routines = {} })
  t.eq(c.calls[#c.calls].method, "routine_list")
  r = c.request("tools/call", { name = "reasonix_routine_list", arguments = { bogus = true } })
  t.eq(r.result.isError, true, "checked against the old tool's own schema")

  -- the opt-out for a tiny context: REASONIX_MCP_TOOLSETS=core lists the loop only
  with_env({ REASONIX_MCP_TOOLSETS = "core" }, function()
    local small = server(t, function() end)
    small.init("2025-11-25")
    local got, m = names(small.request("tools/list"))
    t.eq(m, 13, "the thirteen tools of the spec")
    t.eq(got.reasonix_routine, nil)
    local before = #small.out
    r = small.request("tools/call", { name = "reasonix_toolsets", arguments = { enable = { "routines" } } })
    t.eq(r.result.isError, nil)
    local sets = {}
    for _, set in ipairs(r.result.structuredContent.toolsets) do sets[set.name] = set end
    t.eq(sets.routines.listed, true)
    t.eq(sets.fleet.listed, false)
    t.eq(sets.routines.tools, { "reasonix_routine" })
    t.eq(r.result.structuredContent.list_changed, true)
    local notified = 0
    for i = before + 1, #small.out do
      if small.out[i].method == "notifications/tools/list_changed" then notified = notified + 1 end
    end
    t.eq(notified, 1, "the host is told the list changed")
    t.ok(names(small.request("tools/list")).reasonix_routine, "listed now")
    r = small.request("tools/call", { name = "reasonix_toolsets", arguments = { enable = { "routines" }, disable = { "core" } } })
    t.eq(r.result.structuredContent.list_changed, false, "what is listed stays; core always")
    r = small.request("tools/call", { name = "reasonix_toolsets", arguments = { enable = { "everything" } } })
    t.eq(r.result.isError, true)
    t.match(r.result.content[1].text, "must be one of")
  end)
  with_env({ REASONIX_MCP_TOOLSETS = "worktree,nonsense" }, function()
    local some = server(t, function() end)
    some.init("2025-11-25")
    local got = names(some.request("tools/list"))
    t.ok(got.reasonix_worktree and got.reasonix_spawn, "worktree and core")
    t.eq(got.reasonix_routine, nil)
  end)
end

test("tool arguments are checked against the schema before agentd hears of them", function(t)
  local c = server(t, function() return {} end)
  c.init()
  local r = c.request("tools/call", { name = "reasonix_spawn", arguments = { task = "x", tool_approval = "root" } })
  t.eq(r.result.isError, true)
  t.match(r.result.content[1].text, "tool_approval must be one of ask, auto, yolo")
  r = c.request("tools/call", { name = "reasonix_spawn", arguments = { task = "x", colour = "red" } })
  t.match(r.result.content[1].text, "unknown argument colour")
  r = c.request("tools/call", { name = "reasonix_poll", arguments = {} })
  t.match(r.result.content[1].text, "missing required argument session_id")
  t.eq(c.request("tools/call", { name = "nope" }).error.code, jsonrpc.INVALID_PARAMS)
  t.eq(c.request("tools/call", { name = "reasonix_list", arguments = { 1, 2 } }).error.code, jsonrpc.INVALID_PARAMS)
  t.eq(#c.calls, 0, "nothing reached agentd")
end)

test("a forwarded result is agentd's JSON as it came: the text block and structuredContent, encoded once", function(t)
  local raw = '{"sessions":[],"counts":{},"path":"/tmp/x"}'
  local c = server(t, function(method, _, wants_raw)
    if method == "list" then return wants_raw and json.raw(raw) or json.decode(raw) end
  end)
  c.init("2025-11-25")
  local r = c.request("tools/call", { name = "reasonix_list", arguments = { pending_only = true } })
  t.eq(c.calls[1].raw, true, "asked for the raw result")
  t.eq(c.calls[1].params, { pending_only = true }, "the arguments as given (agentd applies the defaults)")
  t.eq(r.result.content[1].text, raw)
  t.ok(r.line:find(',"structuredContent":' .. raw, 1, true) or r.line:find('"structuredContent":' .. raw, 1, true),
    "structuredContent is the raw text, spliced")
  t.ok(json.is_array(r.result.structuredContent.sessions))
  local old = server(t, function() return json.raw(raw) end)
  old.init("2025-03-26")
  t.eq(old.request("tools/call", { name = "reasonix_list", arguments = {} }).result.structuredContent, nil)
end)

test("agentd errors become isError results that say what to do next", function(t)
  local c = server(t, function(method)
    if method == "poll" then return nil, jsonrpc.error(-32001, "unknown session rx-1") end
    if method == "stop" then
      local e = jsonrpc.error(jsonrpc.INTERNAL_ERROR, "connect refused")
      e.unavailable, e.log_hint = true, "/tmp/h/agentd.log"
      return nil, e
    end
  end)
  c.init()
  local r = c.request("tools/call", { name = "reasonix_poll", arguments = { session_id = "rx-1" } })
  t.eq(r.result.isError, true)
  t.match(r.result.content[1].text, "^reasonix_poll: unknown session rx%-1 Call reasonix_list")
  r = c.request("tools/call", { name = "reasonix_stop", arguments = { session_id = "rx-1" } })
  t.match(r.result.content[1].text, "/tmp/h/agentd.log")
  t.match(r.result.content[1].text, "reasonix%-mcp doctor")
end)

test("a cancelled watch releases agentd's watch and gets no reply; progress goes to its token", function(t)
  local c = server(t, function() end) -- watch never answers
  c.init()
  c.s:receive(json.encode({ jsonrpc = "2.0", id = 77, method = "tools/call",
    params = { name = "reasonix_watch", arguments = { session_ids = { "rx-1" } }, _meta = { progressToken = "tok" } } }))
  t.eq(c.calls[1].method, "watch")
  t.eq(c.calls[1].params.progress, true, "agentd is asked for progress because the call has a token")
  c.s:on_agentd_notification("watch_progress", { request_id = 1, message = "watching 1 session(s)" }, c.s.orchestrator_id)
  local last = c.out[#c.out]
  t.eq(last.method, "notifications/progress")
  t.eq(last.params.progressToken, "tok")
  local before = #c.out
  c.notify("notifications/cancelled", { requestId = 77, reason = "user" })
  t.eq(c.cancelled, { 1 }, "agentd request 1 cancelled")
  c.calls[1].cb({ results = {} }) -- a late answer
  t.eq(#c.out, before, "nothing is sent for a cancelled call")
end)

test("logging/setLevel filters notifications/message; agent events still reach the host", function(t)
  local c = server(t, function() end)
  c.init()
  t.eq(c.request("logging/setLevel", { level = "verbose" }).error.code, jsonrpc.INVALID_PARAMS)
  c.request("logging/setLevel", { level = "error" })
  local before = #c.out
  c.s:on_agentd_notification("agent_event", { session_id = "rx-1", event = "turn_end", status = "idle" })
  local methods = {}
  for i = before + 1, #c.out do methods[#methods + 1] = c.out[i].method end
  t.eq(methods, { "reasonix/agent_event" }, "an info message is below the client's level")
  c.request("logging/setLevel", { level = "info" })
  before = #c.out
  c.s:on_agentd_notification("agent_event", { session_id = "rx-1", event = "turn_end", status = "idle" })
  t.eq(c.out[#c.out].method, "notifications/message")
  t.eq(#c.out - before, 2)
end)

test("by default routine events send no notifications/message; a deliberate stop is info, a crash an error", function(t)
  local c = server(t, function() end)
  c.init()
  -- Sends one agent_event and returns the notifications/message it produced, if any.
  local function message_for(ev)
    local before = #c.out
    c.s:on_agentd_notification("agent_event", ev)
    for i = before + 1, #c.out do
      if c.out[i].method == "notifications/message" then return c.out[i].params end
    end
  end
  t.eq(message_for({ session_id = "rx-1", event = "turn_end", status = "idle" }), nil, "a turn's end is routine")
  t.eq(message_for({ session_id = "rx-1", event = "process_exited", status = "exited", note = "stopped" }), nil,
    "a deliberate stop is routine")
  t.eq(message_for({ session_id = "rx-1", event = "permission_request", status = "awaiting_decision" }).level, "notice")
  t.eq(message_for({ session_id = "rx-1", event = "process_exited", status = "exited", note = "crashed",
                     error_text = "agent exited unexpectedly" }).level, "error")
  c.request("logging/setLevel", { level = "info" })
  t.eq(message_for({ session_id = "rx-1", event = "process_exited", status = "exited", note = "stopped" }).level, "info")
end)

test("an id that is not a string or integer, and an empty batch, get -32600 with id null", function(t)
  local ctx = server(t, function() return {} end)
  for _, line in ipairs({ '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', '{"jsonrpc":"2.0","id":[1],"method":"ping"}',
                          '{"jsonrpc":"2.0","id":1.5,"method":"ping"}', '[]', '[1,2]',
                          '{"jsonrpc":"2.0","id":{"a":1},"result":{}}' }) do
    local before = #ctx.out
    ctx.s:receive(line)
    t.eq(#ctx.out, before + 1, "one answer to " .. line)
    local m = ctx.out[#ctx.out]
    t.eq(m.id, json.null, line)
    t.eq(m.error.code, -32600, line)
  end
end)

test("a host naming conversations (Codex's _meta.threadId) gets an orchestrator per conversation", function(t)
  local c = server(t, function() return { sessions = {} } end)
  c.init()
  local function list(meta)
    c.next_id = c.next_id + 1
    c.s:receive(json.encode({ jsonrpc = "2.0", id = c.next_id, method = "tools/call",
      params = { name = "reasonix_list", arguments = {}, _meta = meta } }))
  end
  local base = c.s.orchestrator_id
  list(nil)
  list({ threadId = "thread-a" })
  list({ threadId = "thread-b" })
  list({ threadId = "thread-a" })
  t.eq(#c.links, 3, "one link per orchestrator: the host's and two conversations'")
  t.eq(c.links[1], base)
  t.ok(c.links[2]:find(base .. "-c", 1, true) == 1 and c.links[3]:find(base .. "-c", 1, true) == 1, "derived from the host's")
  t.ok(c.links[2] ~= c.links[3], "two conversations, two orchestrators")
  with_env({ REASONIX_MCP_ORCHESTRATOR_ID = "fixed" }, function()
    local e = server(t, function() return { sessions = {} } end)
    e.init()
    e.s:receive(json.encode({ jsonrpc = "2.0", id = 1, method = "tools/call",
      params = { name = "reasonix_list", arguments = {}, _meta = { threadId = "thread-a" } } }))
    t.eq(e.links, { "fixed" }, "an explicit id is every conversation's")
  end)
end)

test("a watch or poll under the launcher carries the host request's delivery key, written as every version writes it", function(t)
  with_env({ REASONIX_MCP_LAUNCHER_PID = "4242" }, function()
    local c = server(t, function() return { results = {} } end, true)
    c.init("2025-11-25")
    local r = c.request("tools/call", { name = "reasonix_watch", arguments = { session_ids = { "rx-1" }, timeout = 0 } })
    t.ok(r.result, "answered")
    t.eq(c.calls[#c.calls].method, "watch")
    t.eq(c.calls[#c.calls].params.delivery_key, "4242/n:" .. c.next_id, "an integer id: n:<id>")
    t.eq(c.calls[#c.calls].params.confirm, nil, "a launcher that reports no receipts: nothing to wait for")
    c.notify("$/rmcp/launcher", { answer_fates = true })
    c.request("tools/call", { name = "reasonix_watch", arguments = { session_ids = { "rx-1" }, timeout = 0 } })
    t.eq(c.calls[#c.calls].params.confirm, true, "one that does: agentd keeps the answer until its word")
    c.request("tools/call", { name = "reasonix_poll", arguments = { session_id = "rx-1" } })
    t.eq(c.calls[#c.calls].method, "poll")
    t.eq(c.calls[#c.calls].params.delivery_key, "4242/n:" .. c.next_id, "a poll's answer is kept the same way")
    t.eq(c.calls[#c.calls].params.confirm, true)
    local unsupervised = server(t, function() return { results = {} } end)
    unsupervised.init("2025-11-25")
    unsupervised.request("tools/call", { name = "reasonix_watch", arguments = { session_ids = { "rx-1" }, timeout = 0 } })
    t.eq(unsupervised.calls[#unsupervised.calls].params.delivery_key, nil, "no launcher: no key")
  end)
end)

test("the launcher's word on a watch answer reaches agentd by the request's key; a cancelled call's late answer is undelivered", function(t)
  with_env({ REASONIX_MCP_LAUNCHER_PID = "4242" }, function()
    local c = server(t, function(method) if method == "watch" then return nil end return { results = {} } end, true)
    c.init("2025-11-25")
    c.request("tools/call", { name = "reasonix_watch", arguments = { session_ids = { "rx-1" } } })
    local id = c.next_id
    c.calls[#c.calls].cb(json.raw('{"results":{"rx-1":{"status":"idle"}}}'))
    c.notify("$/rmcp/answered", { id = id, delivered = true })
    t.eq(c.notes[#c.notes], { method = "delivered", params = { key = "4242/n:" .. id } })
    c.notify("$/rmcp/answered", { id = id, delivered = false })
    t.eq(c.notes[#c.notes], { method = "undelivered", params = { key = "4242/n:" .. id } })
    t.eq(#c.links, 1, "both on the host orchestrator's link")
    c.notify("$/rmcp/answered", { id = id, delivered = true, thread_id = "thread-a" })
    t.eq(#c.links, 2, "a conversation's answer: its orchestrator's link")
    t.ok(c.links[2]:find(c.links[1] .. "-c", 1, true) == 1, "derived from the host's")
    -- the host cancels; agentd's answer was already on its way
    c.request("tools/call", { name = "reasonix_watch", arguments = { session_ids = { "rx-1" } } })
    local late = c.next_id
    c.notify("notifications/cancelled", { requestId = late })
    c.calls[#c.calls].cb(json.raw('{"results":{"rx-1":{"status":"idle"}}}'))
    t.eq(c.notes[#c.notes], { method = "undelivered", params = { key = "4242/n:" .. late } })
    t.eq(c.out[#c.out].id ~= late, true, "no answer to a cancelled call")
    local unsupervised = server(t, function() return { results = {} } end)
    unsupervised.init("2025-11-25")
    unsupervised.notify("$/rmcp/answered", { id = 1, delivered = true })
    t.eq(#unsupervised.notes, 0, "no launcher: no key, nothing to say")
  end)
end)
