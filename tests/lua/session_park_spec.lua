-- agentd/session/park.lua on its own: a parked finished session holds its runtime and long fields
-- on disk, and every read of it (a drain for poll and watch, a save, its config, its last text)
-- gives what the same session gives in memory.
local json = require "rmcp.lib.json"
local store = require "rmcp.agentd.store"
local state = require "rmcp.agentd.session.state"
local restore = require "rmcp.agentd.session.restore"
local park = require "rmcp.agentd.session.park"
local runtime = require "rmcp.agentd.session.runtime"
local tally = require "rmcp.agentd.session.tally"
local order = require "rmcp.agentd.session.order"
local revision = require "rmcp.agentd.session.revision"
local reload = require "rmcp.lib.reload"
local rules_list = require "rmcp.rules.list"

-- A canonical text of v: keys sorted, arrays and objects told apart (json.is_array), so two
-- values that would answer the same JSON compare equal.
local function canon(v)
  if type(v) ~= "table" then return json.encode(v) end
  local parts = {}
  if json.is_array(v) or (#v > 0 and next(v, #v) == nil) then
    for i = 1, #v do parts[i] = canon(v[i]) end
    return "[" .. table.concat(parts, ",") .. "]"
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = tostring(k) end
  table.sort(keys)
  for i, k in ipairs(keys) do parts[i] = string.format("%q:%s", k, canon(v[k] == nil and v[tonumber(k)] or v[k])) end
  return "{" .. table.concat(parts, ",") .. "}"
end

-- A finished session of d whose turn left undrained output behind: chunks, a tool call, a plan,
-- the agent's config options, counters, the whole-session texts, and the record's long fields.
local function finished_session(d)
  local s = state.create(d, "orch", "/p", { task = "the task" }, "/w")
  s.status = "running"
  local rt = s.rt
  for i = 1, 30 do state.push_event(s, "chunk " .. i, 1000 + i) end
  state.push_event(s, { type = "tool_call", toolCallId = "c1", title = "read a.txt", rawInput = { path = "a.txt" },
                        content = json.array() }, 1040)
  state.push_event(s, { type = "plan", entries = json.array({ { content = "step", status = "completed" } }) }, 1041)
  state.push_event(s, { type = "turn_end", stop_reason = "end_turn" }, 1042)
  runtime.buf_add(rt.full_text, "the whole text", 1000)
  runtime.buf_add(rt.full_thought, "the whole thought", 1000)
  rt.config_options = json.array({ { id = "model", currentValue = "m/x", options = json.array({ { value = "m/x" } }) } })
  rt.counters.chunks, rt.counters.turns, rt.counters.prompts = 30, 1, 1
  rt.last_thought = "hmm"
  s.last_text, s.stop_reason, s.turns_total, s.turns_drained = "the answer", "end_turn", 1, 1
  s.posture = { sandbox = "none", allow_write = json.array({ "/w" }) }
  s.warnings, s.skipped_options = json.array({ "a warning" }), json.array({ "effort" })
  s.agent_info = { name = "fake", version = "1" }
  s.status, s.exit_reason = "exited", "stopped"
  return s
end

-- What a drain of s for a result that shows everything but (without detail) the events gives,
-- without what names the session itself.
local function drained(d, s, detail)
  local snap = state.drain(d, s, { detail = detail, include_thought = true, include_full = true })
  local out = {}
  for k, v in pairs(snap) do out[k] = v end
  out.session_id, out.transcript_path = nil, nil
  return canon(out)
end

test("a parked session drains, saves and reads as it does in memory", function(t)
  local dir = t.tmpdir("rmcp-park")
  local d = { sessions = {}, paths = { sessions = dir } }
  local a, b = finished_session(d), finished_session(d)
  t.ok(park.park(d, b), "parked")
  t.eq(b.parked, "file")
  t.eq({ b.rt, b.last_text, b.posture, b.warnings, b.skipped_options, b.agent_info }, {}, "out of memory")
  t.eq(b.task, "the task", "the task stays: lists read it")
  t.eq(state.last_text(d, b), "the answer")
  t.eq(canon(state.config_options(d, b)), canon(a.rt.config_options))
  t.eq(canon(state.effective_config(b, state.config_options(d, b))), canon(state.effective_config(a)))
  -- a save of a parked session writes the whole record
  state.persist(d, b)
  state.persist(d, a)
  local ra, rb = store.read_record(dir, a.id), store.read_record(dir, b.id)
  for _, k in ipairs({ "id", "transcript_path", "created_at", "updated_at" }) do ra[k], rb[k] = nil, nil end
  t.eq(canon(rb), canon(ra), "the same record")
  t.eq(b.parked, "file", "a save leaves it parked")
  -- a lean drain, then a detailed one: the same answers; the session is back in memory, parked again later
  t.eq(drained(d, b, false), drained(d, a, false), "a lean drain")
  t.eq(b.parked, nil, "back in memory")
  t.eq(io.open(store.parked_path(dir, b.id)), nil, "its file went")
  park.park(d, a)
  park.park(d, b)
  t.eq(drained(d, b, true), drained(d, a, true), "a detailed drain (events)")
  t.eq(canon(b.posture), canon({ sandbox = "none", allow_write = json.array({ "/w" }) }))
  t.wait_for(function() return b.parked == "file" and a.parked == "file" end, 2000, "both parked again after the drain")
  state.discard(d, b)
  t.eq(io.open(store.parked_path(dir, b.id)), nil, "a forgotten session's file goes")
  store.close_journals()
end)

test("what cannot be parked stays in memory", function(t)
  local d = { sessions = {}, paths = { sessions = t.tmpdir("rmcp-park") } }
  local s = finished_session(d)
  s.status = "idle"
  t.eq(park.park(d, s), false, "a live session")
  s.status = "exited"
  s.pending = { { request_id = 1 } }
  t.eq(park.park(d, s), false, "a decision pending")
  s.pending = {}
  s.rt.agent = {}
  t.eq(park.park(d, s), false, "an agent still there")
  s.rt.agent = nil
  s.unreadable = "empty"
  t.eq(park.park(d, s), false, "an unreadable one (its file is never written)")
  s.unreadable = nil
  d.shutting_down = true
  t.eq(park.park(d, s), false, "while the daemon stops")
  d.shutting_down = false
  s.rt.bad = function() end -- (what JSON cannot hold is not kept: a runtime holds no function but these)
  t.eq(park.park(d, s), true)
end)

test("a finished session read back at start is parked on its record, nothing written", function(t)
  local dir = t.tmpdir("rmcp-park")
  local d = { sessions = {}, paths = { sessions = dir } }
  local s = finished_session(d)
  state.persist(d, s, "now")
  local rec = assert(store.read_record(dir, s.id))
  local d2 = { sessions = {}, paths = { sessions = dir } }
  local back = restore.restore(d2, rec)
  t.eq(back.parked, "record")
  t.eq(io.open(store.parked_path(dir, s.id)), nil, "no file written")
  t.eq({ back.rt, back.last_text, back.posture }, {})
  t.eq(state.last_text(d2, back), "the answer")
  t.eq(state.config_options(d2, back), nil, "a fresh runtime has no config options")
  -- the same record restored and kept in memory (a stopping daemon parks nothing): the same drain
  local unparked = { sessions = {}, paths = { sessions = dir }, shutting_down = true }
  local mem = restore.restore(unparked, assert(store.read_record(dir, s.id)))
  t.eq(mem.parked, nil)
  t.eq(drained(d2, back, true), drained(d2, mem, true))
  t.eq(canon(back.warnings), canon(json.array({ "a warning" })))
  t.eq(back.rt.released, true)
  -- a repaired record (hand-edited): its parked fields come back as a restore takes them
  local files = require "rmcp.lib.files"
  rec = assert(store.read_record(dir, s.id))
  rec.last_text, rec.warnings, rec.posture = 5, { 1, "kept" }, { sandbox = "none", allow_write = {} }
  assert(files.write_atomic(store.meta_path(dir, s.id), assert(json.encode(rec)), false))
  local one = restore.restore({ sessions = {}, paths = { sessions = dir } }, assert(store.read_record(dir, s.id)))
  t.eq(one.parked, "record", "parked on its record, repaired or not")
  park.unpark(d2, one)
  mem = restore.restore(unparked, assert(store.read_record(dir, s.id)))
  for _, k in ipairs(park.PARKED) do t.eq(canon(one[k]), canon(mem[k]), k .. " as the restore took it") end
  t.eq(canon(one.warnings), canon(json.array({ "kept" })), "the strings of a list")
  t.eq(canon(one.posture), canon({ sandbox = "none", allow_write = json.array() }), "allow_write a JSON array")
  -- a live one at the daemon's death (orphaned now: its end is news) is not parked on its record
  rec = assert(store.read_record(dir, s.id))
  rec.status = "running"
  t.eq(restore.restore({ sessions = {}, paths = { sessions = dir } }, rec).parked, nil)
  store.close_journals()
end)

test("a daemon's load removes the parked files a previous daemon left", function(t)
  local dir = t.tmpdir("rmcp-park")
  local d = { sessions = {}, paths = { sessions = dir } }
  local s = finished_session(d)
  state.persist(d, s, "now")
  t.ok(park.park(d, s))
  t.ok(io.open(store.parked_path(dir, s.id)), "parked on file")
  local recs = store.load_all(dir)
  t.eq(#recs, 1)
  t.eq(io.open(store.parked_path(dir, s.id)), nil, "removed: a runtime starts afresh with its daemon")
  store.close_journals()
end)

test("an orchestrator's parked sessions are counted once, and again after a park, an unpark, a new or forgotten session, a swap", function(t)
  local d = { sessions = {}, paths = { sessions = t.tmpdir("rmcp-park") } }
  local a, b = finished_session(d), finished_session(d)
  a.usage, b.usage = { total = 10, cost = 0.5, currency = "USD" }, { total = 5, unreported = 1 }
  -- What a list of every session of orch says (its counts and spend), with the kept tally and
  -- without; each view of it (all, the default, pending_only; a page of one) the same both ways.
  local function listed()
    local mine, kept = order.newest_first(d, "orch"), tally.parked(d, "orch")
    for _, view in ipairs({ { all = true }, {}, { pending_only = true }, { all = true, limit = 1 }, { limit = 1 } }) do
      local every = view.all and not view.pending_only
      local with = rules_list.shape(every and mine or kept.listed, { sorted = true, all = view.all, pending_only = view.pending_only,
        limit = view.limit, whole = tally.whole(d, "orch") })
      local fresh = rules_list.shape(mine, { sorted = true, all = view.all, pending_only = view.pending_only, limit = view.limit })
      t.eq(canon(with), canon(fresh), "the kept tally and a fresh count agree: " .. canon(view))
    end
    local r = rules_list.shape(mine, { sorted = true, all = true })
    return r.counts, r.usage
  end
  park.park(d, a)
  local first = tally.parked(d, "orch")
  t.eq(first.counts, { exited = 1 })
  t.eq(tally.parked(d, "orch"), first, "kept while nothing changed")
  t.eq({ listed() }, { { exited = 2 }, { tokens = 15, cost = 0.5, currency = "USD", cost_partial = true, estimated = true } })
  park.park(d, b)
  t.eq(tally.parked(d, "orch").counts, { exited = 2 }, "a park counts it")
  listed()
  state.drain(d, b)
  t.eq(b.parked, nil)
  t.eq(tally.parked(d, "orch").counts, { exited = 1 }, "an unpark takes it out")
  revision.set(b, "status", "idle")
  revision.set_in(b, "usage", "total", 7)
  t.eq({ listed() }, { { exited = 1, idle = 1 }, { tokens = 17, cost = 0.5, currency = "USD", cost_partial = true, estimated = true } },
    "a session in memory is counted as it is now")
  local c = finished_session(d)
  park.park(d, c)
  t.eq(tally.parked(d, "orch").counts, { exited = 2 }, "a new session")
  state.discard(d, a)
  t.eq(tally.parked(d, "orch").counts, { exited = 1 }, "a forgotten one")
  listed()
  revision.set(c, "terminal_pending", true) -- (its death uncollected: a view shows it)
  park.unpark(d, c)
  park.park(d, c)
  t.eq({ #tally.parked(d, "orch").listed, tally.parked(d, "orch").hidden }, { 2, 0 }, "shown while uncollected")
  listed()
  state.mark_delivered(d, c)
  t.eq({ #tally.parked(d, "orch").listed, tally.parked(d, "orch").hidden }, { 1, 1 }, "hidden once a watch took it")
  listed()
  local kept, whole, generation = tally.parked(d, "orch"), tally.whole(d, "orch"), reload.generation
  t.ok(tally.whole(d, "orch") == whole, "the whole tally kept while nothing changed")
  reload.generation = function() return generation() + 1 end -- (a hot reload swapped a module in)
  local swapped, swapped_whole = tally.parked(d, "orch"), tally.whole(d, "orch")
  reload.generation = generation
  t.ok(swapped ~= kept and swapped_whole ~= whole, "made again after a swap, the whole tally with it")
  t.eq({ tally.parked(d, "other").counts, #tally.parked(d, "other").listed }, { {}, 0 }, "another orchestrator's: none")
  store.close_journals()
end)
