-- A session's agent process from start to end of life: the spawn and resume verbs built on starting
-- it (start.lua), adopting an agent a previous daemon image handed over, and killing them all.
local uv = require "luv"
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local async = require "rmcp.lib.async"
local log = require "rmcp.lib.log"
local config = require "rmcp.config"
local acp = require "rmcp.acp.client"
local rules_spawn = require "rmcp.rules.spawn"
local contract = require "rmcp.rules.contract"
local state = require "rmcp.agentd.session.state"
local runtime = require "rmcp.agentd.session.runtime"
local park = require "rmcp.agentd.session.park"
local start = require "rmcp.agentd.session.start"
local turns = require "rmcp.agentd.session.turns"
local configure = require "rmcp.agentd.session.configure"
local isolate = require "rmcp.agentd.session.isolate"
local sandbox = require "rmcp.agentd.session.sandbox"
local receipts = require "rmcp.agentd.receipts"
local usage = require "rmcp.agentd.session.usage"
local revision = require "rmcp.agentd.session.revision"

local M = {}

local profile_of = state.profile

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
  local spent = usage.spent_today_refusal(d, o.on_behalf_of or owner, o.daily_budget)
  if spent then return cb(nil, jsonrpc.error(usage.REFUSED, "spawn refused: " .. spent)) end
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
    local ok, err = start.start(d, s, o, "new")
    for _, w in ipairs(ok and wt_warnings or {}) do s.warnings[#s.warnings + 1] = w end
    if not ok then
      if s.worktree and not s.rt.stopping then require("rmcp.agentd.worktree").discard(s.worktree) end
      if s.rt.stopping then
        revision.set(s, "exit_reason", s.rt.stopping)
        revision.set(s, "status", "exited")
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

-- Keeps the messages queued for s's failed resume (those a budget stop kept, and those sent while it
-- started) for the next resume to deliver; returns what its error says of them ("" for none).
local function keep_queued(s)
  if #s.rt.queued == 0 then return "" end
  s.undelivered = s.rt.queued
  s.rt.queued = {}
  return string.format("; %d message%s sent to it kept: the next resume delivers them", #s.undelivered,
    #s.undelivered == 1 and "" or "s")
end

-- Fields a resume may change (the caller checked them): cwd (confined), keep_alive, idle_timeout,
-- budget (null removes it).
local resumable = { cwd = true, keep_alive = true, idle_timeout = true, budget = true }

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
  park.unpark(d, s)
  for k, v in pairs(changes) do
    if resumable[k] then
      if v == json.null then v = nil end -- (a budget null removes)
      revision.set(s, k, v)
    end
  end
  local over = usage.refusal(d, s)
  if over then return cb(nil, jsonrpc.error(usage.REFUSED, "session " .. s.id .. " cannot be resumed: " .. over)) end
  local previous = s.status
  -- the agent options: the caller's, else those configure saved for the resume, else the session's
  local saved = s.queued_config
  local o = { explicit = {}, env = env }
  for _, k in ipairs(rules_spawn.order) do -- the agent options, set on the agent like a spawn's
    local v = changes[k] or (saved and type(saved[k]) == "string" and saved[k] or nil)
    o[k], o.explicit[k] = v or s[k], v ~= nil
  end
  s.rt = runtime.new_rt()
  s.rt.resuming = true
  for _, m in ipairs(s.undelivered or {}) do s.rt.queued[#s.rt.queued + 1] = m end -- (they start its next turn)
  revision.set(s, "pending", {})
  revision.set(s, "status", "starting")
  -- the host knows it died (it resumes it): its death is no longer news for a watch, held or not
  -- (a failed resume puts the pending state back: retention and reloads still see it)
  local was_pending = s.terminal_pending
  revision.set(s, "terminal_pending", false)
  receipts.forget_death_notices(d, s.id)
  async.run(function()
    local ok, err = start.start(d, s, o, s.acp_session_id and "resume" or "new")
    if not ok then
      revision.set(s, "status", previous)
      revision.set(s, "terminal_pending", was_pending)
      s.rt.resuming = nil -- (finished again: it may be parked)
      s.error_text = err.message
      local kept = keep_queued(s)
      state.persist(d, s)
      return cb(nil, jsonrpc.error(err.code, "resume failed: " .. err.message .. kept))
    end
    revision.set(s, "status", "idle")
    revision.set(s, "exit_reason", nil)
    s.interrupted_turn = nil
    s.undelivered = nil -- (queued again above)
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
    revision.set(s, "status", previous)
    revision.set(s, "terminal_pending", was_pending)
    s.rt.resuming = nil
    local kept = keep_queued(s)
    state.persist(d, s)
    cb(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "resume failed: " .. tostring(e) .. kept))
  end)
end

-- Runtime state of s that survives a daemon's exec (handover): everything in s.rt but the agent,
-- uv handles and the network gate (opened again), and what the persisted record does not hold.
function M.handover_state(s)
  local rt = {}
  for k, v in pairs(s.rt) do
    local t = type(v)
    if k ~= "agent" and k ~= "idle_timer" and k ~= "netgate" and t ~= "function" and t ~= "userdata" and t ~= "thread" then
      rt[k] = v
    end
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
  local agent, err = acp.adopt(start.agent_opts(d, s), hs.agent)
  if not agent then return nil, err end
  park.unpark(d, s)
  local rt = hs.rt
  -- the profile is asked again of the policies (a handed-over runtime carries no functions or tables of theirs)
  local cmd = rules_spawn.agent_command(config.agent_bin(), { purpose = "session", agent = s.agent, session_id = s.id, cwd = s.cwd,
                                                             model = s.model, orchestrator_id = s.owner })
  rt.profile = cmd and cmd.profile or nil
  rt.agent = agent
  s.rt = rt
  local gated, gerr = sandbox.reopen_gate(d, s)
  if not gated then log.warn("session %s: its strict sandbox has no network until it restarts: %s", s.id, tostring(gerr)) end
  for _, k in ipairs({ "status", "exit_reason", "stop_reason", "terminal_pending" }) do revision.set(s, k, hs[k]) end
  rt.idle_since = s.status == "idle" and uv.now() or nil
  revision.set(s, "pending", {})
  for _, dec in ipairs(hs.pending or {}) do
    dec.reply = agent.peer:reply_to(dec.agent_request_id)
    dec.agent_request_id = nil
    revision.add_pending(s, dec)
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
    if s.rt and s.rt.agent then s.rt.agent:kill() end
    state.cancel_cleanup(s)
    if exit_reason and state.is_live(s) then
      revision.set(s, "status", "exited")
      revision.set(s, "exit_reason", exit_reason)
    end
  end
end

return M
