-- The launcher's router: every line between the host and the servers goes through it. Host requests
-- go to the active server (the ledger records them), other host lines too; a server's answers go to
-- the host by the ledger's word, its own notifications from the active server only, progress only
-- from the server that owns the request (progress ownership), and its requests to the host under
-- launcher ids (ids), so two servers never collide. `$/rmcp/*` is private between the launcher and
-- its servers: never taken from the host, never forwarded to it.
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local log = require "rmcp.lib.log"
local wire = require "rmcp.launcher.wire"

local M = {}

---@class LauncherHostRequest         a server's request to the host, under a launcher id
---@field child LauncherChild          the server that asked
---@field id_json string               its own id, as it wrote it
---@field orig_key any                 jsonrpc.id_key of that id

---@class LauncherRouter
---@field send_host fun(line: string): integer?
---@field ledger LauncherLedger
---@field supervisor LauncherSupervisor
---@field tokens table<any, LauncherRequest> id_key(progressToken) -> the host request it belongs to (of
---                                   the requests Lua relayed; the lane keeps its own: ledger lane_token)
---@field host_reqs table<any, LauncherHostRequest> id_key(host-facing id) -> a server's request to the host
---@field next_host_id integer        the last host-facing id given
local Router = {}
Router.__index = Router

-- Creates the router. opts: send_host, ledger, supervisor.
---@return LauncherRouter
function M.new(opts)
  return setmetatable({
    send_host = opts.send_host, ledger = opts.ledger, supervisor = opts.supervisor,
    tokens = {}, host_reqs = {}, next_host_id = 0,
  }, Router)
end

-- ---- host → server ----

-- Feeds one line from the host.
function Router:from_host(line)
  if self.supervisor.stopping then return end
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
function Router:host_oversize(nbytes, limit)
  log.warn("dropped a %d-byte message from the host (limit %d)", nbytes, limit)
  self.send_host(wire.error_response(nil, -32600,
    string.format("Invalid Request: message of %d bytes exceeds the %d-byte limit", nbytes, limit)))
end

-- Sends a line that is not tied to a request to the active server, or keeps it for the next one.
function Router:to_server(line)
  local active = self.supervisor.active
  if active then
    active:send(line)
  else
    self.ledger:hold(line)
  end
end

-- Records a host request in the ledger, which sends it on (or keeps it while no server is ready).
function Router:host_request(line, msg, id)
  self.ledger:record(self:entry(line, msg, id), self.supervisor.active)
end

-- The ledger entry of a host request line the lane relayed (ledger.lua take_lane), or nil when the
-- line is not a JSON object (the server answered it with a parse error: nothing to own).
function Router:adopt(line)
  local msg = json.decode(line)
  if type(msg) ~= "table" then return nil end
  return self:entry(line, msg, wire.normalize_id(msg.id))
end

-- The ledger entry of host request line (msg decoded, id normalized); its progress token is
-- noted for the progress it gets.
function Router:entry(line, msg, id)
  local params = type(msg.params) == "table" and msg.params or {}
  local meta = type(params._meta) == "table" and params._meta or nil
  local entry = {
    key = jsonrpc.id_key(id), id = id, line = line, method = msg.method,
    repeatable = wire.repeatable(msg.method, params), label = wire.label(msg.method, params),
    receipt = msg.method == "tools/call" and wire.RECEIPT_TOOLS[params.name] == true,
    level = msg.method == "logging/setLevel" and params.level or nil,
  }
  if entry.receipt then entry.thread = meta and type(meta.threadId) == "string" and meta.threadId or nil end
  local token = meta and jsonrpc.id_key(meta.progressToken)
  if token then
    entry.token = token
    self.tokens[token] = entry
  end
  return entry
end

-- Handles a host notification: records notifications/initialized, routes cancellations; `$/rmcp/*`
-- is the launcher's and its servers' own and never comes from the host.
function Router:host_notification(line, msg)
  local params = type(msg.params) == "table" and msg.params or {}
  if type(msg.method) == "string" and msg.method:sub(1, 7) == "$/rmcp/" then
    log.warn("dropped %s from the host: private to the launcher and its servers", msg.method)
    return
  elseif msg.method == "notifications/initialized" then
    self.supervisor:record_initialized(line)
  elseif msg.method == "notifications/cancelled" then
    local entry = self.ledger:get(jsonrpc.id_key(params.requestId))
    if entry then return self.ledger:cancel(entry, line) end
  end
  self:to_server(line)
end

-- Routes the host's answer to a server→host request back to the server that asked, with its own id.
function Router:host_response(line, id)
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

-- A host request left flight: its progress token goes with it.
function Router:forget_token(entry)
  if entry.token and self.tokens[entry.token] == entry then self.tokens[entry.token] = nil end
end

-- ---- server → host ----

-- Notifications of a server the launcher must look into; every other one passes through unread.
local INSPECTED = { ["notifications/progress"] = true, ["notifications/cancelled"] = true }

-- Feeds one line from a server child. The server writes id-first envelopes, so answers and plain
-- notifications are routed by their prefix (jsonrpc.envelope) without decoding the line: a 20 KB
-- tools/list answer costs a few string compares. Other lines are decoded.
function Router:from_child(child, line)
  local kind, raw_id, at = jsonrpc.envelope(line)
  if kind == "result" or kind == "error" then
    -- an integer id (what hosts send) is read off the text; anything else is decoded
    local id = math.tointeger(raw_id) or (raw_id ~= "null" and wire.normalize_id(json.decode(raw_id))) or nil
    return self:child_response(child, line, id, kind)
  elseif kind == "notification" then
    local method = line:match('^"([^"\\]*)"', at)
    if method and not INSPECTED[method] and method:sub(1, 7) ~= "$/rmcp/" then
      if child == self.supervisor.active then self.send_host(line) end
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

-- Routes a server's answer (kind "result" or "error") to request id: ours (the handshake replay),
-- a host request's (the ledger decides whether it counts), or about a line it could not read.
function Router:child_response(child, line, id, kind)
  if id == nil then
    -- an error about a host line the server could not read: it is the host's
    if child == self.supervisor.active then self.send_host(line) end
    return
  end
  if type(id) == "string" and self.supervisor:own_answer(child, id, line) then return end
  self.ledger:answered(child, id, line, kind)
end

-- Forwards a server→host request (elicitation/create, …) under a host-facing id of ours, so the
-- ids of two servers never collide and an answer reaches the server that asked.
function Router:child_request(child, line, id)
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
function Router:child_notification(child, line, msg)
  local method = msg.method
  local params = type(msg.params) == "table" and msg.params or {}
  if type(method) == "string" and method:sub(1, 7) == "$/rmcp/" then return self:private(child, method, params) end
  if method == "notifications/progress" then
    local entry = self.tokens[jsonrpc.id_key(params.progressToken)]
    if (entry and entry.owner == child) or self.ledger:lane_token(child, params.progressToken) then
      self.send_host(line)
    end
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
  if child == self.supervisor.active then self.send_host(line) end
end

-- Private server → launcher messages (never forwarded to the host).
function Router:private(child, method, params)
  if method == "$/rmcp/restart" then
    return self.supervisor:restart_asked(child, type(params.reason) == "string" and params.reason or nil)
  end
  log.debug("ignored unknown private message %s from server pid %d", method, child.pid)
end

-- Cancels at the host every request a child sent it that is still open.
function Router:withdraw(child, reason)
  for okey, hid in pairs(child.server_reqs) do
    child.server_reqs[okey] = nil
    self.host_reqs[jsonrpc.id_key(hid)] = nil
    self.send_host(wire.cancel_line(hid, reason))
  end
end

return M
