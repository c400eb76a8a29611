-- How our options reach an agent of the "acp" profile kind (Claude Code, Codex, Gemini CLI, opencode):
-- the plan of ACP calls for a spawn or a configure (session/set_model and session/set_mode where the
-- agent lists models and modes, else session/set_config_option with its own option ids and values;
-- effort through its thought_level option), and the agent's offer as it stands (its models, modes and
-- config options, kept current by the calls that went through and its updates).
local json = require "rmcp.lib.json"
local spawn = require "rmcp.rules.spawn"
local profiles = require "rmcp.rules.profiles"

local M = {}

-- A config option opt's values in the shape of ACP's models or modes list: {[list] = {{[id] = v}},
-- [current] = its current value}.
local function as_list(opt, list, id, current)
  local out = { [list] = {}, [current] = opt.currentValue }
  for _, v in ipairs(spawn.values(opt)) do out[list][#out[list] + 1] = { [id] = v } end
  return out
end

-- Plans spawn option o.effort through the agent's thought-level config option opt (Codex's
-- reasoning_effort) into M.plan's out; set(key, method, params, value, opt) adds the call.
local function plan_effort(o, opt, out, set)
  if spawn.advertised(opt, o.effort) then
    if o.effort ~= opt.currentValue then set("effort", nil, nil, o.effort, opt) end
    out.effective.effort = o.effort
  elseif o.explicit.effort then
    out.errors[#out.errors + 1] = string.format("effort %q is not offered by the agent (valid: %s)", o.effort, table.concat(spawn.values(opt), ", "))
  else
    out.skipped[#out.skipped + 1] = "effort"
  end
end

-- Decides how the spawn options o reach an agent of the "acp" profile kind from its session/new
-- (or resume) result res: the model through session/set_model when the agent lists models, the
-- tool_approval through session/set_mode (the first of the profile's values the agent offers); an
-- agent that offers either only as a config option (category model / mode) gets
-- session/set_config_option; effort goes through a thought_level config option when the agent has
-- one; work_mode has no ACP form. Returns {calls = [{key, method, params, value}], errors, warnings,
-- skipped, why, effective = {model?, mode?, tool_approval?, effort?}, answer_gates} — answer_gates: a
-- yolo whose no-asking mode the agent lacks is kept by agentd answering its permission requests; why:
-- key → why an explicit option is not applied. res may be an offer (M.offer).
function M.plan(o, res, profile)
  local out = { calls = {}, errors = {}, warnings = {}, skipped = {}, effective = {}, why = {} }
  -- an explicit option not applied: a warning, or with strict an error
  local function unapplied(key, text)
    out.why[key] = text
    local list = o.strict and out.errors or out.warnings
    list[#list + 1] = text
  end
  local models = type(res) == "table" and type(res.models) == "table" and res.models or nil
  local modes = type(res) == "table" and type(res.modes) == "table" and res.modes or nil
  local opts = type(res) == "table" and res.configOptions or nil
  -- an agent that offers model or mode only as a config option (category model / mode: Codex's,
  -- opencode's) is set through it
  local model_opt = not models and spawn.find_option(opts, "model") or nil
  local mode_opt = not modes and spawn.find_option(opts, "mode") or nil
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
      if o.explicit.model then unapplied("model", "model " .. o.model .. " not applied: this agent offers no model choice over ACP")
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
      unapplied("tool_approval", "tool_approval " .. o.tool_approval .. " not applied: the agent offers none of the modes " .. table.concat(wanted, ", "))
    else
      out.skipped[#out.skipped + 1] = "tool_approval"
    end
  end
  local effort_opt = spawn.find_option(opts, "effort")
  if o.effort and effort_opt then plan_effort(o, effort_opt, out, set) end
  for _, key in ipairs({ "effort", "work_mode" }) do
    if o[key] and not (key == "effort" and effort_opt) then
      if o.explicit[key] then unapplied(key, key .. " " .. o[key] .. " not applied: this agent has no such option")
      else out.skipped[#out.skipped + 1] = key end
    end
  end
  return out
end

-- The offer of an agent from its session/new (or resume) result res: {models?, modes?, configOptions?}.
function M.offer(res)
  res = type(res) == "table" and res or {}
  local function tab(v) return type(v) == "table" and v or nil end
  return { models = tab(res.models), modes = tab(res.modes), configOptions = tab(res.configOptions) }
end

-- Records in offer that call c (of a plan) went through with the agent's answer r.
function M.record(offer, c, r)
  if type(r) == "table" and type(r.configOptions) == "table" then
    offer.configOptions = r.configOptions
  elseif c.method == "session/set_config_option" then
    for _, opt in ipairs(offer.configOptions or {}) do
      if opt.id == c.params.configId then opt.currentValue = c.value end
    end
  end
  if c.method == "session/set_model" and offer.models then offer.models.currentModelId = c.value end
  if c.method == "session/set_mode" and offer.modes then offer.modes.currentModeId = c.value end
end

-- Records in offer an agent's session/update of kind current_mode_update or config_option_update.
function M.update(offer, kind, update)
  if kind == "current_mode_update" and offer.modes and type(update.currentModeId) == "string" then
    offer.modes.currentModeId = update.currentModeId
  elseif kind == "config_option_update" and type(update.configOptions) == "table" then
    offer.configOptions = update.configOptions
  end
end

-- The offer in the configOptions shape (agent_config, the dashboard): the model and mode lists as
-- options "model" and "mode", then the agent's config options they do not stand for.
function M.view(offer)
  local out = json.array()
  local function list_option(id, current, list, field)
    local values = json.array()
    for _, v in ipairs(list or {}) do values[#values + 1] = { value = v[field], name = v.name } end
    out[#out + 1] = { id = id, category = id, currentValue = current, options = values }
  end
  local models, modes = offer.models, offer.modes
  if models then list_option("model", models.currentModelId, models.availableModels, "modelId") end
  if modes then list_option("mode", modes.currentModeId, modes.availableModes, "id") end
  for _, opt in ipairs(offer.configOptions or {}) do
    local listed = (models and (opt.id == "model" or opt.category == "model")) or (modes and (opt.id == "mode" or opt.category == "mode"))
    if not listed then out[#out + 1] = opt end
  end
  return out
end

-- True when the variable maps a and b (either nil) are the same.
local function same_vars(a, b)
  for k, v in pairs(a or {}) do if (b or {})[k] ~= v then return false end end
  for k, v in pairs(b or {}) do if (a or {})[k] ~= v then return false end end
  return true
end

-- Plans a configure of a running agent: wanted (key → our value, each the caller's) against its
-- offer, as a spawn plans; started: the tool_approval its process started with (a profile's
-- approval_env is the agent's environment, set at start only: opencode's asking). A running agent
-- that asks where the new tool_approval does not gets its requests answered by agentd
-- (answer_gates); one that does not ask where the new one would skips it, saying why.
function M.configure_plan(wanted, offer, profile, started)
  local o = { explicit = {} }
  for k, v in pairs(wanted) do o[k], o.explicit[k] = v, true end
  local plan = M.plan(o, offer, profile)
  local approval, env = wanted.tool_approval, profile.approval_env
  if approval and env and not plan.why.tool_approval and not same_vars(env[started], env[approval]) then
    if env[approval] then
      plan.why.tool_approval = string.format("tool_approval %s not applied: this agent takes its asking from its environment "
        .. "at start; stop it and resume it with tool_approval %s", approval, approval)
    else
      plan.answer_gates = true
    end
  end
  return plan
end

return M
