-- `reasonix-mcp dashboard`: the fleet dashboard, its own process and a client of agentd like the
-- server (a dashboard fault never touches an agent). Listens on 127.0.0.1 only
-- (REASONIX_MCP_DASHBOARD_PORT, default 8746), behind a password (auth.lua); its agentd connection
-- is an observer: it sees every orchestrator's sessions and consumes nothing. Started for a fleet
-- (`dashboard --with-fleet`: by a server or the reasonix_dashboard tool) it ends with it: when agentd
-- exits for good, or has been gone for REASONIX_MCP_DAEMON_IDLE_EXIT seconds; started by hand it
-- waits for a fleet until stopped.
local uv = require "luv"
local log = require "rmcp.lib.log"
local config = require "rmcp.config"
local async = require "rmcp.lib.async"
local json = require "rmcp.lib.json"
local auth_mod = require "rmcp.dashboard.auth"
local http = require "rmcp.dashboard.http"
local routes = require "rmcp.dashboard.routes"
local dashboard = require "rmcp.clients.dashboard"

local M = {}

-- Reads the command line: {with_fleet = bool}, or nil, message.
local function options(args)
  local o = { with_fleet = false }
  for _, a in ipairs(args or {}) do
    if a == "--with-fleet" then o.with_fleet = true
    else return nil, "unknown option '" .. a .. "' (usage: reasonix-mcp dashboard [--with-fleet])" end
  end
  return o
end

-- Starts the dashboard; returns an exit code to stop at once (a bad address, a port in use).
local function start(args)
  log.set_role("dashboard")
  local opts, oerr = options(args)
  if not opts then
    io.stderr:write("reasonix-mcp dashboard: ", oerr, "\n")
    return 2
  end
  local host, port = dashboard.address()
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
  app.health = { service = dashboard.service, version = require("rmcp.host").version,
                 home = dashboard.home_tag(config.home()), pid = uv.os_getpid(), password = source,
                 agentd = false } -- agentd: whether it is connected to the fleet now
  local client = require("rmcp.clients.agentd").connect({
    home = config.home(), orchestrator_id = "dashboard", observer = true,
    autostart = false, -- a dashboard neither starts agentd nor keeps one up: it looks at a running fleet
    client_info = { name = "reasonix-mcp dashboard", version = require("rmcp.host").version },
    on_notification = function(method, params)
      if method == "agentd_exiting" and opts.with_fleet then
        log.info("the fleet's agentd exits (%s): so does this dashboard", tostring(params.reason))
        return require("rmcp.sys").stop(0)
      end
      if method ~= "observe_changed" then return end
      local data = json.encode(params) or "{}"
      for stream in pairs(app.streams) do stream.send("changed", data) end
    end,
    -- (re)connected to an agentd: every page reloads what it shows
    on_connect = function()
      app.health.agentd = true
      for stream in pairs(app.streams) do stream.send("changed", "{}") end
    end,
    on_disconnect = function() app.health.agentd = false end,
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
  local retry, gone_since = uv.new_timer(), nil
  local give_up_ms = config.daemon_idle_exit() * 1000
  retry:start(2000, 2000, function()
    if client.peer and not client.peer.closed then gone_since = nil; return end
    gone_since = gone_since or uv.now()
    if opts.with_fleet and give_up_ms > 0 and uv.now() - gone_since >= give_up_ms then
      log.info("no agentd for %d s: this dashboard, started for the fleet, exits", give_up_ms // 1000)
      return require("rmcp.sys").stop(0)
    end
    client:request("ping", {}, function() end)
  end)
  local url = string.format("http://%s:%d/", host == "::1" and "[::1]" or host, port)
  io.stderr:write("reasonix-mcp dashboard: ", url, " (password: ", source, ")\n")
  log.info("dashboard listening on %s (password from %s)", url, source)
end

-- Runs the dashboard (the loop keeps it up); stops at once with a code when it cannot start.
function M.main(args)
  local code = start(args)
  if code then require("rmcp.sys").stop(code) end
end

return M
