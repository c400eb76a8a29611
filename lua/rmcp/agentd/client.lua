-- Client of the agentd socket, for the MCP server, ctl, doctor and tests: connects (starting agentd
-- detached when nobody answers, safe against concurrent starters: the daemon's lock decides), says
-- hello, sends requests, receives notifications, and reconnects transparently after agentd restarts.
local uv = require "luv"
local sock = require "rmcp.sock"
local channel = require "rmcp.channel"
local proc = require "rmcp.proc"
local jsonrpc = require "rmcp.lib.jsonrpc"
local async = require "rmcp.lib.async"
local log = require "rmcp.lib.log"
local config = require "rmcp.config"

local M = {}

M.PROTOCOL = 1

-- Methods that may be re-sent after the connection dropped before their answer (no side effects
-- beyond what a repeat does anyway).
M.retry_safe = { list = true, models = true, transcript = true, watch = true, wait = true, poll = true }

local Client = {}
Client.__index = Client

-- Creates a client (not connected yet). opts: home, orchestrator_id, project_dir, client_info
-- {name, version}, autostart (default true), start_timeout_ms (5000), exe (reasonix-mcp binary),
-- on_notification(method, params), on_disconnect(reason), on_connect().
function M.new(opts)
  opts = opts or {}
  local home = opts.home or config.home()
  return setmetatable({
    opts = opts,
    paths = config.paths(home),
    autostart = opts.autostart ~= false,
    orchestrator_id = opts.orchestrator_id or config.env("REASONIX_MCP_ORCHESTRATOR_ID") or "cli",
    project_dir = opts.project_dir,
    waiters = nil,
    closed = false,
  }, Client)
end

-- Connects and says hello (coroutine); returns a connected client or nil, message.
function M.connect(opts)
  local c = M.new(opts)
  local ok, err = c:connect()
  if not ok then return nil, err end
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
  local exe = self.opts.exe or require("rmcp.host").exe
  local p, serr = proc.spawn({
    file = exe, args = { "agentd" }, cwd = "/", env = env,
    setsid = true, pdeathsig = false, stdin = "null",
    stdout = { file = self.paths.log, append = true }, stderr = "stdout",
    on_exit = function() end,
  })
  if not p then return nil, serr end
  log.debug("started agentd pid %d", p:pid())
  return true
end

-- Opens the socket, starting the daemon when allowed; returns fd or nil, message (coroutine).
function Client:open_socket()
  local fd, err = sock.connect(self.paths.sock)
  if fd or not self.autostart then return fd, err end
  local deadline = uv.now() + (self.opts.start_timeout_ms or 5000)
  local last_spawn, delay, spawn_err = nil, 10, nil
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

-- Connects and says hello unless already connected (coroutine); returns true or nil, message.
-- Concurrent callers share one attempt.
function Client:connect()
  if self.closed then return nil, "client closed" end
  if self.peer and not self.peer.closed then return true end
  if self.waiters then
    return async.await(function(resume) table.insert(self.waiters, resume) end)
  end
  self.waiters = {}
  local ok, err = self:connect_now()
  local waiters = self.waiters
  self.waiters = nil
  for _, w in ipairs(waiters) do w(ok, err) end
  return ok, err
end

-- The connect attempt itself (coroutine).
function Client:connect_now()
  local fd, err = self:open_socket()
  if not fd then return nil, err end
  local peer
  local ch, cerr = channel.open(fd, {
    mode = "ndjson", max_line = config.limit("max_line"),
    on_line = function(line) peer:receive(line) end,
    on_eof = function(e) self:lost(peer, e or "agentd closed the connection") end,
  })
  if not ch then return nil, cerr end
  peer = jsonrpc.new({
    name = "agentd-client",
    send = function(line) if not ch:is_closed() then ch:write(line) end end,
    on_notification = function(method, params)
      if self.opts.on_notification then self.opts.on_notification(method, params) end
    end,
  })
  self.peer, self.ch = peer, ch
  local info, herr = async.request(peer, "hello", {
    protocol = M.PROTOCOL, orchestrator_id = self.orchestrator_id, project_dir = self.project_dir,
    client = self.opts.client_info or { name = "reasonix-mcp", version = require("rmcp.host").version },
  })
  if not info then
    self:lost(peer, "hello failed")
    return nil, "agentd hello failed: " .. tostring(herr and herr.message or herr)
  end
  self.info = info
  if self.opts.on_connect then self.opts.on_connect(info) end
  return true
end

-- Forgets a dropped connection: pending requests fail and the next request reconnects.
function Client:lost(peer, reason)
  if self.peer ~= peer then return end
  self.peer = nil
  if self.ch and not self.ch:is_closed() then self.ch:close() end
  self.ch = nil
  peer:close("agentd connection lost: " .. tostring(reason))
  if self.opts.on_disconnect and not self.closed then self.opts.on_disconnect(reason) end
end

-- Sends a request and waits (coroutine); returns result or nil, error object. handle (optional
-- table) receives the live request id for cancel().
function Client:request(method, params, handle)
  for attempt = 1, 2 do
    local ok, err = self:connect()
    if not ok then return nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, err) end
    local peer = self.peer
    local result, rerr = async.await(function(resume)
      local id = peer:request(method, params or {}, resume)
      if handle then handle.id, handle.peer = id, peer end
    end)
    if handle and handle.cancelled then return result, rerr end
    if rerr and peer.closed and attempt == 1 and M.retry_safe[method] and not self.closed then
      log.info("agentd connection lost during %s; reconnecting", method)
    else
      return result, rerr
    end
  end
end

-- Sends a request from callback code: cb(result, err). Returns a handle for cancel().
function Client:request_cb(method, params, cb)
  local handle = {}
  async.run(function() cb(self:request(method, params, handle)) end,
    function(e) cb(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, tostring(e))) end)
  return handle
end

-- Cancels a long request (watch/wait) started with handle: agentd answers it with -32800.
function Client:cancel(handle)
  handle.cancelled = true
  if handle.peer and not handle.peer.closed then handle.peer:notify("$/cancel", { id = handle.id }) end
end

-- Sends a notification if connected.
function Client:notify(method, params)
  if self.peer then return self.peer:notify(method, params) end
  return false
end

-- True while a connection is open.
function Client:connected()
  return self.peer ~= nil and not self.peer.closed
end

-- Closes the connection; the client cannot be used afterwards.
function Client:close()
  self.closed = true
  if self.peer then self:lost(self.peer, "client closed") end
end


return M
