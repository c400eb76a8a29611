-- The routine scheduler, inside agentd (which owns the agents a run needs): durable definitions and
-- their latest run records as 0600 JSON in $REASONIX_MCP_HOME/routines/ (<id>.json, <id>.runs.json,
-- written atomically), triggers from schedules (rules/schedule.lua) and from "run now", each
-- handled by the routine's overlap policy and the machine-wide limit (rules/routines.lua), and each
-- run a fresh session of the routine's internal owner whose end is recorded here, then closed.
-- A run's record, with its unique marker, is on disk before its session is spawned, and the
-- session record carries the marker: after a crash the run finds its session again and goes on
-- with it (resumed with a note), never spawning the work twice.
-- Hot-reloadable: every piece of state lives in d.routines; timers call through this module's table.
local uv = require "luv"
local log = require "rmcp.lib.log"
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local files = require "rmcp.lib.files"
local clock = require "rmcp.lib.clock"
local fault = require "rmcp.lib.fault"
local store = require "rmcp.agentd.store"
local session = require "rmcp.agentd.session"
local ownership = require "rmcp.agentd.ownership"
local rules = require "rmcp.rules.routines"
local schedule = require "rmcp.rules.schedule"
local templates = require "rmcp.rules.routine_templates"
local rules_spawn = require "rmcp.rules.spawn"

local M = {}

M.UNKNOWN_ROUTINE = -32010
M.ROUTINE_BUSY = -32011

-- Run statuses while the run's session works (the others are ends).
local active_status = { starting = true, running = true, awaiting_decision = true }

---@class RoutineState
---@field dir string              $REASONIX_MCP_HOME/routines
---@field defs table              routine id -> definition (what <id>.json holds)
---@field runs table              routine id -> its run records, oldest first (what <id>.runs.json holds)
---@field active table            run id -> {routine_id, run}: the runs whose session works now
---@field timer userdata          the next tick

-- Now, in whole epoch seconds (rmcp.lib.clock: a test moves it).
function M.now()
  return clock.now()
end

-- ---- files ----------------------------------------------------------------------------------

-- Writes value as JSON to path atomically, 0600 (lib/files.write_atomic); logs and returns false on failure.
local function save_json(path, value)
  local text, err = json.encode(value)
  if not text then
    log.error("routines: cannot encode %s: %s", path, tostring(err))
    return false
  end
  local ok, werr = files.write_atomic(path, text .. "\n", true)
  if not ok then log.error("routines: cannot write %s: %s", path, tostring(werr)) end
  return ok
end

-- Saves routine r's definition.
local function save_def(st, r)
  return save_json(st.dir .. "/" .. r.id .. ".json", r)
end

-- Saves routine id's run records (the newest runs_kept).
local function save_runs(st, id)
  local runs = st.runs[id]
  while #runs > rules.runs_kept do table.remove(runs, 1) end
  return save_json(st.dir .. "/" .. id .. ".runs.json", json.array(runs))
end

-- Reads every definition and its runs from st.dir (a file that does not decode is logged and left).
local function load_all(st)
  local scan = uv.fs_scandir(st.dir)
  while scan do
    local name = uv.fs_scandir_next(scan)
    if not name then break end
    local id = name:match("^(rt%-[%w]+)%.json$")
    if id then
      local ok, r = pcall(json.decode, files.read(st.dir .. "/" .. name) or "")
      if ok and type(r) == "table" and r.id == id then
        r.queue = json.array(type(r.queue) == "table" and r.queue or {})
        st.defs[id] = r
        local rok, runs = pcall(json.decode, files.read(st.dir .. "/" .. id .. ".runs.json") or "[]")
        st.runs[id] = rok and type(runs) == "table" and runs or {}
      else
        log.error("routines: %s/%s cannot be read; it is left as it is", st.dir, name)
      end
    end
  end
end

-- ---- runs -----------------------------------------------------------------------------------

-- The run of routine r with run_id, or nil.
local function find_run(st, r, run_id)
  for _, run in ipairs(st.runs[r.id] or {}) do
    if run.run_id == run_id then return run end
  end
  return nil
end

-- The active run of routine r, or nil.
local function active_run(st, r)
  for _, a in pairs(st.active) do
    if a.routine_id == r.id then return a.run end
  end
  return nil
end

-- How many runs work now, machine-wide.
local function active_count(st)
  local n = 0
  for _ in pairs(st.active) do n = n + 1 end
  return n
end

-- Adds run record run to routine r and saves both files.
local function add_run(st, r, run)
  st.runs[r.id] = st.runs[r.id] or {}
  table.insert(st.runs[r.id], run)
  save_runs(st, r.id)
  save_def(st, r)
end

-- Ends run of routine r with status and the session's outcome; frees its slot and starts what waits.
local function end_run(d, r, run, status, s, why)
  local st = d.routines
  run.status = status
  run.ended_at = M.now()
  if s then
    run.stop_reason = s.stop_reason
    run.result = s.last_text and s.last_text:sub(-rules.result_max) or nil
    run.error = s.error_text
    run.transcript_path = s.transcript_path
  end
  run.error = why or run.error
  st.active[run.run_id] = nil
  save_runs(st, r.id)
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
  local run = { run_id = r.id .. "-" .. n, n = n, trigger = trigger, due_at = due, started_at = M.now(),
                status = "starting", marker = string.format("routine-run:%s:%d:%s", r.id, n, store.random_hex(4)) }
  st.active[run.run_id] = { routine_id = r.id, run = run }
  add_run(st, r, run)
  log.info("routine %s: run %s starts (%s)", r.id, run.run_id, trigger)
  local owner = rules.owner(r.id)
  local o, err = rules_spawn.options({ task = rules.task(r, run), model = r.model, effort = r.effort,
    work_mode = r.work_mode, tool_approval = r.tool_approval, keep_alive = true }, false, r.env)
  if not o then
    end_run(d, r, run, "failed", nil, err)
    return on_started(run)
  end
  rules_spawn.adjust(o, { cwd = r.cwd, project_dir = r.cwd, orchestrator_id = owner })
  o.env = r.env
  o.routine = { id = r.id, run_id = run.run_id, marker = run.marker }
  o.on_behalf_of = r.owner
  session.spawn(d, owner, r.cwd, o, r.cwd, function(res, serr)
    if not res then
      end_run(d, r, run, "failed", nil, serr and serr.message or "spawn failed")
      return on_started(run)
    end
    -- a test makes the daemon die here: between the spawn and the run's record of it
    fault.point("routine_after_spawn")
    run.session_id = res.session_id
    if run.status == "starting" then run.status = "running" end
    save_runs(st, r.id)
    M.session_changed(d, d.sessions[res.session_id])
    on_started(run)
  end)
end

-- A trigger of routine r: started, queued or skipped (recorded) by its overlap policy and the
-- machine-wide limit. cb (optional) gets {started = run_id, session_id?, status, error?} once the
-- run's session is up, or {queued = position} | {skipped = why} at once.
local function trigger_run(d, r, trigger, due, cb)
  cb = cb or function() end
  local st = d.routines
  r.queue = r.queue or json.array()
  local action, why = rules.on_trigger(r, active_run(st, r) ~= nil, #r.queue, active_count(st) < rules.concurrency())
  if action == "skip" then
    r.runs_total = (r.runs_total or 0) + 1
    add_run(st, r, { run_id = r.id .. "-" .. r.runs_total, n = r.runs_total, trigger = trigger, due_at = due,
                     status = "skipped", error = why, ended_at = M.now() })
    log.info("routine %s: %s trigger skipped: %s", r.id, trigger, why)
    return cb({ skipped = why })
  end
  if action == "queue" then
    r.queue[#r.queue + 1] = { trigger = trigger, due_at = due, queued_at = M.now() }
    save_def(st, r)
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
  while active_count(st) < rules.concurrency() do
    local pick
    for _, r in pairs(st.defs) do
      local q = r.queue and r.queue[1]
      if q and not active_run(st, r) and (not pick or q.queued_at < pick.queue[1].queued_at) then pick = r end
    end
    if not pick then return end
    local q = table.remove(pick.queue, 1)
    save_def(st, pick)
    start_run(d, pick, q.trigger, q.due_at)
  end
end

-- Follows session s when it is a routine run's: a decision waiting, the turn's end (the run's end:
-- recorded, then the session closed), or the agent gone.
function M.session_changed(d, s)
  local st = d.routines
  if not st or not s or type(s.routine) ~= "table" then return end
  local r = st.defs[s.routine.id]
  local run = r and find_run(st, r, s.routine.run_id)
  if not run or not active_status[run.status] then return end
  if s.status == "awaiting_decision" or s.status == "running" then
    if run.status ~= s.status then
      run.status = s.status
      save_runs(st, r.id)
    end
  elseif run.resuming then
    return -- taken up after a restart: the turn that goes on has not started yet
  elseif s.status == "idle" then
    end_run(d, r, run, "done", s)
  elseif s.status == "exited" then
    end_run(d, r, run, run.stopping and "stopped" or "failed", s, run.stopping and "stopped by " .. run.stopping or nil)
  end
end

-- ---- the schedule -----------------------------------------------------------------------------

-- Fires every enabled routine whose time has come (once, however late: a run missed while agentd was
-- down is a catch_up, and the next time counts from now), starts what waits, and sleeps until the
-- next due time (at most clock.recheck_ms).
function M.tick(d)
  local st = d.routines
  if not st or st.stopped then return end
  local now = M.now()
  local nearest
  for _, r in pairs(st.defs) do
    if r.enabled and r.next_due then
      if r.next_due <= now then
        local late = now - r.next_due > math.max(60, clock.recheck_ms() // 1000 * 2)
        trigger_run(d, r, late and "catch_up" or "schedule", r.next_due)
        local p = schedule.parse(r.schedule)
        r.next_due = p and schedule.next_due(p, now) or nil
        save_def(st, r)
      end
      if r.next_due and (not nearest or r.next_due < nearest) then nearest = r.next_due end
    end
  end
  M.dispatch(d)
  local ms = clock.recheck_ms()
  if nearest then ms = math.max(10, math.min(ms, (nearest - now) * 1000)) end
  st.timer:stop()
  st.timer:start(ms, 0, function() require("rmcp.agentd.routines").tick(d) end)
end

-- When routine r is next due from now (nil: manual or paused).
local function plan_next(r, now)
  local p = schedule.parse(r.schedule)
  if not r.enabled or not p then return nil end
  return schedule.next_due(p, now)
end

-- ---- the daemon's life ----------------------------------------------------------------------

-- Finds run's session again after a restart: by its id, else by the marker its record carries.
local function session_of_run(d, run)
  if run.session_id and d.sessions[run.session_id] then return d.sessions[run.session_id] end
  for _, s in pairs(d.sessions) do
    if type(s.routine) == "table" and s.routine.run_id == run.run_id and s.routine.marker == run.marker then return s end
  end
  return nil
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
          run.status, run.error, run.ended_at = "interrupted", "agentd stopped before the run's session was saved; nothing ran", M.now()
          save_runs(st, id)
        else
          run.session_id, run.recovered = s.id, true
          st.active[run.run_id] = { routine_id = id, run = run }
          save_runs(st, id)
          log.info("routine %s: run %s found again by its marker (session %s, %s)", id, run.run_id, s.id, s.status)
          if s.status == "orphaned" then
            run.status, run.resuming = "running", true
            session.mark_delivered(d, s) -- its end is the scheduler's to record, not a host's to collect
            session.resume(d, s, {}, r.env, function(res, err)
              if not res then
                run.resuming = nil
                return end_run(d, r, run, "failed", s, "could not resume after a restart: " .. tostring(err and err.message))
              end
              session.send(d, s, rules.continue_text(run), "any", function(_, serr)
                run.resuming = nil
                if serr then end_run(d, r, run, "failed", s, "could not go on after a restart: " .. tostring(serr.message)) end
              end)
            end)
          elseif not session.is_live(s) or s.status == "idle" then
            M.session_changed(d, s)
            if st.active[run.run_id] then end_run(d, r, run, s.status == "idle" and "done" or "failed", s) end
          end
        end
      end
    end
  end
end

-- Starts the scheduler once (after the sessions are restored): loads the routines, takes up their
-- runs, and ticks. agentd starts it when its routines dir holds anything, else on the first routine
-- method (api.lua).
function M.start(d)
  if d.routines then return end
  local dir = d.paths.routines
  uv.fs_mkdir(dir, tonumber("700", 8))
  uv.fs_chmod(dir, tonumber("700", 8))
  d.routines = { dir = dir, defs = {}, runs = {}, active = {}, timer = uv.new_timer() }
  load_all(d.routines)
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

-- ---- the API (agentd methods; the MCP tools and ctl call them) ------------------------------

-- The error for a routine id the caller may not see (unknown and another's look the same).
local function unknown(id)
  return jsonrpc.error(M.UNKNOWN_ROUTINE, "unknown routine " .. tostring(id) .. " (not one of this orchestrator's routines)")
end

-- Routine routine_id of the caller (any with all = true: ctl, for the machine's owner); or nil, error.
local function lookup(d, conn, p)
  local r = type(p.routine_id) == "string" and d.routines.defs[p.routine_id]
  if not r or (r.owner ~= conn.orch and p.all ~= true) then return nil, unknown(p.routine_id) end
  return r
end

-- The pending decision of a run's session, as watch shows it, or nil.
local function decision_of(d, run)
  local s = run.session_id and d.sessions[run.session_id]
  local dec = s and s.pending and s.pending[1]
  return dec and session.decision_view(dec) or nil
end

-- A run as routine_list shows it (result only when asked).
local function run_row(d, run, with_result)
  local row = { run_id = run.run_id, trigger = run.trigger, status = run.status, session_id = run.session_id,
                due_at = run.due_at, started_at = run.started_at, ended_at = run.ended_at, stop_reason = run.stop_reason,
                error = run.error, recovered = run.recovered }
  if with_result then row.result, row.transcript_path = run.result, run.transcript_path end
  if active_status[run.status] then row.permission_request = decision_of(d, run) end
  return row
end

-- A routine as the tools show it: compact; prompt and results only when asked.
local function routine_row(d, r, opts)
  opts = opts or {}
  local st = d.routines
  local runs = st.runs[r.id] or {}
  local recent = json.array()
  for i = #runs, math.max(1, #runs - rules.runs_listed + 1), -1 do recent[#recent + 1] = run_row(d, runs[i], opts.include_results) end
  local current = active_run(st, r)
  return {
    routine_id = r.id, name = r.name, owner = opts.all and r.owner or nil, cwd = r.cwd, schedule = r.schedule,
    enabled = r.enabled, overlap = r.overlap, delegation = r.delegation, model = r.model, effort = r.effort,
    work_mode = r.work_mode, tool_approval = r.tool_approval, next_due = r.enabled and r.next_due or nil,
    queued = #(r.queue or {}), current_run = current and current.run_id or nil,
    prompt = opts.include_prompt and r.prompt or nil, runs = recent, runs_total = r.runs_total or 0,
  }
end

M.methods = {}

-- routine_templates: the curated templates, whole.
function M.methods.routine_templates(_, _, _, reply)
  local list = json.array()
  for _, t in ipairs(templates.list) do
    list[#list + 1] = { template_id = t.id, name = t.name, description = t.description, schedule = t.schedule,
                        overlap = t.overlap, delegation = t.delegation, tool_approval = t.tool_approval, prompt = t.prompt }
  end
  reply({ templates = list })
end

-- Makes a routine of conn's orchestrator from checked fields f.
local function create(d, conn, f, reply)
  local cwd, cerr = ownership.confine(conn.project_dir, f.cwd, conn.env)
  if not cwd then return reply(nil, cerr) end
  local st = d.routines
  local id
  repeat id = "rt-" .. store.random_hex(4) until not st.defs[id]
  local now = M.now()
  local r = { id = id, owner = conn.orch, env = conn.env, created_at = now, updated_at = now, runs_total = 0,
              queue = json.array() }
  for _, k in ipairs(rules.fields) do r[k] = f[k] end
  r.cwd = cwd
  r.next_due = plan_next(r, now)
  st.defs[id], st.runs[id] = r, {}
  if not save_def(st, r) or not save_runs(st, id) then
    st.defs[id], st.runs[id] = nil, nil
    return reply(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "cannot save the routine in " .. st.dir))
  end
  log.info("routine %s (%s) made by %s: %s", id, r.name, conn.orch, r.schedule)
  M.tick(d)
  reply(routine_row(d, r, { include_prompt = true }))
end

-- routine_create: a routine from the caller's fields.
function M.methods.routine_create(d, conn, p, reply)
  local f, err = rules.normalize(p)
  if not f then return reply(nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, err)) end
  create(d, conn, f, reply)
end

-- routine_from_template: a routine from a template, with the caller's fields over it.
function M.methods.routine_from_template(d, conn, p, reply)
  local t = templates.get(p.template_id)
  if not t then
    local ids = {}
    for _, x in ipairs(templates.list) do ids[#ids + 1] = x.id end
    return reply(nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, "unknown template_id " .. tostring(p.template_id)
      .. "; the templates: " .. table.concat(ids, ", ")))
  end
  local merged = { name = t.name, prompt = t.prompt, schedule = t.schedule, overlap = t.overlap,
                   delegation = t.delegation, tool_approval = t.tool_approval }
  for _, k in ipairs(rules.fields) do
    if p[k] ~= nil then merged[k] = p[k] end
  end
  local f, err = rules.normalize(merged)
  if not f then return reply(nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, err)) end
  create(d, conn, f, reply)
end

-- routine_list: the caller's routines (every one with all = true), compact; what fell due by now
-- fires first, so the answer is the schedule's state at this moment.
function M.methods.routine_list(d, conn, p, reply)
  M.tick(d)
  local list = {}
  for _, r in pairs(d.routines.defs) do
    if r.owner == conn.orch or p.all == true then list[#list + 1] = r end
  end
  table.sort(list, function(a, b) return (a.created_at or 0) > (b.created_at or 0) or
    ((a.created_at or 0) == (b.created_at or 0) and a.id < b.id) end)
  local rows = json.array()
  for _, r in ipairs(list) do
    rows[#rows + 1] = routine_row(d, r, { include_prompt = p.include_prompt == true, include_results = p.include_results == true,
                                         all = p.all == true })
  end
  reply({ routines = rows, now = M.now(), concurrency = rules.concurrency(), active_runs = active_count(d.routines) })
end

-- routine_configure: changes for future runs; a new schedule, or enabling, counts from now.
function M.methods.routine_configure(d, conn, p, reply)
  local r, err = lookup(d, conn, p)
  if not r then return reply(nil, err) end
  local f, ferr = rules.normalize(p, r)
  if not f then return reply(nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, ferr)) end
  if f.cwd then
    local cwd, cerr = ownership.confine(conn.project_dir, f.cwd, conn.env)
    if not cwd then return reply(nil, cerr) end
    f.cwd = cwd
  end
  local replan = (f.schedule and f.schedule ~= r.schedule) or (f.enabled == true and not r.enabled)
  for k, v in pairs(f) do r[k] = v end
  if r.owner == conn.orch then r.env = conn.env end -- runs take the creator's current environment
  r.updated_at = M.now()
  if replan then r.next_due = plan_next(r, M.now()) end
  save_def(d.routines, r)
  log.info("routine %s configured by %s", r.id, conn.orch)
  M.tick(d)
  reply(routine_row(d, r, { include_prompt = f.prompt ~= nil }))
end

-- routine_run: a manual trigger now (also while paused), by the overlap policy; a started run
-- answers once its session is up.
function M.methods.routine_run(d, conn, p, reply)
  local r, err = lookup(d, conn, p)
  if not r then return reply(nil, err) end
  trigger_run(d, r, "manual", M.now(), function(out)
    out.routine_id = r.id
    reply(out)
  end)
end

-- routine_stop: stops the current run (its session); the schedule and waiting triggers stay.
function M.methods.routine_stop(d, conn, p, reply)
  local r, err = lookup(d, conn, p)
  if not r then return reply(nil, err) end
  local run = active_run(d.routines, r)
  if not run then return reply({ routine_id = r.id, stopped = json.null, note = "no run is active" }) end
  run.stopping = conn.orch
  local s = run.session_id and d.sessions[run.session_id]
  if not s then
    end_run(d, r, run, "stopped", nil, "stopped by " .. conn.orch .. " before its session started")
    return reply({ routine_id = r.id, stopped = run.run_id })
  end
  session.stop(d, s, "routine_stop", function()
    if d.routines.active[run.run_id] then end_run(d, r, run, "stopped", s, "stopped by " .. conn.orch) end
    reply({ routine_id = r.id, stopped = run.run_id, session_id = s.id })
  end)
end

-- routine_respond: answers the pending decision of a routine's current run (ctl; a host answers
-- with respond_permission on the run's session, which is its creator's to answer).
function M.methods.routine_respond(d, conn, p, reply)
  local r, err = lookup(d, conn, p)
  if not r then return reply(nil, err) end
  local run = active_run(d.routines, r)
  local s = run and run.session_id and d.sessions[run.session_id]
  if not s then return reply(nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, "routine " .. r.id .. " has no run at work")) end
  local res, rerr = session.respond(d, s, p.option_id, p.request_id)
  if res then res.run_id = run.run_id end
  reply(res, rerr)
end

-- routine_delete: an inactive routine and its run history (the runs' sessions and transcripts stay).
function M.methods.routine_delete(d, conn, p, reply)
  local r, err = lookup(d, conn, p)
  if not r then return reply(nil, err) end
  local run = active_run(d.routines, r)
  if run then
    return reply(nil, jsonrpc.error(M.ROUTINE_BUSY, string.format("routine %s has run %s at work; "
      .. "stop it first (reasonix_routine_stop)", r.id, run.run_id)))
  end
  local st = d.routines
  st.defs[r.id], st.runs[r.id] = nil, nil
  os.remove(st.dir .. "/" .. r.id .. ".json")
  os.remove(st.dir .. "/" .. r.id .. ".runs.json")
  log.info("routine %s deleted by %s", r.id, conn.orch)
  reply({ routine_id = r.id, deleted = true })
end

return M
