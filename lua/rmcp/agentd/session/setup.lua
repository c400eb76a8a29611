-- A session's agent process from start to end of life: starting and configuring it (initialize,
-- session/new or session/resume, the config options, the sandbox posture), the spawn and resume
-- verbs built on that, adopting an agent a previous daemon image handed over, and killing them all.
local uv = require "luv"
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local async = require "rmcp.lib.async"
local log = require "rmcp.lib.log"
local config = require "rmcp.config"
local acp = require "rmcp.acp.client"
local posture = require "rmcp.agentd.posture"
local rules_spawn = require "rmcp.rules.spawn"
local contract = require "rmcp.rules.contract"
local state = require "rmcp.agentd.session.state"
local events = require "rmcp.agentd.session.events"
local turns = require "rmcp.agentd.session.turns"
local configure = require "rmcp.agentd.session.configure"
local isolate = require "rmcp.agentd.session.isolate"
local kept = require "rmcp.agentd.kept"

local M = {}

local profile_of = state.profile

-- The options an agent of s runs with, started or adopted: the line limits, and its traffic folded
-- into s (extra: the process fields of a start).
local function agent_opts(d, s, extra)
  local o = extra or {}
  o.max_line, o.stderr_tail = config.limit("max_line"), config.limit("stderr_tail")
  o.on_update = function(_, update) events.on_update(d, s, update) end
  o.on_chunk = function(kind, text) events.on_chunk(d, s, kind, text) end
  o.on_permission = function(params, reply) events.on_permission(d, s, params, reply) end
  o.on_exit = function(code, signal, agent) events.on_exit(d, s, agent, code, signal) end
  return o
end

-- Sets the spawn options o on an agent of the "acp" profile kind (rules_spawn.acp_plan: set_model,
-- set_mode) and records what holds: s's options are the agent's effective values, never the ones
-- asked for; rt.config_options shows them in the configOptions shape. Returns true, or nil and
-- {what, err} for an explicit value the agent refuses.
local function apply_acp_options(s, agent, o, res, profile, skipped, warnings)
  local rt = s.rt
  local plan = rules_spawn.acp_plan(o, res, profile)
  if #plan.errors > 0 then
    return nil, { what = "spawn option refused", err = jsonrpc.error(jsonrpc.INVALID_PARAMS, table.concat(plan.errors, "; ")) }
  end
  for _, w in ipairs(plan.warnings) do warnings[#warnings + 1] = w end
  for _, k in ipairs(plan.skipped) do skipped[#skipped + 1] = k end
  local eff = plan.effective
  for _, c in ipairs(plan.calls) do
    local params = { sessionId = s.acp_session_id }
    for k, v in pairs(c.params) do params[k] = v end
    local _, cerr = agent:call(c.method, params)
    if cerr then
      if o.explicit[c.key] then
        return nil, { what = "setting " .. c.key .. " failed", err = cerr }
      end
      warnings[#warnings + 1] = string.format("could not set %s to %s: %s", c.key, c.value, tostring(cerr.message))
      if c.key == "tool_approval" then eff.tool_approval = nil; plan.answer_gates = nil end
    elseif c.key == "model" then eff.model = c.value
    else eff.mode = c.value end
  end
  s.model, s.tool_approval, s.effort, s.work_mode = eff.model, eff.tool_approval, nil, nil
  rt.answer_gates = plan.answer_gates
  local function opt(id, current, list, field)
    local values = json.array()
    for _, v in ipairs(list or {}) do values[#values + 1] = { value = v[field], name = v.name } end
    return { id = id, category = id, currentValue = current, options = values }
  end
  local models = type(res.models) == "table" and res.models.availableModels or nil
  local modes = type(res.modes) == "table" and res.modes.availableModes or nil
  rt.config_options = json.array({ models and opt("model", eff.model, models, "modelId") or nil })
  if modes then rt.config_options[#rt.config_options + 1] = opt("mode", eff.mode, modes, "id") end
  return true
end

-- Starts the agent for s and configures it: initialize, session/new (or session/resume), the config
-- options, and the posture probe in parallel; the agent runs with o.env (the environment of the
-- orchestrator that asked; nil: agentd's own). Runs in a coroutine; returns true or nil, error.
local function start_agent(d, s, o, mode)
  local rt = s.rt
  local bin, berr = config.agent_bin(o.env)
  local cmd, perr = rules_spawn.agent_command(bin, { purpose = "session", session_id = s.id, cwd = s.cwd,
                                                     model = o.model or s.model, orchestrator_id = s.owner, env = o.env })
  if not cmd then return nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, perr or berr) end
  local argv, profile = cmd.argv, cmd.profile
  bin = argv[1]
  rt.profile, s.agent_profile = profile, profile.name
  local env = rules_spawn.command_env(cmd, o.env)
  local probe_result, probe_waiter
  if profile.posture == "doctor" then
    posture.probe_cached(rules_spawn.doctor_argv(argv), s.cwd, env, function(p)
      probe_result = p
      if probe_waiter then probe_waiter() end
    end)
  else
    -- the profile states the posture, or has none (its agent's own permission modes decide)
    probe_result = type(profile.posture) == "table" and profile.posture or { sandbox = "unknown", allow_write = json.array() }
  end
  rt.setting_up = true
  local agent, serr = acp.start(agent_opts(d, s, { bin = bin, args = { table.unpack(argv, 2) }, cwd = s.cwd, env = env }))
  if not agent then
    rt.setting_up = nil
    return nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "cannot start " .. bin .. ": " .. tostring(serr))
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
    agent:stop()
    return nil, jsonrpc.error(err and err.code == jsonrpc.INVALID_PARAMS and jsonrpc.INVALID_PARAMS or jsonrpc.INTERNAL_ERROR, msg)
  end

  local init, ierr = agent:initialize({ name = "reasonix-mcp", version = d.version or "0" })
  if ierr then return fail("ACP initialize failed", ierr) end
  local info = type(init) == "table" and type(init.agentInfo) == "table" and init.agentInfo or {}
  s.agent_info = { name = type(info.name) == "string" and info.name or nil, version = type(info.version) == "string" and info.version or nil }
  local caps = type(init) == "table" and type(init.agentCapabilities) == "table" and init.agentCapabilities or {}
  local res, rerr
  if mode == "resume" then
    -- session/resume where the agent has it, else session/load (it replays the history to us)
    local method = "session/resume"
    if type(caps.sessionCapabilities) == "table" and caps.sessionCapabilities.resume == nil and caps.loadSession == true then
      method = "session/load"
    end
    res, rerr = agent:call(method, { sessionId = s.acp_session_id, cwd = s.cwd, mcpServers = json.array() })
    if rerr then return fail(method .. " failed", rerr) end
  else
    res, rerr = agent:call("session/new", { cwd = s.cwd, mcpServers = json.array() })
    if rerr then return fail("session/new failed", rerr) end
    if type(res) ~= "table" or type(res.sessionId) ~= "string" then return fail("session/new failed", "no sessionId in the result") end
    s.acp_session_id = res.sessionId
  end
  local options = type(res) == "table" and res.configOptions or {}
  local skipped, warnings = json.array(), json.array()
  if profile.options == "acp" then
    local ok, e = apply_acp_options(s, agent, o, res, profile, skipped, warnings)
    if not ok then return fail(e.what, e.err) end
    options = rt.config_options
  end
  for _, key in ipairs(profile.options == "config_options" and rules_spawn.order or {}) do
    local step = rules_spawn.step(key, o, options, profile)
    if step.error then return fail("spawn option refused", jsonrpc.error(jsonrpc.INVALID_PARAMS, step.error)) end
    if step.set then
      local r, serr2 = agent:call("session/set_config_option", { sessionId = s.acp_session_id, configId = step.id, value = step.set })
      if serr2 then
        if o.explicit[key] then return fail("setting " .. key .. " failed", serr2) end
        warnings[#warnings + 1] = string.format("could not set %s to %s: %s", key, step.set, tostring(serr2.message))
        s[key] = nil
      else
        if type(r) == "table" and type(r.configOptions) == "table" then options = r.configOptions end
        s[key] = o[key]
      end
    elseif step.skip then
      if o.strict and o.explicit[key] then
        return fail("spawn option refused", jsonrpc.error(jsonrpc.INVALID_PARAMS, key .. " " .. tostring(o[key]) .. " not applied: " .. step.skip .. " (strict)"))
      end
      if step.warn then
        warnings[#warnings + 1] = step.warn
        s[key] = key == "model" and step.fallback or nil
      else
        skipped[#skipped + 1] = key
      end
    else
      s[key] = o[key]
    end
  end
  if profile.options == "none" then
    for _, key in ipairs(rules_spawn.order) do
      if o[key] and o.explicit[key] and o.strict then
        return fail("spawn option refused", jsonrpc.error(jsonrpc.INVALID_PARAMS, key .. " not applied: this agent's profile sets no options (strict)"))
      elseif o[key] and o.explicit[key] then warnings[#warnings + 1] = key .. " not applied: this agent's profile sets no options"
      elseif o[key] then skipped[#skipped + 1] = key end
      s[key] = nil
    end
  end
  local model_opt = rules_spawn.find_option(options, "model")
  if model_opt then s.model = model_opt.currentValue end
  rt.config_options = options
  s.skipped_options, s.warnings = skipped, warnings
  if not probe_result then
    async.await(function(resume) probe_waiter = resume end)
  end
  s.posture = probe_result
  if probe_result.warning then log.warn("session %s: %s", s.id, probe_result.warning) end
  if not watchdog:is_closing() then watchdog:close() end
  rt.setting_up = nil
  if agent.exited then return fail("agent exited during setup", "exit code " .. tostring(agent.exit_code)) end
  if rt.stopping then return fail("stopped", "stopped while starting") end
  return true
end

-- The spawn/resume result for s.
function M.spawn_result(s)
  return {
    session_id = s.id, status = s.status, cwd = s.cwd, model = s.model, effort = s.effort,
    tool_approval = s.tool_approval, work_mode = s.work_mode, keep_alive = s.keep_alive == true,
    idle_timeout = s.idle_timeout, posture = s.posture, skipped_options = s.skipped_options,
    warnings = s.warnings, transcript_path = s.transcript_path, agent_config = state.effective_config(s),
    worktree = s.worktree and { path = s.worktree.path, branch = s.worktree.branch, base = s.worktree.base } or nil,
  }
end

-- A new session of orchestrator owner in cwd with spawn options o (rules.spawn): the agent starts and
-- is configured, the first prompt (task + status contract) goes out, then messages queued meanwhile.
-- cb(spawn result) or cb(nil, error); a failed spawn leaves nothing behind (unless it was stopped
-- while starting: then it stays as an exited tombstone).
function M.spawn(d, owner, project_dir, o, cwd, cb)
  local s = state.create(d, owner, project_dir, o, cwd)
  log.info("session %s: spawn for %s in %s", s.id, owner, cwd)
  -- a session the disk cannot hold is refused before an agent starts (a full disk, say)
  local saved, serr = state.save_first(d, s)
  if not saved then
    state.discard(d, s)
    log.warn("session %s: spawn refused: %s", s.id, serr)
    return cb(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "spawn failed: " .. serr))
  end
  async.run(function()
    local wt_warnings, werr
    if o.isolate == "worktree" then
      wt_warnings, werr = isolate.make(d, s, cwd)
      if not wt_warnings then
        state.discard(d, s)
        log.warn("session %s: spawn refused: %s", s.id, werr.message)
        return cb(nil, werr)
      end
    end
    local ok, err = start_agent(d, s, o, "new")
    for _, w in ipairs(ok and wt_warnings or {}) do s.warnings[#s.warnings + 1] = w end
    if not ok then
      if s.worktree and not s.rt.stopping then require("rmcp.agentd.worktree").discard(s.worktree) end
      if s.rt.stopping then
        s.status, s.exit_reason = "exited", s.rt.stopping
        state.persist(d, s)
      else
        state.discard(d, s)
      end
      log.warn("session %s: spawn failed: %s", s.id, err.message)
      return cb(nil, err)
    end
    s.contract_sent = true
    -- the spawn record first: a timeline reads spawn, then the prompt it began with
    state.journal(d, s, { type = "spawn", owner = s.owner, cwd = s.cwd, model = s.model, effort = s.effort, tool_approval = s.tool_approval })
    turns.prompt(d, s, contract.first_prompt(s.task, profile_of(s)), "prompt")
    state.persist(d, s)
    turns.flush_queued(d, s)
    cb(M.spawn_result(s))
  end, function(e)
    log.error("spawn crashed: %s", e)
    cb(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "spawn failed: " .. tostring(e)))
  end)
end

-- Fields a resume may change (the caller checked them): cwd (confined), keep_alive, idle_timeout.
local resumable = { cwd = true, keep_alive = true, idle_timeout = true }

-- Revives tombstone s (exited or orphaned) on a fresh agent run with env (the resuming
-- orchestrator's environment map; nil: agentd's own): session/resume when the agent session is
-- known, else session/new; changes holds the fields the caller gave (see resumable). A live s is
-- answered already_live. cb(result) or cb(nil, error); a failed resume keeps the
-- tombstone (with the error text).
function M.resume(d, s, changes, env, cb)
  if s.unreadable then
    return cb(nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, string.format(
      "session %s cannot be resumed: its session file is unreadable (%s). What remains is in %s; "
        .. "spawn a new session to go on with the work", s.id, s.unreadable, s.transcript_path)))
  end
  if state.is_live(s) then
    -- idempotent: the session is there to use; its options are changed with reasonix_configure
    return cb({ session_id = s.id, status = s.status, already_live = true, transcript_path = s.transcript_path })
  end
  for k, v in pairs(changes) do
    if resumable[k] then s[k] = v end
  end
  local previous = s.status
  -- the agent options: the caller's, else those configure saved for the resume, else the session's
  local saved = s.queued_config
  local o = { explicit = {}, env = env }
  for _, k in ipairs(rules_spawn.order) do -- the agent options, set on the agent like a spawn's
    local v = changes[k] or (saved and type(saved[k]) == "string" and saved[k] or nil)
    o[k], o.explicit[k] = v or s[k], v ~= nil
  end
  s.rt = state.new_rt()
  s.rt.resuming = true
  s.pending = {}
  s.status = "starting"
  -- the host knows it died (it resumes it): its death is no longer news for a watch, kept or not
  -- (a failed resume puts the pending state back: retention and reloads still see it)
  local was_pending = s.terminal_pending
  s.terminal_pending = false
  kept.forget_death_notices(d, s.id)
  async.run(function()
    local ok, err = start_agent(d, s, o, s.acp_session_id and "resume" or "new")
    if not ok then
      s.status, s.terminal_pending = previous, was_pending
      s.error_text = err.message
      state.persist(d, s)
      return cb(nil, jsonrpc.error(err.code, "resume failed: " .. err.message))
    end
    s.status = "idle"
    s.exit_reason = nil
    s.interrupted_turn = nil
    if s.queued_config == saved then s.queued_config = nil end -- set by this start
    configure.flush(d, s) -- configured while it started
    s.rt.resuming = nil
    state.journal(d, s, { type = "resume", cwd = s.cwd })
    -- live again: on disk before the reply, so a daemon killed right after it finds the session
    -- orphaned (resumable), as a spawn's first record is written before its agent starts
    state.persist(d, s, "now")
    turns.flush_queued(d, s)
    state.changed(d, s)
    cb(M.spawn_result(s))
  end, function(e)
    s.status, s.terminal_pending = previous, was_pending
    cb(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "resume failed: " .. tostring(e)))
  end)
end

-- Runtime state of s that survives a daemon's exec (handover): everything in s.rt but the agent and
-- uv handles, and what the persisted record does not hold.
function M.handover_state(s)
  local rt = {}
  for k, v in pairs(s.rt) do
    local t = type(v)
    if k ~= "agent" and k ~= "idle_timer" and t ~= "function" and t ~= "userdata" and t ~= "thread" then rt[k] = v end
  end
  local pending = json.array()
  for _, dec in ipairs(s.pending) do
    pending[#pending + 1] = { request_id = dec.request_id, kind = dec.kind, tool_call = dec.tool_call,
                              options = dec.options, delivered = dec.delivered,
                              agent_request_id = jsonrpc.reply_id(dec.reply) }
  end
  return { rt = rt, pending = pending, status = s.status, exit_reason = s.exit_reason, stop_reason = s.stop_reason,
           terminal_pending = s.terminal_pending }
end

-- In a new daemon image: takes over the agent process of s that the previous image handed over (hs:
-- handover_state plus the agent's own state) and gives s back its live state: runtime, decisions
-- (answerable again) and the running prompt. Returns the agent or nil, error.
function M.adopt(d, s, hs)
  local agent, err = acp.adopt(agent_opts(d, s), hs.agent)
  if not agent then return nil, err end
  local rt = hs.rt
  -- the profile is asked again of the policies (a handed-over runtime carries no functions or tables of theirs)
  local cmd = rules_spawn.agent_command(config.agent_bin(), { purpose = "session", session_id = s.id, cwd = s.cwd,
                                                             model = s.model, orchestrator_id = s.owner })
  rt.profile = cmd and cmd.profile or nil
  rt.agent = agent
  s.rt = rt
  s.status, s.exit_reason, s.stop_reason, s.terminal_pending = hs.status, hs.exit_reason, hs.stop_reason, hs.terminal_pending
  rt.idle_since = s.status == "idle" and uv.now() or nil
  s.pending = {}
  for _, dec in ipairs(hs.pending or {}) do
    dec.reply = agent.peer:reply_to(dec.agent_request_id)
    dec.agent_request_id = nil
    s.pending[#s.pending + 1] = dec
  end
  if rt.prompt_active and rt.prompt_id then
    local text = rt.prompt_text
    agent.peer:expect(rt.prompt_id, function(result, perr) turns.prompt_done(d, s, agent, text, result, perr) end)
  end
  state.persist(d, s)
  return agent
end

-- Kills every live agent at once. exit_reason nil (daemon shutdown): the sessions stay live on disk
-- (orphaned at the next start); else they become exited tombstones with that reason (resumable).
function M.kill_all(d, exit_reason)
  for _, s in pairs(d.sessions) do
    if s.rt.agent then s.rt.agent:kill() end
    state.cancel_cleanup(s)
    if exit_reason and state.is_live(s) then s.status, s.exit_reason = "exited", exit_reason end
  end
end

return M
