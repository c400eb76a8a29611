-- agentd/session/state.lua on its own: the event buffer of a session and what a drain takes from it.
local state = require "rmcp.agentd.session.state"
local restore = require "rmcp.agentd.session.restore"
local runtime = require "rmcp.agentd.session.runtime"

test("a lean drain leaves the buffered chunks as they are; a detailed one takes them as events", function(t)
  local d = { sessions = {}, paths = { sessions = t.tmpdir("rmcp-state") } }
  local s = state.create(d, "orch", "/p", { task = "x" }, "/w")
  s.status = "running"
  for i = 1, 50 do state.push_event(s, "chunk " .. i, 1000 + i) end
  state.push_event(s, { type = "plan", entries = {} }, 1051)
  for _ = 1, 3 do
    local snap = state.drain(d, s, { detail = false })
    t.eq(snap.events, nil, "a lean result shows no events")
  end
  t.eq(#s.rt.events, 51, "a lean drain takes nothing")
  t.eq(type(s.rt.events[1]), "string", "a chunk stays its text (no table per chunk, no walk per lean drain)")
  local snap = state.drain(d, s, { detail = true })
  t.eq(#snap.events, 51)
  t.eq(snap.events[50], { type = "agent_message_chunk", text = "chunk 50", t = 1050 })
  t.eq(snap.events[51].type, "plan")
  t.eq(#s.rt.events, 0, "a detailed drain takes them")
end)

test("the whole-session texts and the reasoning are joined only for a result that shows them", function(t)
  local d = { sessions = {}, paths = { sessions = t.tmpdir("rmcp-state") } }
  local s = state.create(d, "orch", "/p", { task = "x" }, "/w")
  s.status = "running"
  for _, piece in ipairs({ "one ", "two ", "three" }) do runtime.buf_add(s.rt.full_text, piece, 1000) end
  runtime.buf_add(s.rt.full_thought, "hmm", 1000)
  runtime.buf_add(s.rt.thought, "h", 1000)
  for _, o in ipairs({ false, { detail = true } }) do
    local snap = state.drain(d, s, o or nil)
    t.eq({ snap.full_text, snap.full_thought, snap.thought }, {}, "a compact watch's or detailed result's without them")
    t.eq(snap.config ~= nil, o ~= false, "config: a detailed result's only")
    t.eq(#s.rt.full_text.parts, 3, "the session's whole text is not joined")
  end
  runtime.buf_add(s.rt.thought, "h2", 1000)
  local snap = state.drain(d, s, { include_thought = true })
  t.eq({ snap.full_thought, snap.thought, snap.full_text }, { "hmm", "h2" }, "include_thought: the reasoning")
  snap = state.drain(d, s, { include_full = true })
  t.eq(snap.full_text, "one two three", "include_full: the whole text")
  -- a finished session's buffers are released at its drain; its snapshot still has them
  runtime.buf_add(s.rt.full_text, " four", 1000)
  s.status = "exited"
  snap = state.drain(d, s, { include_full = true })
  t.eq(s.rt.full_text.parts, {}, "released")
  t.eq(snap.full_text, "one two three four")
end)

test("a restore takes the turn ends its metadata missed from the journal (a death before the deferred save)", function(t)
  local store = require "rmcp.agentd.store"
  local dir = t.tmpdir("rmcp-state")
  local d = { sessions = {}, paths = { sessions = dir } }
  local s = state.create(d, "orch", "/p", { task = "x" }, "/w")
  -- the record on disk still says the first turn runs; the journal has its end
  state.journal(d, s, { type = "prompt", via = "prompt", text = "x" })
  state.journal(d, s, { type = "turn_end", stop_reason = "end_turn", text = "done: x" })
  local rec = { id = s.id, owner = "orch", project_dir = "/p", cwd = "/w", task = "x", status = "running",
                turns_total = 0, turns_drained = 0, created_at = 1, updated_at = 1 }
  local back = restore.restore({ sessions = {}, paths = { sessions = dir } }, rec)
  t.eq(back.turns_total, 1, "the journal's turn end counts")
  t.eq(back.last_text, "done: x")
  t.eq(back.stop_reason, "end_turn")
  t.eq(back.status, "orphaned")
  t.eq(back.interrupted_turn, nil, "its turn had ended: nothing to continue")
  t.eq(#back.rt.turns, 1, "the turn is there for the next result")
  t.eq(back.rt.turns[1].text, "done: x")

  -- a turn started after that end was cut short by the death
  state.journal(d, s, { type = "prompt", via = "prompt", text = "more" })
  rec = { id = s.id, owner = "orch", project_dir = "/p", cwd = "/w", task = "x", status = "running",
          turns_total = 0, turns_drained = 0, created_at = 1, updated_at = 1 }
  back = restore.restore({ sessions = {}, paths = { sessions = dir } }, rec)
  t.eq(back.turns_total, 1)
  t.eq(back.interrupted_turn, true, "the running turn is continued by resume_fleet")
  store.close_journals()
end)
