-- What the agent sends, folded into its session: text chunks, session/update notifications (tool
-- calls, plans, config changes), permission requests and questions (and their answers), and the
-- agent process ending.
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local log = require "rmcp.lib.log"
local async = require "rmcp.lib.async"
local usage = require "rmcp.agentd.session.usage"
local config = require "rmcp.config"
local store = require "rmcp.agentd.store"
local rules_poll = require "rmcp.rules.poll"
local hooks = require "rmcp.policy.hooks"
local state = require "rmcp.agentd.session.state"
local sandbox = require "rmcp.agentd.session.sandbox"
local runtime = require "rmcp.agentd.session.runtime"
local profiles = require "rmcp.rules.profiles"
local acp_options = require "rmcp.rules.acp_options"
local revision = require "rmcp.agentd.session.revision"

local M = {}

local buf_add, buf_text, push_event = runtime.buf_add, runtime.buf_text, state.push_event

-- Caps a tool result for the journal.
local function tool_result_text(update)
  local parts = {}
  for _, c in ipairs(type(update.content) == "table" and update.content or {}) do
    if type(c) == "table" and type(c.content) == "table" and type(c.content.text) == "string" then
      parts[#parts + 1] = c.content.text
    end
  end
  local text = table.concat(parts, "\n")
  if #text > 2000 then text = text:sub(1, 2000) .. "…" end
  return text ~= "" and text or nil
end

-- Copies a tool's arguments for the journal with long strings cut (a write_file body, say).
local function capped_args(v, depth)
  if type(v) == "string" then
    if #v > 2000 then return v:sub(1, 2000) .. "…[" .. #v .. " bytes]" end
    return v
  end
  if type(v) ~= "table" or (depth or 0) > 8 then return v end
  local out = json.is_array(v) and json.array() or {}
  for k, x in pairs(v) do out[k] = capped_args(x, (depth or 0) + 1) end
  return out
end

-- True when two plans have the same entries (content and status) in the same order.
local function same_plan(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do
    if a[i].content ~= b[i].content or a[i].status ~= b[i].status then return false end
  end
  return true
end

-- Removes a tool id from the active list.
local function deactivate(rt, id)
  for i = #rt.active, 1, -1 do
    if rt.active[i] == id then table.remove(rt.active, i) end
  end
end

-- Folds one text chunk (kind: agent_message_chunk, agent_thought_chunk or user_message_chunk) into
-- the session: the bulk of what an agent sends, so it is kept lean.
function M.on_chunk(d, s, kind, text)
  local rt = s.rt
  rt.counters.chunks = rt.counters.chunks + 1
  local l = config.limits_now()
  if kind == "agent_message_chunk" then
    buf_add(rt.text, text, l.max_delta_text)
    -- a stored turn keeps at most max_delta_text (tail), and last_text its last 20000 bytes
    buf_add(rt.turn_text, text, math.max(l.max_delta_text, 20000))
    buf_add(rt.full_text, text, l.max_full_text)
  elseif kind == "agent_thought_chunk" then
    buf_add(rt.thought, text, l.max_full_text)
    buf_add(rt.full_thought, text, l.max_full_text)
    -- (a runtime made before a hot reload has no turn_thought yet)
    rt.turn_thought = rt.turn_thought or runtime.buf_new()
    buf_add(rt.turn_thought, text, 20000)
  end
  -- a message chunk event is kept as its text (shared with the buffers, not copied)
  if kind == "agent_message_chunk" then push_event(s, text, store.now()) else push_event(s, { type = kind, text = text }, store.now()) end
  state.output(d, s)
end

-- Folds one ACP session/update into the session.
function M.on_update(d, s, update)
  local rt = s.rt
  local kind = update.sessionUpdate
  if type(kind) ~= "string" then return end
  if kind == "agent_message_chunk" or kind == "agent_thought_chunk" or kind == "user_message_chunk" then
    local text = type(update.content) == "table" and update.content.text or ""
    return M.on_chunk(d, s, kind, type(text) == "string" and text or "")
  end
  if kind == "tool_call" then
    local id = update.toolCallId
    local running = update.status ~= "completed" and update.status ~= "failed"
    if id then
      deactivate(rt, id)
      rt.tools[id] = running and { title = update.title, kind = update.kind } or nil
      if running then rt.active[#rt.active + 1] = id end
    end
    rt.counters.tool_calls = rt.counters.tool_calls + 1
    state.journal(d, s, { type = "tool_call", id = id, title = update.title, kind = update.kind,
                          status = update.status, args = capped_args(update.rawInput), locations = update.locations })
  elseif kind == "tool_call_update" then
    local id = update.toolCallId
    if update.status == "completed" or update.status == "failed" then
      if id then
        deactivate(rt, id)
        rt.tools[id] = nil
      end
      state.journal(d, s, { type = "tool_call_update", id = id, status = update.status, result = tool_result_text(update) })
    end
  elseif kind == "plan" then
    local entries = json.array()
    for _, e in ipairs(type(update.entries) == "table" and update.entries or {}) do
      if type(e) == "table" then entries[#entries + 1] = { content = e.content, status = e.status } end
    end
    local same = same_plan(entries, s.plan or {})
    s.plan = entries
    if not same then
      rt.plan_rev = rt.plan_rev + 1
      state.journal(d, s, { type = "plan", entries = entries })
      state.persist(d, s)
      state.changed(d, s, "status", { note = "plan updated" })
    end
  elseif kind == "config_option_update" or kind == "current_mode_update" then
    if rt.acp_offer then
      acp_options.update(rt.acp_offer, kind, update)
      rt.config_options = acp_options.view(rt.acp_offer)
    elseif kind == "config_option_update" then
      rt.config_options = update.configOptions
    end
  elseif kind == "usage_update" then
    return usage.on_acp_update(s, update) -- (counted with the turn's tokens; no event of its own)
  end
  -- the update table itself becomes the event (the ACP client hands it over and keeps no reference)
  update.type = kind
  update.sessionUpdate = nil
  push_event(s, update)
  if not rules_poll.static_types[kind] then state.output(d, s) end
end

-- Answers a decision a policy took (the permission hook) at once: the agent gets the chosen option,
-- and the decision is logged, journaled and queued as a permission_auto event (poll and transcript
-- show it; the orchestrator gets an agent_event note).
local function auto_answer(d, s, dec, auto)
  local rt = s.rt
  dec.reply({ outcome = auto.option_id and { outcome = "selected", optionId = auto.option_id } or { outcome = "cancelled" } })
  rt.counters.decisions = rt.counters.decisions + 1
  local rec = { request_id = dec.request_id, kind = dec.kind, title = dec.tool_call.title, decision = auto.verdict,
                option_id = auto.option_id or "cancel", policy = auto.policy, reason = auto.reason }
  log.info("session %s: policy %s: %s %s %q with %s%s", s.id, auto.policy, auto.verdict, dec.kind, tostring(rec.title),
    rec.option_id, auto.reason and (" (" .. auto.reason .. ")") or "")
  local ev = { type = "permission_auto", tool_call = dec.tool_call }
  for k, v in pairs(rec) do ev[k] = v end
  push_event(s, ev)
  rt.wait_dirty = true
  rec.type = "permission_auto"
  state.journal(d, s, rec)
  state.changed(d, s, "status", { note = string.format("policy %s: %s %s", auto.policy, auto.verdict, tostring(rec.title)) })
end

-- Handles session/request_permission: asks the policies' permission hook, else records the decision
-- and waits for respond_permission.
function M.on_permission(d, s, params, reply)
  local rt = s.rt
  local tc = type(params.toolCall) == "table" and params.toolCall or {}
  rt.next_request_id = rt.next_request_id + 1
  local options = json.array()
  for _, o in ipairs(type(params.options) == "table" and params.options or {}) do
    if type(o) == "table" then options[#options + 1] = { optionId = o.optionId, name = o.name, kind = o.kind } end
  end
  local is_question = profiles.is_question(state.profile(s), tc)
  local dec = {
    request_id = rt.next_request_id,
    kind = is_question and "question" or "permission",
    tool_call = { title = tc.title, kind = tc.kind, toolCallId = tc.toolCallId, rawInput = tc.rawInput },
    options = options,
    reply = reply,
    delivered = false,
    asking = state.form_expected(d, s), -- a host that shows the person a form for every decision
  }
  local auto = hooks.permission(s, dec, tc)
  if not auto and rt.answer_gates and not is_question and s.tool_approval ~= "ask" then
    -- a tool_approval the agent's modes cannot keep (rules/acp_options.lua): agentd answers
    local allow
    for _, o in ipairs(options) do
      if o.kind == "allow_once" then allow = allow or o.optionId end
    end
    local approval = tostring(s.tool_approval)
    if allow then auto = { verdict = "approve", option_id = allow, reason = "tool_approval=" .. approval, policy = "built-in (" .. approval .. ")" } end
  end
  if auto then return auto_answer(d, s, dec, auto) end
  revision.add_pending(s, dec)
  rt.counters.decisions = rt.counters.decisions + 1
  push_event(s, { type = "permission_request", permission_request = state.decision_view(dec) })
  rt.wait_dirty = true
  state.journal(d, s, { type = "permission_request", request_id = dec.request_id, kind = dec.kind,
                        title = tc.title, options = options })
  state.set_status(d, s, "awaiting_decision")
  state.changed(d, s, "permission_request", { permission_request = state.decision_view(dec) })
end

-- Answers a pending decision with option_id ("cancel" cancels); returns result or nil, error.
function M.respond(d, s, option_id, request_id)
  if type(option_id) ~= "string" or option_id == "" then
    return nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, "option_id must be a non-empty string")
  end
  if request_id ~= nil and math.type(request_id) ~= "integer" and not (type(request_id) == "number" and request_id % 1 == 0) then
    return nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, "request_id must be an integer")
  end
  local index
  for i, dec in ipairs(s.pending) do
    if request_id == nil or dec.request_id == request_id then index = i; break end
  end
  if not index then
    if s.pending[1] then state.answer_failed(d, s, s.pending[1]) end
    return nil, jsonrpc.error(state.NOT_READY, request_id and ("no pending decision " .. tostring(request_id) .. " in session " .. s.id)
      or ("session " .. s.id .. " has no pending decision"))
  end
  local dec = s.pending[index]
  local outcome
  if option_id == "cancel" then
    outcome = { outcome = "cancelled" }
  else
    local valid = {}
    for _, o in ipairs(dec.options) do
      valid[#valid + 1] = o.optionId
      if o.optionId == option_id then outcome = { outcome = "selected", optionId = option_id } end
    end
    if not outcome then
      state.answer_failed(d, s, dec)
      return nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, string.format("option_id %q is not an option of request %d (options: %s, or cancel)",
        option_id, dec.request_id, table.concat(valid, ", ")))
    end
  end
  revision.remove_pending(s, index)
  dec.reply({ outcome = outcome })
  state.journal(d, s, { type = "permission_response", request_id = dec.request_id, option_id = option_id })
  if #s.pending == 0 and s.status == "awaiting_decision" then
    state.set_status(d, s, s.rt.prompt_active and "running" or "idle")
  end
  state.changed(d, s)
  return { session_id = s.id, answered = true, request_id = dec.request_id, status = s.status }
end

-- Handles the agent process ending: a tombstone, with error text when nobody asked it to stop.
function M.on_exit(d, s, agent, code, signal)
  local rt = s.rt
  if not rt or rt.agent ~= agent then return end -- (a parked session's agent exited long ago)
  rt.agent = nil
  sandbox.close_gate(s)
  if sandbox.has_git(d, s) then
    async.run(function() sandbox.sync_git(d, s) end,
      function(e) log.error("session %s: bringing its git work back failed: %s", s.id, tostring(e)) end)
  end
  state.cancel_cleanup(s)
  local was_prompt = rt.prompt_active
  rt.prompt_active = false
  rt.active = {}
  revision.set(s, "pending", {})
  if rt.setting_up then return end -- setup reports the failure itself
  if d.shutting_down then return end -- stays live on disk: orphaned at the next start
  local expected = rt.stopping
  rt.stopping = nil
  local err_text
  if expected then
    revision.set(s, "exit_reason", expected)
    if was_prompt then revision.set(s, "stop_reason", "cancelled") end
  else
    local tail = agent:stderr_tail()
    err_text = string.format("agent exited unexpectedly (%s)%s",
      signal and signal ~= 0 and ("signal " .. tostring(signal)) or ("exit code " .. tostring(code)),
      tail ~= "" and (": " .. tail) or "")
    state.set_error(s, err_text)
    revision.set(s, "exit_reason", "crashed")
    revision.set(s, "stop_reason", "process_exited")
    revision.set(s, "terminal_pending", true)
    if was_prompt and rt.turn_text.size > 0 then s.last_text = buf_text(rt.turn_text):sub(-20000) end
    log.warn("session %s: %s", s.id, err_text)
  end
  push_event(s, { type = "process_exited", code = code, signal = signal, error_text = err_text })
  rt.wait_dirty = true
  -- the text of a turn the exit cut short goes to the journal too, so the session's text is whole on disk
  local partial = was_prompt and rt.turn_text.size > 0 and buf_text(rt.turn_text):sub(-20000) or nil
  state.journal(d, s, { type = "process_exit", code = code, signal = signal, reason = s.exit_reason, error_text = err_text,
                        text = partial })
  store.close_journal(s.id)
  revision.set(s, "status", "exited")
  state.persist(d, s)
  state.changed(d, s, "process_exited", { error_text = err_text, note = s.exit_reason })
end

return M
