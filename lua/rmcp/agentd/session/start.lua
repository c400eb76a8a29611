-- Starting a session's agent and configuring it, the part spawn and resume share: the command (its
-- profile), the process with a setup watchdog, the ACP session (initialize, then session/new or
-- session/resume), the spawn options set the way the profile does, and the sandbox posture probed
-- meanwhile. Adopting a handed-over agent takes the same process options (agent_opts).
local uv = require "luv"
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local async = require "rmcp.lib.async"
local log = require "rmcp.lib.log"
local config = require "rmcp.config"
local acp = require "rmcp.acp.client"
local posture = require "rmcp.agentd.posture"
local sandbox = require "rmcp.agentd.session.sandbox"
local bwrap = require "rmcp.clients.bwrap"
local rules_sandbox = require "rmcp.rules.sandbox"
local rules_spawn = require "rmcp.rules.spawn"
local acp_options = require "rmcp.rules.acp_options"
local events = require "rmcp.agentd.session.events"
local usage = require "rmcp.agentd.session.usage"
local turns = require "rmcp.agentd.session.turns"
local revision = require "rmcp.agentd.session.revision"

local M = {}

-- The options an agent of s runs with, started or adopted: the line limits, and its traffic folded
-- into s (extra: the process fields of a start). What a stopped agent still sends once s is parked
-- (finished, its runtime on disk: session/park.lua) is dropped, a request of its refused.
function M.agent_opts(d, s, extra)
  local o = extra or {}
  o.max_line, o.stderr_tail = config.limit("max_line"), config.limit("stderr_tail")
  o.on_update = function(_, update) if s.rt then events.on_update(d, s, update) end end
  o.on_chunk = function(kind, text) if s.rt then events.on_chunk(d, s, kind, text) end end
  o.on_usage = function(params)
    if not s.rt then return end
    local others = usage.on_reasonix(d, s, params)
    if usage.must_stop(s) then turns.stop(d, s, "budget") end
    for _, o in ipairs(others or {}) do turns.stop(d, o, "budget") end -- (its fleet's or its day's budget)
  end
  o.on_permission = function(params, reply)
    if not s.rt then return reply({ outcome = { outcome = "cancelled" } }) end
    events.on_permission(d, s, params, reply)
  end
  o.on_exit = function(code, signal, agent) events.on_exit(d, s, agent, code, signal) end
  return o
end

-- Sets the spawn options o on an agent of the "acp" profile kind (acp_options.plan: set_model,
-- set_mode, its config options) and records what holds: s's options are the agent's effective
-- values, never the ones asked for; rt.acp_offer what the agent offers now, rt.config_options its
-- view in the configOptions shape. Returns true, or nil and {what, err} for an explicit value the
-- agent refuses.
local function apply_acp_options(s, agent, o, res, profile, skipped, warnings)
  local rt = s.rt
  local plan = acp_options.plan(o, res, profile)
  if #plan.errors > 0 then
    return nil, { what = "spawn option refused", err = jsonrpc.error(jsonrpc.INVALID_PARAMS, table.concat(plan.errors, "; ")) }
  end
  for _, w in ipairs(plan.warnings) do warnings[#warnings + 1] = w end
  for _, k in ipairs(plan.skipped) do skipped[#skipped + 1] = k end
  local eff = plan.effective
  rt.acp_offer = acp_options.offer(res)
  for _, c in ipairs(plan.calls) do
    local params = { sessionId = s.acp_session_id }
    for k, v in pairs(c.params) do params[k] = v end
    local r, cerr = agent:call(c.method, params)
    if cerr then
      if o.explicit[c.key] then
        return nil, { what = "setting " .. c.key .. " failed", err = cerr }
      end
      warnings[#warnings + 1] = string.format("could not set %s to %s: %s", c.key, c.value, tostring(cerr.message))
      if c.key == "tool_approval" then eff.tool_approval = nil; plan.answer_gates = nil end
      if c.key == "effort" then eff.effort = nil end
    else
      acp_options.record(rt.acp_offer, c, r)
      if c.key == "model" then eff.model = c.value end
    end
  end
  revision.set(s, "model", eff.model)
  s.tool_approval, s.effort, s.work_mode = eff.tool_approval, eff.effort, nil
  rt.answer_gates = plan.answer_gates
  rt.config_options = acp_options.view(rt.acp_offer)
  return true
end

-- Sets the spawn options o through the agent's configOptions (a profile of the "config_options"
-- kind: rules_spawn.step for each option) and records on s what holds. options: what the agent
-- advertises. Returns the options it advertises now, or nil and {what, err} for a refusal.
local function apply_config_options(s, agent, o, options, profile, skipped, warnings)
  for _, key in ipairs(rules_spawn.order) do
    local step = rules_spawn.step(key, o, options, profile)
    if step.error then return nil, { what = "spawn option refused", err = jsonrpc.error(jsonrpc.INVALID_PARAMS, step.error) } end
    if step.set then
      local r, serr = agent:call("session/set_config_option", { sessionId = s.acp_session_id, configId = step.id, value = step.set })
      if serr then
        if o.explicit[key] then return nil, { what = "setting " .. key .. " failed", err = serr } end
        warnings[#warnings + 1] = string.format("could not set %s to %s: %s", key, step.set, tostring(serr.message))
        revision.set(s, key, nil)
      else
        if type(r) == "table" and type(r.configOptions) == "table" then options = r.configOptions end
        revision.set(s, key, o[key])
      end
    elseif step.skip then
      if o.strict and o.explicit[key] then
        return nil, { what = "spawn option refused", err = jsonrpc.error(jsonrpc.INVALID_PARAMS,
          key .. " " .. tostring(o[key]) .. " not applied: " .. step.skip .. " (strict)") }
      end
      if step.warn then
        warnings[#warnings + 1] = step.warn
        revision.set(s, key, key == "model" and step.fallback or nil)
      else
        skipped[#skipped + 1] = key
      end
    else
      revision.set(s, key, o[key])
    end
  end
  return options
end

-- Notes the spawn options o as not applied, for a profile that sets none (refused when strict and
-- explicit). Returns true, or nil and {what, err}.
local function skip_options(s, o, skipped, warnings)
  for _, key in ipairs(rules_spawn.order) do
    if o[key] and o.explicit[key] and o.strict then
      return nil, { what = "spawn option refused", err = jsonrpc.error(jsonrpc.INVALID_PARAMS,
        key .. " not applied: this agent's profile sets no options (strict)") }
    elseif o[key] and o.explicit[key] then warnings[#warnings + 1] = key .. " not applied: this agent's profile sets no options"
    elseif o[key] then skipped[#skipped + 1] = key end
    revision.set(s, key, nil)
  end
  return true
end

-- Sets the spawn options o on the agent the way its profile does (ACP calls, configOptions, or
-- none) and records on s what holds: the effective options, the skipped ones and the warnings, and
-- what the agent advertises (rt.config_options). res: the agent's session/new or resume result.
-- Returns true, or nil and {what, err}.
local function configure_agent(s, agent, o, res, profile)
  local options = type(res) == "table" and res.configOptions or {}
  local skipped, warnings = json.array(), json.array()
  local ok, err = true, nil
  if profile.options == "acp" then
    ok, err = apply_acp_options(s, agent, o, res, profile, skipped, warnings)
    options = s.rt.config_options
  elseif profile.options == "config_options" then
    options, err = apply_config_options(s, agent, o, options, profile, skipped, warnings)
    ok = options ~= nil
  elseif profile.options == "none" then
    ok, err = skip_options(s, o, skipped, warnings)
  end
  if not ok then return nil, err end
  local model_opt = rules_spawn.find_option(options, "model")
  if model_opt then revision.set(s, "model", model_opt.currentValue) end
  s.rt.config_options = options
  s.skipped_options, s.warnings = skipped, warnings
  return true
end

-- Opens the agent's ACP session for s: initialize (the agent's name and version go on s), then
-- session/new, or for mode "resume" session/resume of s's agent session (session/load where the
-- agent has only that: it replays the history to us). Returns the result; or nil, what failed and
-- the error. Coroutine.
local function open_session(d, s, agent, mode)
  local init, ierr = agent:initialize({ name = "reasonix-mcp", version = d.version or "0" })
  if ierr then return nil, "ACP initialize failed", ierr end
  local info = type(init) == "table" and type(init.agentInfo) == "table" and init.agentInfo or {}
  s.agent_info = { name = type(info.name) == "string" and info.name or nil, version = type(info.version) == "string" and info.version or nil }
  if s.rt.infer_profile then -- (a policy's command with no profile: the agent says what it is)
    s.rt.profile = rules_spawn.profile_for_info(s.agent_info.name)
    s.agent_profile = s.rt.profile.name
  end
  local caps = type(init) == "table" and type(init.agentCapabilities) == "table" and init.agentCapabilities or {}
  if mode == "resume" then
    -- (an agent that lists no sessionCapabilities at all, as Gemini CLI, has no session/resume either)
    local sc = type(caps.sessionCapabilities) == "table" and caps.sessionCapabilities or {}
    local method = "session/resume"
    if sc.resume == nil and caps.loadSession == true then method = "session/load" end
    local res, rerr = agent:call(method, { sessionId = s.acp_session_id, cwd = s.cwd, mcpServers = json.array() })
    if rerr then return nil, method .. " failed", rerr end
    return res
  end
  local res, rerr = agent:call("session/new", { cwd = s.cwd, mcpServers = json.array() })
  if rerr then return nil, "session/new failed", rerr end
  if type(res) ~= "table" or type(res.sessionId) ~= "string" then return nil, "session/new failed", "no sessionId in the result" end
  s.acp_session_id = res.sessionId
  return res
end

-- The command that runs s's agent with the spawn options o (rules/spawn: the profile's argv, the
-- policies' say), its profile recorded on s; or nil and the error.
local function agent_command(s, o)
  local bin, berr = config.agent_bin(o.env)
  local cmd, perr = rules_spawn.agent_command(bin, { purpose = "session", agent = s.agent, session_id = s.id, cwd = s.cwd,
                                                     model = o.model or s.model, orchestrator_id = s.owner, env = o.env })
  if not cmd then return nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, perr or berr) end
  s.rt.infer_profile = cmd.infer or nil
  s.rt.profile, s.agent_profile = cmd.profile, cmd.profile.name
  return cmd
end

-- argv with s's own sandbox dir in it written alike for every session: the sandboxes of a fleet
-- spawned alike show their agents the same paths, so their posture probes answer the same.
local function shared_argv(d, s, argv)
  local own, out = sandbox.dir(d, s.id):gsub("%p", "%%%0"), {}
  for i, a in ipairs(argv) do out[i] = a:gsub(own, "\0sandbox\0") end
  return out
end

-- Starts finding out the sandbox posture the agent of command cmd will have in s's cwd (env: its
-- environment): probed when the profile says "doctor" (in s's sandbox: wrap(argv) puts a command
-- there), else what the profile states (or none: its agent's own permission modes decide).
-- Returns a function that waits for it (coroutine).
local function probe_posture(d, s, cmd, env, wrap)
  local result, waiter
  if cmd.profile.posture == "doctor" then
    local argv = rules_spawn.doctor_argv(cmd.argv)
    if wrap then argv = wrap(argv) end -- (it reads the cwd the agent writes: it runs where the agent does)
    posture.probe_cached(argv, s.cwd, env, function(p)
      result = p
      if waiter then waiter() end
    end, nil, wrap and shared_argv(d, s, argv))
  else
    result = type(cmd.profile.posture) == "table" and cmd.profile.posture or { sandbox = "unknown", allow_write = json.array() }
  end
  return function()
    if not result then async.await(function(resume) waiter = resume end) end
    return result
  end
end

-- The environment list env (NAME=value strings) as a map.
local function env_map(env)
  local out = {}
  for _, kv in ipairs(env) do
    local k, v = kv:match("^([^=]+)=(.*)$")
    if k then out[k] = v end
  end
  return out
end

-- argv wrapped in s's sandbox when it asked for one (s.sandbox: rules/sandbox.lua's spec), with
-- cmd's profile and the agent's environment env; returns the argv to start, what the posture says
-- is enforced and a function that puts another command into the same sandbox (nil without one),
-- or nil and the error (a sandbox that cannot be had refuses the spawn, unless its spec allows the
-- fallback: then the agent runs unsandboxed and the posture warns).
local function sandboxed(d, s, cmd, argv, env)
  local spec = s.sandbox
  if not spec or spec.level == "none" then return argv, { sandbox = "none" } end
  local why, av
  if cmd.profile.remote then
    why = "the agent runs on another machine (profile " .. tostring(cmd.profile.name) .. "): agentd's sandbox cannot hold it there"
  else
    av = bwrap.available()
    if not av.ok then why = av.why end
  end
  local p
  if not why then p, why = sandbox.plan(d, s, spec, argv, cmd.profile, env_map(env)) end
  if why then
    if spec.fallback then
      return argv, { sandbox = "none", requested = spec.level, warning = "sandbox " .. spec.level .. " not applied: " .. why }
    end
    return nil, jsonrpc.error(sandbox.REFUSED, "sandbox " .. spec.level .. " refused: " .. why
      .. " (sandbox {level, fallback: true} runs the agent unsandboxed instead)")
  end
  local probe_plan = {}
  for k, v in pairs(p.plan) do probe_plan[k] = v end -- (before the gate: a probe needs no network)
  local function wrap(other) return rules_sandbox.argv(av.bwrap, probe_plan, other) end
  local inner = argv
  if spec.level == "strict" then
    local gate_argv, gerr = sandbox.open_gate(d, s, p)
    if not gate_argv then return nil, jsonrpc.error(sandbox.REFUSED, "sandbox strict refused: " .. gerr) end
    inner = gate_argv
    for _, x in ipairs(argv) do inner[#inner + 1] = x end
  end
  return rules_sandbox.argv(av.bwrap, p.plan, inner), p.enforced, wrap
end

-- env (the agent's NAME=value list) with what s's profile sets for the tool_approval asked for
-- (approval_env: opencode asks only when its permission config says so), over the caller's values.
local function with_approval_env(env, profile, approval)
  local add = approval and type(profile.approval_env) == "table" and profile.approval_env[approval]
  if not add then return env end
  local out = {}
  for _, kv in ipairs(env) do
    local k = kv:match("^([^=]+)=")
    if add[k] == nil then out[#out + 1] = kv end
  end
  for k, v in pairs(add) do out[#out + 1] = k .. "=" .. v end
  return out
end

-- Starts the agent for s and configures it: the process, its ACP session (new, or resumed for mode
-- "resume"), the spawn options o, and the posture probe in parallel; the agent runs with o.env (the
-- environment of the orchestrator that asked; nil: agentd's own). A setup that takes over 60 s is
-- killed. Runs in a coroutine; returns true or nil, error.
function M.start(d, s, o, mode)
  local rt = s.rt
  local cmd, cerr = agent_command(s, o)
  if not cmd then return nil, cerr end
  rt.started_approval = o.tool_approval or s.tool_approval
  local env = with_approval_env(rules_spawn.command_env(cmd, o.env), cmd.profile, rt.started_approval)
  local argv, enforced, wrap = sandboxed(d, s, cmd, cmd.argv, env)
  if not argv then return nil, enforced end
  local posture_of = probe_posture(d, s, cmd, env, wrap)
  rt.setting_up = true
  usage.agent_started(s)
  local agent, serr = acp.start(M.agent_opts(d, s, { bin = argv[1], args = { table.unpack(argv, 2) }, cwd = s.cwd, env = env }))
  if not agent then
    rt.setting_up = nil
    return nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "cannot start " .. argv[1] .. ": " .. tostring(serr))
  end
  rt.agent = agent
  log.info("session %s: agent pid %d in %s (%s): %s", s.id, agent:pid(), s.cwd, mode, table.concat(argv, " "))
  local watchdog = uv.new_timer()
  watchdog:start(60000, 0, function() log.warn("session %s: agent setup timed out", s.id); agent:kill() end)

  local function fail(what, err)
    if not watchdog:is_closing() then watchdog:close() end
    rt.setting_up = nil
    local msg = what .. ": " .. tostring(err and err.message or err)
    local tail = agent:stderr_tail()
    if agent.exited and tail ~= "" then msg = msg .. " (agent stderr: " .. tail .. ")" end
    if rt.stopping then msg = "stopped while starting" end
    if rt.agent == agent then rt.agent = nil end
    sandbox.close_gate(s)
    agent:stop()
    return nil, jsonrpc.error(err and err.code == jsonrpc.INVALID_PARAMS and jsonrpc.INVALID_PARAMS or jsonrpc.INTERNAL_ERROR, msg)
  end

  local res, what, oerr = open_session(d, s, agent, mode)
  if what then return fail(what, oerr) end
  local configured, e = configure_agent(s, agent, o, res, cmd.profile)
  if not configured then return fail(e.what, e.err) end
  local probed = {}
  for k, v in pairs(posture_of()) do probed[k] = v end -- (a probe's answer is shared: this copy is s's)
  probed.enforced = enforced
  if enforced.warning then probed.warning = probed.warning and (enforced.warning .. "; " .. probed.warning) or enforced.warning end
  s.posture = probed
  if probed.warning then log.warn("session %s: %s", s.id, probed.warning) end
  if not watchdog:is_closing() then watchdog:close() end
  rt.setting_up = nil
  if agent.exited then return fail("agent exited during setup", "exit code " .. tostring(agent.exit_code)) end
  if rt.stopping then return fail("stopped", "stopped while starting") end
  return true
end

return M
