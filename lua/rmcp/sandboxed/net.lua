-- `reasonix-mcp sandbox-net --sock PATH [--forward PORT=HOST:PORT]... [--proxy PORT] -- AGENT ARGV...`:
-- the first process inside a strict sandbox, whose network namespace has nothing but loopback. It
-- listens on 127.0.0.1:PORT for each --forward (a connection there is relayed to HOST:PORT through
-- agentd's gate at --sock: how an agent reaches a provider on 127.0.0.1 outside, since HTTP clients
-- never send loopback to a proxy) and, with --proxy, runs the HTTP proxy (http_proxy.lua) on
-- 127.0.0.1:PORT. Then it starts the agent as its child with our stdin, stdout and stderr as they
-- are (stdout is the agent's ACP channel: we never write to it; our log lines go to stderr), passes
-- SIGTERM, SIGINT and SIGHUP on, and exits with the child's code (128 + signal when it was killed).
local uv = require "luv"
local proc = require "rmcp.proc"
local sys = require "rmcp.sys"
local log = require "rmcp.lib.log"
local connect_line = require "rmcp.lib.connect_line"
-- (loaded by the first connection: the agent, which a strict spawn waits for, starts ~1 ms sooner)
local lazy = require "rmcp.lib.lazy"
local gate = lazy "rmcp.sandboxed.gate"
local http_proxy = lazy "rmcp.sandboxed.http_proxy"

local M = {}

M.USAGE = "usage: reasonix-mcp sandbox-net --sock PATH [--forward PORT=HOST:PORT]... [--proxy PORT] -- AGENT ARGV..."

-- Reads a local port (1-65535), or nil.
local function local_port(text)
  local n = tonumber(text and text:match("^%d+$"))
  return n and n >= 1 and n <= 65535 and n or nil
end

-- Reads the value of the option at argv[i] into o; returns the next index, or nil, why.
local function option(o, argv, i)
  local name, value = argv[i], argv[i + 1]
  if value == nil then return nil, name .. " needs a value" end
  if name == "--sock" then
    o.sock = value
  elseif name == "--proxy" then
    o.proxy = local_port(value)
    if not o.proxy then return nil, "--proxy takes a port (1-65535), not " .. value end
  elseif name == "--forward" then
    local port, target = value:match("^(%d+)=(.+)$")
    local host, tport = connect_line.parse_target(target)
    if not local_port(port) or not host then
      return nil, "--forward takes PORT=HOST:PORT, not " .. value .. (host and "" or " (" .. tostring(tport) .. ")")
    end
    o.forwards[#o.forwards + 1] = { port = local_port(port), host = host, target_port = tport }
  else
    return nil, "unknown option " .. name
  end
  return i + 2
end

-- Reads the command line: {sock, forwards = {{port, host, target_port}}, proxy, argv}; or nil, why.
function M.parse_args(argv)
  local o, i = { forwards = {}, argv = {} }, 1
  while argv[i] and argv[i] ~= "--" do
    local nxt, why = option(o, argv, i)
    if not nxt then return nil, why end
    i = nxt
  end
  for j = i + 1, #argv do o.argv[#o.argv + 1] = argv[j] end
  if not o.sock then return nil, "--sock PATH is required" end
  if #o.argv == 0 then return nil, "no agent command after --" end
  local seen = { [o.proxy or 0] = true }
  for _, f in ipairs(o.forwards) do
    if seen[f.port] then return nil, "port " .. f.port .. " is given twice" end
    seen[f.port] = true
  end
  return o
end

-- Listens on 127.0.0.1:port; on_client(tcp) for each connection. Returns the server, or nil, why.
local function listen(port, on_client)
  local server = uv.new_tcp()
  local ok, err = server:bind("127.0.0.1", port)
  if ok then
    ok, err = server:listen(128, function(lerr)
      if lerr then return log.warn("accept on 127.0.0.1:%d: %s", port, lerr) end
      local client = uv.new_tcp()
      if server:accept(client) then on_client(client) else client:close() end
    end)
  end
  if not ok then
    server:close()
    return nil, "cannot listen on 127.0.0.1:" .. port .. ": " .. tostring(err)
  end
  return server
end

-- A connection to a forward's port: relayed to its target through the gate, or closed.
local function forward(sock_path, f, client)
  local label = string.format("forward %d -> %s", f.port, connect_line.format_target(f.host, f.target_port))
  gate.connect(sock_path, f.host, f.target_port, function(up, rest, why)
    if client:is_closing() then
      if up then up:close() end
      return
    end
    if not up then
      log.info("%s: %s", label, why)
      return client:close()
    end
    gate.splice(client, up, rest, nil, label)
  end)
end

-- Opens every listener of o; returns true, or nil, why.
local function open_listeners(o)
  for _, f in ipairs(o.forwards) do
    local ok, err = listen(f.port, function(client) forward(o.sock, f, client) end)
    if not ok then return nil, err end
  end
  if o.proxy then
    local ok, err = listen(o.proxy, function(client) http_proxy.serve(client, o.sock) end)
    if not ok then return nil, err end
  end
  return true
end

-- Starts the agent with our stdio; its exit is ours. Returns the process, or nil, why, exit code.
local function start_child(argv)
  local child, err, code = proc.spawn({
    file = argv[1], args = { table.unpack(argv, 2) },
    stdin = "inherit", stdout = "inherit", stderr = "inherit",
    on_exit = function(exit_code) sys.stop(exit_code) end,
  })
  if not child then return nil, err, code == "ENOENT" and 127 or 126 end
  for sig, name in pairs({ sigterm = "TERM", sigint = "INT", sighup = "HUP" }) do
    local h = uv.new_signal()
    h:start(sig, function() child:kill(name) end)
    h:unref()
  end
  return child
end

-- Entry point (rmcp.main): runs until the agent exits.
function M.main(argv)
  log.set_role("sandbox-net")
  local o, why = M.parse_args(argv)
  if not o then
    io.stderr:write("reasonix-mcp sandbox-net: ", why, "\n", M.USAGE, "\n")
    return sys.stop(2)
  end
  local ok, err = open_listeners(o)
  if not ok then
    io.stderr:write("reasonix-mcp sandbox-net: ", err, "\n")
    return sys.stop(1)
  end
  local child, serr, code = start_child(o.argv)
  if not child then
    io.stderr:write("reasonix-mcp sandbox-net: cannot start ", o.argv[1], ": ", tostring(serr), "\n")
    return sys.stop(code)
  end
end

return M
