-- The dashboard's HTTP/1.1 server on the process's libuv loop: luv TCP on a loopback address,
-- requests parsed by rmcp.http (Debian's http-parser, bound in core/http.c), one handler call per
-- request, keep-alive, and Server-Sent Events streams. Routes and pages are routes.lua's.
local uv = require "luv"
local http = require "rmcp.http"
local log = require "rmcp.lib.log"

local M = {}

M.max_request = 256 * 1024 -- bytes of one request, head and body

local REASONS = { [200] = "OK", [204] = "No Content", [303] = "See Other", [400] = "Bad Request", [401] = "Unauthorized",
  [403] = "Forbidden", [404] = "Not Found", [405] = "Method Not Allowed", [413] = "Content Too Large",
  [421] = "Misdirected Request", [429] = "Too Many Requests", [500] = "Internal Server Error", [502] = "Bad Gateway" }

-- True when host (an address to bind) is a loopback one.
function M.loopback(host)
  return host == "127.0.0.1" or host == "::1" or host == "localhost" or (host or ""):match("^127%.%d+%.%d+%.%d+$") ~= nil
end

-- The bytes of a response: status, headers (name → value), body.
local function response_bytes(status, headers, body, keep_alive)
  local lines = { string.format("HTTP/1.1 %d %s", status, REASONS[status] or "Status") }
  headers["Content-Length"] = tostring(#body)
  headers["Connection"] = keep_alive and "keep-alive" or "close"
  headers["X-Content-Type-Options"] = "nosniff"
  headers["Referrer-Policy"] = "same-origin" -- (no-referrer makes a browser send Origin: null on a form POST)
  headers["Cache-Control"] = headers["Cache-Control"] or "no-store"
  for k, v in pairs(headers) do lines[#lines + 1] = k .. ": " .. v end
  return table.concat(lines, "\r\n") .. "\r\n\r\n" .. body
end

-- Starts listening on host:port; handler(req, res) answers each request: res.send(status, headers,
-- body) once, or res.stream(headers) for an event stream (returns a stream with :send(event, data),
-- :comment(text), :on_close(fn), :close()). Returns the server or nil, error.
function M.listen(host, port, handler)
  if not M.loopback(host) then
    return nil, "refusing to listen on " .. tostring(host) .. ": the dashboard listens on loopback only (127.0.0.1 or ::1)"
  end
  local server = uv.new_tcp()
  local ok, err = server:bind(host == "localhost" and "127.0.0.1" or host, port)
  if not ok then
    server:close()
    return nil, "cannot listen on " .. host .. ":" .. port .. ": " .. tostring(err)
  end
  ok, err = server:listen(64, function(lerr)
    if lerr then return log.warn("dashboard: accept: %s", lerr) end
    local client = uv.new_tcp()
    if not server:accept(client) then return client:close() end
    M.serve(client, handler)
  end)
  if not ok then
    server:close()
    return nil, "cannot listen on " .. host .. ":" .. port .. ": " .. tostring(err)
  end
  return server
end

-- Serves one connection: feeds the parser, answers requests in order, closes on error or when the
-- client does not keep the connection alive.
function M.serve(client, handler)
  local parser = http.parser(M.max_request)
  local closed, streaming = false, nil
  local function close()
    if closed then return end
    closed = true
    if streaming then streaming.closed() end
    if not client:is_closing() then client:close() end
  end
  client:read_start(function(err, chunk)
    if err or not chunk then return close() end
    if streaming then return end -- an event stream reads nothing more
    local reqs, perr = parser:feed(chunk)
    if not reqs then
      local status = perr == "request too large" and 413 or 400
      client:write(response_bytes(status, { ["Content-Type"] = "text/plain" }, perr .. "\n", false))
      return client:shutdown(close)
    end
    for _, req in ipairs(reqs) do
      local answered = false
      local res = {}
      function res.send(status, headers, body)
        if answered or closed then return end
        answered = true
        client:write(response_bytes(status, headers or {}, body or "", req.keep_alive))
        if not req.keep_alive then client:shutdown(close) end
      end
      function res.stream(headers)
        answered = true
        local lines = { "HTTP/1.1 200 OK", "Content-Type: text/event-stream", "Cache-Control: no-store",
                        "Connection: keep-alive", "X-Content-Type-Options: nosniff" }
        for k, v in pairs(headers or {}) do lines[#lines + 1] = k .. ": " .. v end
        client:write(table.concat(lines, "\r\n") .. "\r\n\r\n")
        local on_close = {}
        local s = {}
        function s.send(event, data)
          if closed then return end
          client:write("event: " .. event .. "\ndata: " .. data:gsub("\n", "\ndata: ") .. "\n\n")
        end
        function s.comment(text)
          if not closed then client:write(": " .. text .. "\n\n") end
        end
        function s.on_close(fn) on_close[#on_close + 1] = fn end
        function s.close() close() end
        function s.closed() for _, fn in ipairs(on_close) do fn() end end
        streaming = s
        return s
      end
      local ok, herr = pcall(handler, req, res)
      if not ok then
        log.error("dashboard: %s %s: %s", tostring(req.method), tostring(req.path), tostring(herr))
        res.send(500, { ["Content-Type"] = "text/plain" }, "internal error\n")
      end
      if streaming then return end
    end
  end)
end

return M
