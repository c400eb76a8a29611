-- A session's network gate (the strict sandbox): a Unix socket agentd listens on for that session,
-- bound into its sandbox as the only way out of a network namespace that has nothing but loopback.
-- Each connection asks for one target with `CONNECT host:port` (lib/connect_line.lua); the gate
-- asks the session's allow(host, port), logs the decision with the session's name, resolves and
-- connects, answers `OK` and hands both sockets to the byte pump in C (rmcp.relay: both ways,
-- back-pressure, half-close); or it answers `NO <why>` and closes. Lua decides, C moves the bytes.
-- The gate holds no session state: the session keeps the gate object and closes it with the agent.
local uv = require "luv"
local sock = require "rmcp.sock"
local relay = require "rmcp.relay"
local log = require "rmcp.lib.log"
local connect_line = require "rmcp.lib.connect_line"
local stream_head = require "rmcp.lib.stream_head"

local M = {}

M.MAX_LINKS = 64        -- connections at once through one gate (each holds two of agentd's fds)
M.REQUEST_MS = 10000    -- for the CONNECT line to arrive
M.CONNECT_MS = 15000    -- to resolve and connect the target

---@class NetGate                  one session's network gate (open, close, links)
---@field path string              the socket, 0600 (unlinked by close)
---@field name string              the session's name, in every log line
---@field allow fun(host: string, port: integer): boolean, string?  may host:port be reached (and why not)
---@field listener userdata?       the rmcp.sock listener; nil once closed
---@field links table<NetGateLink, boolean> the connections being set up or relayed
---@field count integer            how many links
---@field closed boolean

---@class NetGateLink              one connection through the gate
---@field pipe userdata?           luv pipe on the sandbox's side, until the relay has the socket
---@field tcp userdata?            luv tcp to the target while it connects
---@field timer userdata?          the deadline of the request or of the connect
---@field stop_head function?      stops reading the request line
---@field relay userdata?          the rmcp.relay once bytes flow
---@field target string?           host:port asked for

local Gate = {}
Gate.__index = Gate

-- Closes a luv handle unless it is closing already.
local function close_handle(handle)
  if handle and not handle:is_closing() then handle:close() end
end

-- Lets go of a link: everything it holds is closed; idempotent.
local function drop(gate, link)
  if not gate.links[link] then return end
  gate.links[link] = nil
  gate.count = gate.count - 1
  if link.stop_head then link.stop_head() end
  if link.relay then link.relay:close() end
  close_handle(link.timer)
  close_handle(link.tcp)
  close_handle(link.pipe)
  link.stop_head, link.relay, link.timer, link.tcp, link.pipe = nil, nil, nil, nil, nil
end

-- Answers `NO <why>` on the link's socket and closes it once written.
local function refuse(gate, link, why)
  local pipe = link.pipe
  link.pipe = nil
  drop(gate, link)
  if not pipe or pipe:is_closing() then return end
  local ok = pipe:write(connect_line.no(why), function() close_handle(pipe) end)
  if not ok then close_handle(pipe) end
end

-- Starts the deadline of the link's current step: refused with why when it passes.
local function deadline(gate, link, ms, why)
  close_handle(link.timer)
  link.timer = uv.new_timer()
  link.timer:start(ms, 0, function()
    log.info("net %s: %s: %s", gate.name, link.target or "a connection", why)
    refuse(gate, link, why)
  end)
end

-- Connected: `OK` then the bytes, both sockets handed to the relay (which works on its own
-- duplicates: ours close now). rest is what the sandbox sent after its CONNECT line.
local function start_relay(gate, link, rest)
  local r, err = relay.pipe(link.pipe:fileno(), link.tcp:fileno(), {
    to_a = connect_line.OK,
    to_b = rest,
    on_done = function(a_to_b, b_to_a, rerr)
      log.debug("net %s: %s: done (%d bytes out, %d in)%s", gate.name, link.target, a_to_b, b_to_a,
        rerr and ": " .. rerr or "")
      link.relay = nil
      drop(gate, link)
    end,
  })
  if not r then return refuse(gate, link, "relay: " .. tostring(err)) end
  link.relay = r
  close_handle(link.timer)
  close_handle(link.tcp)
  close_handle(link.pipe)
  link.timer, link.tcp, link.pipe = nil, nil, nil
end

-- Connects to the addresses host resolved to, in order, until one answers.
local function try_connect(gate, link, addrs, i, port, rest, last_err)
  local a = addrs[i]
  if not a then
    local why = "connect failed: " .. tostring(last_err)
    log.info("net %s: %s: %s", gate.name, link.target, why)
    return refuse(gate, link, why)
  end
  local tcp = uv.new_tcp()
  link.tcp = tcp
  local ok, err = tcp:connect(a.addr, port, function(cerr)
    if not gate.links[link] then return end
    if not cerr then return start_relay(gate, link, rest) end
    close_handle(tcp)
    link.tcp = nil
    try_connect(gate, link, addrs, i + 1, port, rest, cerr)
  end)
  if not ok then
    close_handle(tcp)
    link.tcp = nil
    try_connect(gate, link, addrs, i + 1, port, rest, err)
  end
end

-- Allowed: resolves host, then connects, within CONNECT_MS.
local function connect(gate, link, host, port, rest)
  deadline(gate, link, M.CONNECT_MS, "connect timed out")
  uv.getaddrinfo(host, nil, { socktype = "stream" }, function(err, addrs)
    if not gate.links[link] then return end
    if err or not addrs or #addrs == 0 then
      local why = "cannot resolve " .. host .. ": " .. tostring(err or "no address")
      log.info("net %s: %s: %s", gate.name, link.target, why)
      return refuse(gate, link, why)
    end
    try_connect(gate, link, addrs, 1, port, rest)
  end)
end

-- The request line arrived: ask allow(host, port) and log what it said.
local function decide(gate, link, line, rest)
  local host, port = connect_line.parse_request(line)
  if not host then
    log.info("net %s: a bad request refused: %s", gate.name, port)
    return refuse(gate, link, port)
  end
  link.target = connect_line.format_target(host, port)
  local ok, allowed, why = pcall(gate.allow, host, port)
  if not ok then
    log.error("net %s: %s: the allow check failed: %s", gate.name, link.target, tostring(allowed))
    return refuse(gate, link, "the gate's check failed")
  end
  if not allowed then
    why = why or "not allowed"
    log.info("net %s: %s refused: %s", gate.name, link.target, why)
    return refuse(gate, link, why)
  end
  log.info("net %s: %s allowed", gate.name, link.target)
  connect(gate, link, host, port, rest)
end

-- A connection from the sandbox: read its request line (within REQUEST_MS).
local function on_accept(gate, fd)
  local pipe = uv.new_pipe(false)
  local ok, err = pipe:open(fd)
  if not ok then
    uv.fs_close(fd)
    close_handle(pipe)
    return log.warn("net %s: cannot take a connection: %s", gate.name, tostring(err))
  end
  local link = { pipe = pipe }
  gate.links[link], gate.count = true, gate.count + 1
  if gate.count > M.MAX_LINKS then
    log.warn("net %s: a connection refused: %d at once already", gate.name, M.MAX_LINKS)
    return refuse(gate, link, "too many connections at once")
  end
  link.stop_head = stream_head.read(pipe, "\n", connect_line.MAX_LINE, M.REQUEST_MS, function(line, rest, why)
    link.stop_head = nil
    if line then return decide(gate, link, line, rest) end
    log.info("net %s: a connection without its request: %s", gate.name, why)
    refuse(gate, link, "no request: " .. why)
  end)
end

-- Listens on path (a Unix socket, 0600; a stale one is replaced) for the session name: each
-- connection's target is asked of allow(host, port) -> true | false, why. Returns the gate, or nil,
-- err, code.
function M.open(path, allow, name)
  assert(type(path) == "string", "netgate.open: path must be a string")
  assert(type(allow) == "function", "netgate.open: allow must be a function")
  local gate = setmetatable({ path = path, name = tostring(name), allow = allow, links = {}, count = 0,
                              closed = false }, Gate)
  local listener, err, code = sock.listen(path, function(fd) on_accept(gate, fd) end)
  if not listener then return nil, err, code end
  gate.listener = listener
  return gate
end

-- Stops listening (the socket file goes) and closes every connection, relayed ones too; idempotent.
function Gate:close()
  if self.closed then return end
  self.closed = true
  if self.listener then self.listener:close() end
  self.listener = nil
  for link in pairs(self.links) do drop(self, link) end
end

-- How many connections are being set up or relayed.
function Gate:connections()
  return self.count
end

return M
