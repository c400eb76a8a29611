-- Selectable models: asks a short-lived agent for its model option values and, per model, the effort
-- values it advertises; cached (keyed by the Reasonix config file's mtime) for a few minutes.
local uv = require "luv"
local json = require "rmcp.lib.json"
local reload = require "rmcp.lib.reload"
local jsonrpc = require "rmcp.lib.jsonrpc"
local config = require "rmcp.config"
local acp = require "rmcp.acp.client"
local rules_spawn = require "rmcp.rules.spawn"
local rules_usage = require "rmcp.rules.usage"
local hooks = require "rmcp.policy.hooks"

local M = {}

M.ttl_s = 300
M.max_models = 32

-- Cache key: the config file's identity (in the Reasonix home of environment map e), so editing
-- the config refreshes the list, and two homes never share one.
local function cache_key(e)
  local path = config.reasonix_home(e) .. "/config.toml"
  return path .. ":" .. (reload.stamp(path) or "none")
end

-- The models an agent of a profile without configOptions lists in its session/new result (ACP's
-- models: availableModels, currentModelId; else its model config option); say so when it lists none.
local function acp_models(agent, sid, res, profile, e)
  agent:call("session/close", { sessionId = sid })
  local listed = type(res.models) == "table" and res.models or {}
  local opt = not listed.availableModels and rules_spawn.find_option(res.configOptions, "model") -- (Codex, opencode)
  if opt then
    listed = { currentModelId = opt.currentValue, availableModels = {} }
    for _, v in ipairs(rules_spawn.values(opt)) do listed.availableModels[#listed.availableModels + 1] = { modelId = v } end
  end
  local models, found = json.array(), false
  local wanted = config.default("model", e)
  for i, m in ipairs(listed.availableModels or {}) do
    if i > M.max_models then break end
    models[#models + 1] = { ref = m.modelId, name = m.name, description = m.description, supported_efforts = json.array() }
    found = found or m.modelId == wanted
  end
  local result = { default = found and wanted or listed.currentModelId, agent_default = listed.currentModelId, models = models,
                   warnings = json.array() }
  if #models == 0 then
    result.warnings[1] = string.format("this agent (profile %s) lists no models over ACP; it runs its own default", profile.name)
  elseif not found then
    result.warnings[1] = string.format("default model %s is not one of this agent's; spawns use its default %s", wanted,
      tostring(listed.currentModelId))
  end
  return result
end

-- Queries a fresh agent (agent: its name, nil for the default) rooted at cwd, run with environment
-- map e; returns the models result or nil, error (coroutine).
local function query(cwd, version, e, agent)
  local bin, berr = config.agent_bin(e)
  local cmd, perr = rules_spawn.agent_command(bin, { purpose = "models", agent = agent, cwd = cwd, env = e })
  if not cmd then return nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, perr or berr) end
  local argv = cmd.argv
  bin = argv[1]
  local agent, err = acp.start({ bin = bin, args = { table.unpack(argv, 2) }, cwd = cwd, env = rules_spawn.command_env(cmd, e),
                                 max_line = config.limit("max_line") })
  if not agent then return nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "cannot start " .. bin .. ": " .. tostring(err)) end
  local watchdog = uv.new_timer()
  watchdog:start(30000, 0, function() agent:kill() end)
  local function done(result, e)
    if not watchdog:is_closing() then watchdog:close() end
    agent:stop()
    return result, e
  end
  local _, ierr = agent:initialize({ name = "reasonix-mcp", version = version or "0" })
  if ierr then return done(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "initialize failed: " .. ierr.message)) end
  local res, nerr = agent:call("session/new", { cwd = cwd, mcpServers = json.array() })
  if nerr then return done(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "session/new failed: " .. nerr.message)) end
  local sid = res.sessionId
  if cmd.profile.options ~= "config_options" then return done(acp_models(agent, sid, res, cmd.profile, e)) end
  local model_opt = rules_spawn.find_option(res.configOptions, "model")
  local refs = rules_spawn.values(model_opt)
  local current = model_opt and model_opt.currentValue
  local models = json.array()
  for i, ref in ipairs(refs) do
    if i > M.max_models then break end
    local opts = res.configOptions
    if ref ~= current then
      local r = agent:call("session/set_config_option", { sessionId = sid, configId = model_opt.id, value = ref })
      opts = type(r) == "table" and r.configOptions or {}
    end
    local effort = rules_spawn.find_option(opts, "effort")
    models[#models + 1] = { ref = ref, supported_efforts = json.array(rules_spawn.values(effort)),
                            default_effort = effort and effort.currentValue or nil }
  end
  agent:call("session/close", { sessionId = sid })
  local wanted = config.default("model", e)
  local result = { default = wanted, agent_default = current, models = models, warnings = json.array() }
  local found = false
  for _, ref in ipairs(refs) do found = found or ref == wanted end
  if not found then
    result.default = current
    result.warnings[1] = string.format("default model %s is not configured; spawns fall back to the agent's default %s",
      wanted, tostring(current))
  end
  return done(result)
end

-- Returns the models result of agent (nil: the default) for an orchestrator rooted at cwd with
-- environment map e, from cache when fresh, or nil and the error (coroutine).
function M.list(d, cwd, e, agent)
  agent = agent or config.default("agent", e)
  local key = cache_key(e) .. "\1" .. tostring(config.agent_bin(e)) .. "\1" .. agent
  local c = d.models_cache
  local result
  if c and c.key == key and uv.now() - c.at < M.ttl_s * 1000 then
    result = c.result
  else
    local err
    result, err = query(cwd, d.version, e, agent)
    if not result then return nil, err end
    d.models_cache = { key = key, at = uv.now(), result = result }
  end
  -- each one's price as the policies give it now (they reload; none: a cost stays unknown)
  for _, m in ipairs(result.models) do m.price = hooks.price(m.ref, rules_usage.price_spec) end
  return result
end

return M
