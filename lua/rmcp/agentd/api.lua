-- The socket API of agentd (PROTOCOL.md), its transport: connections (accept, close), the hello
-- handshake, dispatch of every request to its method through one table, and agent_event
-- notifications to the owning orchestrator's connections. The methods live by domain in
-- agentd/methods/: sessions, worktree, fleet, observe, admin, routines.
local uv = require "luv"
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local log = require "rmcp.lib.log"
local after_reply = require "rmcp.lib.after_reply"
local flow = require "rmcp.lib.flow"
local reload = require "rmcp.lib.reload"
local channel = require "rmcp.channel"
local config = require "rmcp.config"
local watch = require "rmcp.agentd.watch"
local observe = require "rmcp.agentd.observe"
local upgrade = require "rmcp.agentd.upgrade"
local session = require "rmcp.agentd.session"
local answers = require "rmcp.agentd.answers"

local M = {}

M.PROTOCOL = 1
M.HELLO_REQUIRED = -32002

local bad = require("rmcp.agentd.methods.params").bad

-- True when v is a table of string keys to string values.
local function string_map(v)
  if type(v) ~= "table" then return false end
  for k, x in pairs(v) do
    if type(k) ~= "string" or type(x) ~= "string" then return false end
  end
  return true
end

-- hello: version handshake; binds the connection to an orchestrator and project dir.
local function hello(d, conn, p, reply)
  if p.protocol ~= M.PROTOCOL then
    return reply(nil, jsonrpc.error(M.HELLO_REQUIRED, string.format(
      "protocol mismatch: client speaks %s, this agentd (pid %d) speaks %d; restart agentd (reasonix-mcp ctl restart) or update the client",
      tostring(p.protocol), d.pid, M.PROTOCOL)))
  end
  if type(p.orchestrator_id) ~= "string" or p.orchestrator_id == "" then
    return reply(nil, bad("orchestrator_id must be a non-empty string"))
  end
  if p.project_dir ~= nil and (type(p.project_dir) ~= "string" or p.project_dir:sub(1, 1) ~= "/") then
    return reply(nil, bad("project_dir must be an absolute path"))
  end
  if p.env ~= nil and not string_map(p.env) then
    return reply(nil, bad("env must be an object of strings (the caller's environment)"))
  end
  conn.orch, conn.project_dir, conn.hello = p.orchestrator_id, p.project_dir, true
  answers.changed() -- (what it kept was its former orchestrator's)
  conn.client = type(p.client) == "table" and p.client or {}
  conn.env = p.env -- the agents this connection spawns or resumes run with it (nil: agentd's own)
  if p.observer == true then
    conn.observer = true -- the dashboard: sees every orchestrator's sessions (observe_*), consumes nothing
    observe.add(d, conn)
  end
  log.info("conn %d: hello from %s (%s)%s", conn.id, tostring(conn.client.name), conn.orch,
           conn.project_dir and " for " .. conn.project_dir or ", no project dir")
  reply({ protocol = M.PROTOCOL, version = d.version, agentd_pid = d.pid, home = d.paths.home,
          reload = upgrade.status(d, conn.orch) })
end

-- The module that handles each method, by method name: the dispatcher's one table. The handler
-- is read from its module at each call, so a hot reload of a reloadable one (methods/routines.lua)
-- applies at once.
local handlers = {}

-- Adds every function of module to handlers under its name (a name is one module's only).
local function register(module)
  for name, fn in pairs(module) do
    assert(type(fn) == "function" and not handlers[name], name)
    handlers[name] = module
  end
end

register({ hello = hello })
register(require "rmcp.agentd.methods.sessions")

-- The methods whose module loads with the first call of one of them (an idle daemon does not carry
-- them): method name -> module under rmcp.agentd.methods. lazy_spec checks it names each module's
-- methods, all of them.
M.LATER = {
  worktree = "worktree", diff = "worktree", worktree_forecast = "worktree", worktree_integrate = "integrate",
  spawn_fleet = "fleet", resume_fleet = "fleet", broadcast = "fleet",
  observe = "observe", observe_session = "observe", observe_act = "observe", observe_routines = "observe",
  observe_routine_act = "observe", observe_usage = "observe",
  ping = "admin", models = "admin", prune = "admin", restart = "admin", shutdown = "admin",
  routine_list = "routines", routine_templates = "routines", routine_create = "routines",
  routine_from_template = "routines", routine_configure = "routines", routine_run = "routines",
  routine_stop = "routines", routine_respond = "routines", routine_delete = "routines",
}

-- The module of method, loading it (and registering all its methods) on first use; nil when none has it.
local function handler_of(method)
  local module = handlers[method]
  if module or not M.LATER[method] then return module end
  register(require("rmcp.agentd.methods." .. M.LATER[method]))
  return handlers[method]
end

-- Sends agent_event for s to every connection of its orchestrator: the event says what s is now,
-- and goes out after the replies of this moment (a watch woken by the same change gets its
-- result first), in the order the events happened.
function M.emit(d, s, event, extra)
  local payload = { session_id = s.id, event = event, status = s.status, stop_reason = s.stop_reason,
                    transcript_path = s.transcript_path }
  for k, v in pairs(extra or {}) do payload[k] = v end
  local owner = s.owner
  after_reply.queue(function()
    local n = 0
    for conn in pairs(d.conns) do
      if conn.hello and conn.orch == owner and not conn.peer.closed then
        conn.peer:notify("agent_event", payload)
        n = n + 1
      end
    end
    log.info("agent_event %s %s (%s) → %d connection(s)", payload.session_id, event, payload.status, n)
  end)
end

-- The methods that do not read the finished sessions a start takes in after it listens
-- (agentd/session/index.lua): every other one waits until they are all in.
M.WITHOUT_HISTORY = { hello = true, ping = true, shutdown = true }

-- The error for a method no module handles.
local function not_found(method)
  return jsonrpc.error(jsonrpc.METHOD_NOT_FOUND, "method not found: " .. method)
end

-- The router of conn's requests and notifications to their handlers: route(method, params, reply),
-- the on_request of its peer (params: a table, as jsonrpc.lua hands every request's).
local function router(d, conn)
  return function(method, params, reply)
    if method == "$/cancel" then
      local cancel = conn.requests[params.id]
      if cancel then cancel() end
      return reply()
    end
    local module = handlers[method] or handler_of(method)
    if not (module and module[method]) then return reply(nil, not_found(method)) end
    if not conn.hello and method ~= "hello" then
      return reply(nil, jsonrpc.error(M.HELLO_REQUIRED, "hello required: send hello {protocol: 1, orchestrator_id, project_dir} first"))
    end
    if params[1] ~= nil then return reply(nil, bad("params must be an object")) end
    if not M.WITHOUT_HISTORY[method] then session.complete_history(d) end
    -- Hot reload: a changed policy or module applies to this very call; a failed reload is reported
    -- (once) to the next MCP server that asked for warnings in hello, ahead of its reply.
    reload.check()
    if conn.hello and conn.client.warnings == true and reload.has_warnings() then
      for _, w in ipairs(reload.take_warnings()) do conn.peer:notify("reload_warning", { message = w }) end
    end
    local fn = module[method] -- read after the reload check: an edit of its module applies to this call
    if not fn then return reply(nil, not_found(method)) end
    fn(d, conn, params, reply, conn.peer.current_id)
  end
end

---@class AgentdConn                 one client of the socket: an MCP server, ctl, the dashboard
---@field id integer                 its number in the log (d.next_conn)
---@field peer table                 its JSON-RPC peer (lib/jsonrpc.lua)
---@field ch userdata?               the socket's channel (accept; nil for a connection made in process)
---@field peer_pid integer?          the client's pid (SO_PEERCRED)
---@field requests table<any, function> the cancel of each long request in flight, by request id ($/cancel)
---@field hello boolean              hello was answered: the methods are open
---@field orch string?               the orchestrator it speaks for (hello; ownership.lua checks sessions against it)
---@field project_dir string?        that orchestrator's project dir
---@field client table?              what the client said of itself in hello: name, version, warnings
---@field env table<string, string>? the caller's environment: the agents it spawns or resumes run with it
---@field observer boolean?          the dashboard: sees every orchestrator's sessions, consumes nothing
---@field answers userdata?          the lane that gives the answers kept for it in C (answers.lua)

-- A new connection of d whose lines go out through send(line): its JSON-RPC peer dispatches to the
-- API methods (feed it with conn.peer:receive(line)); on_answered() runs after each answer to it.
-- Registered in d.conns.
---@return AgentdConn
function M.connect(d, send, peer_pid, on_answered)
  d.next_conn = d.next_conn + 1
  local conn = { id = d.next_conn, requests = {}, hello = false, peer_pid = peer_pid }
  local route = router(d, conn)
  conn.peer = jsonrpc.new({
    name = "agentd-conn",
    send = send,
    on_answered = on_answered,
    on_request = route,
    on_notification = function(method, params)
      route(method, params, function() end)
    end,
    on_protocol_error = function(message) log.warn("conn %d: %s", conn.id, message) end,
  })
  d.conns[conn] = true
  return conn
end

M.REFUSED_PEER = -32007

-- True when process pid lives in a pid namespace other than ours: one of the agents agentd starts in
-- a sandbox (its own pid namespace), or a process it started there. Such a peer may not connect;
-- nor may one we cannot place (pid 0: a namespace ours cannot see; one gone before we looked, as a
-- process that connects, forks and exits would be). Only where our own cannot be read (no /proc)
-- is there nothing to compare.
function M.sandboxed_peer(pid)
  local mine = uv.fs_readlink("/proc/self/ns/pid")
  if not mine then return false end
  if not pid or pid == 0 then return true end
  return uv.fs_readlink("/proc/" .. math.tointeger(pid) .. "/ns/pid") ~= mine
end

-- Answers the peer of accepted socket fd (pid) that it may not connect: its first request (hello)
-- gets the refusal under its own id, so a client says why and does not try again; then it is closed.
function M.refuse(fd, pid)
  log.warn("refused a connection from pid %s: it runs in a pid namespace of its own (a sandboxed agent)", tostring(pid))
  local ch
  ch = channel.open(fd, { mode = "ndjson", max_line = 65536, on_eof = function() ch:close() end,
    on_line = function(line)
      local msg = json.decode(line)
      local id = type(msg) == "table" and msg.id or json.null
      ch:write(json.encode({ jsonrpc = "2.0", id = id == nil and json.null or id, error = { code = M.REFUSED_PEER,
        message = "agentd refuses a sandboxed agent: only processes outside the sandboxes agentd makes may connect" } }))
      ch:pause()
      ch:shutdown()
    end,
  })
end

-- Takes over an accepted socket fd: NDJSON JSON-RPC with the API methods.
function M.accept(d, fd, peer_uid, peer_pid)
  if M.sandboxed_peer(peer_pid) then return M.refuse(fd, peer_pid) end
  local ch, gate
  -- (a write to a closed channel writes nothing and says so: no look whether it is closed first)
  local conn = M.connect(d, function(line) if ch then ch:write(line) end end, peer_pid,
                         function() if gate.held then gate:released() end end)
  -- a peer that leaves its replies unread, or has too many requests in flight, is not read either
  -- until that clears (config.lua "Back-pressure": twice a host's bound, so a server at its own is
  -- never held back here and its cancels get through)
  local max_in_flight = 2 * config.limit("max_in_flight")
  gate = flow.gate("conn " .. conn.id, function()
    local n = conn.peer:unanswered()
    if n < max_in_flight and ch:queued() < flow.UNREAD then return nil end -- (the usual case, after every line)
    return flow.unread(ch, "the client") or flow.too_many(n, max_in_flight)
  end)
  local err
  ch, err = channel.open(fd, {
    mode = "ndjson",
    max_line = config.limit("max_line"),
    on_line = function(line)
      conn.peer:receive(line)
      gate:check()
    end,
    on_drain = function() gate:released() end,
    on_oversize = function(n)
      log.warn("conn %d: dropped a %d-byte line", conn.id, n)
      conn.peer:respond_error(nil, jsonrpc.INVALID_REQUEST,
        string.format("line too long: %d bytes (max %d); the request was dropped", n, config.limit("max_line")))
    end,
    on_eof = function() M.close(d, conn) end,
  })
  if not ch then
    log.error("cannot open connection from pid %s: %s", tostring(peer_pid), tostring(err))
    d.conns[conn] = nil
    return
  end
  conn.ch = ch
  gate:add(ch)
  answers.attach(conn, ch)
  log.debug("conn %d: accepted (uid %s pid %s)", conn.id, tostring(peer_uid), tostring(peer_pid))
end

M.GOODBYE = "goodbye"

-- Closes a connection and cancels its long requests; flush: let queued replies go out first (the
-- peer then sees EOF), for a daemon that is handing over. A handover closing a connection with
-- every request it read answered (but watches and waits) says goodbye first: the client may then
-- send any request still without an answer again, as agentd never read it (PROTOCOL.md).
function M.close(d, conn, flush)
  if not d.conns[conn] then return end
  d.conns[conn] = nil
  if flush and conn.hello and watch.short_in_flight(conn) == 0 then conn.peer:notify(M.GOODBYE, {}) end
  conn.peer:close("connection closed")
  watch.drop_conn(d, conn)
  observe.remove(d, conn)
  local kept = answers.taken(conn)
  if kept > 0 then log.info("conn %d: %d answer(s) given from kept ones (answers.lua)", conn.id, kept) end
  answers.detach(conn)
  if conn.ch and not conn.ch:is_closed() then
    if flush then conn.ch:pause(); conn.ch:shutdown() else conn.ch:close() end
  end
  log.debug("conn %d: closed", conn.id)
end

return M
