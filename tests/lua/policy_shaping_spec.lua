-- The stateless policy modules: poll filtering and caps, compact watch results, list rows, spawn
-- option checks and the mapping onto what the agent advertises, cleanup grace, caps.
local json = require "rmcp.lib.json"
local poll = require "rmcp.rules.poll"
local watch = require "rmcp.rules.watch"
local list = require "rmcp.rules.list"
local revision = require "rmcp.agentd.session.revision"
local spawn = require "rmcp.rules.spawn"
local cleanup = require "rmcp.rules.cleanup"
local caps = require "rmcp.rules.caps"

local with_env = require("testing").with_env

-- A snapshot like agentd/session/state.lua's drain produces.
local function snap(over)
  local s = {
    session_id = "rx-1", status = "idle", stop_reason = "end_turn", text = "hello", thought = "hmm",
    turns = { { text = "hello", stop_reason = "end_turn" } }, events = {}, events_overflow = 0,
    plan = {}, plan_changed = false, transcript_path = "/t", full_text = "hello", full_thought = "hmm",
    counters = { turns = 1 }, config = {},
  }
  for k, v in pairs(over or {}) do s[k] = v end
  return s
end

test("lean poll omits empty and unchanged fields; detail adds text, turns, events", function(t)
  local o = assert(poll.options({}))
  local r = poll.shape(snap(), o)
  t.eq(r.message, "hello")
  t.eq(r.stop_reason, "end_turn")
  t.eq(r.plan, nil, "unchanged plan omitted")
  t.eq(r.text, nil)
  t.eq(r.events, nil)
  t.eq(r.thought, nil, "thought is opt-in")
  r = poll.shape(snap({ status = "running", text = "", plan_changed = true, plan = { { content = "a", status = "in_progress" } } }), o)
  t.eq(r.message, nil)
  t.eq(r.stop_reason, nil, "no stop reason while running")
  t.eq(r.plan[1].content, "a")
  r = poll.shape(snap(), assert(poll.options({ detail = true, include_thought = true, include_full = true })))
  t.eq(r.text, "hello")
  t.eq(r.turns[1].stop_reason, "end_turn")
  t.eq(r.thought, "hmm")
  t.eq(r.full_text, "hello")
  t.eq(json.encode(r.events), "[]", "empty events encode as an array")
end)

test("poll events: static types filtered, include/exclude, critical kept, tail capped", function(t)
  local events = {
    { type = "available_commands_update" }, { type = "config_option_update" }, { type = "tool_call" },
    { type = "agent_message_chunk" }, { type = "plan" }, { type = "permission_request" }, { type = "turn_end" },
  }
  local r = poll.shape(snap({ events = events, events_overflow = 3 }), assert(poll.options({ detail = true })))
  t.eq(#r.events, 5)
  t.eq(r.events_filtered, 2)
  t.eq(r.events_dropped, 3)
  r = poll.shape(snap({ events = events }), assert(poll.options({ detail = true, include_events = { "plan", "available_commands_update" } })))
  local types = {}
  for _, e in ipairs(r.events) do types[#types + 1] = e.type end
  t.eq(types, { "available_commands_update", "plan", "permission_request", "turn_end" })
  r = poll.shape(snap({ events = events }), assert(poll.options({ detail = true, exclude_events = { "agent_message_chunk", "turn_end" } })))
  types = {}
  for _, e in ipairs(r.events) do types[#types + 1] = e.type end
  t.eq(types, { "tool_call", "plan", "permission_request", "turn_end" }, "critical events survive exclude")
  r = poll.shape(snap({ events = events }), assert(poll.options({ detail = true, max_events = 2 })))
  t.eq(#r.events, 2)
  t.eq(r.events[2].type, "turn_end")
  t.eq(r.events_dropped, 3)
  t.eq(assert(poll.options({ max_events = 100000 })).max_events, 200, "explicit cap")
  local _, err = poll.options({ include_events = "plan" })
  t.match(err, "include_events")
  _, err = poll.options({ detail = "yes" })
  t.match(err, "detail")
end)

test("caps cut text and say so", function(t)
  local big = string.rep("a", 3000) .. string.rep("b", 3000)
  local r = poll.shape(snap({ text = big }), assert(poll.options({})))
  t.eq(r.message_truncated, true)
  t.ok(#r.message < 4100)
  t.eq(r.message:sub(1, 3), "aaa")
  t.eq(r.message:sub(-3), "bbb")
  local tail, cut = caps.tail("héllo", 4)
  t.eq(cut, true)
  t.eq(tail, "llo", "never splits a UTF-8 sequence")
  with_env({ REASONIX_MCP_MAX_DELTA_TEXT = "10" }, function()
    local d = poll.shape(snap({ text = string.rep("x", 50) }), assert(poll.options({ detail = true })))
    t.eq(#d.text, 10)
    t.eq(d.text_truncated, true)
  end)
end)

test("detailed poll: turns share the text cap, newest first, and every cut is reported", function(t)
  local full = assert(poll.options({ detail = true }))
  local d = poll.shape(snap(), full)
  t.eq(d.turns_truncated, nil)
  t.eq(d.turns_dropped, nil)
  t.eq(d.turns[1].text_truncated, nil)
  with_env({ REASONIX_MCP_MAX_DELTA_TEXT = "10" }, function()
    local r = poll.shape(snap({ turns = {
      { text = "old-turn-text", stop_reason = "end_turn" },
      { text = "mid", stop_reason = "cancelled" },
      { text = "newest", stop_reason = "end_turn" },
    } }), full)
    t.eq(#r.turns, 3, "every turn keeps its stop_reason")
    t.eq(r.turns[3].text, "newest")
    t.eq(r.turns[3].text_truncated, nil)
    t.eq(r.turns[2].text, "mid")
    t.eq(r.turns[1].text, "t")
    t.eq(r.turns[1].text_truncated, true)
    t.eq(r.turns[1].stop_reason, "end_turn")
    t.eq(r.turns_truncated, true)
  end)
  local r = poll.shape(snap({ turns = { { text = "x", stop_reason = "end_turn", text_truncated = true } }, turns_dropped = 3,
                              text_cut = true }), full)
  t.eq(r.turns[1].text_truncated, true, "a cut made when the turn was stored")
  t.eq(r.turns_dropped, 3)
  t.eq(r.turns_truncated, true)
  t.eq(r.text_truncated, true, "text the daemon's buffer already dropped")
end)

test("watch readiness and the compact result", function(t)
  t.eq(watch.ready({ status = "running", pending = {} }), nil)
  t.eq(watch.ready({ status = "idle", pending = {}, terminal_pending = true }), "terminal")
  t.eq(watch.ready({ status = "awaiting_decision", pending = { { delivered = false } } }), "decision")
  -- a decision wakes each connection's watch once; again after a failed answer, for a connection
  -- that has not seen it, and as a reminder
  local now, remind = 1000, watch.remind_s()
  local seen = { delivered = true, delivered_at = now - 1, seen_by = { [7] = true } }
  t.eq(watch.ready({ status = "awaiting_decision", pending = { seen } }, 7, now), nil, "seen by this connection: no spin")
  t.eq(watch.ready({ status = "awaiting_decision", pending = { seen } }, 8, now), "decision", "a connection that has not seen it")
  t.eq(watch.next_reminder({ pending = { seen } }, 7, now), now - 1 + remind)
  t.eq(watch.ready({ status = "awaiting_decision", pending = { seen } }, 7, now - 1 + remind), "reminder")
  seen.answer_failed = true
  t.eq(watch.ready({ status = "awaiting_decision", pending = { seen } }, 7, now), "decision", "an answer that failed")
  t.eq(watch.next_reminder({ pending = { seen } }, 7, now), nil, "due now, no reminder to wait for")
  t.eq(watch.ready({ status = "awaiting_decision", pending = { { delivered = true } } }), "reminder",
    "without a connection and a time (a wait): every reported decision is due")
  t.eq(watch.decision_repeated({ pending = { { delivered = false } } }), false)
  t.eq(watch.decision_repeated({ pending = { { delivered = true } } }), true)
  t.eq(watch.ready({ status = "exited", pending = {} }), "exited")
  local r = watch.compact(snap({ last_turn_text = string.rep("z", 5000), plan = { { content = "p", status = "completed" } },
                                 error_text = "boom" }))
  t.eq(r.status, "idle")
  t.eq(r.stop_reason, "end_turn")
  t.eq(r.message_truncated, true)
  t.eq(r.plan[1].content, "p")
  t.eq(r.error_text, "boom")
  t.eq(r.transcript_path, "/t")
  t.eq(r.events, nil, "compact results carry no event list")
end)

test("list view: what an orchestrator acts on by default, the rest counted, pages by cursor", function(t)
  local now = 1000000
  local sessions = {}
  for i = 1, 6 do -- finished long ago and collected
    sessions[#sessions + 1] = { id = "old" .. i, status = "exited", created_at = i, updated_at = i, pending = {} }
  end
  sessions[#sessions + 1] = { id = "uncollected", status = "exited", created_at = 10, updated_at = 10, pending = {},
                              terminal_pending = true }
  sessions[#sessions + 1] = { id = "idle", status = "idle", created_at = 11, updated_at = 11, pending = {} }
  sessions[#sessions + 1] = { id = "busy", status = "running", created_at = 12, updated_at = 12, pending = {} }
  sessions[#sessions + 1] = { id = "today", status = "exited", created_at = 13, updated_at = now - 60, pending = {} }
  local r = list.shape(sessions, {})
  local ids = {}
  for _, row in ipairs(r.sessions) do ids[#ids + 1] = row.session_id end
  t.eq(ids, { "busy", "idle", "uncollected" }, "a finished, collected session is counted, not shown, however recent")
  t.eq(r.hidden, 7)
  t.eq(r.counts, { exited = 8, idle = 1, running = 1 }, "counts cover every session")
  t.eq(r.next_cursor, nil)
  r = list.shape(sessions, { all = true })
  t.eq(#r.sessions, 10)
  t.eq(r.hidden, nil)
  -- pages of 3 over all ten: each row once, in order, the last page without a cursor
  local seen, cursor, pages = {}, nil, 0
  repeat
    r = list.shape(sessions, { all = true, limit = 3, cursor = cursor })
    pages = pages + 1
    for _, row in ipairs(r.sessions) do seen[#seen + 1] = row.session_id end
    t.eq(r.counts.exited, 8, "counts cover every page")
    cursor = r.next_cursor and list.parse_cursor(r.next_cursor)
  until not cursor
  t.eq(pages, 4)
  t.eq(seen, { "today", "busy", "idle", "uncollected", "old6", "old5", "old4", "old3", "old2", "old1" })
  t.eq(select(2, list.parse_cursor("junk")), "cursor must be a next_cursor from an earlier list")
end)

test("list pages fit the result budget: a page ends early with a cursor, a row alone over it has its task cut", function(t)
  local json = require "rmcp.lib.json"
  local sessions = {}
  for i = 1, 40 do
    sessions[#sessions + 1] = { id = string.format("rx-%03d", i), status = "idle", created_at = i, updated_at = i,
                                pending = {}, task = string.rep("t", 500), cwd = "/w" }
  end
  sessions[#sessions + 1] = { id = "rx-huge", status = "idle", created_at = 100, updated_at = 100, pending = {},
                              task = string.rep("H", 5 * 1024 * 1024), cwd = "/w" }
  local budget, seen, cursor, pages = 8000, {}, nil, 0
  repeat
    local r = list.shape(sessions, { encoded = true, include_task = true, limit = 500, budget = budget, cursor = cursor })
    local text = json.encode(r)
    t.ok(#text <= budget, "page " .. pages .. " fits: " .. #text)
    local page = json.decode(text)
    for _, row in ipairs(page.sessions) do
      seen[#seen + 1] = row.session_id
      if row.session_id == "rx-huge" then
        t.eq(row.task_truncated, true, "the long task is cut and flagged")
        t.ok(row.task:match("^H+$"), "its head kept")
      else
        t.eq(#row.task, 500, "other rows whole")
      end
    end
    if page.next_cursor then t.eq(page.result_truncated, true, "a page the budget ended says so") end
    pages = pages + 1
    cursor = page.next_cursor and list.parse_cursor(page.next_cursor)
  until not cursor
  t.eq(#seen, 41, "every session on some page, once")
  t.eq(seen[1], "rx-huge")
  t.ok(pages > 2)
end)

test("list rows: previews, pending decisions, pending_only, counts", function(t)
  local sessions = {
    { id = "a", status = "idle", task = string.rep("word ", 60), created_at = 1, pending = {} },
    { id = "b", status = "awaiting_decision", task = "short", created_at = 2,
      pending = { { request_id = 3, kind = "question", tool_call = { title = "Which?" } } } },
  }
  local r = list.shape(sessions, {})
  t.eq(r.sessions[1].session_id, "b", "newest first")
  t.eq(r.sessions[1].pending_decision.request_id, 3)
  t.ok(#r.sessions[2].task <= 124)
  t.eq(r.counts, { idle = 1, awaiting_decision = 1 })
  r = list.shape(sessions, { include_task = true })
  t.eq(r.sessions[2].task, string.rep("word ", 60))
  r = list.shape(sessions, { pending_only = true })
  t.eq(#r.sessions, 1)
  -- pending_only: active (running/starting), decision-blocked, or an uncollected terminal state.
  sessions[#sessions + 1] = { id = "c", status = "running", task = "busy", created_at = 3, pending = {} }
  sessions[#sessions + 1] = { id = "d", status = "starting", task = "new", created_at = 4, pending = {} }
  sessions[#sessions + 1] = { id = "e", status = "idle", task = "done", created_at = 5, pending = {}, terminal_pending = true }
  sessions[#sessions + 1] = { id = "f", status = "exited", task = "old", created_at = 6, pending = {} }
  local ids = {}
  for _, row in ipairs(list.shape(sessions, { pending_only = true }).sessions) do ids[#ids + 1] = row.session_id end
  t.eq(ids, { "e", "d", "c", "b" })
  t.eq(json.encode(list.shape({}, {}).sessions), "[]")
end)

test("encoded list rows: the rows' JSON, reused while the session's revision is unchanged", function(t)
  -- (agentd writes what a row shows through agentd/session/revision.lua: list_revision_spec.lua)
  -- a settled session with every field a plain row can show, and some it never shows
  local s = {
    id = "rx-set", status = "idle", cwd = "/w", task = "do it", transcript_path = "/t/rx-set.jsonl",
    stop_reason = "end_turn", model = "m/x", created_at = 1796428584.125, updated_at = 1796428584.5,
    keep_alive = true, terminal_pending = true, damaged = "note", pending = {},
    effort = "high", turns_total = 3, agent_profile = "reasonix", rt = {},
  }
  local function plain() return json.decode(json.encode(list.shape({ s }, { all = true }).sessions)) end
  local function encoded(opts)
    local r = assert(list.shape({ s }, opts or { encoded = true, all = true }))
    t.eq(json.raw_text(r.sessions) ~= nil, true, "sessions is one json.raw array")
    return json.decode(json.encode(r.sessions))
  end
  local made, real_row = 0, list.row
  list.row = function(...) made = made + 1; return real_row(...) end
  t.eq(encoded(), plain())
  made = 0
  encoded()
  t.eq(made, 0, "an unchanged settled session's row is not made again")
  s.effort, s.turns_total = "low", 4
  encoded()
  t.eq(made, 0, "fields no plain row shows do not matter")
  -- each field a row shows, changed: the encoded row follows
  local changes = {
    id = "rx-set2", status = "exited", cwd = "/w2", task = "do that", transcript_path = "/t/2.jsonl",
    stop_reason = "cancelled", exit_reason = "killed", model = "m/y", created_at = 1796428585.25,
    updated_at = 1796428586.75, keep_alive = false, terminal_pending = false, damaged = "other",
  }
  for k, v in pairs(changes) do
    revision.set(s, k, v)
    made = 0
    local e = encoded()
    t.eq(made, 1, "a change of " .. k .. " makes the row again")
    t.eq(e, plain(), "after a change of " .. k)
  end
  -- its spend and its integration, changed in place too
  local nested = {
    { "usage", function() revision.set(s, "usage", { total = 10 }) end },
    { "usage.total", function() revision.set_in(s, "usage", "total", 12) end },
    { "usage.cost", function() revision.set_in(s, "usage", "cost", 0.5) end },
    { "integration", function() revision.set(s, "integration", { id = "in-1", state = "queued", target = "main" }) end },
    { "integration.state", function() revision.set_in(s, "integration", "state", "merged") end },
    { "integration.target", function() revision.set_in(s, "integration", "target", "dev") end },
  }
  for _, c in ipairs(nested) do
    c[2]()
    made = 0
    local e = encoded()
    t.eq(made, 1, "a change of " .. c[1] .. " makes the row again")
    t.eq(e, plain(), "after a change of " .. c[1])
  end
  made = 0
  t.eq(encoded({ encoded = true, include_task = true, all = true })[1].task, "do that")
  t.eq(made, 1, "include_task is its own row")
  -- a parked finished session (no runtime table: agentd/session/park.lua) keeps no row: made each time
  local rt = s.rt
  s.rt = nil
  made = 0
  t.eq(encoded(), plain())
  encoded()
  t.eq(made, 3, "made each time (and once for the plain comparison)")
  s.rt = rt
  -- sessions at work or with a decision pending are made each time (health, pending_decision)
  s.status = "running"
  made = 0
  encoded(); encoded()
  t.eq(made, 2)
  s.status, s.pending = "idle", { { request_id = 1, kind = "permission", tool_call = { title = "Run?" } } }
  made = 0
  t.eq(encoded()[1].pending_decision.title, "Run?")
  encoded()
  t.eq(made, 2)
  list.row = real_row
  -- a row that cannot be encoded is the shape's error, as the whole result's would be
  revision.set(s, "pending", {})
  list.row = function() return { bad = function() end } end
  local r, err = list.shape({ s }, { encoded = true })
  list.row = real_row
  t.eq(r, nil)
  t.ok(err, "the encoder's error")
  t.eq(json.encode(assert(list.shape({}, { encoded = true })).sessions), "[]")
end)

test("spawn options: defaults, env overrides, validation", function(t)
  with_env({ REASONIX_MCP_DEFAULT_MODEL = false, REASONIX_MCP_DEFAULT_EFFORT = "high" }, function()
    local o = assert(spawn.options({ task = "x" }))
    t.eq(o.model, "opencode-go/deepseek-v4-flash")
    t.eq(o.effort, "high")
    t.eq(o.tool_approval, "yolo")
    t.eq(o.work_mode, "balanced")
    t.eq(o.explicit.model, false)
    o = assert(spawn.options({ task = "x", model = "m/x" }))
    t.eq(o.explicit.model, true)
  end)
  for _, bad in ipairs({ { task = "" }, { task = 1 }, { task = "x", tool_approval = "never" }, { task = "x", effort = "huge" },
                         { task = "x", work_mode = "fast" }, { task = "x", keep_alive = "yes" }, { task = "x", idle_timeout = -5 } }) do
    local o, err = spawn.options(bad)
    t.eq(o, nil, json.encode(bad))
    t.ok(err)
  end
  local o = assert(spawn.options({ session_id = "s" }, true))
  t.eq(o.model, nil, "resume keeps the session's own settings")
end)

test("spawn config steps map onto advertised values and skip what is not offered", function(t)
  local options = {
    { id = "model", category = "model", currentValue = "mock/mock-model", options = { { value = "mock/mock-model" }, { value = "mock/b" } } },
    { id = "tool_approval", category = "tool_approval", currentValue = "workspace-write",
      options = { { value = "read-only" }, { value = "workspace-write" }, { value = "danger-full-access" } } },
  }
  local o = assert(spawn.options({ task = "x" }))
  local step = spawn.step("model", o, options)
  t.ok(step.skip and step.warn, "an unconfigured default model falls back with a warning")
  t.eq(step.fallback, "mock/mock-model")
  t.eq(spawn.step("tool_approval", o, options).set, "danger-full-access")
  o.tool_approval = "ask"
  t.eq(spawn.step("tool_approval", o, options).set, "read-only")
  o.tool_approval = "auto"
  t.eq(spawn.step("tool_approval", o, options).keep, true)
  local skip = spawn.step("work_mode", o, options)
  t.ok(skip.skip and not skip.warn, "work_mode is not advertised: skipped")
  t.ok(spawn.step("effort", o, options).skip)
  o = assert(spawn.options({ task = "x", model = "mock/nope" }))
  t.match(spawn.step("model", o, options).error, "mock/b")
  o = assert(spawn.options({ task = "x", model = "mock/b" }))
  t.eq(spawn.step("model", o, options).set, "mock/b")
  local with_effort = { { id = "effort", category = "thought_level", currentValue = "auto", options = { { value = "auto" }, { value = "high" } } } }
  o = assert(spawn.options({ task = "x", effort = "max" }))
  t.match(spawn.step("effort", o, with_effort).error, "high")
end)

test("cleanup grace: off by default, per spawn, env, keep_alive", function(t)
  with_env({ REASONIX_MCP_IDLE_TIMEOUT = false }, function()
    t.eq(cleanup.grace({ status = "idle" }), nil)
    t.eq(cleanup.grace({ status = "idle", idle_timeout = 0 }), 0)
    t.eq(cleanup.grace({ status = "idle", idle_timeout = 30 }), 30)
    t.eq(cleanup.grace({ status = "idle", idle_timeout = -1 }), nil)
    t.eq(cleanup.grace({ status = "idle", idle_timeout = 0, keep_alive = true }), nil)
    t.eq(cleanup.grace({ status = "running", idle_timeout = 0 }), nil)
  end)
  with_env({ REASONIX_MCP_IDLE_TIMEOUT = "5" }, function()
    t.eq(cleanup.grace({ status = "idle" }), 5)
    t.eq(cleanup.grace({ status = "idle", idle_timeout = -1 }), nil)
  end)
end)

test("event selectors opt into the detailed shape; over the cap is clamped and said", function(t)
  for _, p in ipairs({ { include_events = { "plan" } }, { exclude_events = { "tool_call" } }, { max_events = 5 } }) do
    t.eq(assert(poll.options(p)).detail, true, "a selector asks for events: " .. require("testing").show(p))
  end
  local o, err = poll.options({ detail = false, max_events = 5 })
  t.eq(o, nil)
  t.ok(err:find("only detail=true shows", 1, true), err)
  local big = assert(poll.options({ max_events = 500 }))
  t.eq(big.max_events, 200)
  local r = poll.shape(snap({ events = { { type = "plan", t = 1 } } }), big)
  t.eq(r.max_events_clamped, 200, "the result says it was clamped")
  t.eq(poll.shape(snap({ events = {} }), assert(poll.options({ max_events = 20 }))).max_events_clamped, nil)
end)

test("fleet files: arrays, name maps, the tasks alias and root arrays, defaults under overrides", function(t)
  local fleet = require "rmcp.rules.fleet"
  local f = assert(fleet.normalize({ name = "n", parallelism = 2, defaults = { effort = "high", cwd = "/w" },
    agents = { { name = "x", task = "do x", effort = "low" }, "do y" } }, "/p/fleet.json"))
  t.eq(f.name, "n")
  t.eq(f.parallelism, 2)
  t.eq(f.agents[1], { name = "x", task = "do x", effort = "low", cwd = "/w" })
  t.eq(f.agents[2], { name = "agent-2", task = "do y", effort = "high", cwd = "/w" })
  local m = assert(fleet.normalize({ tasks = { b = "do b", a = { task = "do a", cwd = "sub" } } }, "/p/q/f.json"))
  t.eq(m.agents[1], { name = "a", task = "do a", cwd = "/p/q/sub" }, "a map in name order; a relative cwd against the file")
  t.eq(m.agents[2].name, "b")
  local r = assert(fleet.normalize({ "one", "two" }, "f.json"))
  t.eq(#r.agents, 2, "a root array")
  local _, errs = fleet.normalize({ agents = { { task = "" }, { name = "d", task = "t" }, { name = "d", task = "t", colour = 1 } },
    tasks = {}, extra = true, defaults = { task = "x" } }, "/f.json")
  local all = table.concat(errs, "\n")
  for _, want in ipairs({ "unknown key extra", "agents or tasks", "defaults: unknown option task", "agents[1]: task must be",
                          "agents[3]: unknown field colour", "name d is used twice" }) do
    t.ok(all:find(want, 1, true), want .. " in:\n" .. all)
  end
  local many = {}
  for i = 1, 65 do many[i] = "t" .. i end
  local _, e2 = fleet.normalize(many, "/f.json")
  t.ok(table.concat(e2):find("65 agents: at most 64", 1, true))
  t.ok(table.concat(select(2, fleet.normalize("x", "/f.json"))):find("object or array", 1, true))
end)

test("background recovery: only that warning on an end_turn, 3 in a row, 0 turns it off", function(t)
  local recovery = require "rmcp.rules.recovery"
  local text = "started\n\n[warning] background bash failed: needs attention"
  t.eq(recovery.wanted(text, "end_turn", 0), true)
  t.eq(recovery.wanted(text, "end_turn", 2), true)
  t.eq(recovery.wanted(text, "end_turn", 3), false, "the cap")
  t.eq(recovery.wanted(text, "error", 0), false, "no other ending is retried")
  t.eq(recovery.wanted("background job failed", "end_turn", 0), false, "no other text")
  with_env({ REASONIX_MCP_BACKGROUND_RECOVERY_ATTEMPTS = "0" }, function()
    t.eq(recovery.wanted(text, "end_turn", 0), false, "0 is off")
  end)
  with_env({ REASONIX_MCP_BACKGROUND_RECOVERY_ATTEMPTS = "5" }, function()
    t.eq(recovery.wanted(text, "end_turn", 4), true)
    t.ok(recovery.prompt(4):find("4/5", 1, true))
  end)
end)
