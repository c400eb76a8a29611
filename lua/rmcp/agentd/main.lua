-- `reasonix-mcp agentd`: the detached daemon that owns the agents. Holds $REASONIX_MCP_HOME/agentd.lock
-- for its whole life (a second daemon exits quietly), serves agentd.sock, logs to agentd.log (bounded,
-- rotated once to .1), restores persisted sessions, and shuts down cleanly on SIGTERM or request.

-- Loading the daemon's code leaves garbage (chunks, their text) that would set an idle daemon's
-- size: while the requires below run, and while M.main starts the policies and reload watch, the
-- collector starts a cycle when the heap grew 5% past what the last one left (pause 105, not Lua's
-- 200; at exactly 100 Lua 5.4 collects without end, a start taking 0.5 s); M.main sets Lua's own
-- back before the sessions are read (a history of 10,000 would be traversed over and over).
collectgarbage("incremental", 105)
local uv = require "luv"
local sock = require "rmcp.sock"
local sys = require "rmcp.sys"
local log = require "rmcp.lib.log"
local after_reply = require "rmcp.lib.after_reply"
local config = require "rmcp.config"
local store = require "rmcp.agentd.store"
local daemon = require "rmcp.agentd.daemon"
local session = require "rmcp.agentd.session"
local watch = require "rmcp.agentd.watch"
local api = require "rmcp.agentd.api"
local answers = require "rmcp.agentd.answers"
local upgrade = require "rmcp.agentd.upgrade"
local handover = require "rmcp.agentd.handover"
local idle_exit = require "rmcp.agentd.idle_exit"
local retention = require "rmcp.agentd.retention"
local health = require "rmcp.agentd.health"
local observe = require "rmcp.agentd.observe"
local lazy = require "rmcp.lib.lazy"
-- (loaded when there is a routine: an agentd without routines does not carry it)
local scheduler = lazy "rmcp.agentd.routines.scheduler"

local M = {}

-- After path was rotated to path.1: points fds 1 and 2 at the fresh path when they were on the
-- rotated file (the daemon's stdio is its log), so C-level stderr (core tracebacks) follows the log.
local function follow_stdio(path)
  local fd2, old = uv.fs_fstat(2), uv.fs_stat(path .. ".1")
  if not (fd2 and old and fd2.dev == old.dev and fd2.ino == old.ino) then return end
  local ok, err = sys.redirect_stdio(path)
  if not ok then io.stderr:write("agentd: cannot point stdio at ", path, ": ", tostring(err), "\n") end
end

-- Opens path for appending, created (or left) owner-only like every other file in the home.
local function open_private(path)
  local fd = uv.fs_open(path, "a", 384) -- 0600
  if fd then uv.fs_close(fd) end
  uv.fs_chmod(path, 384)
  return io.open(path, "a")
end

-- Moves the log at path to path.1 and puts an empty one at path without either name ever being
-- missing (a reader, or a scan of the home, between two steps finds both): the full log is
-- hard-linked to a temp name renamed over path.1, the new one is made under a temp name and renamed
-- over path. Where a hard link cannot be made, path is renamed to path.1 instead.
local function rotate(path)
  local old_tmp, new_tmp = path .. ".1.tmp", path .. ".tmp"
  os.remove(old_tmp)
  if not (uv.fs_link(path, old_tmp) and uv.fs_rename(old_tmp, path .. ".1")) then
    os.remove(old_tmp)
    os.rename(path, path .. ".1")
    return
  end
  os.remove(new_tmp)
  local f = open_private(new_tmp)
  if f then f:close() end
  if not (f and uv.fs_rename(new_tmp, path)) then
    os.remove(new_tmp)
    os.remove(path) -- path.1 holds it; open_private makes the new one
  end
end

-- A log sink that appends to path and rotates it to path.1 once it passes max bytes.
function M.rotating_sink(path, max)
  local f = open_private(path)
  local size = f and f:seek("end") or 0
  return function(line)
    if not f then return io.stderr:write(line) end
    if size + #line > max then
      f:close()
      rotate(path)
      follow_stdio(path)
      f = open_private(path)
      size = 0
      if not f then return io.stderr:write(line) end
    end
    f:write(line)
    f:flush()
    size = size + #line
  end
end

-- Raises the soft limit on open files to the hard one: each agent holds three pipes here, so the
-- usual soft limit of 1024 ends a fleet near 300 agents (`doctor` says when the hard one is low).
-- Agents start with the limit agentd started with, which a handover (handed) brings along.
local function raise_fd_limit(handed)
  local before, now, hard = require("rmcp.proc").raise_nofile(handed and math.tointeger(handed.nofile_soft))
  if not before then
    log.warn("cannot raise the open-file limit: %s", tostring(now))
  elseif now ~= before then
    log.info("open-file limit raised from %d to the hard limit %d (agents start with %d)", before, hard, before)
  end
end

-- Loads persisted sessions into d (live ones come back orphaned): with the session index a clean
-- shutdown left (agentd/session/index.lua), the records it names; the finished sessions it holds
-- follow once the daemon listens (load_history). Without a usable one, every record.
local function restore(d)
  local dir = d.paths.sessions
  local index, why = session.read_index(d)
  if not index then log.info("session index not used (%s): reading every session record", why) end
  local n, orphaned = session.restore_records(d, index and store.load_ids(dir, index.read) or store.load_all(dir))
  log.info("restored %d session(s), %d orphaned by the previous daemon%s", n, orphaned,
    index and "; the finished ones of the session index follow" or "")
end

-- Stops everything and exits: agents end (stdin closed, then killed), sessions persisted, socket removed.
local function shutdown(d, reason)
  if d.shutting_down then return end
  d.shutting_down = true
  log.info("shutting down: %s", reason)
  observe.daemon_exiting(d, reason)
  upgrade.close(d)
  idle_exit.stop(d)
  retention.stop(d)
  health.stop(d)
  if d.routines then scheduler.stop(d) end
  if d.server then d.server:close(); d.server = nil end
  for _, s in pairs(d.sessions) do
    if s.rt and s.rt.agent then s.rt.agent:stop(nil, 100) end
  end
  -- a parked session's record is on disk already (park.lua): saving it again would cost a fsync'd
  -- write per finished session (seconds for 10,000) and make every one look updated now to retention
  for _, s in pairs(d.sessions) do
    if not s.parked then session.persist(d, s) end
  end
  local started = uv.now()
  local timer = uv.new_timer()
  timer:start(50, 50, function()
    local alive = 0
    for _, s in pairs(d.sessions) do
      if s.rt and s.rt.agent and not s.rt.agent.exited then alive = alive + 1 end
    end
    if alive > 0 and uv.now() - started < 2000 then return end
    if alive > 0 then session.kill_all(d) end
    timer:close()
    after_reply.flush() -- the agent_events still waiting go out before the connections close
    for conn in pairs(d.conns) do api.close(d, conn) end
    store.close_journals()
    store.flush()
    session.write_index(d) -- last: no record is written after it
    for _, sig in ipairs(d.signals) do sig:close() end
    log.info("agentd %d exits", d.pid)
    if d.lock then sys.unlock(d.lock) end
    sys.stop(0)
  end)
end

-- Takes the home's lock (or the one a previous image of this daemon handed over with its live
-- agents); returns lock, handed (that handover, or nil), or nil, nil, the exit code after saying
-- why (another daemon owns the home: 0).
local function take_lock(paths)
  local handed = handover.take()
  if handed then return handed.lock_fd, handed end
  local lock, err, code = sys.flock(paths.lock)
  if lock then return lock end
  if code == "EWOULDBLOCK" or code == "EAGAIN" then
    io.stderr:write("reasonix-mcp agentd: another agentd owns ", paths.home, "; exiting\n")
    return nil, nil, 0
  end
  io.stderr:write("reasonix-mcp agentd: cannot lock ", paths.lock, ": ", tostring(err), "\n")
  return nil, nil, 1
end

-- Connects the daemon's hooks: what a session change wakes, how it stops, how connections close.
local function wire(d)
  -- A waiting watch gets its reply first; the agent_event fan-out follows it (lib/after_reply).
  d.on_change = function(s, event, extra)
    watch.check(d, s)
    if event then api.emit(d, s, event, extra) end
    observe.changed(d, s)
    if d.routines then scheduler.session_changed(d, s) end
    if d.integrations then require("rmcp.agentd.integrate.queue").session_changed(d, s) end
  end
  d.on_output = function(s)
    watch.check_waits(d, s)
    observe.changed(d, s)
  end
  d.shutdown = function(reason) shutdown(d, reason) end
  d.close_connections = function(flush)
    for conn in pairs(d.conns) do api.close(d, conn, flush) end
  end
end

-- Removes the worktrees a dead daemon left half-made (the module loads only when there is one).
local function recover_worktrees(d)
  require("rmcp.lib.async").run(function() session.recover_worktrees(d) end,
    function(e) log.error("worktree recovery failed: %s", tostring(e)) end)
end

-- Starts the routine scheduler when the routines dir holds anything (a routine or a run record
-- to keep); otherwise the first routine method does: an agentd without routines does not load it.
local function start_routines(d)
  local scan = uv.fs_scandir(d.paths.routines)
  if scan and uv.fs_scandir_next(scan) then scheduler.start(d) end
end

-- Takes up the merge queues a dead daemon left running (the module loads only when there is one).
local function recover_integrations(d)
  local scan = uv.fs_scandir(d.paths.integrations)
  if scan and uv.fs_scandir_next(scan) then require("rmcp.agentd.integrate.queue").recover(d) end
end

-- Shuts down on SIGTERM and SIGINT; ignores SIGHUP (a closed terminal).
local function handle_signals(d)
  for _, name in ipairs({ "sigterm", "sigint" }) do
    local sig = uv.new_signal()
    sig:start(name, function() shutdown(d, name) end)
    d.signals[#d.signals + 1] = sig
  end
  local hup = uv.new_signal()
  hup:start("sighup", function() log.info("SIGHUP ignored") end)
  d.signals[#d.signals + 1] = hup
end

-- Runs the daemon in this process (the client starts it detached; run by hand it stays in front).
function M.main(_)
  log.set_role("agentd")
  local paths = config.paths()
  local ok, err = sock.secure_dir(paths.home)
  if not ok then
    io.stderr:write("reasonix-mcp agentd: ", tostring(err), "\n")
    return sys.stop(1)
  end
  local lock, handed, exit_code = take_lock(paths)
  if not lock then return sys.stop(exit_code) end
  log.set_sink(M.rotating_sink(paths.log, config.limit("log_max_bytes")))
  local sok, serr = sock.secure_dir(paths.sessions)
  if not sok then
    log.error("sessions dir: %s", tostring(serr))
    return sys.stop(1)
  end
  raise_fd_limit(handed)
  local d = daemon.new(paths, lock)
  wire(d)
  -- Lua hot reload of policies and stateless modules (lib/reload.lua); cleanup timers follow the new rules.
  local opts = require("rmcp.reloadable").options()
  -- (a swap or a warning waiting for a caller makes the answers kept in C stale: answers.lua)
  opts.role, opts.watch = "agentd", true
  opts.on_swap = function()
    session.policy_changed(d)
    answers.changed()
  end
  opts.on_warning = answers.changed
  require("rmcp.lib.reload").init(opts)
  require("rmcp.policy.loader").init{ role = "agentd" }
  collectgarbage("incremental", 200) -- (see the top: the code is loaded)
  restore(d)
  if handed then handover.adopt_all(d, handed) end
  health.start(d)
  os.remove(paths.sock) -- we hold the lock, so any socket file left here is stale
  local srv, lerr = sock.listen(paths.sock, function(fd, peer_uid, peer_pid) api.accept(d, fd, peer_uid, peer_pid) end)
  if not srv then
    log.error("cannot listen on %s: %s", paths.sock, tostring(lerr))
    sys.unlock(lock)
    return sys.stop(1)
  end
  d.server = srv
  -- what reads the whole history waits for it (a request other than hello takes it in at once)
  session.load_history(d, function()
    recover_worktrees(d)
    retention.start(d)
    start_routines(d)
    recover_integrations(d)
  end)
  upgrade.init(d)
  idle_exit.start(d, d.shutdown)
  handle_signals(d)
  log.info("agentd %d listening on %s (version %s)", d.pid, paths.sock, tostring(d.version))
end

return M
