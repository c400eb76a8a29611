-- `reasonix-mcp server`: the MCP front-end on stdio. stdin (fd 0) carries requests in, stdout (fd 1)
-- carries only protocol out; diagnostics go to stderr. Talks to agentd through server/link.lua.
local uv = require "luv"
local log = require "rmcp.lib.log"
local config = require "rmcp.config"

local M = {}

-- The server version from the C host (absent when run outside the binary).
local function host_version()
  local ok, host = pcall(require, "rmcp.host")
  return ok and type(host) == "table" and host.version or "0"
end

-- True when a launcher that can restart us is our parent (it sets REASONIX_MCP_LAUNCHER_PID to its
-- pid; agentd and agents inherit the variable but have another parent, so they never match).
local function supervised()
  local pid = tonumber(os.getenv("REASONIX_MCP_LAUNCHER_PID") or "")
  return pid ~= nil and uv.os_getppid() == pid
end

-- Stops the process with code once every queued stdout byte is written (at most ~2 s).
local function exit_when_flushed(out, code)
  local sys = require "rmcp.sys"
  local timer = uv.new_timer()
  local waited = 0
  timer:start(0, 10, function()
    waited = waited + 10
    if out:is_closed() or out:queued() == 0 or waited >= 2000 then
      timer:stop()
      timer:close()
      sys.stop(code)
    end
  end)
end

-- The server's gates (config.lua "Back-pressure"): stdin is not read while the host is behind on
-- stdout, agentd is behind on what a link wrote it, or too many host requests are in flight; the
-- agentd links are not read while the host is behind (their answers would pile up in stdout).
-- S holds out, server (once made) and the gates.
local function make_gates(S)
  local flow = require "rmcp.lib.flow"
  local max_in_flight = config.limit("max_in_flight")
  S.stdin_gate = flow.gate("server stdin", function()
    local why = flow.unread(S.out, "the host")
    if why or not S.server then return why end
    for _, link in pairs(S.server.links) do
      why = link:unread()
      if why then return why end
    end
    return flow.too_many(S.server.peer:unanswered() + S.server.lane:count(), max_in_flight, "host requests")
  end)
  S.links_gate = flow.gate("server agentd links", function() return flow.unread(S.out, "the host") end)
end

-- The server's two ways to end, over S (out, input, server, launched): stop(code, why), once; and
-- stdout_failed(e). A failed stdout means its reader is gone; a launcher that died left its last
-- words in our stdin (its receipts, which agentd waits for), so under one stdin is read to its end
-- first, which comes soon (its writer is dead; the hangup deadline bounds it); else we stop now.
local function make_stops(S)
  local stopping = false
  local function stop(code, why)
    if stopping then return end
    stopping = true
    log.info("server stopping: %s", why)
    if S.input then S.input:close() end
    if S.server and S.server.lane then S.server.lane:stop() end
    if S.server then S.server:close() end
    exit_when_flushed(S.out, code)
  end
  local function stdout_failed(e)
    local why = "stdout closed: " .. tostring(e)
    if S.launched and S.input and not S.input:is_closed() then
      log.info("server: %s; reading what our launcher wrote before stopping", why)
      return
    end
    stop(0, why)
  end
  return stop, stdout_failed
end

-- Runs the server on this process's stdio; returns at once (the loop does the work).
function M.main(_args)
  log.set_role("server")
  local channel = require "rmcp.channel"
  local mcp = require "rmcp.server.mcp"
  local link = require "rmcp.server.link"
  local max_line = config.limit("max_line")

  -- (whether a launcher runs us is asked once, at the start: a dead launcher's orphan has another
  -- parent by the time it matters)
  local S = { launched = supervised() } -- out, input, server, stdin_gate, links_gate, launched
  local stop, stdout_failed = make_stops(S)
  local err
  make_gates(S)
  local function released() S.stdin_gate:released() end
  S.out, err = channel.open(1, {
    mode = "ndjson", read = false, write = true,
    on_eof = function(e) if e then stdout_failed(e) end end,
    on_drain = function() released(); S.links_gate:released() end,
  })
  if not S.out then
    log.error("cannot open stdout: %s", tostring(err))
    return require("rmcp.sys").stop(1)
  end
  local out = S.out
  S.server = mcp.new{
    send = function(line) if not out:is_closed() then out:write(line) end end,
    project_dir = uv.cwd(),
    version = host_version(),
    supervised = S.launched,
    link = function(s, orch) return link.new(s, orch, { read_gate = S.links_gate, on_drain = released }) end,
    on_answered = released,
    -- hot reload and the user policies start once initialize is answered (they serve tools only)
    finish_start = function()
      local opts = require("rmcp.reloadable").options()
      opts.role = "server"
      require("rmcp.lib.reload").init(opts)
      require("rmcp.policy.loader").init{ role = "server" }
    end,
  }
  S.input, err = channel.open(0, {
    mode = "ndjson", read = true, write = false, max_line = max_line,
    on_line = function(line)
      S.server:receive(line)
      S.server.lane:sync()
      S.stdin_gate:check()
    end,
    on_oversize = function(n) S.server:oversize(n, max_line) end,
    on_eof = function(e) stop(0, e and ("stdin error: " .. tostring(e)) or "stdin closed") end,
  })
  local input = S.input
  if not input then
    log.error("cannot open stdin: %s", tostring(err))
    return require("rmcp.sys").stop(1)
  end
  S.stdin_gate:add(input)
  -- the forwarding tools' calls, in C while nothing needs Lua (server/lane.lua)
  S.server.lane = require("rmcp.server.lane").new(S.server, {
    host = out, input = input, max_in_flight = config.limit("max_in_flight"),
    on_settle = function() S.stdin_gate:check(); released(); S.links_gate:check() end,
  })
  if S.launched then
    -- our launcher's death hangs us up (PDEATHSIG SIGHUP): what it wrote before dying is still in
    -- stdin (its word that the host has an answer, which agentd waits for), and we read it, stop at
    -- stdin's end, and are ended 3 s after the signal if that does not happen
    local ok, herr = require("rmcp.sys").hangup_deadline(3)
    if not ok then log.warn("cannot take SIGHUP as a deadline (%s): our launcher's death ends us at once", tostring(herr)) end
  end
  log.info("server %s ready on stdio (pid %d, project %s)", host_version(), uv.os_getpid(), uv.cwd())
end

return M
