-- The routine methods of the socket API (PROTOCOL.md: routine_*) and how a routine and its runs
-- look in their answers. Definitions and runs are routines/store.lua's, triggers and runs
-- routines/scheduler.lua's; the first routine method starts the scheduler (it loads then: an agentd
-- without routines does not carry it). Hot-reloadable: the state is d.routines.
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local log = require "rmcp.lib.log"
local lazy = require "rmcp.lib.lazy"
local clock = require "rmcp.lib.clock"
local session = require "rmcp.agentd.session"
local ownership = require "rmcp.agentd.ownership"
local params = require "rmcp.agentd.methods.params"
local scheduler = lazy "rmcp.agentd.routines.scheduler"
local store = lazy "rmcp.agentd.routines.store"
local rules = lazy "rmcp.rules.routines"
local templates = lazy "rmcp.rules.routine_templates"
local fit = require "rmcp.rules.fit"
local rules_list = require "rmcp.rules.list"

local M = {}

local UNKNOWN_ROUTINE = -32010
local ROUTINE_BUSY = -32011

-- The scheduler's state, the scheduler started first if it has not yet.
local function started(d)
  scheduler.start(d)
  return d.routines
end

-- The error for a routine id the caller may not see (unknown and another's look the same).
local function unknown(id)
  return jsonrpc.error(UNKNOWN_ROUTINE, "unknown routine " .. tostring(id) .. " (not one of this orchestrator's routines)")
end

-- Routine routine_id of the caller (any with all = true: ctl, for the machine's owner); or nil, error.
local function lookup(d, conn, p)
  local r = type(p.routine_id) == "string" and started(d).defs[p.routine_id]
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
                error = run.error, recovered = run.recovered, usage = run.usage, budget = run.budget }
  if with_result then row.result, row.transcript_path = run.result, run.transcript_path end
  if scheduler.at_work(run) then
    row.permission_request = decision_of(d, run)
    local s = run.session_id and d.sessions[run.session_id]
    row.usage = s and rules_list.spent(s.usage) or nil -- (so far)
  end
  return row
end

-- A routine as the tools show it: compact; prompt and results only when asked.
local function routine_row(d, r, opts)
  opts = opts or {}
  local st = d.routines
  local runs = st.runs[r.id] or {}
  local recent = json.array()
  for i = #runs, math.max(1, #runs - rules.runs_listed + 1), -1 do recent[#recent + 1] = run_row(d, runs[i], opts.include_results) end
  local current = scheduler.active_run(st, r)
  return {
    routine_id = r.id, name = r.name, owner = opts.all and r.owner or nil, cwd = r.cwd, schedule = r.schedule,
    enabled = r.enabled, overlap = r.overlap, delegation = r.delegation, model = r.model, effort = r.effort,
    work_mode = r.work_mode, tool_approval = r.tool_approval, next_due = r.enabled and r.next_due or nil,
    queued = #(r.queue or {}), current_run = current and current.run_id or nil,
    prompt = opts.include_prompt and r.prompt or nil, runs = recent, runs_total = r.runs_total or 0,
    budget = r.budget or nil, usage = r.usage, -- (each run's budget; what its runs spent, together)
  }
end

-- routine_templates: the curated templates, whole.
function M.routine_templates(d, _, _, reply)
  started(d)
  local list = json.array()
  for _, t in ipairs(templates.list) do
    list[#list + 1] = { template_id = t.id, name = t.name, description = t.description, schedule = t.schedule,
                        overlap = t.overlap, delegation = t.delegation, tool_approval = t.tool_approval, prompt = t.prompt }
  end
  reply(fit.fit({ templates = list }))
end

-- Settles the sandbox of routine fields f (a run's spawn takes it as it is kept): the policies'
-- additions and its paths confined for conn, as a spawn's are. Returns the error, or nothing.
local function settle_sandbox(conn, f, cwd)
  if f.sandbox == nil then return nil end
  local o = { sandbox = require("rmcp.rules.sandbox").spec(f.sandbox) }
  local ok, err = params.sandbox(o, conn, { cwd = cwd, project_dir = conn.project_dir, orchestrator_id = conn.orch })
  if not ok then return err end
  f.sandbox = o.sandbox
end

-- Makes a routine of conn's orchestrator from checked fields f.
local function create(d, conn, f, reply)
  local cwd, cerr = ownership.confine(conn.project_dir, f.cwd, conn.env)
  if not cwd then return reply(nil, cerr) end
  local berr = settle_sandbox(conn, f, cwd)
  if berr then return reply(nil, berr) end
  local st = d.routines
  local now = clock.now()
  local r = { id = store.new_id(st), owner = conn.orch, env = conn.env, created_at = now, updated_at = now, runs_total = 0,
              queue = json.array() }
  for _, k in ipairs(rules.fields) do r[k] = f[k] end
  r.cwd = cwd
  if r.budget == false then r.budget = nil end -- (null: none)
  r.next_due = scheduler.plan_next(r, now)
  if not store.add(st, r) then
    return reply(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "cannot save the routine in " .. st.dir))
  end
  log.info("routine %s (%s) made by %s: %s", r.id, r.name, conn.orch, r.schedule)
  scheduler.tick(d)
  reply(fit.fit(routine_row(d, r, { include_prompt = true })))
end

-- routine_create: a routine from the caller's fields.
function M.routine_create(d, conn, p, reply)
  started(d)
  local f, err = rules.normalize(p)
  if not f then return reply(nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, err)) end
  create(d, conn, f, reply)
end

-- routine_from_template: a routine from a template, with the caller's fields over it.
function M.routine_from_template(d, conn, p, reply)
  started(d)
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
function M.routine_list(d, conn, p, reply)
  local st = started(d)
  scheduler.tick(d)
  local list = {}
  for _, r in pairs(st.defs) do
    if r.owner == conn.orch or p.all == true then list[#list + 1] = r end
  end
  table.sort(list, function(a, b) return (a.created_at or 0) > (b.created_at or 0) or
    ((a.created_at or 0) == (b.created_at or 0) and a.id < b.id) end)
  local rows = json.array()
  for _, r in ipairs(list) do
    rows[#rows + 1] = routine_row(d, r, { include_prompt = p.include_prompt == true, include_results = p.include_results == true,
                                         all = p.all == true })
  end
  reply(fit.fit({ routines = rows, now = clock.now(), concurrency = rules.concurrency(), active_runs = scheduler.active_count(st) }))
end

-- routine_configure: changes for future runs; a new schedule, or enabling, counts from now.
function M.routine_configure(d, conn, p, reply)
  local r, err = lookup(d, conn, p)
  if not r then return reply(nil, err) end
  local f, ferr = rules.normalize(p, r)
  if not f then return reply(nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, ferr)) end
  if f.cwd then
    local cwd, cerr = ownership.confine(conn.project_dir, f.cwd, conn.env)
    if not cwd then return reply(nil, cerr) end
    f.cwd = cwd
  end
  local berr = settle_sandbox(conn, f, f.cwd or r.cwd)
  if berr then return reply(nil, berr) end
  local replan = (f.schedule and f.schedule ~= r.schedule) or (f.enabled == true and not r.enabled)
  for k, v in pairs(f) do r[k] = v end
  if r.budget == false then r.budget = nil end -- (null removes it)
  if r.owner == conn.orch then r.env = conn.env end -- runs take the creator's current environment
  r.updated_at = clock.now()
  if replan then r.next_due = scheduler.plan_next(r, clock.now()) end
  store.save_def(d.routines, r)
  log.info("routine %s configured by %s", r.id, conn.orch)
  scheduler.tick(d)
  reply(fit.fit(routine_row(d, r, { include_prompt = f.prompt ~= nil })))
end

-- routine_run: a manual trigger now (also while paused), by the overlap policy; a started run
-- answers once its session is up.
function M.routine_run(d, conn, p, reply)
  local r, err = lookup(d, conn, p)
  if not r then return reply(nil, err) end
  scheduler.trigger(d, r, "manual", clock.now(), function(out)
    out.routine_id = r.id
    reply(out)
  end)
end

-- routine_stop: stops the current run (its session); the schedule and waiting triggers stay.
function M.routine_stop(d, conn, p, reply)
  local r, err = lookup(d, conn, p)
  if not r then return reply(nil, err) end
  local run = scheduler.active_run(d.routines, r)
  if not run then return reply({ routine_id = r.id, stopped = json.null, note = "no run is active" }) end
  run.stopping = conn.orch
  local s = run.session_id and d.sessions[run.session_id]
  if not s then
    scheduler.end_run(d, r, run, "stopped", nil, "stopped by " .. conn.orch .. " before its session started")
    return reply({ routine_id = r.id, stopped = run.run_id })
  end
  session.stop(d, s, "routine_stop", function()
    if d.routines.active[run.run_id] then scheduler.end_run(d, r, run, "stopped", s, "stopped by " .. conn.orch) end
    reply({ routine_id = r.id, stopped = run.run_id, session_id = s.id })
  end)
end

-- routine_respond: answers the pending decision of a routine's current run (ctl; a host answers
-- with respond_permission on the run's session, which is its creator's to answer).
function M.routine_respond(d, conn, p, reply)
  local r, err = lookup(d, conn, p)
  if not r then return reply(nil, err) end
  local run = scheduler.active_run(d.routines, r)
  local s = run and run.session_id and d.sessions[run.session_id]
  if not s then return reply(nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, "routine " .. r.id .. " has no run at work")) end
  local res, rerr = session.respond(d, s, p.option_id, p.request_id)
  if res then res.run_id = run.run_id end
  reply(res, rerr)
end

-- routine_delete: an inactive routine and its run history (the runs' sessions and transcripts stay).
function M.routine_delete(d, conn, p, reply)
  local r, err = lookup(d, conn, p)
  if not r then return reply(nil, err) end
  local run = scheduler.active_run(d.routines, r)
  if run then
    return reply(nil, jsonrpc.error(ROUTINE_BUSY, string.format("routine %s has run %s at work; "
      .. "stop it first (reasonix_routine_stop)", r.id, run.run_id)))
  end
  store.remove(d.routines, r.id)
  log.info("routine %s deleted by %s", r.id, conn.orch)
  reply({ routine_id = r.id, deleted = true })
end

return M
