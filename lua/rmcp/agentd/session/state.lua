-- A session's state and its bookkeeping: the persisted record, the runtime-only part (s.rt; its
-- fresh shape and text buffers are runtime.lua's), the event queue, saving and journaling, waking
-- watchers, and draining what is new for poll and watch (a session brought back from its file is
-- restore.lua's). The other session modules change a session only through these helpers or their
-- own verbs (a field a list reads: through revision.lua); nothing outside writes a session field.
local uv = require "luv"
local json = require "rmcp.lib.json"
local log = require "rmcp.lib.log"
local config = require "rmcp.config"
local store = require "rmcp.agentd.store"
local rules_poll = require "rmcp.rules.poll"
local order = require "rmcp.agentd.session.order"
local caps = require "rmcp.rules.caps"
local runtime = require "rmcp.agentd.session.runtime"
local park = require "rmcp.agentd.session.park"
local usage = require "rmcp.lib.lazy" "rmcp.agentd.session.usage" -- (it journals through this module)
local revision = require "rmcp.agentd.session.revision"

local M = {}

-- Error codes of the session verbs (PROTOCOL.md).
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
  return "rx-" .. store.random_hex(6)
end

local buf_new, buf_text, buf_emptied = runtime.buf_new, runtime.buf_text, runtime.buf_emptied

-- Creates a session in d for orchestrator owner rooted at cwd, with spawn options o.
function M.create(d, owner, project_dir, o, cwd)
  local id = new_id()
  while d.sessions[id] do id = new_id() end
  local now = store.now()
  local s = {
    id = id, owner = owner, project_dir = project_dir, cwd = cwd, task = o.task,
    model = o.model, effort = o.effort, tool_approval = o.tool_approval, work_mode = o.work_mode,
    keep_alive = o.keep_alive, idle_timeout = o.idle_timeout, routine = o.routine, on_behalf_of = o.on_behalf_of,
    sandbox = o.sandbox, budget = o.budget, daily_budget = o.daily_budget, fleet = o.fleet, agent = o.agent,
    status = "starting", contract_sent = false, created_at = now, updated_at = now, turns_total = 0, turns_drained = 0,
    skipped_options = json.array(), warnings = json.array(), pending = {},
    transcript_path = store.journal_path(d.paths.sessions, id),
    rt = runtime.new_rt(),
  }
  order.put(d, id, s)
  return s
end

-- Appends a finished turn (its text, stop_reason, and whether its text was already cut) to the
-- undrained turns of runtime state rt. They are bounded: each text to its last max_delta_text
-- bytes, all texts together to max_full_text (older texts cut first), and at most turn_buffer
-- turns (the newest; turns_dropped counts the rest). A detailed poll reports every cut.
function M.add_turn(rt, text, stop_reason, cut)
  local l = config.limits_now()
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
end

-- Forgets a session: its record, its journal and its place in d (a spawn that failed, or pruned).
function M.discard(d, s)
  park.forget(d, s)
  -- (loaded only for a sandboxed session: the restore path stays free of process spawning)
  if type(s.sandbox) == "table" and s.sandbox.level ~= "none" then
    require("rmcp.agentd.session.sandbox").forget(d, s)
  end
  order.put(d, s.id, nil)
  store.remove(d.paths.sessions, s.id)
  os.remove(s.transcript_path)
end

-- Notes on s that a save of its metadata failed (list shows damaged), once per kind of error.
local function save_failed(s, err)
  local note = "metadata not saved: " .. tostring(err)
  if s.damaged ~= note then
    revision.set(s, "damaged", note)
    log.warn("session %s: %s", s.id, note)
  end
end

-- Writes the session's metadata: at once (and fsynced) when the session ends, the daemon stops or
-- when is "now", else (or when is "later") at the end of this loop iteration, coalesced
-- (store.save); a failure is noted on the session (damaged). A session restored from an unreadable
-- file is never written: its file stays as it was found. A parked session's record takes back the
-- fields it holds on disk; a finished one is parked a moment later (park.lua).
function M.persist(d, s, when)
  if s.unreadable then return end
  revision.set(s, "updated_at", store.now())
  local now = when == "now" or (when ~= "later" and (d.shutting_down or not live_status[s.status]))
  local extra = s.parked and park.peek(d, s).fields or nil
  local ok, err = store.save(d.paths.sessions, s, now, function(e) save_failed(s, e) end, extra)
  if now and not ok then save_failed(s, err) end
  if not live_status[s.status] then park.later(d, s) end
end

-- Writes the session's first record at once (fsynced) before anything else is done for it: the
-- disk is known to take it. Returns true, or nil and why (the path and the system's error).
function M.save_first(d, s)
  local ok, err = store.save(d.paths.sessions, s, true)
  if ok then return true end
  return nil, string.format("cannot save the session to %s: %s", store.meta_path(d.paths.sessions, s.id), tostring(err))
end

-- Appends a journal record for the session.
function M.journal(d, s, rec)
  store.append(d.paths.sessions, s.id, rec)
end

-- Tells the daemon that s changed (wakes watches and waits, emits agent_event when event is given).
function M.changed(d, s, event, extra)
  if d.on_change then d.on_change(s, event, extra) end
end

-- Tells the daemon that s has new output (wakes waits; a watch only cares when it is ready).
function M.output(d, s)
  s.rt.wait_dirty = true
  if d.on_output then d.on_output(s) end
end

-- Queues an event (a table, or the text of an agent_message_chunk: the bulk of a chatty session is
-- kept as its string and time stamp, not as a table each, and becomes a table when drained); t is
-- its time (default now). Non-critical events are bounded, the oldest dropped first.
function M.push_event(s, ev, t)
  local rt = s.rt
  local events, times = rt.events, rt.event_t
  local n = #events + 1
  events[n] = ev
  if type(ev) == "table" then
    ev.t = ev.t or t or store.now()
    times[n] = ev.t
    if critical_types[ev.type] then
      -- a session only ever polled lean keeps its critical events (turn ends, decisions) for the
      -- next detailed look; past twice the buffer the oldest go too
      local max = config.limits_now().event_buffer
      if n > 2 * max then
        local drop = max // 10
        table.move(events, drop + 1, n + drop, 1)
        table.move(times, drop + 1, n + drop, 1)
        rt.events_overflow = rt.events_overflow + drop
        rt.noncritical = 0
        for i = 1, n - drop do if type(events[i]) == "string" or not critical_types[events[i].type] then rt.noncritical = rt.noncritical + 1 end end
      end
      return
    end
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
function M.set_status(d, s, status)
  if s.status ~= status then
    revision.set(s, "status", status)
    M.persist(d, s)
  end
end

-- Records an error text (poll reports it once as changed).
function M.set_error(s, text)
  s.error_text = text
  s.rt.error_rev = s.rt.error_rev + 1
end

-- The public view of a pending decision.
function M.decision_view(dec)
  return { request_id = dec.request_id, kind = dec.kind, tool_call = dec.tool_call, options = dec.options,
           asking = dec.asking }
end

-- Cancels the idle-cleanup timer of s.
function M.cancel_cleanup(s)
  if s.rt and s.rt.idle_timer then
    s.rt.idle_timer:close()
    s.rt.idle_timer = nil
  end
end

-- What the agent is doing now: the latest running tool call, else the in-progress plan step.
function M.current_work(s)
  -- a finished turn or an exited agent works on nothing
  if s.status ~= "running" and s.status ~= "awaiting_decision" then return nil end
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

-- The running turn's text so far (not drained: an observer reads it, nothing is consumed).
function M.turn_text(s)
  return buf_text(s.rt.turn_text)
end

-- The profile of s's agent (rules/profiles.lua): the one it was started with, else the built-in one
-- of its recorded name, else reasonix's.
function M.profile(s)
  local profiles = require "rmcp.rules.profiles"
  return (s.rt and s.rt.profile) or profiles.builtin[s.agent_profile or "reasonix"] or profiles.builtin.reasonix
end

-- The running turn's reasoning so far ("" when none).
function M.turn_thought(s)
  return s.rt.turn_thought and buf_text(s.rt.turn_thought) or ""
end

-- The config the agent is running with (effective values as the agent reports them), from its
-- config options (default: those in s's runtime; config_options reads a parked session's).
function M.effective_config(s, options)
  local out = {}
  for _, opt in ipairs(options or s.rt.config_options or {}) do
    if type(opt) == "table" and opt.id then out[opt.id] = opt.currentValue end
  end
  return out
end

-- What the agent of s advertises (its config options, nil when none), read back for a parked session.
function M.config_options(d, s)
  if s.parked then
    local rt = park.peek(d, s, true).rt
    return rt and rt.config_options
  end
  return s.rt.config_options
end

-- The last turn's text of s, read back for a parked session.
function M.last_text(d, s)
  if s.parked then return park.peek(d, s).fields.last_text end
  return s.last_text
end

-- The session's text as its journal has it (each turn's text, in order, and a turn cut short by the
-- agent's exit), for a tombstone whose buffers were released; the last max bytes.
local function journal_text(s, max)
  local parts = {}
  for _, rec in ipairs(store.read_journal(s.transcript_path)) do
    if (rec.type == "turn_end" or rec.type == "process_exit") and type(rec.text) == "string" then parts[#parts + 1] = rec.text end
  end
  return (caps.tail(table.concat(parts), max))
end

-- Drops what a tombstone no longer needs in memory once a poll or watch took its end: the
-- whole-session text buffers and tool tables (its text is read back from the journal when asked).
local function release(s)
  local rt = s.rt
  rt.full_text, rt.full_thought, rt.turn_text, rt.turn_thought = buf_new(), buf_new(), buf_new(), buf_new()
  rt.tools, rt.active, rt.queued = {}, {}, {}
  rt.released = true
end

-- Journals how far s's turns were delivered (saved a moment later): right after the reply of a drain.
function M.journal_delivered(d, s)
  M.journal(d, s, { type = "delivered", turns = s.turns_drained })
  M.persist(d, s, "later")
end

-- Adds what only a detailed result shows to snapshot snap of s, and takes its events (the chunks
-- kept as their text become events now: a lean result must not cost a walk over the buffer).
local function drain_detail(s, rt, snap)
  local events, times = rt.events, rt.event_t
  for i = 1, #events do
    local e = events[i]
    if type(e) == "string" then events[i] = { type = "agent_message_chunk", text = e, t = times[i] } end
  end
  snap.events, snap.events_overflow = events, rt.events_overflow
  snap.turns, snap.turns_dropped, snap.text_cut = rt.turns, rt.turns_dropped, rt.text.cut
  snap.counters, snap.config = rt.counters, M.effective_config(s)
  rt.events, rt.event_t, rt.noncritical, rt.events_overflow = {}, {}, 0, 0
end

-- Drains what is new since the last poll/watch into a snapshot for policy shaping, and resets it.
-- o: the options of the poll-shaped result it is for (rules/poll.lua: detail, include_thought,
-- include_full), nil for a compact watch result. The snapshot holds what that result shows: the
-- events, turns and config only for a detailed one (a lean one leaves the events for the next
-- detailed look), the reasoning and the whole-session texts only for one that includes them (up to
-- max_full_text each, read from disk for a released tombstone: a watch or lean poll of a long
-- session must not copy them each time). A parked session comes back for it, and is parked again a
-- moment later. Also returns true when it took undelivered turns: journal_delivered then follows
-- the reply.
function M.drain(d, s, o)
  if s.parked then park.unpark(d, s) end
  local rt, status, first = s.rt, s.status, s.pending[1]
  local snap = {
    session_id = s.id, status = status, stop_reason = s.stop_reason, exit_reason = s.exit_reason,
    error_text = s.error_text, error_changed = rt.error_rev ~= rt.error_seen and s.error_text ~= nil,
    text = buf_text(rt.text), plan = s.plan, plan_changed = rt.plan_rev ~= rt.plan_seen, current_work = M.current_work(s),
    permission_request = first and M.decision_view(first) or nil,
    transcript_path = s.transcript_path, changes = s.changes,
    last_turn_text = (status == "idle" or status == "exited" or status == "orphaned") and s.last_text or nil,
    background_recovery = rt.recovery_report,
    usage = usage.line(s), -- {turn, total, cost?, …}: what it spent (session/usage.lua)
    integration = rt.integration_news and s.integration or nil,
  }
  if o and o.detail then drain_detail(s, rt, snap) end
  if o and o.include_thought then
    snap.thought, snap.full_thought = buf_text(rt.thought), buf_text(rt.full_thought)
    snap.thought_cut, snap.full_thought_cut = rt.thought.cut, rt.full_thought.cut
  end
  if o and o.include_full then
    snap.full_text, snap.full_text_cut = rt.released and journal_text(s, config.limits_now().max_full_text) or buf_text(rt.full_text), rt.full_text.cut
  end
  rt.recovery_report, rt.integration_news = nil, nil
  rt.text, rt.thought = buf_emptied(rt.text), buf_emptied(rt.thought)
  if rt.turns[1] ~= nil then rt.turns = {} end
  rt.turns_dropped = 0
  rt.plan_seen, rt.error_seen = rt.plan_rev, rt.error_rev
  rt.wait_dirty = false
  local took_turns = s.turns_drained ~= s.turns_total
  s.turns_drained = s.turns_total -- (a queued daemon reload counts the turn's result as delivered)
  if not rt.released and not live_status[status] then release(s) end
  if not live_status[status] then park.later(d, s) end
  return snap, took_turns
end

-- Flags the running turn of s as stalled (agentd/health.lua saw no progress): the next watch reports
-- it once (rules/watch.lua); its delivery or a new turn clears the flag.
function M.mark_stalled(d, s, note)
  s.rt.health_alert = true
  M.changed(d, s, "status", { note = note })
end

-- Marks what a watch of connection conn_id (nil: none) just reported as delivered: the terminal
-- state and the pending decisions (a queued reload and later watches go by these: a decision wakes
-- each connection's watch once, rules/watch.lua). Saved for a tombstone only: a live session comes
-- back from a daemon restart orphaned with its result pending whatever the file said.
function M.mark_delivered(d, s, conn_id)
  park.collected(d, s)
  if s.rt then s.rt.health_alert = nil end
  for _, dec in ipairs(s.pending) do
    dec.delivered, dec.delivered_at, dec.answer_failed = true, store.now(), nil
    if conn_id then
      dec.seen_by = dec.seen_by or {}
      dec.seen_by[conn_id] = true
    end
  end
  if not live_status[s.status] then M.persist(d, s) end
end

-- True ("elicitation") when a connection of s's owner said in hello that its host shows the person a
-- form for each decision (server/elicitation.lua), else nil.
function M.form_expected(d, s)
  for conn in pairs(d.conns) do
    if conn.hello and conn.orch == s.owner and type(conn.client) == "table" and conn.client.elicitation == true then
      return "elicitation"
    end
  end
  return nil
end

-- Records where the integration of s's branch is (agentd/integrate/queue.lua: {id, state, target,
-- note?, files?, commit?}): saved, and news for the next watch of s.
function M.mark_integration(d, s, info)
  if s.parked then park.unpark(d, s) end -- (a finished one too: its watch reports the news)
  revision.set(s, "integration", info)
  s.rt.integration_news = true
  M.persist(d, s)
  M.changed(d, s, "integration", info)
end

-- Records the last forecast of s's branch (agentd/integrate/forecast.lua: {target, ahead, behind,
-- clean, conflicts?, collides_with?, at}): saved and shown (list's detail rows, the dashboard), not
-- news for a watch.
function M.mark_forecast(d, s, f)
  if s.parked then park.unpark(d, s) end
  s.forecast = f
  M.persist(d, s)
  M.changed(d, s)
end

-- Records that an answer to decision dec of s failed (a wrong option or request id): it wakes the
-- next watch at once, marked a repeat, so the orchestrator is never left waiting on it.
function M.answer_failed(d, s, dec)
  dec.answer_failed = true
  M.changed(d, s)
end

-- Records how a person is being asked decision request_id of s now (via: "elicitation", the host's
-- form), or that the asking ended without an answer (via nil: the form was dismissed): the
-- decision is then the orchestrator's again, and wakes its watch once more. Returns false when s has
-- no such decision.
function M.mark_asking(d, s, request_id, via)
  for _, dec in ipairs(s.pending) do
    if dec.request_id == request_id then
      if via == nil and dec.asking ~= nil then dec.answer_failed = true end
      dec.asking = via
      M.changed(d, s)
      return true
    end
  end
  return false
end

return M
