-- The HTTP proxy inside a strict sandbox (`sandbox-net --proxy PORT`): an agent's HTTP client
-- reaches an allowed host through it and agentd's gate (gate.lua). `CONNECT host:port` is answered
-- `200 Connection established` and relayed (TLS goes through untouched); an absolute-form request
-- (`GET http://host:port/path`) is relayed to host:port with its request line in origin form and
-- `Connection: close`, so each request opens a connection of its own and the gate checks each
-- target; a target the gate refuses gets `403` with the gate's reason, an unreachable gate `502`.
local uv = require "luv"
local log = require "rmcp.lib.log"
local connect_line = require "rmcp.lib.connect_line"
local stream_head = require "rmcp.lib.stream_head"
local gate = require "rmcp.sandboxed.gate"

local M = {}

M.MAX_HEAD = 64 * 1024  -- bytes of a request head
M.HEAD_MS = 30000       -- for the head to arrive
M.LINGER_MS = 2000      -- a refused client's unread bytes are drained this long before the close
M.ESTABLISHED = "HTTP/1.1 200 Connection established\r\n\r\n"

local REASONS = { [400] = "Bad Request", [403] = "Forbidden", [502] = "Bad Gateway" }

-- Headers that speak of the connection to the proxy, not of the request: not passed on.
local HOP = { connection = true, ["proxy-connection"] = true, ["keep-alive"] = true,
              ["proxy-authorization"] = true, ["proxy-authenticate"] = true, te = true, upgrade = true }

-- The bytes of an error answer: status, the reason as text, and the close.
function M.response(status, text)
  local body = tostring(text):gsub("%c", " ") .. "\n"
  return string.format("HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n"
    .. "Connection: close\r\n\r\n%s", status, REASONS[status] or "Error", #body, body)
end

-- Reads the authority of an http:// URL: host, port (80 by default); or nil, why.
local function authority(auth)
  if auth:find("@", 1, true) then return nil, "credentials in a proxy URL are not passed on" end
  if auth:match("^%[[^%]]*%]$") or not auth:find(":", 1, true) then
    return connect_line.parse_target(auth .. ":80")
  end
  return connect_line.parse_target(auth)
end

-- The head of an absolute-form request in origin form: request line, the headers but the hop ones
-- (Host added when missing), Connection: close.
local function origin_head(method, path, version, header_text, auth)
  local lines, host_seen = { method .. " " .. path .. " " .. version }, false
  for h in header_text:gmatch("[^\r\n]+") do
    local name = (h:match("^([^:%s]+)%s*:") or ""):lower()
    host_seen = host_seen or name == "host"
    if not HOP[name] then lines[#lines + 1] = h end
  end
  if not host_seen then table.insert(lines, 2, "Host: " .. auth) end
  lines[#lines + 1] = "Connection: close"
  return table.concat(lines, "\r\n") .. "\r\n\r\n"
end

-- Reads a request head (without its blank line): {connect = true, host, port} for CONNECT;
-- {host, port, head} for an absolute-form request, head being what goes to the target; or nil,
-- status, why.
function M.parse(text)
  local first, header_text = text:match("^([^\r\n]*)\r?\n?(.*)$")
  local method, target, version = first:match("^(%u+) (%S+) (HTTP/1%.[01])$")
  if not method then return nil, 400, "not an HTTP/1.x request line" end
  if method == "CONNECT" then
    local host, port = connect_line.parse_target(target)
    if not host then return nil, 400, port end
    return { connect = true, host = host, port = port }
  end
  local scheme, auth, path = target:match("^(%a[%w+.-]*)://([^/?#]*)(.*)$")
  if not scheme then return nil, 400, "a proxy takes an absolute URL (http://host/path) or CONNECT host:port" end
  if scheme:lower() ~= "http" then return nil, 400, scheme .. ":// goes through CONNECT, not as a plain request" end
  local host, port = authority(auth)
  if not host then return nil, 400, port end
  path = path:gsub("#.*$", "")
  if path:sub(1, 1) ~= "/" then path = "/" .. path end
  return { host = host, port = port, head = origin_head(method, path, version, header_text, auth) }
end

-- Answers status with text and closes, after the client's unread bytes are drained (for at most
-- LINGER_MS), so it reads the answer instead of a reset.
local function answer(client, status, text)
  local timer = uv.new_timer()
  local function close()
    if not timer:is_closing() then timer:close() end
    if not client:is_closing() then client:close() end
  end
  timer:start(M.LINGER_MS, 0, close)
  client:write(M.response(status, text))
  client:shutdown()
  local ok = client:read_start(function(err, data) if err or not data then close() end end)
  if not ok then close() end
end

-- Serves one client connection of the proxy: reads its head, asks the gate at sock_path for the
-- target, then relays, or answers an error.
function M.serve(client, sock_path)
  stream_head.read(client, "\r\n\r\n", M.MAX_HEAD, M.HEAD_MS, function(text, rest, why)
    if not text then
      log.debug("proxy: a client without a request: %s", why)
      return answer(client, 400, "no request: " .. why)
    end
    local req, status, err = M.parse(text)
    if not req then return answer(client, status, err) end
    local label = "proxy " .. connect_line.format_target(req.host, req.port)
    gate.connect(sock_path, req.host, req.port, function(up, up_rest, gwhy, refused)
      if client:is_closing() then
        if up then up:close() end
        return
      end
      if not up then
        log.info("%s: %s", label, gwhy)
        return answer(client, refused and 403 or 502, gwhy)
      end
      if req.connect then return gate.splice(client, up, M.ESTABLISHED .. up_rest, rest, label) end
      gate.splice(client, up, up_rest, req.head .. rest, label)
    end)
  end)
end

return M
