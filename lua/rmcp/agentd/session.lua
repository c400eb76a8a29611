-- The session state machine: one agent per session, its ACP traffic folded into the session table
-- (status, text, turns, events, plan, current work, decisions, errors), journaled and persisted.
-- Status: starting → running ⇄ idle, awaiting_decision while a decision is pending, exited (tombstone),
-- orphaned (was live when the daemon died). Sessions are plain tables owned by the daemon (d.sessions);
-- runtime-only state lives in s.rt.
local uv = require "luv"
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local log = require "rmcp.lib.log"
local config = require "rmcp.config"
local acp = require "rmcp.acp.client"
local store = require "rmcp.agentd.store"
local posture = require "rmcp.agentd.posture"
local rules_spawn = require "rmcp.rules.spawn"
local rules_cleanup = require "rmcp.rules.cleanup"
local rules_poll = require "rmcp.rules.poll"
local hooks = require "rmcp.policy.hooks"
local contract = require "rmcp.rules.contract"
local caps = require "rmcp.rules.caps"

local M = {}

M.NOT_READY = -32006
M.EXPECT_NOT_MET = -32004

local critical_types = rules_poll.critical_types
local live_status = { starting = true, running = true, idle = true, awaiting_decision = true }

-- True when the session has (or is getting) a live agent.
function M.is_live(s)
  return live_status[s.status] == true
end

-- A fresh random session id (12 hex digits from the kernel's random source).
local function new_id()
  local f = io.open("/dev/urandom", "rb")
  local bytes = f and f:read(6) or tostring(uv.hrtime())
  if f then f:close() end
  return "rx-" .. bytes:gsub(".", function(c) return string.format("%02x", c:byte()) end):sub(1, 12)
end


-- A bounded text accumulator: pieces are joined lazily, and only about the last max bytes are kept
-- (cut = true once text was dropped).
local function buf_new()
  return { parts = {}, size = 0 }
end

-- Appends text to buffer b, dropping the oldest text once it holds over 1.25 × max (a quarter of
-- slack keeps the re-joins rare without holding twice the cap).
local function buf_add(b, text, max)
  if text == "" then return end
  local parts = b.parts
  parts[#parts + 1] = text
  b.size = b.size + #text
  if b.size > max + max // 4 then
    local joined = caps.tail(table.concat(parts), max)
    b.parts, b.size, b.cut = { joined }, #joined, true
  end
end

-- The text held in buffer b.
local function buf_text(b)
  if #b.parts > 1 then b.parts = { table.concat(b.parts) } end
  return b.parts[1] or ""
end

-- Fresh runtime state (never persisted).
local function new_rt()
  return {
    text = buf_new(), thought = buf_new(), full_text = buf_new(), full_thought = buf_new(), turn_text = buf_new(),
    turns = {}, turns_dropped = 0, events = {}, event_t = {}, noncritical = 0, events_overflow = 0,
    plan_rev = 0, plan_seen = 0, error_rev = 0, error_seen = 0,
    tools = {}, active = {}, queued = {}, next_request_id = 0, wait_dirty = false,
    counters = { chunks = 0, tool_calls = 0, turns = 0, steers = 0, prompts = 0, decisions = 0 },
  }
end

-- Creates a session in d for orchestrator owner rooted at cwd, with spawn options o.
function M.create(d, owner, project_dir, o, cwd)
  local id = new_id()
  while d.sessions[id] do id = new_id() end
  local now = store.now()
  local s = {
    id = id, owner = owner, project_dir = project_dir, cwd = cwd, task = o.task,
    model = o.model, effort = o.effort, tool_approval = o.tool_approval, work_mode = o.work_mode,
    keep_alive = o.keep_alive, idle_timeout = o.idle_timeout,
    status = "starting", contract_sent = false, created_at = now, updated_at = now, turns_total = 0,
    skipped_options = json.array(), warnings = json.array(), pending = {},
    transcript_path = store.journal_path(d.paths.sessions, id),
    rt = new_rt(),
  }
  d.sessions[id] = s
  return s
end

-- Rebuilds a session from its persisted record after a daemon start; live ones become orphaned.
function M.restore(d, rec)
  local s = rec
  if type(s.task) ~= "string" then s.task = tostring(s.task or "") end
  if type(s.status) ~= "string" then s.status = "exited" end
  s.rt = new_rt()
  s.pending = {}
  s.plan = json.array(type(s.plan) == "table" and s.plan or {})
  s.skipped_options = json.array(type(s.skipped_options) == "table" and s.skipped_options or {})
  s.warnings = json.array(type(s.warnings) == "table" and s.warnings or {})
  if type(s.posture) == "table" and type(s.posture.allow_write) == "table" then json.array(s.posture.allow_write) end
  s.transcript_path = store.journal_path(d.paths.sessions, s.id)
  if live_status[s.status] then
    s.status = "orphaned"
    s.exit_reason = "daemon_died"
    s.terminal_pending = true
  end
  d.sessions[s.id] = s
  return s
end

-- Writes the session's metadata: at once (and fsynced) when the session ends or the daemon stops,
-- else at the end of this loop iteration, coalesced (store.save).
function M.persist(d, s)
  s.updated_at = store.now()
  store.save(d.paths.sessions, s, d.shutting_down or not live_status[s.status])
end

-- Appends a journal record for the session.
function M.journal(d, s, rec)
  store.append(d.paths.sessions, s.id, rec)
end

-- Tells the daemon that s changed (wakes watches and waits, emits agent_event when event is given).
local function changed(d, s, event, extra)
  if d.on_change then d.on_change(s, event, extra) end
end

-- Queues an event (a table, or the text of an agent_message_chunk: the bulk of a chatty session is
-- kept as its string and time stamp, not as a table each, and becomes a table when drained); t is
-- its time (default now). Non-critical events are bounded, the oldest dropped first.
local function push_event(s, ev, t)
  local rt = s.rt
  local events, times = rt.events, rt.event_t
  local n = #events + 1
  events[n] = ev
  if type(ev) == "table" then
    ev.t = ev.t or t or store.now()
    times[n] = ev.t
    if critical_types[ev.type] then return end
  else
    times[n] = t or store.now()
  end
  rt.noncritical = rt.noncritical + 1
  local max = config.limits_now().event_buffer
  if rt.noncritical > max then
    -- compacted in place, the oldest tenth at a time; critical events are never dropped
    local drop = rt.noncritical - max + math.max(1, max // 10)
    local plain = true -- the oldest `drop` events are all droppable (a flood): one move does it
    for i = 1, drop do
      local e = events[i]
      if type(e) ~= "string" and critical_types[e.type] then plain = false; break end
    end
    if plain then
      table.move(events, drop + 1, n + drop, 1)
      table.move(times, drop + 1, n + drop, 1)
      rt.noncritical = rt.noncritical - drop
      rt.events_overflow = rt.events_overflow + drop
      return
    end
    local j, dropped = 0, 0
    for i = 1, n do
      local e = events[i]
      if dropped < drop and (type(e) == "string" or not critical_types[e.type]) then
        dropped = dropped + 1
      else
        j = j + 1
        events[j], times[j] = e, times[i]
      end
    end
    for i = j + 1, n do events[i], times[i] = nil, nil end
    rt.noncritical = rt.noncritical - dropped
    rt.events_overflow = rt.events_overflow + dropped
  end
end

-- Sets the session's status and persists when it changed.
local function set_status(d, s, status)
  if s.status ~= status then
    s.status = status
    M.persist(d, s)
  end
end

-- Records an error text (poll reports it once as changed).
local function set_error(s, text)
  s.error_text = text
  s.rt.error_rev = s.rt.error_rev + 1
end

-- The public view of a pending decision.
local function decision_view(dec)
  return { request_id = dec.request_id, kind = dec.kind, tool_call = dec.tool_call, options = dec.options }
end

-- What the agent is doing now: the latest running tool call, else the in-progress plan step.
function M.current_work(s)
  local rt = s.rt
  local id = rt.active[#rt.active]
  if id and rt.tools[id] then
    local c = rt.tools[id]
    return { type = "tool", tool = c.title and c.title:match("^(%S+)") or c.kind, title = c.title, kind = c.kind,
             tool_call_id = id }
  end
  for _, e in ipairs(s.plan or {}) do
    if e.status == "in_progress" then return { type = "plan_step", content = e.content } end
  end
  return nil
end

-- Removes a tool id from the active list.
local function deactivate(rt, id)
  for i = #rt.active, 1, -1 do
    if rt.active[i] == id then table.remove(rt.active, i) end
  end
end

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

-- Folds one ACP session/update into the session.
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
  end
  -- a message chunk event is kept as its text (shared with the buffers, not copied)
  if kind == "agent_message_chunk" then push_event(s, text, store.now()) else push_event(s, { type = kind, text = text }, store.now()) end
  rt.wait_dirty = true
  if d.on_output then d.on_output(s) end
end

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
    M.journal(d, s, { type = "tool_call", id = id, title = update.title, kind = update.kind,
                      status = update.status, args = capped_args(update.rawInput), locations = update.locations })
  elseif kind == "tool_call_update" then
    local id = update.toolCallId
    if update.status == "completed" or update.status == "failed" then
      if id then
        deactivate(rt, id)
        rt.tools[id] = nil
      end
      M.journal(d, s, { type = "tool_call_update", id = id, status = update.status, result = tool_result_text(update) })
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
      M.journal(d, s, { type = "plan", entries = entries })
      M.persist(d, s)
      changed(d, s, "status", { note = "plan updated" })
    end
  elseif kind == "config_option_update" then
    rt.config_options = update.configOptions
  end
  -- the update table itself becomes the event (the ACP client hands it over and keeps no reference)
  update.type = kind
  update.sessionUpdate = nil
  push_event(s, update)
  if not rules_poll.static_types[kind] then
    rt.wait_dirty = true
    if d.on_output then d.on_output(s) end
  end
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
  M.journal(d, s, rec)
  changed(d, s, "status", { note = string.format("policy %s: %s %s", auto.policy, auto.verdict, tostring(rec.title)) })
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
  local is_question = tc.kind == "other" and type(tc.toolCallId) == "string" and tc.toolCallId:match("^ask%-") ~= nil
  local dec = {
    request_id = rt.next_request_id,
    kind = is_question and "question" or "permission",
    tool_call = { title = tc.title, kind = tc.kind, toolCallId = tc.toolCallId, rawInput = tc.rawInput },
    options = options,
    reply = reply,
    delivered = false,
  }
  local auto = hooks.permission(s, dec, tc)
  if auto then return auto_answer(d, s, dec, auto) end
  s.pending[#s.pending + 1] = dec
  rt.counters.decisions = rt.counters.decisions + 1
  push_event(s, { type = "permission_request", permission_request = decision_view(dec) })
  rt.wait_dirty = true
  M.journal(d, s, { type = "permission_request", request_id = dec.request_id, kind = dec.kind,
                    title = tc.title, options = options })
  set_status(d, s, "awaiting_decision")
  changed(d, s, "permission_request", { permission_request = decision_view(dec) })
end

-- Cancels the idle-cleanup timer of s.
local function cancel_cleanup(s)
  if s.rt.idle_timer then
    s.rt.idle_timer:close()
    s.rt.idle_timer = nil
  end
end

-- Starts the idle grace of s after a terminal turn, per the cleanup policy, counted from when the
-- session went idle (so re-arming it after a policy change keeps the time already spent idle).
-- A cleanup a policy asked for is reported with its note (agent_event) before the agent stops.
local function schedule_cleanup(d, s)
  cancel_cleanup(s)
  local rt = s.rt
  if rt.stopping then return end
  local grace = rules_cleanup.grace(s)
  if grace == nil then return end
  rt.idle_since = rt.idle_since or uv.now()
  local timer = uv.new_timer()
  rt.idle_timer = timer
  timer:start(math.max(0, math.floor(grace * 1000) - (uv.now() - rt.idle_since)), 0, function()
    cancel_cleanup(s)
    if s.status ~= "idle" or s.rt ~= rt then return end
    local now_grace, note = rules_cleanup.grace(s)
    if now_grace == nil then return end
    if now_grace > grace then return schedule_cleanup(d, s) end
    log.info("session %s: idle for %ss, cleaning up%s", s.id, tostring(now_grace), note and (": " .. note) or "")
    if note then changed(d, s, "status", { note = "cleanup: " .. note }) end
    M.stop(d, s, "cleaned_up")
  end)
end

-- Re-arms the idle cleanup of idle sessions after the cleanup rules changed (a policy reload).
function M.policy_changed(d)
  for _, s in pairs(d.sessions) do
    if s.status == "idle" and s.rt.idle_since and not s.rt.stopping then schedule_cleanup(d, s) end
  end
end

-- Ends the current turn with stop_reason (and error text for an errored turn).
local function end_turn(d, s, stop_reason, err_text)
  local rt = s.rt
  rt.prompt_active = false
  rt.active, rt.tools = {}, {}
  local l = config.limits_now()
  local cut = rt.turn_text.cut
  local text = buf_text(rt.turn_text)
  rt.turn_text = buf_new()
  -- Undrained turns are bounded: each text to its last max_delta_text bytes, all texts together to
  -- max_full_text (older texts cut first), and at most turn_buffer turns (the newest; turns_dropped
  -- counts the rest). A detailed poll reports every cut.
  local turns = rt.turns
  local stored, tcut = caps.tail(text, l.max_delta_text)
  turns[#turns + 1] = { text = stored, stop_reason = stop_reason, text_truncated = (cut or tcut) or nil }
  local over = #turns - math.max(1, l.turn_buffer)
  if over > 0 then
    table.move(turns, over + 1, #turns + over, 1)
    rt.turns_dropped = rt.turns_dropped + over
  end
  local budget = l.max_full_text
  for i = #turns, 1, -1 do
    local tu = turns[i]
    if #tu.text > budget then tu.text, tu.text_truncated = caps.tail(tu.text, budget), true end
    budget = budget - #tu.text
  end
  rt.counters.turns = rt.counters.turns + 1
  s.turns_total = (s.turns_total or 0) + 1
  s.last_text = text:sub(-20000)
  s.stop_reason = stop_reason
  if err_text then set_error(s, err_text) end
  s.pending = {}
  s.terminal_pending = true
  if rt.turn_started_at then
    s.work_seconds = (s.work_seconds or 0) + (store.now() - rt.turn_started_at)
    rt.turn_started_at = nil
  end
  push_event(s, { type = "turn_end", stop_reason = stop_reason, error_text = err_text })
  rt.wait_dirty = true
  s.status = "idle"
  -- the watch waiting for this turn gets its reply first; the journal and the save follow
  changed(d, s, "turn_end", { stop_reason = stop_reason, error_text = err_text })
  M.journal(d, s, { type = "turn_end", stop_reason = stop_reason, text = s.last_text, error_text = err_text })
  M.persist(d, s)
  rt.idle_since = uv.now()
  schedule_cleanup(d, s)
end

-- Sends text as a new session/prompt (the caller checked no prompt is active).
function M.prompt(d, s, text, via)
  local rt = s.rt
  local agent = rt.agent
  cancel_cleanup(s)
  rt.idle_since = nil
  rt.prompt_active = true
  rt.turn_started_at = rt.turn_started_at or store.now()
  rt.counters.prompts = rt.counters.prompts + 1
  s.terminal_pending = false
  M.journal(d, s, { type = "prompt", via = via or "prompt", text = text })
  set_status(d, s, "running")
  rt.prompt_text = text
  rt.prompt_id = agent:request("session/prompt", { sessionId = s.acp_session_id, prompt = { { type = "text", text = text } } },
    function(result, err) M.prompt_done(d, s, agent, text, result, err) end)
end

-- The answer to session/prompt (text): the turn ends. Also reached by an agent handed over from a
-- previous daemon image in the middle of a turn (agentd/handover.lua).
function M.prompt_done(d, s, agent, text, result, err)
  local rt = s.rt
  if rt.agent ~= agent or agent.exited then return end -- the exit handler reports it
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
  end_turn(d, s, type(result) == "table" and type(result.stopReason) == "string" and result.stopReason or "end_turn")
end

-- Steers text into the running turn; cb(delivered, err): "steer", or "new_turn" when the steer lost
-- the race with turn end (unless expect is "steer").
function M.steer(d, s, text, cb, expect, attempt)
  local rt = s.rt
  local agent = rt.agent
  attempt = attempt or 1
  agent:request("_reasonix.io/session/steer", { sessionId = s.acp_session_id, prompt = { { type = "text", text = text } } },
    function(_, err)
      if not err then
        rt.counters.steers = rt.counters.steers + 1
        M.journal(d, s, { type = "prompt", via = "steer", text = text })
        return cb("steer")
      end
      if rt.agent ~= agent or agent.exited then
        return cb(nil, jsonrpc.error(M.NOT_READY, "the agent exited before the message was delivered; resume the session"))
      end
      if err.code == jsonrpc.INVALID_REQUEST and attempt < 40 then
        if rt.prompt_active then
          -- The agent has not registered our prompt yet, or finished it and its answer is on the
          -- way: try again shortly; the prompt's answer decides which.
          local timer = uv.new_timer()
          timer:start(50, 0, function()
            timer:close()
            if rt.agent ~= agent or agent.exited then
              return cb(nil, jsonrpc.error(M.NOT_READY, "the agent exited before the message was delivered; resume the session"))
            end
            if rt.prompt_active then return M.steer(d, s, text, cb, expect, attempt + 1) end
            if expect == "steer" then
              return cb(nil, jsonrpc.error(M.EXPECT_NOT_MET, "expect=steer: the turn ended before the message could be steered; it was not delivered"))
            end
            M.prompt(d, s, text, "prompt")
            cb("new_turn")
          end)
          return
        end
        if expect == "steer" then
          return cb(nil, jsonrpc.error(M.EXPECT_NOT_MET, "expect=steer: the turn ended before the message could be steered; it was not delivered"))
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
    return cb(nil, jsonrpc.error(M.NOT_READY, "session " .. s.id .. " is " .. s.status .. " (no live agent); resume it first"))
  end
  local function done(delivered, err)
    if err then return cb(nil, err) end
    rt.wait_dirty = true
    cb({ session_id = s.id, delivered = delivered, status = s.status })
  end
  if s.status == "starting" or not rt.agent then
    if expect == "new_turn" and s.status == "starting" and not rt.resuming then
      return cb(nil, jsonrpc.error(M.EXPECT_NOT_MET, "expect=new_turn: the first turn is starting; the message would be steered into it"))
    end
    rt.queued[#rt.queued + 1] = message
    return done(rt.resuming and "new_turn" or "steer")
  end
  if rt.prompt_active then
    if expect == "new_turn" then
      return cb(nil, jsonrpc.error(M.EXPECT_NOT_MET, "expect=new_turn: a turn is running; the message would be steered into it (not delivered)"))
    end
    return M.steer(d, s, message, done, expect)
  end
  if expect == "steer" then
    return cb(nil, jsonrpc.error(M.EXPECT_NOT_MET, "expect=steer: no turn is running; the message would start a new turn (not delivered)"))
  end
  local text = message
  if not s.contract_sent then
    text = contract.first_prompt(message)
    s.contract_sent = true
  end
  M.prompt(d, s, text, "prompt")
  done("new_turn")
end

-- Delivers messages that arrived while the agent was starting.
local function flush_queued(d, s)
  local queued = s.rt.queued
  s.rt.queued = {}
  for _, m in ipairs(queued) do
    M.send(d, s, m, nil, function(_, err)
      if err then log.warn("session %s: queued message not delivered: %s", s.id, err.message) end
    end)
  end
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
    return nil, jsonrpc.error(M.NOT_READY, request_id and ("no pending decision " .. tostring(request_id) .. " in session " .. s.id)
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
      return nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, string.format("option_id %q is not an option of request %d (options: %s, or cancel)",
        option_id, dec.request_id, table.concat(valid, ", ")))
    end
  end
  table.remove(s.pending, index)
  dec.reply({ outcome = outcome })
  M.journal(d, s, { type = "permission_response", request_id = dec.request_id, option_id = option_id })
  if #s.pending == 0 and s.status == "awaiting_decision" then
    set_status(d, s, s.rt.prompt_active and "running" or "idle")
  end
  changed(d, s)
  return { session_id = s.id, answered = true, request_id = dec.request_id, status = s.status }
end

-- Handles the agent process ending: a tombstone, with error text when nobody asked it to stop.
function M.on_exit(d, s, agent, code, signal)
  local rt = s.rt
  if rt.agent ~= agent then return end
  rt.agent = nil
  cancel_cleanup(s)
  local was_prompt = rt.prompt_active
  rt.prompt_active = false
  rt.active = {}
  s.pending = {}
  if rt.setting_up then return end -- setup reports the failure itself
  if d.shutting_down then return end -- stays live on disk: orphaned at the next start
  local expected = rt.stopping
  rt.stopping = nil
  local err_text
  if expected then
    s.exit_reason = expected
    if was_prompt then s.stop_reason = "cancelled" end
  else
    local tail = agent:stderr_tail()
    err_text = string.format("agent exited unexpectedly (%s)%s",
      signal and signal ~= 0 and ("signal " .. tostring(signal)) or ("exit code " .. tostring(code)),
      tail ~= "" and (": " .. tail) or "")
    set_error(s, err_text)
    s.exit_reason = "crashed"
    s.stop_reason = "process_exited"
    s.terminal_pending = true
    if was_prompt and rt.turn_text.size > 0 then s.last_text = buf_text(rt.turn_text):sub(-20000) end
    log.warn("session %s: %s", s.id, err_text)
  end
  push_event(s, { type = "process_exited", code = code, signal = signal, error_text = err_text })
  rt.wait_dirty = true
  M.journal(d, s, { type = "process_exit", code = code, signal = signal, reason = s.exit_reason, error_text = err_text })
  store.close_journal(s.id)
  s.status = "exited"
  M.persist(d, s)
  changed(d, s, "process_exited", { error_text = err_text, note = s.exit_reason })
end

-- Starts the agent for s and configures it: initialize, session/new (or session/resume), the config
-- options, and the posture probe in parallel. Runs in a coroutine; returns true or nil, error.
function M.setup(d, s, o, mode)
  local rt = s.rt
  local bin, berr = config.agent_bin()
  local argv = rules_spawn.agent_argv(bin, { purpose = "session", session_id = s.id, cwd = s.cwd,
                                              model = o.model or s.model, orchestrator_id = s.owner })
  if not argv then return nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, berr) end
  bin = argv[1]
  local env = config.agent_env()
  local probe_result, probe_waiter
  posture.probe_cached(rules_spawn.doctor_argv(argv), s.cwd, env, function(p)
    probe_result = p
    if probe_waiter then probe_waiter() end
  end)
  rt.setting_up = true
  local agent, serr
  agent, serr = acp.start({
    bin = bin, args = { table.unpack(argv, 2) }, cwd = s.cwd, env = env,
    max_line = config.limit("max_line"), stderr_tail = config.limit("stderr_tail"),
    on_update = function(_, update) M.on_update(d, s, update) end,
    on_chunk = function(kind, text) M.on_chunk(d, s, kind, text) end,
    on_permission = function(params, reply) M.on_permission(d, s, params, reply) end,
    on_exit = function(code, signal) M.on_exit(d, s, agent, code, signal) end,
  })
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

  local _, ierr = agent:initialize({ name = "reasonix-mcp", version = d.version or "0" })
  if ierr then return fail("ACP initialize failed", ierr) end
  local res, rerr
  if mode == "resume" then
    res, rerr = agent:call("session/resume", { sessionId = s.acp_session_id, cwd = s.cwd, mcpServers = json.array() })
    if rerr then return fail("session/resume failed", rerr) end
  else
    res, rerr = agent:call("session/new", { cwd = s.cwd, mcpServers = json.array() })
    if rerr then return fail("session/new failed", rerr) end
    if type(res) ~= "table" or type(res.sessionId) ~= "string" then return fail("session/new failed", "no sessionId in the result") end
    s.acp_session_id = res.sessionId
  end
  local options = type(res) == "table" and res.configOptions or {}
  local skipped, warnings = json.array(), json.array()
  for _, key in ipairs(rules_spawn.order) do
    local step = rules_spawn.step(key, o, options)
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
  local model_opt = rules_spawn.find_option(options, "model")
  if model_opt then s.model = model_opt.currentValue end
  rt.config_options = options
  s.skipped_options, s.warnings = skipped, warnings
  if not probe_result then
    require("rmcp.lib.async").await(function(resume) probe_waiter = resume end)
  end
  s.posture = probe_result
  if probe_result.warning then log.warn("session %s: %s", s.id, probe_result.warning) end
  if not watchdog:is_closing() then watchdog:close() end
  rt.setting_up = nil
  if agent.exited then return fail("agent exited during setup", "exit code " .. tostring(agent.exit_code)) end
  if rt.stopping then return fail("stopped", "stopped while starting") end
  return true
end

-- The config the agent is running with (effective values as the agent reports them).
local function effective_config(s)
  local out = {}
  for _, opt in ipairs(s.rt.config_options or {}) do
    if type(opt) == "table" and opt.id then out[opt.id] = opt.currentValue end
  end
  return out
end

-- The spawn/resume result for s.
function M.spawn_result(s)
  return {
    session_id = s.id, status = s.status, cwd = s.cwd, model = s.model, effort = s.effort,
    tool_approval = s.tool_approval, work_mode = s.work_mode, keep_alive = s.keep_alive == true,
    idle_timeout = s.idle_timeout, posture = s.posture, skipped_options = s.skipped_options,
    warnings = s.warnings, transcript_path = s.transcript_path, agent_config = effective_config(s),
  }
end

-- After spawn setup: the first prompt (task + status contract), then queued messages.
function M.begin(d, s)
  s.contract_sent = true
  M.prompt(d, s, contract.first_prompt(s.task), "prompt")
  M.journal(d, s, { type = "spawn", cwd = s.cwd, model = s.model, effort = s.effort, tool_approval = s.tool_approval })
  flush_queued(d, s)
end

-- After resume setup: idle, then queued messages as new turns.
function M.resumed(d, s)
  s.status = "idle"
  s.exit_reason = nil
  s.terminal_pending = false
  s.rt.resuming = nil
  M.journal(d, s, { type = "resume", cwd = s.cwd })
  M.persist(d, s)
  flush_queued(d, s)
  changed(d, s)
end

-- Prepares a tombstone for resume (fresh runtime state, status starting).
function M.prepare_resume(s)
  s.rt = new_rt()
  s.rt.resuming = true
  s.pending = {}
  s.status = "starting"
end

-- Stops the agent of s (cancel the turn, close the session, end the process); reason becomes the
-- exit_reason ("stopped", "cleaned_up"). cb() runs when it is gone.
function M.stop(d, s, reason, cb)
  local rt = s.rt
  local agent = rt.agent
  cancel_cleanup(s)
  if not agent or agent.exited then
    if M.is_live(s) and not rt.setting_up then
      s.status = "exited"
      s.exit_reason = reason
      M.persist(d, s)
      changed(d, s)
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
  s.pending = {}
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

-- Drains what is new since the last poll/watch into a snapshot for policy shaping, and resets it.
function M.drain(s)
  local rt = s.rt
  local events, times = rt.events, rt.event_t
  for i = 1, #events do
    local e = events[i]
    if type(e) == "string" then events[i] = { type = "agent_message_chunk", text = e, t = times[i] } end
  end
  local first = s.pending[1]
  local snap = {
    session_id = s.id, status = s.status, stop_reason = s.stop_reason, exit_reason = s.exit_reason,
    error_text = s.error_text, error_changed = rt.error_rev ~= rt.error_seen and s.error_text ~= nil,
    text = buf_text(rt.text), thought = buf_text(rt.thought), turns = rt.turns, turns_dropped = rt.turns_dropped,
    events = rt.events, events_overflow = rt.events_overflow,
    plan = s.plan, plan_changed = rt.plan_rev ~= rt.plan_seen, current_work = M.current_work(s),
    permission_request = first and decision_view(first) or nil,
    full_text = buf_text(rt.full_text), full_thought = buf_text(rt.full_thought), transcript_path = s.transcript_path,
    text_cut = rt.text.cut, thought_cut = rt.thought.cut, full_text_cut = rt.full_text.cut, full_thought_cut = rt.full_thought.cut,
    counters = rt.counters, config = effective_config(s),
    last_turn_text = (s.status == "idle" or s.status == "exited" or s.status == "orphaned") and s.last_text or nil,
  }
  rt.text, rt.thought, rt.turns, rt.events, rt.event_t = buf_new(), buf_new(), {}, {}, {}
  rt.noncritical, rt.events_overflow, rt.turns_dropped = 0, 0, 0
  rt.plan_seen, rt.error_seen = rt.plan_rev, rt.error_rev
  rt.wait_dirty = false
  rt.drained_turns = s.turns_total -- a queued daemon reload counts the turn's result as delivered
  return snap
end

-- Kills every live agent at once (daemon shutdown); sessions stay live on disk.
function M.kill_all(d)
  for _, s in pairs(d.sessions) do
    if s.rt.agent then s.rt.agent:kill() end
    cancel_cleanup(s)
  end
end

return M
