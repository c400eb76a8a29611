-- The launcher's server supervisor: starts `server` children (the first one is adopted from the C
-- core), replays the host's recorded handshake into a new one and lets it take over only once it
-- answered (build and swap), retires the one it replaced, restarts after a crash with backoff and
-- gives up after a run of quick crashes. It owns the recorded handshake and the launcher's own
-- notifications/message to the host; the ledger (ledger.lua) learns from it when servers come and go.
local json = require "rmcp.lib.json"
local log = require "rmcp.lib.log"
local config = require "rmcp.config"
local wire = require "rmcp.launcher.wire"
local child_mod = require "rmcp.launcher.child"
local uv = require "luv"

local after, cancel_timer = child_mod.after, child_mod.cancel_timer

local M = {}

-- The first line every server gets from us: what we do for it. `answer_fates` is the wire name of
-- "this launcher reports receipts" (agentd/PROTOCOL.md "Receipts"), as every version writes it.
local LAUNCHER_HELLO = '{"jsonrpc":"2.0","method":"$/rmcp/launcher","params":{"answer_fates":true}}'

-- A tunable: config.lua's limit launcher_<name>, honouring REASONIX_MCP_LAUNCHER_<NAME>.
local function tunable(name)
  return config.limit("launcher_" .. name)
end

local LEVELS = log.MCP_LEVELS

---@class LauncherHandshake          what a new server is replayed before it takes over
---@field init_line string?          the host's initialize, once answered
---@field protocol string?           the version that answer agreed on
---@field initialized_line string?   the host's notifications/initialized
---@field level_line string?         the host's last successful logging/setLevel

---@class LauncherSupervisor
---@field ledger LauncherLedger
---@field spawn_child fun(o: table): LauncherChild?, string?
---@field send_host fun(line: string): integer?
---@field on_line fun(child: LauncherChild, line: string)   a server wrote a line (router.lua)
---@field withdraw fun(child: LauncherChild, reason: string) its open requests to the host are cancelled there (router.lua)
---@field on_stopping fun()          stop reading the host
---@field on_active fun(child: LauncherChild) a server took over: its answers go to the host from now on
---@field on_exit fun(code: integer) every child is gone: exit the process
---@field children table<LauncherChild, boolean> live children: active, candidate and retiring
---@field n integer                  children started
---@field active LauncherChild?      the ready child host requests go to
---@field candidate LauncherChild?   a child being started (handshake replay in progress)
---@field hs LauncherHandshake
---@field log_level string           the host's logging/setLevel, for our own notifications/message
---@field next_own_id integer        the last launcher request id given
---@field streak integer             quick crashes in a row
---@field restart_timer userdata?    the restart after a crash, while it waits
---@field swap_again string?         a swap asked while a start was under way: runs after it
---@field last_pid integer?          the last server that served (for the host's notice)
---@field stopping boolean
---@field exit_code integer?
---@field finished boolean?          on_exit was called
local Supervisor = {}
Supervisor.__index = Supervisor

-- Creates the supervisor. opts: ledger, send_host, on_line, withdraw, on_stopping, on_active, on_exit
-- (see the class above), and spawn_child{n, on_line, on_exit} -> child | nil, err (default:
-- child.spawn of opts.exe).
---@return LauncherSupervisor
function M.new(opts)
  local self = setmetatable({
    ledger = opts.ledger, send_host = opts.send_host, on_line = opts.on_line, withdraw = opts.withdraw,
    on_stopping = opts.on_stopping or function() end, on_exit = opts.on_exit or function() end,
    on_active = opts.on_active or function() end,
    spawn_child = opts.spawn_child,
    children = {}, n = 0, active = nil, candidate = nil, hs = {}, log_level = "info", next_own_id = 0,
    streak = 0, restart_timer = nil, swap_again = nil, last_pid = nil, stopping = false,
  }, Supervisor)
  if not self.spawn_child then
    local exe = assert(opts.exe, "supervisor.new: exe or spawn_child required")
    self.spawn_child = function(o)
      return child_mod.spawn{ exe = exe, n = o.n, on_line = o.on_line, on_exit = o.on_exit }
    end
  end
  return self
end

-- ---- the handshake and our own words to the host ----

-- Records the host's notifications/initialized for the replay.
function Supervisor:record_initialized(line)
  self.hs.initialized_line = line
end

-- A host request left flight: records the handshake from its successful answer (result_line,
-- undecoded: only initialize's is read), and lets a draining server stop once its last request is done.
function Supervisor:settled(entry, result_line)
  if result_line then
    if entry.method == "initialize" then
      local msg = json.decode(result_line)
      self.hs.init_line = entry.line
      self.hs.protocol = type(msg) == "table" and type(msg.result) == "table" and msg.result.protocolVersion or nil
      log.info("recorded the host's MCP handshake (protocol %s)", tostring(self.hs.protocol))
    elseif entry.method == "logging/setLevel" then
      self.hs.level_line = entry.line
      if type(entry.level) == "string" and LEVELS[entry.level] then self.log_level = entry.level end
    end
  end
  for _, c in ipairs({ entry.owner, entry.prev }) do
    if c and c.retiring and not c.stdin_closed and self.ledger:owned(c) == 0 then self:close_child(c, "drained") end
  end
end

-- Sends our own notifications/message to the host when its level allows (after the handshake).
function Supervisor:tell_host(level, text, event)
  if not self.hs.init_line or self.stopping then return end
  if (LEVELS[level] or 2) < (LEVELS[self.log_level] or 2) then return end
  self.send_host(json.encode({ jsonrpc = "2.0", method = "notifications/message",
    params = { level = level, logger = "reasonix-mcp-launcher", data = { text = text, event = event } } }))
end

-- ---- starting and swapping ----

-- Starts the first server (no handshake yet: it is ready at once and sees the host's initialize).
function Supervisor:start()
  self:start_candidate("start")
end

-- Starts a server child as the candidate; it replays the handshake, then takes over (promote).
function Supervisor:start_candidate(reason)
  if self.stopping then return end
  self.n = self.n + 1
  local n = self.n
  local child, err = self.spawn_child{
    n = n,
    on_line = function(c, line) self.on_line(c, line) end,
    on_exit = function(c) self:child_exited(c) end,
  }
  if not child then
    log.error("cannot start the MCP server (%s): %s", reason, tostring(err))
    return self:candidate_failed({ n = n, started = uv.now(), failed = tostring(err) }, reason)
  end
  child.reason = reason
  child:send(LAUNCHER_HELLO)
  self.children[child] = true
  self.candidate = child
  log.info("started MCP server pid %d (%s)", child.pid, reason)
  if not self.hs.init_line then return self:promote(child) end
  self:replay(child)
end

-- Sends a launcher request to a child; on_answer(msg) gets its response.
function Supervisor:own_request(child, line, on_answer)
  self.next_own_id = self.next_own_id + 1
  local id = "rmcp-launcher-" .. self.next_own_id
  child.own[id] = on_answer
  child:send(wire.replace_id(line, json.encode(id)))
end

-- Takes a child's answer to one of our own requests (id, a string); false when it is not ours.
function Supervisor:own_answer(child, id, line)
  local on_answer = child.own[id]
  if not on_answer then return false end
  child.own[id] = nil
  on_answer(json.decode(line) or {})
  return true
end

-- Replays the recorded handshake into a new child; it takes over once initialize is answered.
function Supervisor:replay(child)
  child.timers.start = after(tunable("start_timeout_ms"), function()
    child.timers.start = nil
    if child.ready or child.exited then return end
    child.failed = "no answer to the replayed initialize"
    child:kill("KILL")
  end)
  self:own_request(child, self.hs.init_line, function(msg)
    cancel_timer(child.timers.start)
    child.timers.start = nil
    if child.exited then return end
    if msg.error ~= nil or type(msg.result) ~= "table" then
      child.failed = "the replayed initialize failed: " .. tostring(type(msg.error) == "table" and msg.error.message or msg.error)
      return child:stop(tunable("stop_grace_ms"))
    end
    if msg.result.protocolVersion ~= self.hs.protocol then
      log.warn("server pid %d negotiated protocol %s, the host agreed on %s", child.pid,
        tostring(msg.result.protocolVersion), tostring(self.hs.protocol))
    end
    if self.hs.initialized_line then child:send(self.hs.initialized_line) end
    if self.hs.level_line then self:own_request(child, self.hs.level_line, function() end) end
    self:promote(child)
  end)
end

-- Makes a ready candidate the active server: repeatable requests of the old one move to it,
-- what waited goes out, the old one drains and stops.
function Supervisor:promote(child)
  child.ready = true
  if child ~= self.candidate or self.stopping then return end
  self.candidate = nil
  local old = self.active
  self.active = child
  if old then
    local moved = self.ledger:move_repeatable(old, child)
    log.info("replaced MCP server pid %d with pid %d (%s); %d request(s) moved", old.pid, child.pid,
      child.reason, moved)
    self:tell_host("info", string.format("reasonix-mcp: MCP server restarted (%s); pid %d -> %d",
      child.reason, old.pid, child.pid),
      { event = "mcp_server_restarted", reason = child.reason, old_pid = old.pid, new_pid = child.pid })
    self:retire(old)
  elseif self.hs.init_line then
    log.info("MCP server pid %d took over (%s)", child.pid, child.reason)
    self:tell_host("info", string.format("reasonix-mcp: MCP server restarted (%s); new pid %d", child.reason, child.pid),
      { event = "mcp_server_restarted", reason = child.reason, old_pid = self.last_pid, new_pid = child.pid })
  end
  self.last_pid = child.pid
  self.on_active(child)
  self.ledger:flush(child)
  self:swap_if_asked()
end

-- Starts the swap asked for while a start was under way, if any.
function Supervisor:swap_if_asked()
  if not self.swap_again then return end
  local again = self.swap_again
  self.swap_again = nil
  self:swap(again)
end

-- Starts a graceful replacement of the active server (binary changed, restart requested).
function Supervisor:swap(reason)
  if self.stopping then return end
  if self.candidate then
    self.swap_again = reason -- once this start is over, start another: the binary moved on
    return
  end
  if not self.active then return end -- a restart after a crash is on its way; it runs the new binary
  log.info("replacing MCP server pid %d: %s", self.active.pid, reason)
  self:start_candidate(reason)
end

-- A server asked to be replaced ($/rmcp/restart): only the active one may.
function Supervisor:restart_asked(child, reason)
  if child ~= self.active then
    log.info("ignored a restart request from server pid %d: it is not the active server", child.pid)
    return
  end
  self:swap("requested by the server (" .. (reason or "the server asked for it") .. ")")
end

-- Lets a replaced server finish what it owns (bounded by drain_ms), then stops it.
function Supervisor:retire(old)
  old.retiring = true
  if self.ledger:owned(old) == 0 then return self:close_child(old, "replaced") end
  old.timers.drain = after(tunable("drain_ms"), function()
    old.timers.drain = nil
    self.ledger:drain_over(old)
    self:close_child(old, "drain time over")
  end)
end

-- Closes a child's stdin (it exits on EOF; TERM/KILL follow if it does not) and withdraws its
-- open requests to the host.
function Supervisor:close_child(child, why)
  if child.stdin_closed or child.exited then return end
  log.debug("stopping server pid %d (%s)", child.pid, why)
  self.withdraw(child, "the MCP server that asked was replaced")
  child:stop(tunable("stop_grace_ms"))
end

-- ---- exits, crashes, giving up ----

-- A child exited: the ledger settles what it had; a crash of the active server restarts it.
function Supervisor:child_exited(child)
  self.children[child] = nil
  self.withdraw(child, "the MCP server that asked exited")
  local how = child:describe_exit()
  local was_active, was_candidate = child == self.active, child == self.candidate
  if was_active then self.active = nil end
  if was_candidate then self.candidate = nil end

  if self.stopping then
    self.ledger:server_gone(child, "stopping", how)
    log.info("server pid %d exited (%s)", child.pid, how)
    return self:maybe_finish()
  end
  if was_active then
    log.warn("MCP server pid %d exited unexpectedly (%s)", child.pid, how)
    self.ledger:server_gone(child, "active", how)
    self.last_pid = child.pid
    if self.candidate then return end -- a swap already under way takes over
    return self:crashed(child, "server pid " .. child.pid .. " exited: " .. how)
  end
  if was_candidate then
    self.ledger:server_gone(child, "candidate", how)
    return self:candidate_failed(child, child.reason)
  end
  -- a retiring server: whatever it still owned is lost
  self.ledger:server_gone(child, "retired", how)
  log.info("replaced server pid %d exited (%s)", child.pid, how)
end

-- A candidate did not come up: keep the old server when there is one, else count a crash.
function Supervisor:candidate_failed(child, reason)
  local why = child.failed or (child.exited and child:describe_exit()) or "failed"
  if self.active then
    log.error("the new MCP server%s did not start (%s): %s; pid %d keeps serving", child.pid and (" pid " .. child.pid) or "",
      reason, why, self.active.pid)
    self:tell_host("warning", string.format("reasonix-mcp: could not start a new MCP server (%s): %s; the running one keeps serving",
      reason, why), { event = "mcp_server_swap_failed", reason = reason, error = why })
    return self:swap_if_asked()
  end
  return self:crashed(child, "the new server " .. (child.pid and ("pid " .. child.pid .. " ") or "") .. "failed: " .. why)
end

-- Counts a crash of the serving side and restarts with backoff, or gives up after a run of them.
function Supervisor:crashed(child, why)
  local lived = uv.now() - (child.started or uv.now())
  if lived < tunable("quick_ms") then self.streak = self.streak + 1 else self.streak = 1 end
  local max = tunable("max_crashes")
  if self.streak >= max then return self:give_up(why) end
  local delay = 0
  if self.streak > 1 then delay = math.min(tunable("backoff_ms") * 2 ^ (self.streak - 2), 5000) // 1 end
  log.warn("restarting the MCP server in %d ms (%s; %d quick crash(es) in a row, giving up at %d)", delay, why,
    self.streak, max)
  cancel_timer(self.restart_timer)
  self.restart_timer = after(delay, function()
    self.restart_timer = nil
    self:start_candidate("restart after a crash: " .. why)
  end)
end

-- Stops trying: every request in flight gets an error, the host is told, the launcher exits.
function Supervisor:give_up(why)
  local text = string.format("the MCP server keeps exiting (%d times in a row within %d s of starting; last: %s); "
    .. "the launcher gives up — check the server's stderr in the host's MCP log, run `reasonix-mcp doctor`, "
    .. "then restart the MCP server from the host", self.streak, tunable("quick_ms") // 1000, why)
  log.error("%s", text)
  self:tell_host("error", "reasonix-mcp: " .. text, { event = "mcp_server_gave_up", error = why })
  self.ledger:fail_all(text, { reason = "mcp_server_gave_up" })
  self:stop(1, "gave up restarting the server")
end

-- Shuts down: no more host input, every child stopped; on_exit(code) once all have exited.
function Supervisor:stop(code, why)
  if self.stopping then return end
  self.stopping = true
  self.exit_code = self.exit_code or code
  log.info("launcher stopping: %s", why)
  cancel_timer(self.restart_timer)
  self.on_stopping()
  self.ledger:drop_waiting()
  for c in pairs(self.children) do
    self.withdraw(c, "the MCP server is shutting down")
    c:stop(tunable("stop_grace_ms"))
  end
  self:maybe_finish()
end

-- Calls on_exit once stopping and no child is left.
function Supervisor:maybe_finish()
  if not self.stopping or self.finished or next(self.children) ~= nil then return end
  self.finished = true
  self.on_exit(self.exit_code or 0)
end

-- The server children alive now (for tests and logs): active, candidate and retiring.
function Supervisor:pids()
  local out = {}
  for c in pairs(self.children) do out[#out + 1] = c.pid end
  table.sort(out)
  return out
end

return M
