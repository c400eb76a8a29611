-- Daemon reload on upgrade (not Lua hot reload, which is rmcp.lib.reload): agentd watches its own
-- binary and, when a new one lands, queues a safe restart. It waits until no agent is working
-- (starting, running, awaiting a decision, stopping), every live agent's terminal result was
-- delivered (watch or poll), no watch or poll answer waits for its receipt (receipts.lua), and
-- no keep_alive agent is live; then, after a short grace, it checks that the new binary runs, closes
-- the idle agents (exited, exit_reason "daemon_reload", resumable), persists, releases socket and
-- lock, starts a fresh daemon from the binary and exits. Servers reconnect on their next call. The
-- explicit `restart` method takes the same handover path at once (force: every agent is stopped
-- first, exit_reason "daemon_restart"). With REASONIX_MCP_LIVE_HANDOVER=1 a new binary instead takes
-- the live agents along (handover.lua), waiting only for what cannot move (an agent starting or
-- stopping, a request in flight, an answer on its way to the host).
-- State lives in d.upgrade, so reloading this module's code loses nothing.
local uv = require "luv"
local log = require "rmcp.lib.log"
local config = require "rmcp.config"
local proc = require "rmcp.proc"
local sys = require "rmcp.sys"
local session = require "rmcp.agentd.session"
local handover = require "rmcp.agentd.handover"
local receipts = require "rmcp.agentd.receipts"
local answers = require "rmcp.agentd.answers"
local binwatch = require "rmcp.lib.binwatch"

local M = {}

local busy = { starting = true, running = true, awaiting_decision = true }

-- True while s has an agent process that has not exited yet.
local function has_agent(s)
  return s.rt ~= nil and s.rt.agent ~= nil and not s.rt.agent.exited -- (a parked session has no runtime)
end

-- Why s keeps a queued reload waiting, or nil when it does not. An answer held until its receipt
-- (receipts.lua: one pending, a lost watch answer) holds it too, whether the agent lives or not:
-- it exists only in this daemon.
function M.blocker(d, s)
  if busy[s.status] then return s.status end
  if receipts.pending(d, s.id) then return "result on its way to the host" end
  if receipts.lost_watch(d, s.id) then return "result lost on its way to the host (the next watch gets it)" end
  if not has_agent(s) then return nil end
  if s.rt.stopping then return "stopping" end
  if s.keep_alive then return "keep_alive" end
  for _, dec in ipairs(s.pending or {}) do
    if not dec.delivered then return "decision not delivered" end
  end
  if s.terminal_pending and s.turns_drained ~= s.turns_total then return "result not delivered" end
  return nil
end

-- Everything that keeps a reload waiting: sorted list of {id, owner, why}.
function M.blockers(d)
  local out = {}
  if handover.enabled() then
    local s, why = handover.blocker(d)
    if why then out[1] = { id = s and s.id or "agentd", owner = s and s.owner, why = why } end
    return out
  end
  for id, s in pairs(d.sessions) do
    local why = M.blocker(d, s)
    if why then out[#out + 1] = { id = id, owner = s.owner, why = why } end
  end
  table.sort(out, function(a, b) return a.id < b.id end)
  return out
end

-- What a caller of orchestrator orch may see of a queued reload (nil when none is queued): the
-- reason, and what it waits for (own sessions by id, other orchestrators' only as a count).
function M.status(d, orch)
  local r = d.upgrade
  if not r or not (r.pending or r.failed) then return nil end
  if not r.pending then return { pending = false, error = r.failed } end
  local waiting, others = {}, 0
  for _, b in ipairs(M.blockers(d)) do
    if b.owner == orch or b.owner == nil then waiting[#waiting + 1] = b.id .. ": " .. b.why else others = others + 1 end
  end
  if others > 0 then waiting[#waiting + 1] = others .. " session(s) of other orchestrators" end
  return { pending = true, reason = r.pending.reason, since = r.pending.since, waiting_for = waiting, live = r.pending.live,
           state = r.handing_over and "handing_over" or (r.grace and "grace" or "waiting") }
end

-- Runs `exe version` and calls cb(true) when the binary answers like reasonix-mcp, else cb(nil, why).
function M.verify(exe, cb)
  local out, done = {}, false
  local timer = uv.new_timer()
  local function finish(ok, why)
    if done then return end
    done = true
    if not timer:is_closing() then timer:close() end
    cb(ok, why)
  end
  local p, err = proc.spawn({
    file = exe, args = { "version" }, cwd = "/", stdin = "null", stdout = "pipe", stdout_mode = "raw",
    stderr = "stdout",
    on_stdout = function(chunk) out[#out + 1] = chunk end,
    on_exit = function(code, signal)
      local text = table.concat(out)
      if code == 0 and text:match("^reasonix%-mcp ") then return finish(true) end
      finish(nil, string.format("`%s version` %s: %s", exe,
        signal ~= 0 and ("died of signal " .. signal) or ("exited " .. code), text:sub(1, 300)))
    end,
  })
  if not p then return finish(nil, "cannot run " .. exe .. ": " .. tostring(err)) end
  timer:start(10000, 0, function() p:kill("KILL") end)
end

-- Stops the periodic check and the grace timer.
local function stop_timers(r)
  for _, k in ipairs({ "tick", "grace" }) do
    if r[k] then
      if not r[k]:is_closing() then r[k]:close() end
      r[k] = nil
    end
  end
end

-- Starts watching the daemon's binary for replacement: the path it was started by (a symlink an
-- upgrade may repoint) when that still leads to it, else its real path.
function M.init(d)
  local exe = require("rmcp.host").invoked
  d.upgrade = { exe = exe }
  d.upgrade.watcher = binwatch.watch(exe, function() M.queue(d, "binary " .. exe .. " changed") end,
    { settle_ms = config.limit("reload_settle_ms"), poll_ms = config.limit("reload_poll_ms") })
  log.info("reload: watching %s", exe)
end

-- Stops watching and drops a queued reload (daemon shutdown).
function M.close(d)
  local r = d.upgrade
  if not r then return end
  stop_timers(r)
  if r.watcher then r.watcher.close(); r.watcher = nil end
end

-- Queues a safe reload for reason; it happens once nothing blocks it.
function M.queue(d, reason)
  local r = d.upgrade
  if d.shutting_down or r.handing_over then return end
  answers.changed() -- (a list shows what a queued reload waits for)
  r.failed = nil
  if r.pending then
    log.info("reload: already queued (%s); now also: %s", r.pending.reason, reason)
    r.pending.reason = reason
    return
  end
  r.pending = { reason = reason, since = os.time(), live = handover.enabled() }
  log.info("reload queued%s: %s", r.pending.live and " (live handover)" or "", reason)
  M.arm(d)
end

-- (Re)starts the periodic re-check of a queued reload.
function M.arm(d)
  local r = d.upgrade
  if r.tick then return end
  r.tick = uv.new_timer()
  r.tick:start(0, config.limit("reload_check_ms"), function() M.check(d) end)
end

-- Re-evaluates a queued reload: logs what it waits for when that changes, arms the grace once
-- nothing blocks it, disarms it when something blocks it again.
function M.check(d)
  local r = d.upgrade
  if not r or not r.pending or r.handing_over then return end
  local blockers = M.blockers(d)
  local parts = {}
  for _, b in ipairs(blockers) do parts[#parts + 1] = b.id .. " (" .. tostring(b.owner or "daemon") .. "): " .. b.why end
  local summary = table.concat(parts, "; ")
  if summary ~= r.last_summary then
    r.last_summary = summary
    if #parts > 0 then log.info("reload waits for %s", summary) end
  end
  if #blockers > 0 then
    if r.grace then
      log.info("reload: grace cancelled, a session became busy")
      r.grace:close()
      r.grace = nil
    end
    return
  end
  if r.grace then return end
  local grace = config.limit("reload_grace_ms")
  log.info("reload: nothing blocks it; handing over in %d ms", grace)
  r.grace = uv.new_timer()
  r.grace:start(grace, 0, function()
    r.grace:close()
    r.grace = nil
    if #M.blockers(d) > 0 then return M.check(d) end
    M.handover(d, { reason = r.pending.reason, exit_reason = "daemon_reload", live = r.pending.live })
  end)
end

-- Releases everything and starts the fresh daemon: stops the agents still up (the caller checked
-- which may go), persists, closes connections, socket and lock, spawns `exe agentd`, exits.
-- o: reason, exit_reason (for the stopped agents), on_refused(why) when the new binary does not run.
function M.handover(d, o)
  local r = d.upgrade
  if r.handing_over or d.shutting_down then return end
  r.handing_over = true
  stop_timers(r)
  log.info("reload: checking %s before handing over (%s)", r.exe, o.reason)
  M.verify(r.exe, function(ok, why)
    if d.shutting_down then return end
    if not ok then
      r.handing_over, r.pending, r.failed = nil, nil, "new binary refused: " .. why
      answers.changed() -- (a list shows the refusal; a restart comes here without a queued reload)
      log.error("reload: %s; this daemon keeps running (a fixed binary queues it again)", r.failed)
      if o.on_refused then o.on_refused(r.failed) end
      return
    end
    if o.on_verified then o.on_verified() end
    if o.live then return M.live(d, o) end
    -- Nothing new may arrive from here on: connections close first (blocked watches and waits are
    -- re-sent by the clients to the fresh daemon), then the agents go.
    if d.server then d.server:close(); d.server = nil end
    d.close_connections(true)
    local left, started = 0, uv.now()
    local finished = false
    local function all_gone()
      if finished or d.shutting_down then return end
      finished = true
      M.finish(d, o)
    end
    for _, s in pairs(d.sessions) do
      if has_agent(s) or session.is_live(s) then
        left = left + 1
        log.info("reload: closing %s (%s)", s.id, s.status)
        session.stop(d, s, o.exit_reason, function()
          left = left - 1
          if left == 0 then all_gone() end
        end)
      end
    end
    if left == 0 then return all_gone() end
    -- An agent that ignores stdin EOF and TERM is killed by its stop; this is the last resort.
    local guard = uv.new_timer()
    guard:start(3000, 0, function()
      guard:close()
      if finished then return end
      log.warn("reload: %d agent(s) still up after %d ms; killing them", left, uv.now() - started)
      session.kill_all(d, o.exit_reason)
      all_gone()
    end)
  end)
end

-- Live handover: pause and collect the agents (retrying briefly while one has a partial line or a
-- request in flight), close socket and connections, let replies flush, exec the new binary.
function M.live(d, o)
  local r = d.upgrade
  local tries, t0 = 0, uv.now()
  local function later(fn, ms)
    local t = uv.new_timer()
    t:start(ms, 0, function() t:close(); fn() end)
  end
  local function attempt()
    if d.shutting_down then return end
    local bs, why = handover.blocker(d)
    local st, paused
    if not why then
      st, paused = handover.collect(d)
      if not st then why = paused end
    else
      why = (bs and bs.id or "agentd") .. ": " .. why
    end
    if not st then
      tries = tries + 1
      if tries < 100 then return later(attempt, 20) end
      log.warn("handover: postponed, %s", why)
      r.handing_over = nil
      return M.arm(d)
    end
    if d.server then d.server:close(); d.server = nil end
    local chans = {}
    for conn in pairs(d.conns) do chans[#chans + 1] = conn.ch end
    d.close_connections(true)
    local flushed_at = uv.now()
    local function go()
      for _, ch in ipairs(chans) do
        if not ch:is_closed() and ch:queued() > 0 and uv.now() - flushed_at < 1000 then return later(go, 10) end
      end
      log.info("handover: agents paused and connections closed in %d ms", uv.now() - t0)
      M.close(d)
      local _, err = handover.exec(d, r.exe, st, paused, o.reason)
      log.error("handover: %s; shutting down (the agents' sessions stay resumable)", tostring(err))
      d.shutdown("live handover failed")
    end
    go()
  end
  attempt()
end

-- The last step of a handover: persist, release, start the new daemon, exit.
function M.finish(d, o)
  local r = d.upgrade
  d.shutting_down = true
  for _, s in pairs(d.sessions) do session.persist(d, s) end
  M.close(d)
  for _, sig in ipairs(d.signals) do sig:close() end
  d.signals = {}
  if d.lock then sys.unlock(d.lock); d.lock = nil end
  local starter = require("rmcp.clients.agentd").new({ home = d.paths.home, exe = r.exe })
  local ok, err = starter:spawn_daemon()
  if ok then
    log.info("reload: started a fresh agentd from %s; agentd %d exits (%s)", r.exe, d.pid, o.reason)
  else
    log.error("reload: could not start a fresh agentd (%s); the next client call starts one", tostring(err))
  end
  sys.stop(0)
end

return M
