-- The dashboard process seen from outside: where it listens (also for the dashboard itself), who
-- answers there, and making sure it runs the current code (the reasonix_dashboard tool, and each
-- server once it reaches agentd): ask the port who answers (GET /healthz: service, version, a hash
-- of its runtime dir), reuse ours when it runs this version, replace it when it runs another, start
-- one (for the fleet: it ends with agentd) when none does. Runs in a coroutine.
local uv = require "luv"
local json = require "rmcp.lib.json"
local http = require "rmcp.http"
local async = require "rmcp.lib.async"
local config = require "rmcp.config"
local proc = require "rmcp.proc"
local hash = require "rmcp.lib.hash"

local M = {}

M.service = "reasonix-mcp dashboard"

-- The address and port the dashboard listens on (REASONIX_MCP_DASHBOARD_HOST, _PORT).
function M.address()
  local host = os.getenv("REASONIX_MCP_DASHBOARD_HOST")
  if host == nil or host == "" then host = "127.0.0.1" end
  local port = math.tointeger(config.limit("dashboard_port")) or config.limits.dashboard_port
  return host, port
end

-- A short hash naming a runtime dir without printing it (what /healthz says of its home).
function M.home_tag(home)
  return hash.fnv1a64(home):sub(1, 12)
end

-- GET path on 127.0.0.1:port within ms; returns the response {status, headers, body} or nil, why.
function M.get(port, path, ms)
  return async.await(function(resume)
    local tcp, done = uv.new_tcp(), false
    local parser = http.parser(1024 * 1024, "response")
    local timer = uv.new_timer()
    local function finish(r, err)
      if done then return end
      done = true
      timer:close()
      if not tcp:is_closing() then tcp:close() end
      resume(r, err)
    end
    timer:start(ms, 0, function() finish(nil, "no answer within " .. ms .. " ms") end)
    tcp:connect("127.0.0.1", port, function(cerr)
      if cerr then return finish(nil, cerr) end
      tcp:read_start(function(rerr, chunk)
        if rerr then return finish(nil, rerr) end
        local rs, perr = parser:feed(chunk or "")
        if not rs then return finish(nil, perr) end
        if rs[1] then return finish(rs[1]) end
        if not chunk then finish(nil, "closed before a response") end
      end)
      tcp:write("GET " .. path .. " HTTP/1.1\r\nHost: 127.0.0.1:" .. port .. "\r\nConnection: close\r\n\r\n")
    end)
  end)
end

-- Who answers on port: the decoded /healthz of a dashboard, or nil.
local function probe(port)
  local r = M.get(port, "/healthz", 1000)
  if not r or r.status ~= 200 then return nil end
  local ok, h = pcall(json.decode, r.body)
  if ok and type(h) == "table" and h.service == M.service then return h end
  return nil
end

-- Starts `reasonix-mcp dashboard --with-fleet` detached (its own session, output to dashboard.log).
local function spawn(home)
  local env = {}
  for k, v in pairs(uv.os_environ()) do env[#env + 1] = k .. "=" .. v end
  local p, err = proc.spawn({
    file = require("rmcp.host").invoked, args = { "dashboard", "--with-fleet" }, cwd = "/", env = env,
    setsid = true, pdeathsig = false, stdin = "null",
    stdout = { file = home .. "/dashboard.log", append = true }, stderr = "stdout",
  })
  if not p then return nil, err end
  p:close()
  return true
end

-- Waits until pred() is true (checked every 50 ms) for at most ms; returns its last value.
local function wait_until(pred, ms)
  local deadline = uv.now() + ms
  repeat
    local v = pred()
    if v then return v end
    async.sleep(50)
    uv.update_time()
  until uv.now() >= deadline
  return pred()
end

-- Ensures this runtime dir's dashboard runs this binary's version; returns {url, started,
-- replaced, pid, password} or nil, message.
function M.ensure(port)
  local home, version = config.home(), require("rmcp.host").version
  local tag = M.home_tag(home)
  local h = probe(port)
  local replaced = false
  if h and h.home ~= tag then
    return nil, string.format("port %d is taken by the dashboard of another runtime dir; set REASONIX_MCP_DASHBOARD_PORT to another port", port)
  end
  if h and h.version ~= version then
    uv.kill(h.pid, "sigterm")
    if not wait_until(function() return probe(port) == nil end, 5000) then
      return nil, "the old dashboard (pid " .. tostring(h.pid) .. ") did not stop"
    end
    h, replaced = nil, true
  end
  local started = false
  if not h then
    local ok, err = spawn(home)
    if not ok then return nil, "cannot start the dashboard: " .. tostring(err) end
    h = wait_until(function() return probe(port) end, 5000)
    if not h then return nil, "the dashboard did not answer within 5 s; see " .. home .. "/dashboard.log" end
    started = true
  end
  return { url = string.format("http://127.0.0.1:%d/", port), started = started, replaced = replaced or nil,
           pid = h.pid, version = h.version, password = h.password }
end

local autostarted = false

-- Starts or reuses the dashboard once per server process, when it first reaches agentd (off with
-- REASONIX_MCP_DASHBOARD_AUTOSTART=0); the outcome is a log line, never a tool's error.
function M.autostart()
  if autostarted then return end
  autostarted = true
  local log = require "rmcp.lib.log"
  local v = config.env("REASONIX_MCP_DASHBOARD_AUTOSTART")
  if v == "0" or (v and (v:lower() == "false" or v:lower() == "no")) then
    log.info("dashboard autostart off (REASONIX_MCP_DASHBOARD_AUTOSTART=%s)", v)
    return
  end
  local _, port = M.address()
  async.run(function()
    local r, err = M.ensure(port)
    if not r then return log.info("dashboard autostart: %s", err) end
    log.info("dashboard %s at %s (pid %s)", r.started and "started" or "reused", r.url, tostring(r.pid))
  end, function(e) log.error("dashboard autostart failed: %s", tostring(e)) end)
end

return M
