-- Changing a session's agent options after spawn (reasonix_configure): set on the agent at once when
-- it is idle, before its next turn when one is running (or it is starting), at the resume when the
-- agent is gone. What is waiting is s.queued_config (persisted, so a resume after a daemon death
-- still applies it).
local jsonrpc = require "rmcp.lib.jsonrpc"
local log = require "rmcp.lib.log"
local lazy = require "rmcp.lib.lazy"
local rules_spawn = require "rmcp.rules.spawn"
local state = require "rmcp.agentd.session.state"
local revision = require "rmcp.agentd.session.revision"
-- (used when an agent is configured or answered: an idle daemon does not load them)
local acp_options = lazy "rmcp.rules.acp_options"
local events = lazy "rmcp.agentd.session.events"

local M = {}

-- The options configure changes, in the order they are applied (model first: it changes which
-- efforts exist).
M.keys = rules_spawn.order

-- Sends call c ({key, method, params}) to the live agent of s: on_ok(r) with the agent's answer when
-- it took it, else failed[c.key] = why; then after().
local function send(s, c, failed, on_ok, after)
  local rt, agent = s.rt, s.rt.agent
  local params = { sessionId = s.acp_session_id }
  for k, v in pairs(c.params) do params[k] = v end
  agent:request(c.method, params, function(r, err)
    if rt.agent ~= agent or agent.exited then
      failed[c.key] = "the agent exited"
    elseif err then
      failed[c.key] = tostring(err.message)
    else
      on_ok(r)
    end
    after()
  end)
end

-- Sets the options of wanted (key → our value) on the live agent of s as config options (the
-- reasonix profile kind), one after another; cb(applied, failed, skipped) as apply's.
local function apply_config_options(s, wanted, cb)
  local rt = s.rt
  local applied, failed, skipped, keys = {}, {}, {}, {}
  for _, k in ipairs(M.keys) do
    if wanted[k] ~= nil then keys[#keys + 1] = k end
  end
  local function step(i)
    if i > #keys then return cb(applied, failed, skipped) end
    local k = keys[i]
    local plan = rules_spawn.step(k, { [k] = wanted[k], explicit = { [k] = true } }, rt.config_options)
    if plan.error or plan.skip then
      if plan.error then failed[k] = plan.error else skipped[k] = plan.skip end
      return step(i + 1)
    end
    if plan.keep then
      revision.set(s, k, wanted[k])
      applied[k] = wanted[k]
      return step(i + 1)
    end
    local c = { key = k, method = "session/set_config_option", params = { configId = plan.id, value = plan.set } }
    send(s, c, failed, function(r)
      if type(r) == "table" and type(r.configOptions) == "table" then rt.config_options = r.configOptions end
      revision.set(s, k, wanted[k])
      applied[k] = wanted[k]
    end, function() step(i + 1) end)
  end
  step(1)
end

-- Sets the options of wanted on the live agent of s of the "acp" profile kind the way a spawn does
-- (acp_options: set_model, set_mode or its own config options, effort through its thought_level
-- option); cb(applied, failed, skipped) as apply's. The offer and its view follow what the agent took.
local function apply_acp(s, wanted, cb)
  local rt = s.rt
  rt.acp_offer = rt.acp_offer or acp_options.offer(nil)
  local plan = acp_options.configure_plan(wanted, rt.acp_offer, state.profile(s), rt.started_approval)
  local applied, failed, skipped = {}, {}, {}
  if #plan.errors > 0 then
    for k in pairs(wanted) do failed[k] = table.concat(plan.errors, "; ") end
    return cb(applied, failed, skipped)
  end
  for k, why in pairs(plan.why) do skipped[k] = why end
  local calls = {}
  for _, c in ipairs(plan.calls) do
    if not skipped[c.key] then calls[#calls + 1] = c end
  end
  local function step(i)
    local c = calls[i]
    if not c then
      for k, v in pairs(wanted) do
        if not skipped[k] and not failed[k] then
          revision.set(s, k, v)
          applied[k] = v
        end
      end
      if applied.tool_approval then rt.answer_gates = plan.answer_gates end
      rt.config_options = acp_options.view(rt.acp_offer)
      return cb(applied, failed, skipped)
    end
    send(s, c, failed, function(r) acp_options.record(rt.acp_offer, c, r) end, function() step(i + 1) end)
  end
  step(1)
end

-- Sets the options of wanted (key → our value) on the live agent of s, the way its profile does;
-- cb(applied, failed, skipped): key → value set, key → why not, key → why the agent has no such
-- option (as a spawn skips it). The session's fields follow what the agent took.
local function apply(s, wanted, cb)
  if state.profile(s).options == "acp" then return apply_acp(s, wanted, cb) end
  apply_config_options(s, wanted, cb)
end

-- Answers the pending tool gates of s allow_once (a switch to yolo means the caller wants them run);
-- an agent's question is left for the orchestrator. Returns how many were answered.
local function open_gates(d, s)
  local answered = 0
  for i = #s.pending, 1, -1 do
    local dec = s.pending[i]
    if dec.kind == "permission" then
      for _, o in ipairs(dec.options) do
        if o.kind == "allow_once" then
          if events.respond(d, s, o.optionId, dec.request_id) then answered = answered + 1 end
          break
        end
      end
    end
  end
  return answered
end

-- Merges wanted into what waits for s's next turn or resume, and saves it.
local function queue(d, s, wanted)
  local q = {} -- a new table: a resume that started before this call can tell it came later
  for k, v in pairs(s.queued_config or {}) do q[k] = v end
  for k, v in pairs(wanted) do q[k] = v end
  s.queued_config = q
  state.persist(d, s)
end

-- The result of a configure: what the agent reports (agent_config) apart from what waits.
local function result(d, s, extra)
  local r = { session_id = s.id, status = s.status, agent_config = state.effective_config(s, state.config_options(d, s)),
              queued = s.queued_config }
  for k, v in pairs(extra) do r[k] = v end
  return r
end

-- Configures s with wanted (checked values of M.keys, at least one); cb(result) or cb(nil, error).
function M.configure(d, s, wanted, cb)
  local rt = s.rt
  if s.status == "exited" or s.status == "orphaned" then
    queue(d, s, wanted)
    return cb(result(d, s, { applies = "at_resume" }))
  end
  -- a value the running agent does not offer is refused now, not at the next turn
  if rt.acp_offer and state.profile(s).options == "acp" then
    local plan = acp_options.configure_plan(wanted, rt.acp_offer, state.profile(s), rt.started_approval)
    if #plan.errors > 0 then return cb(nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, table.concat(plan.errors, "; "))) end
  elseif rt.config_options then
    for _, k in ipairs(M.keys) do
      if wanted[k] ~= nil then
        local plan = rules_spawn.step(k, { [k] = wanted[k], explicit = { [k] = true } }, rt.config_options)
        if plan.error then return cb(nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, plan.error)) end
      end
    end
  end
  if s.status == "idle" and rt.agent and not rt.setting_up and not rt.prompt_active then
    return apply(s, wanted, function(applied, failed, skipped)
      state.persist(d, s)
      if next(failed) then
        local parts = {}
        for k, why in pairs(failed) do parts[#parts + 1] = k .. ": " .. why end
        table.sort(parts)
        return cb(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "configure failed for " .. table.concat(parts, "; ")
          .. (next(applied) and " (the other options were set)" or "")))
      end
      cb(result(d, s, { applied = next(applied) and applied or nil, skipped = next(skipped) and skipped or nil, applies = "now" }))
    end)
  end
  local gates = 0
  if wanted.tool_approval == "yolo" and s.tool_approval ~= "yolo" then gates = open_gates(d, s) end
  queue(d, s, wanted)
  cb(result(d, s, { applies = "next_turn", gates_allowed = gates > 0 and gates or nil }))
end

-- Sets what waits in s.queued_config on its live agent (before a prompt, after a resume), then
-- calls after() (at once when nothing waits). A value the agent refuses is logged and shown in the
-- session's warnings.
function M.flush(d, s, after)
  after = after or function() end
  local wanted = s.queued_config
  if not wanted or not s.rt.agent or s.rt.setting_up then return after() end
  s.queued_config = nil
  -- the session's settings say so at once (the next prompt goes out after these requests); one the
  -- agent refuses goes back
  local before = {}
  for k, v in pairs(wanted) do
    before[k] = s[k]
    revision.set(s, k, v)
  end
  apply(s, wanted, function(_, failed, skipped)
    for k, why in pairs(skipped) do failed[k] = why end
    for k, why in pairs(failed) do
      revision.set(s, k, before[k])
      log.warn("session %s: queued %s=%s not set: %s", s.id, k, tostring(wanted[k]), why)
      s.warnings = s.warnings or {}
      s.warnings[#s.warnings + 1] = string.format("queued %s=%s not set: %s", k, tostring(wanted[k]), why)
    end
    state.persist(d, s)
    after()
  end)
end

return M
