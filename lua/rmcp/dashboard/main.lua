-- `reasonix-mcp dashboard`: the fleet dashboard, its own process and a client of agentd like the
-- server (a dashboard fault never touches an agent). Listens on 127.0.0.1 only
-- (REASONIX_MCP_DASHBOARD_PORT, default 8746), behind a password (auth.lua); its agentd connection
-- is an observer: it sees every orchestrator's sessions and consumes nothing.
local uv = require "luv"
local log = require "rmcp.lib.log"
local config = require "rmcp.config"
local async = require "rmcp.lib.async"
local json = require "rmcp.lib.json"
local auth_mod = require "rmcp.dashboard.auth"
local http = require "rmcp.dashboard.http"
local routes = require "rmcp.dashboard.routes"

local M = {}

M.default_port = 8746

-- The address and port to listen on (REASONIX_MCP_DASHBOARD_HOST, _PORT).
function M.address()
  local host = os.getenv("REASONIX_MCP_DASHBOARD_HOST")
  if host == nil or host == "" then host = "127.0.0.1" end
  local port = math.tointeger(tonumber(os.getenv("REASONIX_MCP_DASHBOARD_PORT") or "")) or M.default_port
  return host, port
end

-- Starts the dashboard; returns an exit code to stop at once (a bad address, a port in use).
local function start()
  log.set_role("dashboard")
  local host, port = M.address()
  if not http.loopback(host) then
    io.stderr:write("reasonix-mcp dashboard: refusing to listen on ", host, ": loopback only (127.0.0.1 or ::1)\n")
    return 2
  end
  local ok, derr = require("rmcp.sock").secure_dir(config.home())
  if not ok then
    io.stderr:write("reasonix-mcp dashboard: ", tostring(derr), "\n")
    return 1
  end
  local password, source = auth_mod.password()
  local app = { auth = auth_mod.new(password, port), streams = {} }
  app.health = { service = require("rmcp.dashboard.launch").service, version = require("rmcp.host").version,
                 home = require("rmcp.dashboard.launch").home_tag(config.home()), pid = uv.os_getpid(), password = source }
  local client = require("rmcp.agentd_client").connect({
    home = config.home(), orchestrator_id = "dashboard", observer = true,
    autostart = false, -- a dashboard neither starts agentd nor keeps one up: it looks at a running fleet
    client_info = { name = "reasonix-mcp dashboard", version = require("rmcp.host").version },
    on_notification = function(method, params)
      if method ~= "observe_changed" then return end
      local data = json.encode(params) or "{}"
      for stream in pairs(app.streams) do stream.send("changed", data) end
    end,
    -- (re)connected to an agentd: every page reloads what it shows
    on_connect = function()
      for stream in pairs(app.streams) do stream.send("changed", "{}") end
    end,
  })
  function app.agentd(method, params)
    return async.await(function(resume) client:request(method, params, resume) end)
  end
  local server, err = http.listen(host, port, routes.handler(app))
  if not server then
    io.stderr:write("reasonix-mcp dashboard: ", err, "\n")
    return 1
  end
  -- a stream that waits quietly for a long time is kept open through proxies and idle timers
  local beat = uv.new_timer()
  beat:start(15000, 15000, function()
    for stream in pairs(app.streams) do stream.comment("keep-alive") end
  end)
  -- without agentd (not started yet, or between daemons) try again every 2 s: a dashboard never
  -- starts one, it waits for the fleet to exist
  local retry = uv.new_timer()
  retry:start(2000, 2000, function()
    if not client.peer or client.peer.closed then client:request("ping", {}, function() end) end
  end)
  local url = string.format("http://%s:%d/", host == "::1" and "[::1]" or host, port)
  io.stderr:write("reasonix-mcp dashboard: ", url, " (password: ", source, ")\n")
  log.info("dashboard listening on %s (password from %s)", url, source)
end

-- Runs the dashboard (the loop keeps it up); stops at once with a code when it cannot start.
function M.main()
  local code = start()
  if code then require("rmcp.sys").stop(code) end
end

return M
