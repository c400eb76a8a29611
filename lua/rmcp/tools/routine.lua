-- reasonix_routine: durable loop agents that agentd runs on a schedule: list them and their runs,
-- the curated templates, create (from scratch or a template), configure, run now, stop the current
-- run, delete. (A run's decision is answered with reasonix_respond_permission(routine_id).)
local common = require "rmcp.tools.common"

local fields = common.routine_fields()

-- What each action takes beyond action (true: required), and the agentd method it calls.
local actions = {
  list = { method = "routine_list", args = { include_prompt = false, include_results = false } },
  templates = { method = "routine_templates", args = {} },
  create = { method = "routine_create", args = { template_id = false } },
  configure = { method = "routine_configure", args = { routine_id = true } },
  run = { method = "routine_run", args = { routine_id = true } },
  stop = { method = "routine_stop", args = { routine_id = true } },
  delete = { method = "routine_delete", args = { routine_id = true } },
}
for k in pairs(fields) do
  actions.create.args[k] = false
  actions.configure.args[k] = false
end

local properties = common.routine_fields()
properties.action = { type = "string", enum = { "list", "templates", "create", "configure", "run", "stop", "delete" } }
properties.routine_id = { type = "string" }
properties.template_id = { type = "string" }
properties.include_prompt = { type = "boolean" }
properties.include_results = { type = "boolean" }

-- The agentd method and params of a call, or nil and what is wrong with it.
local function request(args)
  local spec = actions[args.action]
  local params = {}
  for k, v in pairs(args) do
    if k ~= "action" then
      if spec.args[k] == nil then return nil, k .. " does not go with action " .. args.action end
      params[k] = v
    end
  end
  for k, required in pairs(spec.args) do
    if required and args[k] == nil then return nil, "action " .. args.action .. " needs " .. k end
  end
  if args.action == "create" then
    if args.template_id then return "routine_from_template", params end
    if not args.name or not args.prompt then return nil, "action create needs name and prompt (or a template_id)" end
  end
  return spec.method, params
end

return {
  name = "reasonix_routine",
  toolset = "routines",
  title = "Routines",
  description = "Scheduled loop agents, each run a fresh session.",
  inputSchema = common.object(properties, { "action" }),
  annotations = { readOnlyHint = false, destructiveHint = true, idempotentHint = false, openWorldHint = false },
  cli = {
    positional = { "action", "routine_id" },
    sub = {
      create = { positional = { "action", "name" } },
      list = { positional = { "action" }, flags = { prompt = "include_prompt", results = "include_results" } },
      ["from-template"] = { set = { action = "create" }, positional = { "template_id" } },
      pause = { set = { action = "configure", enabled = false }, positional = { "routine_id" } },
      enable = { set = { action = "configure", enabled = true }, positional = { "routine_id" } },
      respond = { tool = "respond_permission", positional = { "routine_id", "option_id" } },
    },
    flags = { approval = "tool_approval" },
    every_orchestrator = "the person at the shell owns the machine: ctl sees and manages every orchestrator's routines",
  },
  -- Doc-only: docs/tools.md is generated from it (scripts/gen-docs.lua); tools/list never sends it.
  doc = {
    args = {
      { "action", "list, templates, create, configure, run, stop or delete." },
      { "routine_id", "The routine (configure, run, stop, delete)." },
      { "template_id", "create: copy this template (any field overrides it)." },
      { "name", "create, configure: the routine's name." },
      { "prompt", "create, configure: what each run does." },
      { "cwd", "create, configure: where runs work; default the project dir." },
      { "schedule", "manual, every N(s|m|h|d) (at least a minute), or daily HH:MM [Area/City]." },
      { "overlap", "skip (a trigger while a run works is recorded as skipped) or queue (up to 10 wait)." },
      { "delegation", "disabled, allowed or encouraged: whether a run may use Reasonix subagents." },
      { "enabled", "false pauses the schedule (run still works)." },
      { "model", "As spawn's, for every run." },
      { "effort", "As spawn's, for every run." },
      { "work_mode", "As spawn's, for every run." },
      { "tool_approval", "As spawn's, for every run; default auto." },
      { "sandbox", "As spawn's, for every run." },
      { "budget", "Each run's budget; on_exceed defaults to stop." },
      { "agent", "As spawn's, for every run." },
      { "include_prompt", "list: each routine's prompt." },
      { "include_results", "list: each run's result and transcript_path." },
    },
    result = {
      { "list", "{routines[{routine_id, name, cwd, schedule, enabled, overlap, delegation, tool_approval, next_due?, queued, current_run?, runs_total, budget?, usage?, runs[the newest 20: {run_id, trigger, status, session_id?, started_at?, ended_at?, permission_request?, usage?, result?}]}], now, concurrency, active_runs}." },
      { "templates", "{templates[{template_id, name, description, schedule, overlap, delegation, tool_approval, prompt}]}." },
      { "create, configure", "The routine row." },
      { "run", "{routine_id, started (run id), session_id, status}, or {routine_id, queued} or {routine_id, skipped (why)}." },
      { "stop", "{routine_id, stopped (run id or null), session_id?}: the schedule and queue stay." },
      { "delete", "{routine_id, deleted: true}; refused while a run is at work." },
    },
  },
  handler = function(args, ctx)
    local method, params = request(args)
    if not method then return nil, params end
    params.all = ctx.every_orchestrator
    return ctx.agentd(method, params, true)
  end,
}
