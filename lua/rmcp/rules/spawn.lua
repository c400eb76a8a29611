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
function M.advertised(opt, value)
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
  if M.advertised(opt, wanted) then return { set = wanted, id = opt.id } end
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

-- The order options are applied in: model first, since it changes which efforts exist.
M.order = { "model", "effort", "tool_approval", "work_mode" }

return M
