-- The dashboard's routes: the login, the page, and a small JSON API over agentd's observer
-- methods (observe, observe_session, observe_act, observe_routines, observe_routine_act, observe_usage), plus an event stream that nudges the page when
-- a session changes. Every route but the login checks the session cookie; every one checks Host;
-- state changes and the stream check Origin (auth.lua).
local json = require "rmcp.lib.json"
local async = require "rmcp.lib.async"
local log = require "rmcp.lib.log"
local page = require "rmcp.dashboard.page"

local M = {}

local HTML = { ["Content-Type"] = "text/html; charset=utf-8",
  ["Content-Security-Policy"] = "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'" }

-- The name → value pairs of a query string or an application/x-www-form-urlencoded body.
local function form(text)
  local function dec(s) return (s:gsub("+", " "):gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end)) end
  local out = {}
  for k, v in (text or ""):gmatch("([^&=]+)=([^&]*)") do out[dec(k)] = dec(v) end
  return out
end

-- Answers res with JSON value v (status default 200).
local function send_json(res, v, status)
  res.send(status or 200, { ["Content-Type"] = "application/json" }, json.encode(v) or "{}")
end

-- Makes the request handler. app: auth (auth.lua gate), agentd (call(method, params) in a
-- coroutine), streams (the open event streams: a set the main module nudges).
function M.handler(app)
  local auth = app.auth
  -- Calls agentd method and answers res with its result, or the error as JSON with status 502/400.
  local function relay(res, method, params)
    async.run(function()
      local r, err = app.agentd(method, params)
      if r then return send_json(res, r) end
      local status = (err and (err.code == -32602 or err.code == -32001 or err.code == -32004 or err.code == -32006
        or err.code == -32010 or err.code == -32011)) and 400 or 502
      send_json(res, { error = err and err.message or "agentd did not answer" }, status)
    end, function(e) send_json(res, { error = tostring(e) }, 500) end)
  end
  return function(req, res)
    if not auth:host_ok(req) then
      return res.send(421, { ["Content-Type"] = "text/plain" }, "this dashboard answers only to 127.0.0.1 / localhost\n")
    end
    local path, method = req.path or "/", req.method
    if path == "/healthz" and method == "GET" then -- who answers here (clients/dashboard.lua), nothing of the fleet
      return send_json(res, app.health)
    end
    if path == "/login" then
      if method == "GET" then return res.send(200, HTML, page.login()) end
      if method ~= "POST" then return res.send(405, { Allow = "GET, POST" }, "") end
      if not auth:origin_ok(req) then return res.send(403, { ["Content-Type"] = "text/plain" }, "foreign origin\n") end
      local token, why = auth:login(form(req.body).password or "")
      if not token then
        log.warn("dashboard: login refused (%s)", why)
        return res.send(why == "throttled" and 429 or 401, HTML, page.login(why))
      end
      return res.send(303, { Location = "/", ["Set-Cookie"] = auth.set_cookie(token) }, "")
    end
    local token = auth:session(req)
    if not token then
      if path == "/" and method == "GET" then return res.send(303, { Location = "/login" }, "") end
      return send_json(res, { error = "log in first" }, 401)
    end
    if method ~= "GET" and method ~= "POST" then return res.send(405, { Allow = "GET, POST" }, "") end
    if method == "POST" and not auth:origin_ok(req) then return send_json(res, { error = "foreign origin" }, 403) end
    if path == "/" and method == "GET" then return res.send(200, HTML, page.main()) end
    if path == "/logout" and method == "POST" then
      auth:logout(token)
      return res.send(303, { Location = "/login", ["Set-Cookie"] = auth.cookie .. "=; Max-Age=0; Path=/" }, "")
    end
    if path == "/api/fleet" and method == "GET" then return relay(res, "observe", {}) end
    if path == "/api/session" and method == "GET" then
      local q = form(req.query)
      return relay(res, "observe_session", { session_id = q.id, since = math.tointeger(tonumber(q.since or "")) })
    end
    if path == "/api/act" and method == "POST" then
      local ok, body = pcall(json.decode, req.body or "")
      if not ok or type(body) ~= "table" then return send_json(res, { error = "the body must be a JSON object" }, 400) end
      return relay(res, "observe_act", { session_id = body.session_id, action = body.action, params = body.params })
    end
    if path == "/api/usage" and method == "GET" then
      return relay(res, "observe_usage", { days = math.tointeger(tonumber(form(req.query).days or "")) })
    end
    if path == "/api/routines" and method == "GET" then return relay(res, "observe_routines", { include_results = true }) end
    if path == "/api/routine_act" and method == "POST" then
      local ok, body = pcall(json.decode, req.body or "")
      if not ok or type(body) ~= "table" then return send_json(res, { error = "the body must be a JSON object" }, 400) end
      return relay(res, "observe_routine_act", { routine_id = body.routine_id, action = body.action })
    end
    if path == "/api/events" and method == "GET" then
      if not auth:origin_ok(req) then return send_json(res, { error = "foreign origin" }, 403) end
      local stream = res.stream()
      app.streams[stream] = true
      stream.on_close(function() app.streams[stream] = nil end)
      stream.comment("connected")
      return
    end
    send_json(res, { error = "no such route: " .. method .. " " .. path }, 404)
  end
end

return M
