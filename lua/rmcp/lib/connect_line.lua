-- The one-line handshake in front of a relayed connection, and the `host:port` it names: the client
-- sends `CONNECT host:port\n`; the server answers `OK\n`, after which the connection is a plain byte
-- stream to that target, or `NO <why>\n` and closes. host is a DNS name, an IPv4 address or an IPv6
-- address (in brackets); port is 1-65535. Used by agentd's network gate and the sandbox's side of it.
local M = {}

M.MAX_LINE = 1024 -- bytes of a request or an answer line, its newline included
M.OK = "OK\n"

-- Whether host is a DNS name or an IPv4 address (letters, digits, dots, hyphens, underscores) or an
-- IPv6 address (hex digits, colons, dots).
local function valid_host(host)
  if #host == 0 or #host > 253 then return false end
  if host:find("^[%w_][%w%.%-_]*$") then return true end
  return host:find(":", 1, true) ~= nil and host:find("^[%x:%.]+$") ~= nil
end

-- Reads "host:port" ("[v6]:port" for an IPv6 address): host (lower case, without a final dot),
-- port; or nil, why.
function M.parse_target(text)
  if type(text) ~= "string" then return nil, "no host:port" end
  local host, port = text:match("^%[([^%]]*)%]:(%d+)$")
  if not host then host, port = text:match("^([^:%[%]]*):(%d+)$") end
  if not host then return nil, "not host:port: " .. text:sub(1, 200) end
  host = host:lower():gsub("%.$", "")
  port = tonumber(port)
  if not valid_host(host) then return nil, "not a host name or address: " .. host:sub(1, 200) end
  if port < 1 or port > 65535 then return nil, "port out of range (1-65535): " .. port end
  return host, port
end

-- "host:port", an IPv6 address in brackets.
function M.format_target(host, port)
  if host:find(":", 1, true) then return string.format("[%s]:%d", host, port) end
  return string.format("%s:%d", host, port)
end

-- The request line for host:port, newline included.
function M.request(host, port)
  return "CONNECT " .. M.format_target(host, port) .. "\n"
end

-- Reads a request line (without its newline; a final "\r" is allowed): host, port; or nil, why.
function M.parse_request(line)
  local target = line:gsub("\r$", ""):match("^CONNECT (%S+)$")
  if not target then return nil, "expected CONNECT host:port" end
  return M.parse_target(target)
end

-- The refusal line for why (made one line), newline included.
function M.no(why)
  local text = tostring(why or "refused"):gsub("%c", " "):sub(1, M.MAX_LINE - 8)
  return "NO " .. text .. "\n"
end

-- Reads an answer line (without its newline): true; or false, why (the server's reason, or what was
-- wrong with the line).
function M.parse_answer(line)
  line = line:gsub("\r$", "")
  if line == "OK" then return true end
  local why = line:match("^NO ?(.*)$")
  if why then return false, why ~= "" and why or "refused" end
  return false, "not an answer of the network gate: " .. line:sub(1, 200)
end

return M
