-- The launcher's proxy: routes NDJSON lines between the host and a `server` child, records the
-- handshake and the host's in-flight requests, and replaces the child — build and swap: a new server
-- gets the handshake replayed and must answer it before it takes over — when the binary changes,
-- when the server asks ($/rmcp/restart), or when it dies (then with backoff, giving up after a run of
-- quick crashes). Repeatable in-flight requests move to the new server; other ones finish on the old
-- server (graceful swap) or get a JSON-RPC error (crash). The host never sees a second answer.
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local log = require "rmcp.lib.log"
local config = require "rmcp.config"
local wire = require "rmcp.launcher.wire"
local child_mod = require "rmcp.launcher.child"
local uv = require "luv"

local after, cancel_timer = child_mod.after, child_mod.cancel_timer

local M = {}

-- The error code of a request that cannot be answered because its server went away.
M.RESTARTED = -32000

-- Tunables: REASONIX_MCP_LAUNCHER_<NAME> overrides each.
M.defaults = {
  max_crashes = 5,         -- quick crashes in a row before giving up
  quick_ms = 10000,        -- a server that dies sooner than this after its start crashed "quickly"
  backoff_ms = 250,        -- delay before the 2nd restart in a row; doubles after that (max 5 s)
  start_timeout_ms = 15000, -- a new server must answer the replayed initialize within this
  drain_ms = 10000,        -- how long a replaced server may take to finish non-repeatable calls
  stop_grace_ms = 2000,    -- after closing a server's stdin: TERM, then KILL as long again later
}

-- How many answer fates a server is sent again when it dies (see Proxy:answer_fate), and how many
-- cancelled watches and polls wait for a late answer.
local FATES_RESENT = 32
local CANCELLED_KEPT = 64

-- The first line every server gets from us: what we do for it (answer fates).
local LAUNCHER_HELLO = '{"jsonrpc":"2.0","method":"$/rmcp/launcher","params":{"answer_fates":true}}'

-- A tunable, honouring REASONIX_MCP_LAUNCHER_<NAME>.
local function tunable(name)
  return config.limit("launcher_" .. name) or M.defaults[name]
end

local LEVELS = log.MCP_LEVELS

---@class Proxy                      between the host and its server children (methods: Proxy below)
---@field send_host fun(line: string): integer?  writes to the host: bytes still queued, nil when it cannot
---@field spawn_child fun(o: table): table?, string?  starts a server child (launcher/child.lua)
---@field on_stopping function        stop reading the host
---@field on_exit fun(code: integer)  every child is gone: exit the process
---@field on_settled function         a host request left flight
---@field children table              live children (set)
---@field n integer                   children started
---@field active table?               the ready child host requests go to
---@field candidate table?            a child being started (handshake replay in progress)
---@field last_pid integer?           the pid of the last child that took over
---@field swap_again string?          why to start another child once this start is over
---@field pending table               id_key -> host request in flight (host_request)
---@field n_pending integer           how many
---@field tokens table                id_key(progressToken) -> pending entry
---@field buffer table[]              {entry=} or {line=} waiting for a ready child, in arrival order
---@field seq integer                 host requests seen (orders the pending entries)
---@field hs table                    the handshake: init_line, initialized_line, level_line, protocol
---@field log_level string            the host's logging/setLevel, for our own notifications/message
---@field host_reqs table             id_key(host-facing id) -> {child, id_json, orig_key}: server→host requests
---@field next_host_id integer
---@field next_own_id integer
---@field streak integer              quick crashes in a row
---@field restart_timer userdata?     the backoff before the next restart
---@field stopping boolean            the host went or we give up: no new child
---@field exit_code integer?          what the process exits with
---@field finished boolean?           on_exit was called
---@field cancelled table             id_key -> watch or poll entry the host cancelled while its server had it
---@field cancelled_order string[]    their keys, oldest first (at most CANCELLED_KEPT)
---@field unflushed table             watch and poll entries whose answer waits in our queue to the host
local Proxy = {}
Proxy.__index = Proxy

-- Creates the proxy. opts: send_host(line) -> bytes still queued for the host (0: all written) or
-- nil when it cannot be written; spawn_child{n, on_line, on_exit} -> child | nil, err
-- (default: child.spawn of opts.exe); on_stopping() (stop reading the host); on_exit(code) (all
-- children are gone: exit the process); on_settled() (a host request left flight).
---@return Proxy
function M.new(opts)
  local self = setmetatable({
    send_host = opts.send_host,
    on_stopping = opts.on_stopping or function() end,
    on_exit = opts.on_exit or function() end,
    on_settled = opts.on_settled or function() end,
    spawn_child = opts.spawn_child,
    children = {},        -- live children (set)
    n = 0,                -- children started
    active = nil,         -- the ready child host requests go to
    candidate = nil,      -- a child being started (handshake replay in progress)
    pending = {},         -- id_key -> host request in flight (see host_request)
    n_pending = 0,        -- how many
    tokens = {},          -- id_key(progressToken) -> pending entry
    buffer = {},          -- {entry=} or {line=} waiting for a ready child, in arrival order
    seq = 0,
    hs = {},              -- handshake: init_line, initialized_line, level_line, protocol
    log_level = "info",   -- the host's logging/setLevel, for our own notifications/message
    host_reqs = {},       -- id_key(host-facing id) -> {child, id_json, orig_key}: server→host requests
    next_host_id = 0,
    next_own_id = 0,
    streak = 0,           -- quick crashes in a row
    stopping = false,
    cancelled = {},       -- id_key -> watch or poll entry the host cancelled while its server had it
    cancelled_order = {}, -- their keys, oldest first (at most CANCELLED_KEPT)
    unflushed = {},       -- watch and poll entries whose answer waits in our queue to the host
  }, Proxy)
  if not self.spawn_child then
    local exe = assert(opts.exe, "proxy.new: exe or spawn_child required")
    self.spawn_child = function(o)
      return child_mod.spawn{ exe = exe, n = o.n, on_line = o.on_line, on_exit = o.on_exit }
    end
  end
  return self
end

-- Starts the first server (no handshake yet: it is ready at once and sees the host's initialize).
function Proxy:start()
  self:start_candidate("start")
end

-- ---- host → server ----

-- Feeds one line from the host.
function Proxy:from_host(line)
  if self.stopping then return end
  local msg = json.decode(line)
  if type(msg) ~= "table" or msg[1] ~= nil then return self:to_server(line) end -- the server answers it
  local id = wire.normalize_id(msg.id)
  -- an object, array or fractional id cannot be routed: the server answers it with id null
  if id ~= nil and type(id) ~= "string" and math.type(id) ~= "integer" then return self:to_server(line) end
  if msg.method ~= nil then
    if id ~= nil then return self:host_request(line, msg, id) end
    return self:host_notification(line, msg)
  end
  if id ~= nil then return self:host_response(line, id) end
  return self:to_server(line)
end

-- Answers a host line that was over the size limit and dropped unread (as the server would).
function Proxy:host_oversize(nbytes, limit)
  log.warn("dropped a %d-byte message from the host (limit %d)", nbytes, limit)
  self.send_host(wire.error_response(nil, -32600,
    string.format("Invalid Request: message of %d bytes exceeds the %d-byte limit", nbytes, limit)))
end

-- Sends a line that is not tied to a request to the active server, or keeps it for the next one.
function Proxy:to_server(line)
  if self.active then
    self.active:send(line)
  else
    self.buffer[#self.buffer + 1] = { line = line }
  end
end

-- Records a host request and sends it on (or buffers it while no server is ready).
function Proxy:host_request(line, msg, id)
  local params = type(msg.params) == "table" and msg.params or {}
  self.seq = self.seq + 1
  local entry = {
    key = jsonrpc.id_key(id), id = id, line = line, method = msg.method, seq = self.seq,
    repeatable = wire.repeatable(msg.method, params), label = wire.label(msg.method, params),
    kept = msg.method == "tools/call" and wire.KEPT_ANSWER_TOOLS[params.name] == true,
    level = msg.method == "logging/setLevel" and params.level or nil,
  }
  local meta = type(params._meta) == "table" and params._meta or nil
  if entry.kept then
    entry.thread = meta and type(meta.threadId) == "string" and meta.threadId or nil
    self:forget_fates(entry.key)
  end
  local token = meta and jsonrpc.id_key(meta.progressToken)
  if token then
    entry.token = token
    self.tokens[token] = entry
  end
  if self.pending[entry.key] then
    log.warn("the host reused request id %s while it was in flight; following the newer request", tostring(id))
  else
    self.n_pending = self.n_pending + 1
  end
  self.pending[entry.key] = entry
  self:dispatch(entry)
end

-- Sends a recorded request to the active server, or queues it for the next ready one.
function Proxy:dispatch(entry)
  if self.active then
    entry.owner = self.active
    self.active:send(entry.line)
  else
    entry.owner = nil
    self.buffer[#self.buffer + 1] = { entry = entry }
  end
end

-- Handles a host notification: records notifications/initialized, routes cancellations; `$/rmcp/*`
-- is the launcher's and its servers' own and never comes from the host.
function Proxy:host_notification(line, msg)
  local params = type(msg.params) == "table" and msg.params or {}
  if type(msg.method) == "string" and msg.method:sub(1, 7) == "$/rmcp/" then
    log.warn("dropped %s from the host: private to the launcher and its servers", msg.method)
    return
  elseif msg.method == "notifications/initialized" then
    self.hs.initialized_line = line
  elseif msg.method == "notifications/cancelled" then
    local entry = self.pending[jsonrpc.id_key(params.requestId)]
    if entry then
      if entry.owner then
        entry.owner:send(line)
        if entry.kept then self:remember_cancelled(entry) end
      end
      self:settle(entry)
      return -- a buffered request is simply never sent
    end
  end
  self:to_server(line)
end

-- Routes the host's answer to a server→host request back to the server that asked, with its own id.
function Proxy:host_response(line, id)
  local key = jsonrpc.id_key(id)
  local r = self.host_reqs[key]
  if not r then
    log.info("dropped the host's answer to request %s: no server is waiting for it", tostring(id))
    return
  end
  self.host_reqs[key] = nil
  r.child.server_reqs[r.orig_key] = nil
  if r.child.exited or r.child.stdin_closed then
    log.info("dropped the host's answer to request %s: server pid %d that asked is gone", tostring(id), r.child.pid)
    return
  end
  local out = wire.replace_id(line, r.id_json)
  if out then r.child:send(out) end
end

-- ---- server → host ----

-- Notifications of a server the launcher must look into; every other one passes through unread.
local INSPECTED = { ["notifications/progress"] = true, ["notifications/cancelled"] = true }

-- Feeds one line from a server child. The server writes id-first envelopes, so answers and plain
-- notifications are routed by their prefix (jsonrpc.envelope) without decoding the line: a 20 KB
-- tools/list answer costs a few string compares. Other lines are decoded.
function Proxy:from_child(child, line)
  local kind, raw_id, at = jsonrpc.envelope(line)
  if kind == "result" or kind == "error" then
    -- an integer id (what hosts send) is read off the text; anything else is decoded
    local id = math.tointeger(raw_id) or (raw_id ~= "null" and wire.normalize_id(json.decode(raw_id))) or nil
    return self:child_response(child, line, id, kind)
  elseif kind == "notification" then
    local method = line:match('^"([^"\\]*)"', at)
    if method and not INSPECTED[method] and method:sub(1, 7) ~= "$/rmcp/" then
      if child == self.active then self.send_host(line) end
      return
    end
  end
  local msg = json.decode(line)
  if type(msg) ~= "table" or msg[1] ~= nil then
    log.warn("server pid %d wrote a line that is not a JSON-RPC object; dropped: %s", child.pid, line:sub(1, 200))
    return
  end
  local id = wire.normalize_id(msg.id)
  if msg.method ~= nil then
    if id ~= nil then return self:child_request(child, line, id) end
    return self:child_notification(child, line, msg)
  end
  return self:child_response(child, line, id, msg.error ~= nil and "error" or "result")
end

-- Routes a server's answer (kind "result" or "error") to request id back to the host.
function Proxy:child_response(child, line, id, kind)
  if id == nil then
    -- an error about a host line the server could not read: it is the host's
    if child == self.active then self.send_host(line) end
    return
  end
  if type(id) == "string" and child.own[id] then
    local cb = child.own[id]
    child.own[id] = nil
    return cb(json.decode(line) or {})
  end
  local key = jsonrpc.id_key(id)
  local entry = self.pending[key]
  if not entry then
    local cancelled = self.cancelled[key]
    if cancelled and cancelled.owner == child and kind == "result" then
      -- the host cancelled this call before its answer came: what it carried did not reach the host
      self.cancelled[key] = nil
      self:answer_fate(cancelled, false)
    end
    log.debug("dropped an answer to %s from server pid %d: not in flight any more", tostring(id), child.pid)
    return
  end
  if child == entry.owner then
    self:settle(entry, kind == "result" and line or nil)
    self:relay_answer(entry, line, kind)
  elseif child == entry.prev and not wire.superseded(json.decode(line)) then
    -- the replaced server answered before it saw our cancel: that answer is real (a watch result
    -- it already took from agentd); the copy on the new server is cancelled
    self:settle(entry, kind == "result" and line or nil)
    self:relay_answer(entry, line, kind)
    if entry.owner then entry.owner:send(wire.cancel_line(entry.id, "answered by the previous server")) end
  else
    log.debug("dropped an answer to %s from server pid %d: the request moved to another server", tostring(id), child.pid)
  end
end

-- Forwards a server→host request (elicitation/create, …) under a host-facing id of ours, so the
-- ids of two servers never collide and an answer reaches the server that asked.
function Proxy:child_request(child, line, id)
  self.next_host_id = self.next_host_id + 1
  local hid = self.next_host_id
  local raw = wire.raw_id(line)
  if not raw then
    log.warn("server pid %d sent a request whose id cannot be located; dropped", child.pid)
    return
  end
  self.host_reqs[jsonrpc.id_key(hid)] = { child = child, id_json = raw, orig_key = jsonrpc.id_key(id) }
  child.server_reqs[jsonrpc.id_key(id)] = hid
  self.send_host(wire.replace_id(line, tostring(hid)))
end

-- Handles a server notification: $/rmcp/* are ours; progress goes only for requests that server
-- owns; a cancel of its own request is renamed; the rest is forwarded from the active server.
function Proxy:child_notification(child, line, msg)
  local method = msg.method
  local params = type(msg.params) == "table" and msg.params or {}
  if type(method) == "string" and method:sub(1, 7) == "$/rmcp/" then return self:private(child, method, params) end
  if method == "notifications/progress" then
    local entry = self.tokens[jsonrpc.id_key(params.progressToken)]
    if entry and entry.owner == child then self.send_host(line) end
    return
  end
  if method == "notifications/cancelled" then
    local okey = jsonrpc.id_key(params.requestId)
    local hid = okey and child.server_reqs[okey]
    if hid then
      child.server_reqs[okey] = nil
      self.host_reqs[jsonrpc.id_key(hid)] = nil
      self.send_host(wire.cancel_line(hid, type(params.reason) == "string" and params.reason or nil))
    end
    return
  end
  if child == self.active then self.send_host(line) end
end

-- Private server → launcher messages (never forwarded to the host).
function Proxy:private(child, method, params)
  if method == "$/rmcp/restart" then
    if child ~= self.active then
      log.info("ignored a restart request from server pid %d: it is not the active server", child.pid)
      return
    end
    local why = type(params.reason) == "string" and params.reason or "the server asked for it"
    return self:swap("requested by the server (" .. why .. ")")
  end
  log.debug("ignored unknown private message %s from server pid %d", method, child.pid)
end

-- ---- what became of watch and poll answers ----

-- Says what became of the answer to a watch or poll entry: written to the host (delivered), or
-- dropped because the host had cancelled the request. agentd keeps each such answer until it hears
-- this, and gives a lost one again (agentd/kept.lua). It goes out right behind the answer (a
-- launcher killed in between makes agentd give the answer twice; the window is two writes wide).
function Proxy:answer_fate(entry, delivered)
  local line = json.encode({ jsonrpc = "2.0", method = "$/rmcp/answered",
                             params = { id = entry.id, delivered = delivered, thread_id = entry.thread } })
  self:send_fate({ key = entry.key, line = line })
end

-- Writes a server's answer (kind "result" or "error") to entry to the host. A watch or poll result
-- is delivered once the host's pipe took all of it: at once, or when our queue to the host is
-- flushed (a launcher killed with it still queued would lose what agentd let go); one that cannot
-- be written at all is not.
function Proxy:relay_answer(entry, line, kind)
  local queued = self.send_host(line)
  if not (entry.kept and kind == "result") then return end
  if queued == nil then return self:answer_fate(entry, false) end
  if queued == 0 then return self:answer_fate(entry, true) end
  self.unflushed[#self.unflushed + 1] = entry
end

-- The host's pipe took everything we queued for it: the answers waiting in the queue are delivered.
function Proxy:host_flushed()
  local waiting = self.unflushed
  self.unflushed = {}
  for _, entry in ipairs(waiting) do self:answer_fate(entry, true) end
end

-- Writes fate f {key, line} to the active server, whichever server answered: the host's next
-- request goes there too, after it. With none ready it waits for the next one, ahead of the
-- requests sent again. The last FATES_RESENT a server was sent go again the same way when it dies:
-- it may not have passed them on.
function Proxy:send_fate(f)
  local child = self.active
  if not child or child.exited or child.stdin_closed then
    self.buffer[#self.buffer + 1] = { fate = f }
    return
  end
  child:send(f.line)
  local sent = child.fates_sent or {}
  child.fates_sent = sent
  sent[#sent + 1] = f
  if #sent > FATES_RESENT then table.remove(sent, 1) end
end

-- Drops the fates of host request key sent to servers, waiting for one, or waiting for our queue
-- to the host to flush (the host sends the id again: an old fate must not confirm the new request's
-- answer).
function Proxy:forget_fates(key)
  local function drop(list, fate_of)
    for i = #list, 1, -1 do
      local f = fate_of(list[i])
      if f and f.key == key then table.remove(list, i) end
    end
  end
  for c in pairs(self.children) do drop(c.fates_sent or {}, function(f) return f end) end
  drop(self.buffer, function(item) return item.fate end)
  drop(self.unflushed, function(entry) return entry end)
end

-- Remembers a watch or poll the host cancelled while its server had it, so a late answer is reported
-- dropped.
function Proxy:remember_cancelled(entry)
  self.cancelled[entry.key] = entry
  local order = self.cancelled_order
  order[#order + 1] = entry.key
  if #order > CANCELLED_KEPT then
    self.cancelled[table.remove(order, 1)] = nil -- its server never answered it
  end
end

-- ---- requests in flight ----

-- Forgets a host request (answered or cancelled); records the handshake from its successful answer
-- (result_line, undecoded: only initialize's is read); lets a draining server stop once its last
-- request is done.
function Proxy:settle(entry, result_line)
  if self.pending[entry.key] == entry then
    self.pending[entry.key] = nil
    self.n_pending = self.n_pending - 1
    self.on_settled()
  end
  if entry.token and self.tokens[entry.token] == entry then self.tokens[entry.token] = nil end
  entry.done = true
  if result_line then
    if entry.method == "initialize" then
      local msg = json.decode(result_line)
      self.hs.init_line = entry.line
      self.hs.protocol = type(msg) == "table" and type(msg.result) == "table" and msg.result.protocolVersion or nil
      log.info("recorded the host's MCP handshake (protocol %s)", tostring(self.hs.protocol))
    elseif entry.method == "logging/setLevel" then
      self.hs.level_line = entry.line
      if type(entry.level) == "string" and LEVELS[entry.level] then self.log_level = entry.level end
    end
  end
  for _, c in ipairs({ entry.owner, entry.prev }) do
    if c and c.retiring and not c.stdin_closed and self:owned(c) == 0 then self:close_child(c, "drained") end
  end
end

-- Number of host requests in flight.
function Proxy:in_flight()
  return self.n_pending
end

-- Number of in-flight host requests a child owns.
function Proxy:owned(child)
  local n = 0
  for _, e in pairs(self.pending) do
    if e.owner == child then n = n + 1 end
  end
  return n
end

-- Answers a request that will get no answer from a server with a JSON-RPC error.
function Proxy:fail(entry, message, data)
  if entry.done then return end
  self:settle(entry)
  log.warn("answered %s (request %s) with an error: %s", entry.label, tostring(entry.id), message)
  self.send_host(wire.error_response(entry.id, M.RESTARTED, message, data))
end

-- The error text for a call lost to a restart.
local function restart_message(entry, why)
  return string.format("%s: the MCP server restarted while this call was in flight (%s); check reasonix_list/"
    .. "reasonix_poll before retrying (the call may or may not have taken effect)", entry.label, why)
end

-- Sends our own notifications/message to the host when its level allows (after the handshake).
function Proxy:tell_host(level, text, event)
  if not self.hs.init_line or self.stopping then return end
  if (LEVELS[level] or 2) < (LEVELS[self.log_level] or 2) then return end
  self.send_host(json.encode({ jsonrpc = "2.0", method = "notifications/message",
    params = { level = level, logger = "reasonix-mcp-launcher", data = { text = text, event = event } } }))
end

-- ---- children ----

-- Starts a server child as the candidate; it replays the handshake, then takes over (promote).
function Proxy:start_candidate(reason)
  if self.stopping then return end
  self.n = self.n + 1
  local n = self.n
  local child, err = self.spawn_child{
    n = n,
    on_line = function(c, line) self:from_child(c, line) end,
    on_exit = function(c, code, signal) self:child_exited(c, code, signal) end,
  }
  if not child then
    log.error("cannot start the MCP server (%s): %s", reason, tostring(err))
    return self:candidate_failed({ n = n, started = uv.now(), failed = tostring(err) }, reason)
  end
  child.reason = reason
  child:send(LAUNCHER_HELLO)
  self.children[child] = true
  self.candidate = child
  log.info("started MCP server pid %d (%s)", child.pid, reason)
  if not self.hs.init_line then return self:promote(child) end
  self:replay(child)
end

-- Sends a launcher request to a child; on_answer(msg) gets its response.
function Proxy:own_request(child, line, on_answer)
  self.next_own_id = self.next_own_id + 1
  local id = "rmcp-launcher-" .. self.next_own_id
  child.own[id] = on_answer
  child:send(wire.replace_id(line, json.encode(id)))
end

-- Replays the recorded handshake into a new child; it takes over once initialize is answered.
function Proxy:replay(child)
  child.timers.start = after(tunable("start_timeout_ms"), function()
    child.timers.start = nil
    if child.ready or child.exited then return end
    child.failed = "no answer to the replayed initialize"
    child:kill("KILL")
  end)
  self:own_request(child, self.hs.init_line, function(msg)
    cancel_timer(child.timers.start)
    child.timers.start = nil
    if child.exited then return end
    if msg.error ~= nil or type(msg.result) ~= "table" then
      child.failed = "the replayed initialize failed: " .. tostring(type(msg.error) == "table" and msg.error.message or msg.error)
      return child:stop(tunable("stop_grace_ms"))
    end
    if msg.result.protocolVersion ~= self.hs.protocol then
      log.warn("server pid %d negotiated protocol %s, the host agreed on %s", child.pid,
        tostring(msg.result.protocolVersion), tostring(self.hs.protocol))
    end
    if self.hs.initialized_line then child:send(self.hs.initialized_line) end
    if self.hs.level_line then self:own_request(child, self.hs.level_line, function() end) end
    self:promote(child)
  end)
end

-- Makes a ready candidate the active server: repeatable requests of the old one move to it,
-- buffered lines go out, the old one drains and stops.
function Proxy:promote(child)
  child.ready = true
  if child ~= self.candidate or self.stopping then return end
  self.candidate = nil
  local old = self.active
  self.active = child
  if old then
    local moved = {}
    for _, e in pairs(self.pending) do
      if e.owner == old and e.repeatable then moved[#moved + 1] = e end
    end
    table.sort(moved, function(a, b) return a.seq < b.seq end)
    for _, e in ipairs(moved) do
      old:send(wire.cancel_line(e.id, "moved to a new MCP server"))
      e.prev, e.owner = old, child
      child:send(e.line)
    end
    log.info("replaced MCP server pid %d with pid %d (%s); %d request(s) moved", old.pid, child.pid,
      child.reason, #moved)
    self:tell_host("info", string.format("reasonix-mcp: MCP server restarted (%s); pid %d -> %d",
      child.reason, old.pid, child.pid),
      { event = "mcp_server_restarted", reason = child.reason, old_pid = old.pid, new_pid = child.pid })
    self:retire(old)
  else
    if self.hs.init_line then
      log.info("MCP server pid %d took over (%s)", child.pid, child.reason)
      self:tell_host("info", string.format("reasonix-mcp: MCP server restarted (%s); new pid %d", child.reason, child.pid),
        { event = "mcp_server_restarted", reason = child.reason, old_pid = self.last_pid, new_pid = child.pid })
    end
  end
  self.last_pid = child.pid
  local buffered = self.buffer
  self.buffer = {}
  for _, item in ipairs(buffered) do
    if item.entry then
      if not item.entry.done then self:dispatch(item.entry) end
    elseif item.fate then
      self:send_fate(item.fate)
    else
      child:send(item.line)
    end
  end
  if self.swap_again then
    local again = self.swap_again
    self.swap_again = nil
    self:swap(again)
  end
end

-- Starts a graceful replacement of the active server (binary changed, restart requested).
function Proxy:swap(reason)
  if self.stopping then return end
  if self.candidate then
    self.swap_again = reason -- once this start is over, start another: the binary moved on
    return
  end
  if not self.active then return end -- a restart after a crash is on its way; it runs the new binary
  log.info("replacing MCP server pid %d: %s", self.active.pid, reason)
  self:start_candidate(reason)
end

-- Lets a replaced server finish what it owns (bounded by drain_ms), then stops it.
function Proxy:retire(old)
  old.retiring = true
  if self:owned(old) == 0 then return self:close_child(old, "replaced") end
  old.timers.drain = after(tunable("drain_ms"), function()
    old.timers.drain = nil
    for _, e in pairs(self.pending) do
      if e.owner == old then self:fail(e, restart_message(e, "the old server did not finish it in time")) end
    end
    self:close_child(old, "drain time over")
  end)
end

-- Closes a child's stdin (it exits on EOF; TERM/KILL follow if it does not) and withdraws its
-- open requests to the host.
function Proxy:close_child(child, why)
  if child.stdin_closed or child.exited then return end
  log.debug("stopping server pid %d (%s)", child.pid, why)
  self:withdraw(child, "the MCP server that asked was replaced")
  child:stop(tunable("stop_grace_ms"))
end

-- Cancels at the host every request a child sent it that is still open.
function Proxy:withdraw(child, reason)
  for okey, hid in pairs(child.server_reqs) do
    child.server_reqs[okey] = nil
    self.host_reqs[jsonrpc.id_key(hid)] = nil
    self.send_host(wire.cancel_line(hid, reason))
  end
end

-- A child exited: clean up its requests; restart after a crash of the active server.
function Proxy:child_exited(child, code, signal)
  self.children[child] = nil
  self:withdraw(child, "the MCP server that asked exited")
  local fates = child.fates_sent or {} -- it may have died before passing them on
  child.fates_sent = nil
  for _, e in pairs(self.pending) do
    if e.prev == child then e.prev = nil end
  end
  local how = child:describe_exit()
  local was_active, was_candidate = child == self.active, child == self.candidate
  if was_active then self.active = nil end
  if was_candidate then self.candidate = nil end

  if self.stopping then
    for _, e in pairs(self.pending) do
      if e.owner == child then self:fail(e, e.label .. ": the MCP server stopped before answering (the launcher is shutting down)") end
    end
    log.info("server pid %d exited (%s)", child.pid, how)
    return self:maybe_finish()
  end

  if was_active then
    log.warn("MCP server pid %d exited unexpectedly (%s)", child.pid, how)
    local moved = {}
    for _, e in pairs(self.pending) do
      if e.owner == child then
        e.owner = nil
        if e.repeatable then
          moved[#moved + 1] = e
        else
          self:fail(e, restart_message(e, "it exited: " .. how), { reason = "mcp_server_restarted" })
        end
      end
    end
    table.sort(moved, function(a, b) return a.seq < b.seq end)
    local buffer = {}
    for _, f in ipairs(fates) do buffer[#buffer + 1] = { fate = f } end
    for _, e in ipairs(moved) do buffer[#buffer + 1] = { entry = e } end
    for _, item in ipairs(self.buffer) do buffer[#buffer + 1] = item end
    self.buffer = buffer
    if #moved > 0 then log.info("%d request(s) will be sent again to the next server", #moved) end
    self.last_pid = child.pid
    if self.candidate then return end -- a swap already under way takes over
    return self:crashed(child, "server pid " .. child.pid .. " exited: " .. how)
  end

  if was_candidate then
    return self:candidate_failed(child, child.reason)
  end
  for _, f in ipairs(fates) do self:send_fate(f) end

  -- a retiring server: whatever it still owned is lost
  for _, e in pairs(self.pending) do
    if e.owner == child then self:fail(e, restart_message(e, "the replaced server exited: " .. how)) end
  end
  log.info("replaced server pid %d exited (%s)", child.pid, how)
end

-- A candidate did not come up: keep the old server when there is one, else count a crash.
function Proxy:candidate_failed(child, reason)
  local why = child.failed or (child.exited and child:describe_exit()) or "failed"
  if self.active then
    log.error("the new MCP server%s did not start (%s): %s; pid %d keeps serving", child.pid and (" pid " .. child.pid) or "",
      reason, why, self.active.pid)
    self:tell_host("warning", string.format("reasonix-mcp: could not start a new MCP server (%s): %s; the running one keeps serving",
      reason, why), { event = "mcp_server_swap_failed", reason = reason, error = why })
    if self.swap_again then
      local again = self.swap_again
      self.swap_again = nil
      self:swap(again)
    end
    return
  end
  return self:crashed(child, "the new server " .. (child.pid and ("pid " .. child.pid .. " ") or "") .. "failed: " .. why)
end

-- Counts a crash of the serving side and restarts with backoff, or gives up after a run of them.
function Proxy:crashed(child, why)
  local lived = uv.now() - (child.started or uv.now())
  if lived < tunable("quick_ms") then self.streak = self.streak + 1 else self.streak = 1 end
  local max = tunable("max_crashes")
  if self.streak >= max then return self:give_up(why) end
  local delay = 0
  if self.streak > 1 then delay = math.min(tunable("backoff_ms") * 2 ^ (self.streak - 2), 5000) // 1 end
  log.warn("restarting the MCP server in %d ms (%s; %d quick crash(es) in a row, giving up at %d)", delay, why,
    self.streak, max)
  cancel_timer(self.restart_timer)
  self.restart_timer = after(delay, function()
    self.restart_timer = nil
    self:start_candidate("restart after a crash: " .. why)
  end)
end

-- Stops trying: every request in flight gets an error, the host is told, the launcher exits.
function Proxy:give_up(why)
  local text = string.format("the MCP server keeps exiting (%d times in a row within %d s of starting; last: %s); "
    .. "the launcher gives up — check the server's stderr in the host's MCP log, run `reasonix-mcp doctor`, "
    .. "then restart the MCP server from the host", self.streak, tunable("quick_ms") // 1000, why)
  log.error("%s", text)
  self:tell_host("error", "reasonix-mcp: " .. text, { event = "mcp_server_gave_up", error = why })
  for _, e in pairs(self.pending) do self:fail(e, e.label .. ": " .. text, { reason = "mcp_server_gave_up" }) end
  self.buffer = {}
  self:stop(1, "gave up restarting the server")
end

-- Shuts down: no more host input, every child stopped; on_exit(code) once all have exited.
function Proxy:stop(code, why)
  if self.stopping then return end
  self.stopping = true
  self.exit_code = self.exit_code or code
  log.info("launcher stopping: %s", why)
  cancel_timer(self.restart_timer)
  self.on_stopping()
  for _, item in ipairs(self.buffer) do
    if item.entry then self:fail(item.entry, item.entry.label .. ": the MCP server is shutting down") end
  end
  self.buffer = {}
  for c in pairs(self.children) do
    self:withdraw(c, "the MCP server is shutting down")
    c:stop(tunable("stop_grace_ms"))
  end
  self:maybe_finish()
end

-- Calls on_exit once stopping and no child is left.
function Proxy:maybe_finish()
  if not self.stopping or self.finished or next(self.children) ~= nil then return end
  self.finished = true
  self.on_exit(self.exit_code or 0)
end

-- The server children alive now (for tests and logs): active, candidate and retiring.
function Proxy:pids()
  local out = {}
  for c in pairs(self.children) do out[#out + 1] = c.pid end
  table.sort(out)
  return out
end

return M
