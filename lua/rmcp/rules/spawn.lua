-- Spawn defaults and the mapping of spawn options onto the config options the agent advertises.
local config = require "rmcp.config"
local hooks = require "rmcp.policy.hooks"
local profiles = require "rmcp.rules.profiles"
local sandbox = require "rmcp.rules.sandbox"
local usage = require "rmcp.rules.usage"
local agents = require "rmcp.rules.agents"

local M = {}

-- Our tool_approval names → the values this agent version advertises (reasonix v1.38.11).
M.approval_map = { ask = "read-only", auto = "workspace-write", yolo = "danger-full-access" }

M.efforts = { auto = true, disabled = true, low = true, medium = true, high = true, max = true, xhigh = true }
M.work_modes = { economy = true, balanced = true, delivery = true }

-- Checks one optional string field; returns an error message or nil.
local function check_string(p, k)
  if p[k] ~= nil and (type(p[k]) ~= "string" or p[k] == "") then return k .. " must be a non-empty string" end
end

-- Validates spawn/resume params and fills defaults (REASONIX_MCP_DEFAULT_* of environment map e, the
-- caller's; default ours); returns options or nil, message naming the field. Each option carries
-- explicit[k] = true when the caller chose it (explicit values fail loudly).
function M.options(p, is_resume, e)
  if not is_resume and (type(p.task) ~= "string" or p.task:match("^%s*$")) then
    return nil, "task must be a non-empty string"
  end
  for _, k in ipairs({ "cwd", "model", "work_mode", "tool_approval", "effort" }) do
    local err = check_string(p, k)
    if err then return nil, err end
  end
  if p.keep_alive ~= nil and type(p.keep_alive) ~= "boolean" then return nil, "keep_alive must be a boolean" end
  if p.idle_timeout ~= nil and (type(p.idle_timeout) ~= "number" or p.idle_timeout < -1) then
    return nil, "idle_timeout must be a number: -1 (off), 0 (immediate) or seconds"
  end
  if p.tool_approval and not M.approval_map[p.tool_approval] then
    local advertised = false
    for _, v in pairs(M.approval_map) do advertised = advertised or v == p.tool_approval end
    if not advertised then return nil, "tool_approval must be ask, auto or yolo" end
  end
  if p.work_mode and not M.work_modes[p.work_mode] then return nil, "work_mode must be economy, balanced or delivery" end
  if p.isolate ~= nil and p.isolate ~= "none" and p.isolate ~= "worktree" then return nil, "isolate must be none or worktree" end
  if p.strict ~= nil and type(p.strict) ~= "boolean" then return nil, "strict must be a boolean" end
  if p.effort and not M.efforts[p.effort] then return nil, "effort must be one of auto, disabled, low, medium, high, xhigh, max" end
  local box
  if not is_resume or p.sandbox ~= nil then
    local berr
    box, berr = sandbox.spec(p.sandbox, config.default("sandbox", e))
    if not box then return nil, berr end
  end
  local budget, buerr
  if type(p.budget) == "userdata" then -- (null: none; configure removes a budget with it)
    budget = nil
  elseif p.budget ~= nil then
    budget, buerr = usage.budget_spec(p.budget)
  elseif not is_resume then
    budget, buerr = usage.budget_from_env(config.env_of(e, "REASONIX_MCP_BUDGET_TOKENS"),
      config.env_of(e, "REASONIX_MCP_BUDGET_COST"), "REASONIX_MCP_BUDGET_TOKENS/_COST")
  end
  if buerr then return nil, buerr end
  local daily, derr = usage.budget_from_env(config.env_of(e, "REASONIX_MCP_DAILY_TOKENS"),
    config.env_of(e, "REASONIX_MCP_DAILY_COST"), "REASONIX_MCP_DAILY_TOKENS/_COST")
  if derr then return nil, derr end
  local agent, aerr
  if p.agent ~= nil or not is_resume then
    agent, aerr = agents.check(p.agent or config.default("agent", e), hooks.agents())
    if aerr then return nil, aerr end
  end
  local o = { explicit = { budget = p.budget ~= nil }, budget = budget, daily_budget = daily, agent = agent }
  for _, k in ipairs({ "model", "effort", "work_mode", "tool_approval" }) do
    o.explicit[k] = p[k] ~= nil
    o[k] = p[k] or (not is_resume and config.default(k, e)) or nil
  end
  o.task, o.cwd, o.sandbox = p.task, p.cwd, box
  o.explicit.sandbox = p.sandbox ~= nil
  if not is_resume then o.isolate = p.isolate or config.default("isolate", e) end
  o.strict = p.strict == true -- an explicit option the agent cannot take fails the spawn instead of warning
  o.keep_alive = p.keep_alive == true
  o.idle_timeout = p.idle_timeout
  o.explicit.keep_alive, o.explicit.idle_timeout = p.keep_alive ~= nil, p.idle_timeout ~= nil
  return o
end

-- Lets the policies' spawn_defaults adjust the options o of a new session (info: cwd, project_dir,
-- orchestrator_id); what the caller chose explicitly stays. Returns o.
function M.adjust(o, info)
  return hooks.spawn_defaults(o, info)
end

-- The command that runs an agent: {argv, env (extra variables, or nil), profile
-- (rules/profiles.lua), infer} — {bin, "acp"} with the reasonix profile, the built-in or policy
-- agent info.agent names (rules/agents.lua) with its profile, or what a policy's agent_command makes
-- of it (a wrapper, another ACP agent, ssh to another host). A command a policy gave without a
-- profile has infer set: its initialize answer says which agent it is (profile_for_info). info:
-- purpose ("session", "models"), agent, session_id, cwd, model, orchestrator_id, env. nil (and why)
-- when there is no agent binary and no policy supplied a command.
function M.agent_command(bin, info)
  local base, base_profile = bin and { bin, "acp" } or nil, nil
  if info.agent and info.agent ~= "reasonix" then
    local c, why = agents.command(info.agent, info.env, hooks.agents())
    if not c then return nil, why end
    base, base_profile = c.argv, c.profile
  end
  local argv, extra = hooks.agent_command(base, info)
  if not argv then return nil end
  local replaced = argv ~= base
  local profile, why = profiles.resolve(extra.profile or (not replaced and base_profile) or nil)
  if not profile then return nil, why end
  -- (no profile named by the policy, nor by the agent it added: the agent's initialize answer says)
  local infer = extra.profile == nil and (replaced or (info.agent ~= nil and info.agent ~= "reasonix" and base_profile == nil))
  return { argv = argv, env = extra.env, profile = profile, infer = infer or nil }
end

-- The profile of an agent a policy started with no profile, from its initialize answer's
-- agentInfo.name: a built-in agent's, reasonix's for reasonix, else the generic ACP one.
function M.profile_for_info(info_name)
  local spec = agents.by_agent_info(info_name)
  if spec then return profiles.resolve(spec.profile) end
  if type(info_name) == "string" and info_name:lower():find("reasonix", 1, true) then return profiles.builtin.reasonix end
  return profiles.builtin.acp
end

-- The agent's environment list (config.agent_env of map e) with the command's extra variables.
function M.command_env(cmd, e)
  local base = {}
  for k, v in pairs(e or require("luv").os_environ()) do base[k] = v end
  for k, v in pairs(cmd.env or {}) do base[k] = v end
  return config.agent_env(base)
end

-- The `doctor --json` argv that matches an agent argv ending in `acp` (through the same wrapper or
-- host), or nil for an agent command of another shape.
function M.doctor_argv(argv)
  if argv[#argv] ~= "acp" then return nil end
  local out = { table.unpack(argv, 1, #argv - 1) }
  out[#out + 1] = "doctor"
  out[#out + 1] = "--json"
  return out
end

-- Finds the config option with id (or category) in the agent's configOptions.
function M.find_option(config_options, id)
  for _, opt in ipairs(config_options or {}) do
    if opt.id == id or opt.category == id then return opt end
  end
  if id == "effort" then return M.find_option(config_options, "thought_level") end
  return nil
end

-- Lists the values an option advertises.
function M.values(opt)
  local out = {}
  for _, v in ipairs(opt and opt.options or {}) do out[#out + 1] = v.value end
  return out
end

-- True when value is among the option's advertised values.
local function advertised(opt, value)
  for _, v in ipairs(opt.options or {}) do if v.value == value then return true end end
  return false
end

-- Decides what to do for one spawn option given the agent's current configOptions (an agent whose
-- profile sets options as configOptions; profile maps tool_approval, default reasonix's).
-- Returns {set = value} to call session/set_config_option, {skip = reason, warn = text?} to skip it,
-- {keep = true} when it already holds the value, or {error = message} for an explicit value the
-- agent does not accept.
function M.step(key, o, config_options, profile)
  local wanted = o[key]
  if wanted == nil then return { keep = true } end
  local opt = M.find_option(config_options, key)
  if key == "tool_approval" then
    local values = profiles.approval_values(profile or profiles.builtin.reasonix, wanted)
    wanted = values[1] or wanted
  end
  if not opt then
    return { skip = key .. ": the agent advertises no such option" }
  end
  if opt.currentValue == wanted then return { keep = true, value = wanted } end
  if advertised(opt, wanted) then return { set = wanted, id = opt.id } end
  local valid = table.concat(M.values(opt), ", ")
  if o.explicit[key] then
    return { error = string.format("%s %q is not offered by the agent (valid: %s)", key, o[key], valid) }
  end
  local warn
  if key == "model" then
    warn = string.format("default model %s is not configured; using the agent's default %s (models: %s)",
      o[key], tostring(opt.currentValue), valid)
  else
    warn = string.format("default %s %q is not offered by the agent (valid: %s); using %s",
      key, o[key], valid, tostring(opt.currentValue))
  end
  return { skip = key .. ": default not offered", warn = warn, fallback = opt.currentValue }
end

-- A config option opt's values in the shape of ACP's models or modes list: {[list] = {{[id] = v}},
-- [current] = its current value}.
local function as_list(opt, list, id, current)
  local out = { [list] = {}, [current] = opt.currentValue }
  for _, v in ipairs(M.values(opt)) do out[list][#out[list] + 1] = { [id] = v } end
  return out
end

-- Plans spawn option o.effort through the agent's thought-level config option opt (Codex's
-- reasoning_effort) into acp_plan's out; set(key, method, params, value, opt) adds the call.
local function plan_effort(o, opt, out, set)
  if advertised(opt, o.effort) then
    if o.effort ~= opt.currentValue then set("effort", nil, nil, o.effort, opt) end
    out.effective.effort = o.effort
  elseif o.explicit.effort then
    out.errors[#out.errors + 1] = string.format("effort %q is not offered by the agent (valid: %s)", o.effort, table.concat(M.values(opt), ", "))
  else
    out.skipped[#out.skipped + 1] = "effort"
  end
end

-- Decides how the spawn options o reach an agent of the "acp" profile kind from its session/new
-- (or resume) result res: the model through session/set_model when the agent lists models, the
-- tool_approval through session/set_mode (the first of the profile's values the agent offers); an
-- agent that offers either only as a config option (category model / mode) gets session/set_config_option;
-- effort goes through a thought_level config option when the agent has one; work_mode has no ACP form. Returns {calls = [{key, method, params, value}], errors,
-- warnings, skipped, effective = {model?, mode?, tool_approval?, effort?}, answer_gates} — answer_gates: a
-- yolo whose no-asking mode the agent lacks is kept by agentd answering its permission requests.
function M.acp_plan(o, res, profile)
  local out = { calls = {}, errors = {}, warnings = {}, skipped = {}, effective = {} }
  -- an explicit option not applied: a warning, or with strict an error
  local function unapplied(text) local list = o.strict and out.errors or out.warnings; list[#list + 1] = text end
  local models = type(res) == "table" and type(res.models) == "table" and res.models or nil
  local modes = type(res) == "table" and type(res.modes) == "table" and res.modes or nil
  local opts = type(res) == "table" and res.configOptions or nil
  -- an agent that offers model or mode only as a config option (category model / mode: Codex's,
  -- opencode's) is set through it
  local model_opt = not models and M.find_option(opts, "model") or nil
  local mode_opt = not modes and M.find_option(opts, "mode") or nil
  if model_opt then models = as_list(model_opt, "availableModels", "modelId", "currentModelId") end
  if mode_opt then modes = as_list(mode_opt, "availableModes", "id", "currentModeId") end
  -- the call that sets key to value: ACP's own method, or the config option that stands for it
  local function set(key, method, params, value, opt)
    if opt then method, params = "session/set_config_option", { configId = opt.id, value = value } end
    out.calls[#out.calls + 1] = { key = key, method = method, params = params, value = value }
  end
  out.effective.model = models and models.currentModelId or nil
  out.effective.mode = modes and modes.currentModeId or nil
  if o.model then
    local ids, found = {}, false
    for _, m in ipairs(models and models.availableModels or {}) do
      ids[#ids + 1] = m.modelId
      found = found or m.modelId == o.model
    end
    if not models or #ids == 0 then
      if o.explicit.model then unapplied("model " .. o.model .. " not applied: this agent offers no model choice over ACP")
      else out.skipped[#out.skipped + 1] = "model" end
    elseif found then
      if o.model ~= models.currentModelId then
        set("model", "session/set_model", { modelId = o.model }, o.model, model_opt)
      end
    elseif o.explicit.model then
      out.errors[#out.errors + 1] = string.format("model %q is not offered by the agent (valid: %s)", o.model, table.concat(ids, ", "))
    else
      out.warnings[#out.warnings + 1] = string.format("default model %s is not offered by this agent; using its default %s (models: %s)",
        o.model, tostring(models.currentModelId), table.concat(ids, ", "))
    end
  end
  if o.tool_approval then
    local offered = {}
    for _, m in ipairs(modes and modes.availableModes or {}) do offered[m.id] = true end
    local wanted = profiles.approval_values(profile, o.tool_approval)
    local pick
    for _, v in ipairs(wanted) do
      if offered[v] then pick = v; break end
    end
    if pick then
      if pick ~= out.effective.mode then
        set("tool_approval", "session/set_mode", { modeId = pick }, pick, mode_opt)
      end
      out.effective.tool_approval = o.tool_approval
      if o.tool_approval == "yolo" and pick ~= wanted[1] then
        out.answer_gates = true
        out.warnings[#out.warnings + 1] = string.format("tool_approval yolo: this agent has no %s mode here; it runs in %s and "
          .. "agentd answers its permission requests allow_once", tostring(wanted[1]), pick)
      end
    elseif o.explicit.tool_approval then
      unapplied("tool_approval " .. o.tool_approval .. " not applied: the agent offers none of the modes " .. table.concat(wanted, ", "))
    else
      out.skipped[#out.skipped + 1] = "tool_approval"
    end
  end
  local effort_opt = M.find_option(opts, "effort")
  if o.effort and effort_opt then plan_effort(o, effort_opt, out, set) end
  for _, key in ipairs({ "effort", "work_mode" }) do
    if o[key] and not (key == "effort" and effort_opt) then
      if o.explicit[key] then unapplied(key .. " " .. o[key] .. " not applied: this agent has no such option")
      else out.skipped[#out.skipped + 1] = key end
    end
  end
  return out
end

-- The order options are applied in: model first, since it changes which efforts exist.
M.order = { "model", "effort", "tool_approval", "work_mode" }

return M
