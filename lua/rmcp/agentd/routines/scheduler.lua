-- The routine scheduler, inside agentd (which owns the agents a run needs): triggers from schedules
-- (rules/schedule.lua) and from "run now", each started, queued or skipped by the routine's overlap
-- policy and the machine-wide limit (rules/routines.lua); each run a fresh session of the routine's
-- internal owner whose end is recorded (routines/store.lua), then closed. A run's record, with its
-- unique marker, is on disk before its session is spawned, and the session record carries the
-- marker: after a crash the run finds its session again and goes on with it (resumed with a note),
-- never spawning the work twice. Time is rmcp.lib.clock's (a test moves it).
-- Hot-reloadable: every piece of state lives in d.routines; timers call through this module's table.
local uv = require "luv"
local log = require "rmcp.lib.log"
local json = require "rmcp.lib.json"
local clock = require "rmcp.lib.clock"
local fault = require "rmcp.lib.fault"
local agentd_store = require "rmcp.agentd.store"
local store = require "rmcp.agentd.routines.store"
local session = require "rmcp.agentd.session"
local rules = require "rmcp.rules.routines"
local schedule = require "rmcp.rules.schedule"
local rules_spawn = require "rmcp.rules.spawn"
local rules_list = require "rmcp.rules.list"

local M = {}

---@class RoutineState
---@field dir string              $REASONIX_MCP_HOME/routines
---@field defs table              routine id -> definition (what <id>.json holds; routines/store.lua)
---@field runs table              routine id -> its run records, oldest first (what <id>.runs.json holds)
---@field active table            run id -> {routine_id, run}: the runs whose session works now
---@field timer userdata          the next tick
---@field stopped boolean?        the daemon is shutting down: no more ticks

-- Run statuses while the run's session works (the others are ends).
local active_status = { starting = true, running = true, awaiting_decision = true }

-- True while run's session works (its status is not an end).
function M.at_work(run)
  return active_status[run.status] == true
end

-- The active run of routine r, or nil.
function M.active_run(st, r)
  for _, a in pairs(st.active) do
    if a.routine_id == r.id then return a.run end
  end
  return nil
end

-- How many runs work now, machine-wide.
function M.active_count(st)
  local n = 0
  for _ in pairs(st.active) do n = n + 1 end
  return n
end

-- When routine r is next due from now (nil: manual or paused).
function M.plan_next(r, now)
  local p = schedule.parse(r.schedule)
  if not r.enabled or not p then return nil end
  return schedule.next_due(p, now)
end

-- Records what run's session s spent in the run ({tokens, cost?, currency?, cost_partial?,
-- estimated?}: rules/list.lua spent), why its budget stopped it (its note, when one did), and adds
-- the run's figures to routine r's totals (the same shape; a cost unknown for some run makes it partial).
local function record_usage(r, run, s)
  local u = rules_list.spent(s.usage)
  run.usage = u
  if s.budget_note and (s.exit_reason == "budget" or s.rt and s.rt.budget_stop) then run.budget = s.budget_note end
  if not u then return end
  local t = r.usage or { tokens = 0 }
  t.tokens = t.tokens + u.tokens
  if u.cost then t.cost, t.currency = (t.cost or 0) + u.cost, t.currency or u.currency end
  if u.cost_partial or (not u.cost and u.tokens > 0) or (t.cost and t.cost == u.cost and t.tokens > u.tokens) then
    t.cost_partial = t.cost ~= nil or nil -- (some runs' cost unknown: the known part)
  end
  t.estimated = t.estimated or u.estimated
  r.usage = t
end

-- Ends run of routine r with status and the session's outcome; frees its slot and starts what waits.
function M.end_run(d, r, run, status, s, why)
  local st = d.routines
  run.status = status
  run.ended_at = clock.now()
  if s then
    run.stop_reason = s.stop_reason
    local last = session.last_text(d, s)
    run.result = last and last:sub(-rules.result_max) or nil
    run.error = s.error_text
    run.transcript_path = s.transcript_path
    record_usage(r, run, s)
    store.save_def(st, r)
  end
  run.error = why or run.error
  st.active[run.run_id] = nil
  store.save_runs(st, r.id)
  log.info("routine %s: run %s %s%s", r.id, run.run_id, status, why and (" (" .. why .. ")") or "")
  if s and session.is_live(s) then
    -- the run's result is recorded here: the session is closed and owes no one a delivery
    session.mark_delivered(d, s)
    session.stop(d, s, "routine_run_ended")
  elseif s then
    session.mark_delivered(d, s)
  end
  M.dispatch(d)
end

-- Starts a run of routine r for trigger (schedule, catch_up, manual; due: when it fell due): the
-- record with its marker is saved first, then the session spawns with the marker in its record;
-- on_started(run), if given, once the session is up (or the run failed).
local function start_run(d, r, trigger, due, on_started)
  on_started = on_started or function() end
  local st = d.routines
  r.runs_total = (r.runs_total or 0) + 1
  local n = r.runs_total
  local run = { run_id = r.id .. "-" .. n, n = n, trigger = trigger, due_at = due, started_at = clock.now(),
                status = "starting", marker = string.format("routine-run:%s:%d:%s", r.id, n, agentd_store.random_hex(4)) }
  st.active[run.run_id] = { routine_id = r.id, run = run }
  store.add_run(st, r, run)
  log.info("routine %s: run %s starts (%s)", r.id, run.run_id, trigger)
  local owner = rules.owner(r.id)
  local o, err = rules_spawn.options({ task = rules.task(r, run), model = r.model, effort = r.effort,
    work_mode = r.work_mode, tool_approval = r.tool_approval, sandbox = r.sandbox, agent = r.agent, keep_alive = true,
    budget = rules.run_budget(r.budget) }, false, r.env)
  if not o then
    M.end_run(d, r, run, "failed", nil, err)
    return on_started(run)
  end
  rules_spawn.adjust(o, { cwd = r.cwd, project_dir = r.cwd, orchestrator_id = owner })
  o.env = r.env
  o.routine = { id = r.id, run_id = run.run_id, marker = run.marker }
  o.on_behalf_of = r.owner
  session.spawn(d, owner, r.cwd, o, r.cwd, function(res, serr)
    if not res then
      M.end_run(d, r, run, "failed", nil, serr and serr.message or "spawn failed")
      return on_started(run)
    end
    -- a test makes the daemon die here: between the spawn and the run's record of it
    fault.point("routine_after_spawn")
    run.session_id = res.session_id
    if run.status == "starting" then run.status = "running" end
    store.save_runs(st, r.id)
    M.session_changed(d, d.sessions[res.session_id])
    on_started(run)
  end)
end

-- A trigger of routine r: started, queued or skipped (recorded) by its overlap policy and the
-- machine-wide limit. cb (optional) gets {started = run_id, session_id?, status, error?} once the
-- run's session is up, or {queued = position} | {skipped = why} at once.
function M.trigger(d, r, trigger, due, cb)
  cb = cb or function() end
  local st = d.routines
  r.queue = r.queue or json.array()
  local action, why = rules.on_trigger(r, M.active_run(st, r) ~= nil, #r.queue, M.active_count(st) < rules.concurrency())
  if action == "skip" then
    r.runs_total = (r.runs_total or 0) + 1
    store.add_run(st, r, { run_id = r.id .. "-" .. r.runs_total, n = r.runs_total, trigger = trigger, due_at = due,
                           status = "skipped", error = why, ended_at = clock.now() })
    log.info("routine %s: %s trigger skipped: %s", r.id, trigger, why)
    return cb({ skipped = why })
  end
  if action == "queue" then
    r.queue[#r.queue + 1] = { trigger = trigger, due_at = due, queued_at = clock.now() }
    store.save_def(st, r)
    log.info("routine %s: %s trigger queued (%d waiting)", r.id, trigger, #r.queue)
    return cb({ queued = #r.queue })
  end
  start_run(d, r, trigger, due, function(run)
    cb({ started = run.run_id, session_id = run.session_id, status = run.status, error = run.error })
  end)
end

-- Starts waiting triggers while the machine-wide limit has room: the oldest first, one run per
-- routine at a time.
function M.dispatch(d)
  local st = d.routines
  if not st then return end
  while M.active_count(st) < rules.concurrency() do
    local pick
    for _, r in pairs(st.defs) do
      local q = r.queue and r.queue[1]
      if q and not M.active_run(st, r) and (not pick or q.queued_at < pick.queue[1].queued_at) then pick = r end
    end
    if not pick then return end
    local q = table.remove(pick.queue, 1)
    store.save_def(st, pick)
    start_run(d, pick, q.trigger, q.due_at)
  end
end

-- Follows session s when it is a routine run's: a decision waiting, the turn's end (the run's end:
-- recorded, then the session closed), or the agent gone.
function M.session_changed(d, s)
  local st = d.routines
  if not st or not s or type(s.routine) ~= "table" then return end
  local r = st.defs[s.routine.id]
  local run = r and store.find_run(st, r, s.routine.run_id)
  if not run or not active_status[run.status] then return end
  if s.status == "awaiting_decision" or s.status == "running" then
    if run.status ~= s.status then
      run.status = s.status
      store.save_runs(st, r.id)
    end
  elseif run.resuming then
    return -- taken up after a restart: the turn that goes on has not started yet
  elseif s.status == "idle" and s.rt and s.rt.stopping == "budget" then
    return -- its budget cut the turn: the run ends with the exit that follows (stopped)
  elseif s.status == "idle" then
    M.end_run(d, r, run, "done", s)
  elseif s.status == "exited" and s.exit_reason == "budget" then
    M.end_run(d, r, run, "stopped", s, "stopped by its budget")
  elseif s.status == "exited" then
    M.end_run(d, r, run, run.stopping and "stopped" or "failed", s, run.stopping and "stopped by " .. run.stopping or nil)
  end
end

-- Fires every enabled routine whose time has come (once, however late: a run missed while agentd was
-- down is a catch_up, and the next time counts from now), starts what waits, and sleeps until the
-- next due time (at most clock.recheck_ms).
function M.tick(d)
  local st = d.routines
  if not st or st.stopped then return end
  local now = clock.now()
  local nearest
  for _, r in pairs(st.defs) do
    if r.enabled and r.next_due then
      if r.next_due <= now then
        local late = now - r.next_due > math.max(60, clock.recheck_ms() // 1000 * 2)
        M.trigger(d, r, late and "catch_up" or "schedule", r.next_due)
        local p = schedule.parse(r.schedule)
        r.next_due = p and schedule.next_due(p, now) or nil
        store.save_def(st, r)
      end
      if r.next_due and (not nearest or r.next_due < nearest) then nearest = r.next_due end
    end
  end
  M.dispatch(d)
  local ms = clock.recheck_ms()
  if nearest then ms = math.max(10, math.min(ms, (nearest - now) * 1000)) end
  st.timer:stop()
  st.timer:start(ms, 0, function() require("rmcp.agentd.routines.scheduler").tick(d) end)
end

-- Finds run's session again after a restart: by its id, else by the marker its record carries.
local function session_of_run(d, run)
  if run.session_id and d.sessions[run.session_id] then return d.sessions[run.session_id] end
  for _, s in pairs(d.sessions) do
    if type(s.routine) == "table" and s.routine.run_id == run.run_id and s.routine.marker == run.marker then return s end
  end
  return nil
end

-- Takes up run of routine r (id), whose session s was orphaned by a restart: resumed, then told to go on.
local function resume_run(d, r, run, s)
  run.status, run.resuming = "running", true
  session.mark_delivered(d, s) -- its end is the scheduler's to record, not a host's to collect
  session.resume(d, s, {}, r.env, function(res, err)
    if not res then
      run.resuming = nil
      return M.end_run(d, r, run, "failed", s, "could not resume after a restart: " .. tostring(err and err.message))
    end
    session.send(d, s, rules.continue_text(run), "any", function(_, serr)
      run.resuming = nil
      if serr then M.end_run(d, r, run, "failed", s, "could not go on after a restart: " .. tostring(serr.message)) end
    end)
  end)
end

-- Takes up the runs a previous daemon left active: a live session (handed over) is followed, an
-- orphaned one resumed with a note to go on, one that ended meanwhile recorded; a run whose
-- session never reached the disk is recorded as interrupted (nothing ran).
local function recover(d)
  local st = d.routines
  for id, runs in pairs(st.runs) do
    local r = st.defs[id]
    for _, run in ipairs(runs) do
      if r and active_status[run.status] then
        local s = session_of_run(d, run)
        if not s then
          run.status, run.error, run.ended_at = "interrupted", "agentd stopped before the run's session was saved; nothing ran", clock.now()
          store.save_runs(st, id)
        else
          run.session_id, run.recovered = s.id, true
          st.active[run.run_id] = { routine_id = id, run = run }
          store.save_runs(st, id)
          log.info("routine %s: run %s found again by its marker (session %s, %s)", id, run.run_id, s.id, s.status)
          if s.status == "orphaned" then
            resume_run(d, r, run, s)
          elseif not session.is_live(s) or s.status == "idle" then
            M.session_changed(d, s)
            if st.active[run.run_id] then M.end_run(d, r, run, s.status == "idle" and "done" or "failed", s) end
          end
        end
      end
    end
  end
end

-- Starts the scheduler once (after the sessions are restored): loads the routines, takes up their
-- runs, and ticks. agentd starts it when its routines dir holds anything, else on the first routine
-- method (methods/routines.lua).
function M.start(d)
  if d.routines then return end
  local dir = d.paths.routines
  store.open(dir)
  d.routines = { dir = dir, defs = {}, runs = {}, active = {}, timer = uv.new_timer() }
  store.load_all(d.routines)
  recover(d)
  local n = 0
  for _ in pairs(d.routines.defs) do n = n + 1 end
  if n > 0 then log.info("routines: %d loaded", n) end
  M.tick(d)
end

-- Stops the scheduler's timer (shutdown); definitions and runs are on disk already.
function M.stop(d)
  local st = d.routines
  if not st then return end
  st.stopped = true
  if not st.timer:is_closing() then st.timer:close() end
end

-- True while routines need the daemon: a schedule to keep, a run at work or a trigger waiting.
function M.keeps_daemon(d)
  local st = d.routines
  if not st then return false end
  if next(st.active) then return true end
  for _, r in pairs(st.defs) do
    if (r.enabled and r.next_due) or (r.queue and #r.queue > 0) then return true end
  end
  return false
end

return M
