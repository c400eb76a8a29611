-- A session's turns: the first prompt and later ones, steering a running turn, delivering a message
-- whatever the agent is doing (forced steer), the end of a turn, the idle cleanup that may follow it,
-- and stopping the agent.
local uv = require "luv"
local async = require "rmcp.lib.async"
local jsonrpc = require "rmcp.lib.jsonrpc"
local log = require "rmcp.lib.log"
local store = require "rmcp.agentd.store"
local rules_cleanup = require "rmcp.rules.cleanup"
local contract = require "rmcp.rules.contract"
local rules_recovery = require "rmcp.rules.recovery"
local caps = require "rmcp.rules.caps"
local state = require "rmcp.agentd.session.state"
local runtime = require "rmcp.agentd.session.runtime"
local configure = require "rmcp.agentd.session.configure"
-- (a turn's end syncs a sandbox's git: loaded with the first one, an idle daemon does not carry it)
local sandbox = require "rmcp.lib.lazy" "rmcp.agentd.session.sandbox"
local usage = require "rmcp.agentd.session.usage"
local revision = require "rmcp.agentd.session.revision"

local M = {}

local buf_new, buf_text, push_event = runtime.buf_new, runtime.buf_text, state.push_event

-- Starts the idle grace of s after a terminal turn, per the cleanup policy, counted from when the
-- session went idle (so re-arming it after a policy change keeps the time already spent idle).
-- A cleanup a policy asked for is reported with its note (agent_event) before the agent stops.
local function schedule_cleanup(d, s)
  state.cancel_cleanup(s)
  local rt = s.rt
  if rt.stopping then return end
  local grace = rules_cleanup.grace(s)
  if grace == nil then return end
  rt.idle_since = rt.idle_since or uv.now()
  local timer = uv.new_timer()
  rt.idle_timer = timer
  timer:start(math.max(0, math.floor(grace * 1000) - (uv.now() - rt.idle_since)), 0, function()
    state.cancel_cleanup(s)
    if s.status ~= "idle" or s.rt ~= rt then return end
    local now_grace, note = rules_cleanup.grace(s)
    if now_grace == nil then return end
    if now_grace > grace then return schedule_cleanup(d, s) end
    log.info("session %s: idle for %ss, cleaning up%s", s.id, tostring(now_grace), note and (": " .. note) or "")
    if note then state.changed(d, s, "status", { note = "cleanup: " .. note }) end
    M.stop(d, s, "cleaned_up")
  end)
end

-- Re-arms the idle cleanup of idle sessions after the cleanup rules changed (a policy reload).
function M.policy_changed(d)
  for _, s in pairs(d.sessions) do
    if s.status == "idle" and s.rt.idle_since and not s.rt.stopping then schedule_cleanup(d, s) end
  end
end

-- Turn-end journal record rec with the ended turn's usage fields (session/usage.lua turn_ended).
local function with_usage(rt, rec)
  for k, v in pairs(rt.turn_usage_rec or {}) do rec[k] = v end
  return rec
end

-- Starts recovery turn n of s, whose turn just ended with a failed background job: that turn is
-- journaled and kept for a detailed poll, but not reported as the end (no watch wakes for it).
local function recover(d, s, n)
  local rt = s.rt
  rt.recovery_attempts = n
  revision.set(s, "pending", {})
  push_event(s, { type = "background_recovery", attempt = n, max = rules_recovery.cap() })
  state.journal(d, s, with_usage(rt, { type = "turn_end", stop_reason = s.stop_reason, text = s.last_text, thought = rt.last_thought,
                                       recovery = n }))
  log.info("session %s: a background job failed; recovery turn %d of %d", s.id, n, rules_recovery.cap())
  M.prompt(d, s, rules_recovery.prompt(n), "recovery") -- running again, nothing terminal to report
  state.changed(d, s, "status", { note = string.format("a background job failed: recovery turn %d of %d", n, rules_recovery.cap()) })
end

-- Starts the turn that the messages queued for s's agent (a profile that steers by queueing) make:
-- the ended turn is journaled, not reported (no watch wakes for it: the work goes on).
local function follow_queued(d, s)
  local rt = s.rt
  local text = table.concat(rt.after_turn, "\n\n")
  rt.after_turn = nil
  revision.set(s, "pending", {})
  state.journal(d, s, with_usage(rt, { type = "turn_end", stop_reason = s.stop_reason, text = s.last_text, thought = rt.last_thought,
                                       followed = true }))
  log.info("session %s: the turn ended with queued messages; they start the next one", s.id)
  M.prompt(d, s, text, "queued_turn")
  state.changed(d, s, "status", { note = "queued messages started the next turn" })
end

-- Reports the end of s's turn: the event, idle, the waiting watch's reply first, then the
-- journal, the save and the idle cleanup.
local function report_end(d, s, stop_reason, err_text)
  local rt = s.rt
  revision.set(s, "terminal_pending", true) -- (only now: a watch must not take the turn's end before it is reported)
  push_event(s, { type = "turn_end", stop_reason = stop_reason, error_text = err_text })
  rt.wait_dirty = true
  revision.set(s, "status", "idle")
  state.changed(d, s, "turn_end", { stop_reason = stop_reason, error_text = err_text })
  state.journal(d, s, with_usage(rt, { type = "turn_end", stop_reason = stop_reason, text = s.last_text, thought = rt.last_thought,
                                       error_text = err_text }))
  state.persist(d, s)
  -- (unless the turn's end already stopped it: a routine's run ends with its turn)
  if usage.stops_at_turn_end(s) and not rt.stopping then return M.stop(d, s, "budget") end
  rt.idle_since = uv.now()
  schedule_cleanup(d, s)
end

-- Ends the current turn with stop_reason (and error text for an errored turn).
local function end_turn(d, s, stop_reason, err_text)
  local rt = s.rt
  rt.prompt_active = false
  rt.active, rt.tools = {}, {}
  local cut = rt.turn_text.cut
  local text = buf_text(rt.turn_text)
  rt.turn_text = buf_new()
  -- the turn's reasoning goes to the journal with its end (the dashboard shows it collapsed)
  local thought = rt.turn_thought and buf_text(rt.turn_thought) or ""
  rt.turn_thought = buf_new()
  rt.last_thought = thought ~= "" and thought:sub(-20000) or nil
  state.add_turn(rt, text, stop_reason, cut)
  rt.counters.turns = rt.counters.turns + 1
  s.turns_total = (s.turns_total or 0) + 1
  s.last_text = text:sub(-20000)
  revision.set(s, "stop_reason", stop_reason)
  if err_text then state.set_error(s, err_text) end
  revision.set(s, "pending", {})
  if rt.turn_started_at then
    s.work_seconds = (s.work_seconds or 0) + (store.now() - rt.turn_started_at)
    rt.turn_started_at = nil
  end
  rt.turn_usage_rec = usage.turn_ended(s)
  local attempts = rt.recovery_attempts or 0
  local going = not rt.stopping and not usage.stops_at_turn_end(s)
  if going and rules_recovery.wanted(text, stop_reason, attempts) then return recover(d, s, attempts + 1) end
  if going and rt.after_turn and #rt.after_turn > 0 and stop_reason ~= "cancelled" then return follow_queued(d, s) end
  rt.recovery_attempts = 0
  if attempts > 0 then
    -- the turn the orchestrator gets says what was tried, and whether the cap stopped it
    rt.recovery_report = { attempts = attempts, gave_up = text:find(rules_recovery.marker, 1, true) ~= nil or nil }
  end
  local isolated = type(s.worktree) == "table" and s.worktree.state == "ready"
  local box_git = sandbox.has_git(d, s)
  if isolated or box_git then
    -- what an isolated agent changed rides this result (a sandboxed one's commits brought back
    -- first): git is asked before the end is reported; a message sent meanwhile waits (send queues
    -- it while finishing) and starts the next turn
    local agent = rt.agent
    rt.finishing = true
    return async.run(function()
      if box_git then sandbox.sync_git(d, s) end
      if isolated then s.changes = require("rmcp.agentd.worktree").changes(s.worktree) end
      rt.finishing = nil
      if rt.agent ~= agent or not state.is_live(s) then return end -- stopped or gone meanwhile
      report_end(d, s, stop_reason, err_text)
      M.flush_queued(d, s)
    end, function(e)
      rt.finishing = nil
      log.error("session %s: reading its worktree's changes failed: %s", s.id, tostring(e))
      report_end(d, s, stop_reason, err_text)
    end)
  end
  report_end(d, s, stop_reason, err_text)
end

-- Starts a turn of s with text (the caller checked no prompt is active): its bookkeeping and the
-- journal record of its prompt (written before anything says the turn started); request_turn then
-- saves it and sends it to the agent.
local function begin_turn(d, s, text, via)
  local rt = s.rt
  state.cancel_cleanup(s)
  rt.idle_since = nil
  rt.prompt_active = true
  rt.turn_started_at = rt.turn_started_at or store.now()
  rt.turn_started_ms, rt.health_alert = uv.now(), nil -- (a new turn: a stall of it is news again)
  rt.counters.prompts = rt.counters.prompts + 1
  usage.turn_started(s)
  revision.set(s, "terminal_pending", false)
  state.journal(d, s, { type = "prompt", via = via or "prompt", text = text })
  revision.set(s, "status", "running")
  rt.prompt_text = text
end

-- Saves the turn begin_turn started (text) and sends its session/prompt to s's agent; the answer
-- ends the turn (M.prompt_done).
local function request_turn(d, s, text)
  local rt = s.rt
  local agent = rt.agent
  -- saved (1–2 ms later: store.save): a daemon death leaves "running" on disk, which tells the
  -- restore a turn was cut short (resume_fleet continues it); the turn's end is saved too
  state.persist(d, s)
  -- options configured during the last turn are set first (the agent's answer to a setting made
  -- as a turn ends can be lost to its own end-of-turn work)
  configure.flush(d, s, function()
    if rt.agent ~= agent or agent.exited then return end -- the exit handler reports it
    rt.prompt_id = agent:request("session/prompt", { sessionId = s.acp_session_id, prompt = { { type = "text", text = text } } },
      function(result, err) M.prompt_done(d, s, agent, text, result, err) end)
  end)
end

-- Sends text as a new session/prompt (the caller checked no prompt is active).
function M.prompt(d, s, text, via)
  begin_turn(d, s, text, via)
  request_turn(d, s, text)
end

-- The answer to session/prompt (text): the turn ends. Also reached by an agent handed over from a
-- previous daemon image in the middle of a turn (session.adopt).
function M.prompt_done(d, s, agent, text, result, err)
  local rt = s.rt
  if not rt or rt.agent ~= agent or agent.exited then return end -- the exit handler reports it (or did: parked)
  rt.prompt_id, rt.prompt_text = nil, nil
  if err and err.code == jsonrpc.INVALID_REQUEST and tostring(err.message):find("already has an active prompt", 1, true) then
    -- We thought the agent idle but it is in a turn: steer the text into it instead.
    return M.steer(d, s, text, function() end)
  end
  if err then
    local msg = tostring(err.message)
    log.warn("session %s: turn failed: %s", s.id, msg)
    return end_turn(d, s, "error", msg)
  end
  for _, o in ipairs(usage.on_prompt_result(d, s, result) or {}) do M.stop(d, o, "budget") end -- (s: at its turn's end)
  end_turn(d, s, type(result) == "table" and type(result.stopReason) == "string" and result.stopReason or "end_turn")
end

-- Steers text into the running turn; cb(delivered, err): "steer", or "new_turn" when the steer lost
-- the race with turn end (unless expect is "steer").
function M.steer(d, s, text, cb, expect, attempt)
  local rt = s.rt
  local agent = rt.agent
  attempt = attempt or 1
  local how = state.profile(s).steer
  if how == "none" then
    return cb(nil, jsonrpc.error(state.NOT_READY, string.format("this agent (profile %s) cannot take a message during "
      .. "a turn and queues none: wait for the turn's end (reasonix_watch), then send it", state.profile(s).name)))
  end
  if how == "queue" then
    if expect == "steer" then
      return cb(nil, jsonrpc.error(state.EXPECT_NOT_MET, string.format("expect=steer: this agent (profile %s) cannot be "
        .. "steered mid-turn; the message was not delivered (without expect it waits for the turn's end)", state.profile(s).name)))
    end
    -- no steering method: the message starts the next turn as soon as this one ends
    rt.after_turn = rt.after_turn or {}
    rt.after_turn[#rt.after_turn + 1] = text
    state.journal(d, s, { type = "prompt", via = "queued", text = text })
    return cb("queued")
  end
  agent:request(how.method, { sessionId = s.acp_session_id, prompt = { { type = "text", text = text } } },
    function(_, err)
      if not err then
        rt.counters.steers = rt.counters.steers + 1
        state.journal(d, s, { type = "prompt", via = "steer", text = text })
        return cb("steer")
      end
      if rt.agent ~= agent or agent.exited then
        return cb(nil, jsonrpc.error(state.NOT_READY, "the agent exited before the message was delivered; resume the session"))
      end
      if err.code == jsonrpc.INVALID_REQUEST and attempt < 40 then
        if rt.prompt_active then
          -- The agent has not registered our prompt yet, or finished it and its answer is on the
          -- way: try again shortly; the prompt's answer decides which.
          local timer = uv.new_timer()
          timer:start(50, 0, function()
            timer:close()
            if rt.agent ~= agent or agent.exited then
              return cb(nil, jsonrpc.error(state.NOT_READY, "the agent exited before the message was delivered; resume the session"))
            end
            if rt.prompt_active then return M.steer(d, s, text, cb, expect, attempt + 1) end
            if expect == "steer" then
              return cb(nil, jsonrpc.error(state.EXPECT_NOT_MET, "expect=steer: the turn ended before the message could be steered; it was not delivered"))
            end
            M.prompt(d, s, text, "prompt")
            cb("new_turn")
          end)
          return
        end
        if expect == "steer" then
          return cb(nil, jsonrpc.error(state.EXPECT_NOT_MET, "expect=steer: the turn ended before the message could be steered; it was not delivered"))
        end
        M.prompt(d, s, text, "prompt")
        return cb("new_turn")
      end
      cb(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "steer failed: " .. tostring(err.message)))
    end)
end

-- Delivers a message (forced steer): steer a running turn, start a new turn when idle, queue while
-- starting. cb(result, err).
function M.send(d, s, message, expect, cb)
  local rt = s.rt
  if s.status == "exited" or s.status == "orphaned" then
    -- over budget, a resume would be refused too: say what lets it go on
    local over = usage.refusal(d, s)
    if over then return cb(nil, jsonrpc.error(usage.REFUSED, "session " .. s.id .. " is " .. s.status .. ": " .. over .. ", then resume it")) end
    return cb(nil, jsonrpc.error(state.NOT_READY, "session " .. s.id .. " is " .. s.status .. " (no live agent); resume it first"))
  end
  local over = not rt.prompt_active and usage.refusal(d, s)
  if over then return cb(nil, jsonrpc.error(usage.REFUSED, "the message would start a turn: " .. over)) end
  local function done(delivered, err)
    if err then return cb(nil, err) end
    rt.wait_dirty = true
    cb({ session_id = s.id, delivered = delivered, status = s.status })
  end
  if s.status == "starting" or not rt.agent or rt.finishing then
    if expect == "new_turn" and s.status == "starting" and not rt.resuming then
      return cb(nil, jsonrpc.error(state.EXPECT_NOT_MET, "expect=new_turn: the first turn is starting; the message would be steered into it"))
    end
    -- while resuming (or reporting a turn's end) the first queued message starts the next turn and
    -- the later ones are steered into it
    local turn_follows = rt.resuming or rt.finishing
    local starts_turn = turn_follows and #rt.queued == 0
    if expect == "new_turn" and turn_follows and not starts_turn then
      return cb(nil, jsonrpc.error(state.EXPECT_NOT_MET, "expect=new_turn: a message sent before this one will start "
        .. "the next turn; this one would be steered into it (not delivered)"))
    end
    if expect == "steer" and rt.finishing then
      return cb(nil, jsonrpc.error(state.EXPECT_NOT_MET, "expect=steer: the turn has ended; the message was not delivered"))
    end
    rt.queued[#rt.queued + 1] = message
    return done(starts_turn and "new_turn" or "steer")
  end
  if rt.prompt_active then
    if expect == "new_turn" then
      return cb(nil, jsonrpc.error(state.EXPECT_NOT_MET, "expect=new_turn: a turn is running; the message would be steered into it (not delivered)"))
    end
    return M.steer(d, s, message, done, expect)
  end
  if expect == "steer" then
    return cb(nil, jsonrpc.error(state.EXPECT_NOT_MET, "expect=steer: no turn is running; the message would start a new turn (not delivered)"))
  end
  local text = message
  if not s.contract_sent then
    text = contract.first_prompt(message, state.profile(s))
    s.contract_sent = true
  end
  -- the reply goes out before the save is queued and the agent's request is written (it says what
  -- was decided: the prompt is journaled, and whatever the agent answers, or its exit, ends the turn)
  begin_turn(d, s, text, "prompt")
  done("new_turn")
  request_turn(d, s, text)
end

-- Delivers messages that arrived while the agent was starting.
function M.flush_queued(d, s)
  local queued = s.rt.queued
  s.rt.queued = {}
  for _, m in ipairs(queued) do
    M.send(d, s, m, nil, function(_, err)
      if err then log.warn("session %s: queued message not delivered: %s", s.id, err.message) end
    end)
  end
end

-- Keeps the messages s was sent that no turn has taken (queued behind the turn its budget ends) for
-- its resume to deliver; its budget's note says so.
local function keep_undelivered(d, s)
  local rt = s.rt
  local kept = {}
  for _, m in ipairs(rt.after_turn or {}) do kept[#kept + 1] = m end
  for _, m in ipairs(rt.queued) do kept[#kept + 1] = m end
  rt.after_turn, rt.queued = nil, {}
  if #kept == 0 then return end
  s.undelivered = kept
  s.budget_note = string.format("%s; %d message%s sent to it not delivered yet: a resume delivers them",
    s.budget_note or "budget reached", #kept, #kept == 1 and "" or "s")
  state.journal(d, s, { type = "undelivered", count = #kept })
end

-- Stops the agent of s (cancel the turn, close the session, end the process); reason becomes the
-- exit_reason ("stopped", "cleaned_up", "budget": messages queued for it kept). cb() runs when it
-- is gone.
function M.stop(d, s, reason, cb)
  if s.parked then -- finished, with no agent: nothing to stop
    if cb then cb() end
    return
  end
  local rt = s.rt
  if reason == "budget" then keep_undelivered(d, s) end
  local agent = rt.agent
  state.cancel_cleanup(s)
  if not agent or agent.exited then
    if state.is_live(s) and not rt.setting_up then
      revision.set(s, "status", "exited")
      revision.set(s, "exit_reason", reason)
      state.persist(d, s)
      state.changed(d, s)
    end
    rt.stopping = reason
    if cb then cb() end
    return
  end
  rt.stopping = reason
  if rt.setting_up then
    agent:stop(cb)
    return
  end
  if rt.prompt_active then agent:notify("session/cancel", { sessionId = s.acp_session_id }) end
  for _, dec in ipairs(s.pending) do dec.reply({ outcome = { outcome = "cancelled" } }) end
  revision.set(s, "pending", {})
  local closed = false
  local function finish()
    if closed then return end
    closed = true
    agent:stop(cb)
  end
  agent:request("session/close", { sessionId = s.acp_session_id }, finish)
  local t = uv.new_timer()
  t:start(500, 0, function() t:close(); finish() end)
end

return M
