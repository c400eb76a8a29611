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
  handler = function(args, ctx)
    local method, params = request(args)
    if not method then return nil, params end
    params.all = ctx.every_orchestrator
    return ctx.agentd(method, params, true)
  end,
}
