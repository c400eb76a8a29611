-- Client of the agentd socket, for everyone but agentd (the MCP server, ctl, doctor, tests; agentd uses
-- only spawn_daemon, to start its successor): connects (starting agentd detached when nobody answers,
-- safe against concurrent starters: the daemon's lock decides), says
-- hello, sends requests, receives notifications, and reconnects transparently after agentd restarts.
local uv = require "luv"
local sock = require "rmcp.sock"
local channel = require "rmcp.channel"
local proc = require "rmcp.proc"
local jsonrpc = require "rmcp.lib.jsonrpc"
local async = require "rmcp.lib.async"
local log = require "rmcp.lib.log"
local config = require "rmcp.config"
local flow = require "rmcp.lib.flow"

local M = {}

M.PROTOCOL = 1

-- Methods that may be re-sent after the connection dropped before their answer (no side effects
-- beyond what a repeat does anyway).
M.retry_safe = { list = true, models = true, transcript = true, watch = true, wait = true, poll = true }

-- The notification agentd sends before a handover closes a connection whose requests it answered
-- (watches and waits aside): any request of that connection still without an answer was never
-- read, so it goes again, whatever its method, on the next connection.
M.GOODBYE = "goodbye"

local Client = {}
Client.__index = Client

-- Creates a client (not connected yet). opts: home, orchestrator_id, project_dir, client_info
-- {name, version}, observer (the dashboard's read-everything connection), autostart (default
-- true), start_timeout_ms (5000), exe (reasonix-mcp binary),
-- env (the environment map its agents run with; default this process's),
-- on_notification(method, params), on_disconnect(reason), on_drop() (the connection is about to be
-- forgotten, its requests not failed yet), on_connect(), read_gate (a lib/flow gate
-- each connection's reading joins: paused while whoever takes its answers is behind), on_drain()
-- (what we wrote agentd fell back under the high-water mark).
function M.new(opts)
  opts = opts or {}
  local home = opts.home or config.home()
  return setmetatable({
    opts = opts,
    paths = config.paths(home),
    autostart = opts.autostart ~= false,
    orchestrator_id = opts.orchestrator_id or config.env("REASONIX_MCP_ORCHESTRATOR_ID") or "cli",
    project_dir = opts.project_dir,
    waiters = {}, queue = {}, inflight = {}, next_id = 0,
    goodbye = setmetatable({}, { __mode = "k" }), -- the connections (peers) agentd said goodbye on
    closed = false,
  }, Client)
end

-- Makes a client and starts connecting in the background (usable outside coroutines); requests
-- wait for the connection. Use c:wait_connected() to see a connect failure at once.
function M.connect(opts)
  local c = M.new(opts)
  c:ensure_connecting()
  return c
end

-- Rotates the daemon log before a start when it is over the size bound.
local function rotate_log(path)
  local st = uv.fs_stat(path)
  if st and st.size > config.limit("log_max_bytes") then os.rename(path, path .. ".1") end
end

-- Starts `reasonix-mcp agentd` detached: new session, no terminal, stdio to the log.
function Client:spawn_daemon()
  local ok, err = sock.secure_dir(self.paths.home)
  if not ok then return nil, err end
  rotate_log(self.paths.log)
  local env = {}
  for k, v in pairs(uv.os_environ()) do
    if k ~= "REASONIX_MCP_HOME" then env[#env + 1] = k .. "=" .. v end
  end
  env[#env + 1] = "REASONIX_MCP_HOME=" .. self.paths.home
  local exe = self.opts.exe or require("rmcp.host").invoked
  local p, serr = proc.spawn({
    file = exe, args = { "agentd" }, cwd = "/", env = env,
    setsid = true, pdeathsig = false, stdin = "null",
    stdout = { file = self.paths.log, append = true }, stderr = "stdout",
  })
  if not p then return nil, serr end
  log.debug("started agentd pid %d", p:pid())
  p:close() -- the daemon outlives us: do not keep our loop alive for it
  return true
end

-- Opens the socket, starting the daemon when allowed; returns fd or nil, message (coroutine).
function Client:open_socket()
  local fd, err = sock.connect(self.paths.sock)
  if fd or not self.autostart then return fd, err end
  local deadline = uv.now() + (self.opts.start_timeout_ms or 5000)
  -- after a goodbye the daemon's successor (its new image, or the daemon it starts) listens soon:
  -- connecting is tried for a start interval before another daemon is started for nothing
  local last_spawn, delay, spawn_err = self.successor_due and uv.now() or nil, 10, nil
  self.successor_due = nil
  while not fd do
    uv.update_time()
    if not last_spawn or uv.now() - last_spawn >= 1000 then
      -- (Re)start: a daemon that lost the lock race exits at once; the winner answers soon.
      local ok, e = self:spawn_daemon()
      if not ok then spawn_err = e end
      last_spawn = uv.now()
    end
    if uv.now() >= deadline then
      return nil, string.format("agentd did not answer on %s within %d ms%s; see %s",
        self.paths.sock, self.opts.start_timeout_ms or 5000,
        spawn_err and (" (start failed: " .. tostring(spawn_err) .. ")") or "", self.paths.log)
    end
    async.sleep(delay)
    delay = math.min(delay * 2, 100)
    fd, err = sock.connect(self.paths.sock)
  end
  return fd
end

-- Connects and says hello in the background unless connected or connecting; queued requests go
-- out once it is done (or fail with its error).
function Client:ensure_connecting()
  if self.connecting or self.closed or (self.peer and not self.peer.closed) then return end
  self.connecting = true
  async.run(function()
    local ok, err = self:connect_now()
    self.connecting = false
    local queue = self.queue
    self.queue = {}
    for _, h in ipairs(queue) do
      if ok then self:send(h) else h.cb(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, err)) end
    end
    local waiters = self.waiters
    self.waiters = {}
    for _, w in ipairs(waiters) do w(ok, err) end
  end, function(e)
    self.connecting = false
    log.error("agentd client: connect crashed: %s", e)
  end)
end

-- Waits until connected (coroutine); returns true or nil, message.
function Client:wait_connected()
  if self.peer and not self.peer.closed then return true end
  return async.await(function(resume)
    table.insert(self.waiters, resume)
    self:ensure_connecting()
  end)
end

-- Connects, retrying while the daemon that accepted us drops the connection before hello is
-- answered: a daemon that is dying (its listener lives until its last thread exits) or losing the
-- lock race. The next attempt starts a fresh daemon if needed (coroutine).
function Client:connect_now()
  local deadline = uv.now() + (self.opts.start_timeout_ms or 5000)
  while true do
    local ok, err, dropped = self:try_connect()
    uv.update_time()
    if ok or not dropped or uv.now() >= deadline then return ok, err end
    log.info("agentd dropped the connection before hello (%s); connecting again", tostring(err))
    async.sleep(50)
  end
end

-- One connect attempt: returns true, or nil, message, and whether the connection dropped before
-- hello was answered (coroutine).
function Client:try_connect()
  local fd, err = self:open_socket()
  if not fd then return nil, err end
  local peer
  local dropped = false
  local gate = self.opts.read_gate
  local ch, cerr = channel.open(fd, {
    -- agentd ends every line: one cut by its death is not an answer (a raw result is not decoded)
    mode = "ndjson", max_line = config.limit("max_line"), drop_partial_line = true,
    on_line = function(line)
      peer:receive(line)
      if gate then gate:check() end
    end,
    on_eof = function(e)
      if self.peer ~= peer then dropped = true end
      self:lost(peer, e or "agentd closed the connection")
    end,
    on_drain = self.opts.on_drain,
  })
  if not ch then return nil, cerr end
  if gate then gate:add(ch) end
  peer = jsonrpc.new({
    name = "agentd-client",
    -- a write refused at once (EPIPE: agentd is already gone) is noted for Client:send
    send = function(line)
      if ch:is_closed() or not ch:write(line) then self.write_refused = true end
    end,
    on_notification = function(method, params)
      -- a handover closes the connection next, every request agentd read from it answered
      if method == M.GOODBYE then
        self.goodbye[peer], self.successor_due = true, true
        return
      end
      if self.opts.on_notification then self.opts.on_notification(method, params) end
    end,
  })
  peer.next_id = -1 -- hello goes out as id 0; requests reuse the client's ids
  self.ch = ch
  local info, herr = async.request(peer, "hello", {
    protocol = M.PROTOCOL, orchestrator_id = self.orchestrator_id, project_dir = self.project_dir,
    client = self.opts.client_info or { name = "reasonix-mcp", version = require("rmcp.host").version },
    -- the agents this orchestrator spawns run with its environment, not agentd's
    env = self.opts.env or require("luv").os_environ(),
    observer = self.opts.observer or nil, -- the dashboard: every orchestrator's sessions, read-only
  })
  if not info then
    if not ch:is_closed() then ch:close() end
    peer:close("hello failed")
    return nil, "agentd hello failed: " .. tostring(herr and herr.message or herr), dropped
  end
  self.peer = peer
  self.info = info
  if self.opts.on_connect then self.opts.on_connect(info) end
  return true
end

-- Forgets a dropped connection: in-flight requests fail (retry-safe ones are re-sent on a new
-- connection) and the next request reconnects.
function Client:lost(peer, reason)
  if self.peer ~= peer then
    if not peer.closed then peer:close(tostring(reason)) end
    return
  end
  if self.opts.on_drop then self.opts.on_drop() end
  self.peer = nil
  if self.ch and not self.ch:is_closed() then self.ch:close() end
  self.ch = nil
  peer:close("agentd connection lost: " .. tostring(reason))
  if self.opts.on_disconnect and not self.closed then self.opts.on_disconnect(reason) end
end

-- The callback of peer's pending request h: one agentd never read (it said goodbye before closing)
-- goes to the new agentd, a retry-safe one lost with the connection goes once more on a new one;
-- else h.cb gets the answer.
local function settle(self, h, peer)
  return function(result, err)
    if self.inflight[h.id] ~= h then return end
    self.inflight[h.id] = nil
    if err and peer.closed and not h.cancelled and not self.closed and not self.shutdown_sent then
      if self.goodbye[peer] then
        log.info("agentd handed over before it read %s; sending it to the new agentd", h.method)
        return self:dispatch(h)
      end
      if M.retry_safe[h.method] and h.attempts < 1 then
        h.attempts = h.attempts + 1
        log.info("agentd connection lost during %s; re-sending it on a new connection", h.method)
        return self:dispatch(h)
      end
    end
    h.cb(result, err)
  end
end

-- Writes request (or notification) h on the live connection, with the client's id as its wire id.
function Client:send(h)
  local peer = self.peer
  if not peer or peer.closed then return self:dispatch(h) end
  if h.notification then return peer:notify(h.method, h.params) end
  h.peer = peer
  self.inflight[h.id] = h
  peer.next_id = h.id - 1
  self.write_refused = nil
  peer:request(h.method, h.params, settle(self, h, peer), h.raw)
  if self.write_refused and self.inflight[h.id] == h and not h.resent then
    -- the socket refused the request outright (agentd died and we had not read its EOF yet): agentd
    -- never saw it, so any method, retry-safe or not, goes once more on a new connection
    self.write_refused = nil
    self.inflight[h.id] = nil
    h.resent = true
    log.info("agentd was gone when %s was written; sending it on a new connection", h.method)
    self:lost(peer, "the connection refused a write")
    return self:dispatch(h)
  end
end

-- Takes over request h {id, method, params, raw, cb} that someone else (the server lane) wrote on
-- the live connection: it settles, and is sent again after a lost connection, as one sent here.
function Client:adopt(h)
  h.attempts = 0
  h.peer = self.peer
  self.inflight[h.id] = h
  self.peer:expect(h.id, settle(self, h, self.peer), h.raw)
end

-- The channel of the live connection (hello answered), or nil.
function Client:live_channel()
  return self.peer and not self.peer.closed and self.ch or nil
end

-- Sends h now when connected, else queues it behind a connect.
function Client:dispatch(h)
  if self.closed then return h.cb(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "agentd client closed")) end
  if self.peer and not self.peer.closed then return self:send(h) end
  self.queue[#self.queue + 1] = h
  self:ensure_connecting()
end

-- Sends a request; cb(result, err) runs once (err is a JSON-RPC error object; with raw, a result is
-- its JSON text as json.raw). Returns the request id, which is also its id on the wire
-- (watch_progress notifications carry it; cancel takes it).
function Client:request(method, params, cb, raw)
  self.next_id = self.next_id + 1
  if method == "shutdown" then self.shutdown_sent = true end
  local h = { id = self.next_id, method = method, params = params or {}, cb = cb, attempts = 0, raw = raw }
  self:dispatch(h)
  return h.id
end

-- Sends a notification now when connected, else once connected, in order with the requests
-- queued before and after it.
function Client:notify(method, params)
  self:dispatch({ notification = true, method = method, params = params or {}, cb = function() end })
end

-- Why agentd is behind on what we wrote it (lib/flow.lua unread), or nil.
function Client:unread()
  return flow.unread(self.ch, "agentd")
end

-- Sends a request and waits inside a coroutine; returns result or nil, error object.
function Client:call(method, params)
  return async.await(function(resume) self:request(method, params, resume) end)
end

-- Cancels request id (watch/wait): agentd answers it with -32800; a queued one fails at once.
function Client:cancel(id)
  for i, h in ipairs(self.queue) do
    if h.id == id then
      table.remove(self.queue, i)
      return h.cb(nil, jsonrpc.error(-32800, "request cancelled"))
    end
  end
  local h = self.inflight[id]
  if not h then return end
  h.cancelled = true
  if h.peer and not h.peer.closed then h.peer:notify("$/cancel", { id = id }) end
end

-- Closes the connection; the client cannot be used afterwards.
function Client:close()
  self.closed = true
  local queue = self.queue
  self.queue = {}
  for _, h in ipairs(queue) do h.cb(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "agentd client closed")) end
  if self.peer then self:lost(self.peer, "client closed") end
end


return M
