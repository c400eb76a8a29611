-- Poll shaping: turns a drained session snapshot into the lean or detailed poll result, with event
-- filtering and caps. Stateless: the daemon drains the session (agentd/session/state.lua: drain), this only shapes.
local json = require "rmcp.lib.json"
local config = require "rmcp.config"
local caps = require "rmcp.rules.caps"

local M = {}

-- Setup noise every session emits; omitted unless named in include_events.
M.static_types = { available_commands_update = true, config_option_update = true, current_mode_update = true }

-- Events that are never filtered or dropped.
M.critical_types = { permission_request = true, turn_end = true, process_exited = true }

-- Checks the event type names list v of option k; returns them as a set, or nil, message.
local function event_set(k, v)
  if type(v) ~= "table" then return nil, k .. " must be an array of event type names" end
  local set = {}
  for _, name in ipairs(v) do
    if type(name) ~= "string" then return nil, k .. " must contain strings" end
    set[name] = true
  end
  return set
end

-- The largest events tail a detailed result holds: max_events asked (p.max_events, checked; clamped
-- to max_events_cap), else the max_events cap; returns it and the cap when the ask was clamped.
local function events_tail(asked)
  if asked == nil then return math.min(caps.limit("max_events"), caps.limit("max_events_cap")) end
  local cap = caps.limit("max_events_cap")
  return math.min(math.tointeger(asked), cap), asked > cap and cap or nil
end

-- Checks poll options; returns normalized options or nil, message naming the bad field. (A poll
-- asks it on every call: the plain one, with no option, makes no set and reads no events cap.)
function M.options(p)
  local detail, thought, full, max_events = p.detail, p.include_thought, p.include_full, p.max_events
  if detail ~= nil and type(detail) ~= "boolean" then return nil, "detail must be a boolean" end
  if thought ~= nil and type(thought) ~= "boolean" then return nil, "include_thought must be a boolean" end
  if full ~= nil and type(full) ~= "boolean" then return nil, "include_full must be a boolean" end
  local include, exclude, err
  if p.include_events ~= nil then
    include, err = event_set("include_events", p.include_events)
    if err then return nil, err end
  end
  if p.exclude_events ~= nil then
    exclude, err = event_set("exclude_events", p.exclude_events)
    if err then return nil, err end
  end
  if max_events ~= nil then
    if math.type(max_events) ~= "integer" and not (type(max_events) == "number" and max_events == math.floor(max_events)) then
      return nil, "max_events must be an integer"
    end
    if max_events < 0 then return nil, "max_events must be >= 0" end
  end
  -- an event selector asks for the events: it opts into the detailed shape, which shows them
  local selects = include ~= nil or exclude ~= nil or max_events ~= nil
  if selects and detail == false then
    return nil, "include_events, exclude_events and max_events select events, which only detail=true shows: drop detail=false"
  end
  local o = { detail = detail == true or selects, -- (a plain poll's three keys: one table made at its size)
    include_thought = thought == true or (thought == nil and config.flag("INCLUDE_THOUGHT")),
    include_full = full == true or (full == nil and config.flag("INCLUDE_FULL")) }
  if include then o.include_events = include end
  if exclude then o.exclude_events = exclude end
  -- (only a detailed result holds events: filter_events reads the tail)
  if o.detail then o.max_events, o.max_events_clamped = events_tail(max_events) end
  return o
end

-- Filters events by type and keeps the tail; returns events, filtered count, dropped count.
function M.filter_events(events, o)
  local kept, filtered = {}, 0
  for _, ev in ipairs(events) do
    local t = ev.type
    local keep
    if M.critical_types[t] then
      keep = true
    elseif o.include_events then
      keep = o.include_events[t] == true
    else
      keep = not M.static_types[t]
    end
    if keep and o.exclude_events and o.exclude_events[t] and not M.critical_types[t] then keep = false end
    if keep then kept[#kept + 1] = ev else filtered = filtered + 1 end
  end
  local dropped = 0
  if #kept > o.max_events then
    dropped = #kept - o.max_events
    local tail = {}
    for i = dropped + 1, #kept do tail[#tail + 1] = kept[i] end
    kept = tail
  end
  return json.array(kept), filtered, dropped
end

-- The fields every poll shape shares (lean keys; empty or unchanged ones omitted), in one table
-- made at its size.
local function lean_fields(snap)
  local status = snap.status
  local r = { -- (9 keys: a table of 16, room for the 6 set below)
    session_id = snap.session_id, status = status,
    current_work = snap.current_work,
    permission_request = snap.permission_request,
    background_recovery = snap.background_recovery,
    health = snap.health, -- blocked or stalled (agentd/health.lua)
    changes = snap.changes, -- isolate=worktree: what it changed against its base
    usage = snap.usage, -- what it spent: the last turn, the session (rules/usage.lua line)
    integration = snap.integration, -- its branch's integration (agentd/integrate/queue.lua)
  }
  if snap.text ~= nil and snap.text ~= "" then r.message, r.message_truncated = caps.message(snap.text) end
  if snap.stop_reason and status ~= "running" and status ~= "starting" then r.stop_reason = snap.stop_reason end
  if status == "exited" or status == "orphaned" then r.exit_reason = snap.exit_reason end
  if snap.plan_changed then r.plan = json.array(snap.plan or {}) end
  if snap.error_changed then r.error_text = snap.error_text end
  return r
end

-- Bytes value takes as JSON.
local function encoded_size(value)
  return #(json.encode(value) or "")
end

-- Bytes a true flag adds to an object's JSON: ,"flag":true.
local function flag_bytes(flag)
  return #flag + 8
end

-- Cuts the text field of r (flagged by flag) to lose at least over bytes, keeping its tail; a flag
-- not set yet costs its own bytes too.
local function cut_text(r, field, flag, over)
  local text = r[field]
  if type(text) ~= "string" or text == "" then return end
  if not r[flag] then over = over + flag_bytes(flag) end
  r[field] = caps.tail(text, math.max(0, #text - over))
  r[flag] = true
end

-- Drops events of r, the oldest non-critical ones first, until at least over bytes are gone;
-- events_dropped counts them.
local function cut_events(r, over)
  local events = r.events
  if type(events) ~= "table" or #events == 0 then return end
  local kept, gone, n = json.array(), 0, 0
  for _, ev in ipairs(events) do
    if gone < over and not M.critical_types[ev.type] then
      gone, n = gone + encoded_size(ev) + 1, n + 1
    else
      kept[#kept + 1] = ev
    end
  end
  r.events = kept
  r.events_dropped = (r.events_dropped or 0) + n
end

-- Empties the texts of r's turns, the oldest first, until at least over bytes are gone.
local function cut_turns(r, over)
  for _, turn in ipairs(r.turns or {}) do
    if over <= 0 then return end
    if turn.text ~= "" then
      over = over - #turn.text
      turn.text, turn.text_truncated = "", true
      r.turns_truncated = true
    end
  end
end

-- The cuts that make a result fit, least needed first (the turns' texts repeat what text holds);
-- each gets the bytes over budget and the budget.
local cuts = {
  function(r, over) cut_text(r, "full_thought", "full_thought_truncated", over) end,
  function(r, over) cut_text(r, "thought", "thought_truncated", over) end,
  function(r, over) cut_text(r, "full_text", "full_text_truncated", over) end,
  cut_turns,
  -- the text and the events share what is left: the text first down to half the budget
  function(r, over, budget)
    local text = r.text
    if type(text) == "string" and #text > budget // 2 then
      cut_text(r, "text", "text_truncated", math.min(over, #text - budget // 2))
    end
  end,
  cut_events,
  function(r, over) cut_text(r, "text", "text_truncated", over) end,
  -- the last resort of a result that shares its budget with many (a detailed watch of a fleet)
  function(r, over) cut_text(r, "message", "message_truncated", over) end,
}

-- Cuts result r until it encodes in at most budget bytes (a host drops or cuts a tool result over
-- its output cap): full thought, thought, full text, the older turns' texts, the text's head (to
-- half the budget), the oldest events, the rest of the text, the message's head; each cut flagged
-- as the shaping flags it, and result_truncated set. A result that fits is returned as it is, with
-- its JSON text (measuring it encoded it: a reply sends that text instead of encoding it again).
function M.fit(r, budget)
  local text = json.encode(r)
  local over = #(text or "") - budget
  if over <= 0 then return r, text end
  r.result_truncated = true -- (first: its bytes count too)
  over = over + flag_bytes("result_truncated")
  for _, cut in ipairs(cuts) do
    cut(r, over, budget)
    over = encoded_size(r) - budget
    if over <= 0 then return r end
  end
  return r
end

-- True when lean result r (lean_fields) says something beside its session's state and spend: a
-- message, plan, work, decision, error, recovery, health, changes or integration. (A key added to
-- lean_fields is added here: poll_kept_spec sets each.)
local function says_news(r)
  return r.message ~= nil or r.plan ~= nil or r.current_work ~= nil or r.permission_request ~= nil
    or r.error_text ~= nil or r.background_recovery ~= nil or r.health ~= nil or r.changes ~= nil
    or r.integration ~= nil
end

-- The text kept in kept (M.shape) when lean result r says what the kept one said, else nil. (The
-- same usage line: session/usage.lua keeps one while what it shows is the same, and no result
-- changes the line it shows.)
local function kept_text(r, kept)
  if kept.text == nil or r.usage ~= kept.usage or r.status ~= kept.status or r.stop_reason ~= kept.stop_reason
    or r.exit_reason ~= kept.exit_reason or r.session_id ~= kept.session_id or says_news(r) then
    return nil
  end
  return kept.text
end

-- Keeps lean result r with its text in kept when it says no news, else forgets what kept held.
local function keep(r, text, kept)
  kept.text = nil
  if says_news(r) then return end
  kept.session_id, kept.status, kept.stop_reason, kept.exit_reason = r.session_id, r.status, r.stop_reason, r.exit_reason
  kept.usage, kept.text = r.usage, text
end

-- Shapes a drained snapshot into the poll result for options o (from M.options); with its JSON text
-- when it fitted whole (M.fit). kept (optional): a table the caller keeps per session, where a lean
-- result that says nothing new keeps its text, given again for the same result (a session polled
-- again and again while nothing happens: encoding it costs as much as the rest of the poll).
function M.shape(snap, o, kept)
  local r = lean_fields(snap)
  if o.detail then
    r.text, r.text_truncated = caps.tail(snap.text or "", caps.limit("max_delta_text"))
    r.text_truncated = r.text_truncated or snap.text_cut == true
    -- turns: every undrained turn's stop_reason, their texts together at most max_delta_text, the
    -- newest first (an older text is cut to its tail or emptied: text_truncated on the turn,
    -- turns_truncated on the result); turns_dropped counts turns the daemon no longer held.
    local list, turns = snap.turns or {}, json.array()
    local budget, cut = caps.limit("max_delta_text"), false
    for i = #list, 1, -1 do
      local turn = list[i]
      local text, tr = caps.tail(turn.text or "", math.max(budget, 0))
      budget = budget - #text
      tr = tr or turn.text_truncated == true
      cut = cut or tr
      turns[i] = { text = text, stop_reason = turn.stop_reason, text_truncated = tr or nil }
    end
    r.turns = turns
    if cut then r.turns_truncated = true end
    if (snap.turns_dropped or 0) > 0 then r.turns_dropped, r.turns_truncated = snap.turns_dropped, true end
    local events, filtered, dropped = M.filter_events(snap.events or {}, o)
    r.events = events
    r.max_events_clamped = o.max_events_clamped
    r.events_filtered = filtered
    r.events_dropped = dropped + (snap.events_overflow or 0)
    r.counters = snap.counters
    r.transcript_path = snap.transcript_path
    r.config = snap.config
    r.error_text = snap.error_text
    r.stop_reason = snap.stop_reason
  end
  if o.include_thought then
    r.thought, r.thought_truncated = caps.tail(snap.thought or "", caps.limit("max_full_text"))
    r.full_thought, r.full_thought_truncated = caps.tail(snap.full_thought or "", caps.limit("max_full_text"))
    r.thought_truncated = r.thought_truncated or snap.thought_cut == true
    r.full_thought_truncated = r.full_thought_truncated or snap.full_thought_cut == true
  end
  if o.include_full then
    r.full_text, r.full_text_truncated = caps.tail(snap.full_text or "", caps.limit("max_full_text"))
    r.full_text_truncated = r.full_text_truncated or snap.full_text_cut == true
  end
  local budget = o.budget or caps.limit("max_result_bytes")
  if not kept or o.detail or o.include_thought or o.include_full then return M.fit(r, budget) end
  local text = kept_text(r, kept)
  if text and #text <= budget then return r, text end
  local fitted, fresh = M.fit(r, budget)
  if fresh then keep(fitted, fresh, kept) else kept.text = nil end
  return fitted, fresh
end

return M
