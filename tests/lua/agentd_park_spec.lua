-- A parked session through the daemon (agentd/session/park.lua): a finished session leaves memory
-- for its file a moment after it is saved or collected, and every method still answers for it
-- with what it held: a detailed poll its undrained events, counters, config and whole text; the
-- transcript its last text; the dashboard's observe_session the agent's config; configure, stop,
-- list and resume as for any finished session. The agents are the fake ACP agent (tests/fake_agent).
local uv = require "luv"
local support = require "agentd_support"

-- True when session id of ctx is parked on file.
local function parked(ctx, id)
  return uv.fs_stat(ctx.mcp_home .. "/sessions/" .. id .. ".parked.json") ~= nil
end

test("a parked session answers poll, transcript, observe, configure, stop, list and resume as before", function(t)
  local ctx = support.setup(t, { env = { REASONIX_BIN = support.fake_agent(t) } })
  local c = ctx.client()
  local id = ctx.call(c, "spawn", { task = "hello parking" }).session_id
  ctx.watch_until(c, { id }, function(_, r) return r.status == "idle" end) -- compact: the events stay
  ctx.call(c, "stop", { session_id = id })
  t.wait_for(function() return parked(ctx, id) end, 5000, "the stopped session to be parked", 10)
  t.eq(ctx.call(c, "watch", { session_ids = { id }, timeout = 0 }).results[id].status, "exited")
  t.wait_for(function() return parked(ctx, id) end, 5000, "parked again after the watch", 10)

  local p = ctx.call(c, "poll", { session_id = id, detail = true, include_full = true })
  t.eq(p.status, "exited")
  t.eq(p.exit_reason, "stopped")
  t.match(p.full_text, "hello parking", "the session's whole text (its journal's)")
  t.eq(p.counters.turns, 1)
  t.eq(p.counters.prompts, 1)
  t.ok(p.counters.chunks > 1, "the chunks counted")
  t.eq(p.config.model, "fake/fake-model", "the agent's config")
  local kinds = {}
  for _, e in ipairs(p.events) do kinds[e.type] = (kinds[e.type] or 0) + 1 end
  t.ok(kinds.agent_message_chunk and kinds.agent_message_chunk > 1, "the chunks no lean result took")
  t.eq(kinds.turn_end, 1, "the turn's end")
  t.eq(kinds.process_exited, 1, "the agent's exit")
  t.eq(#ctx.call(c, "poll", { session_id = id, detail = true }).events, 0, "taken by that poll, as always")
  t.wait_for(function() return parked(ctx, id) end, 5000, "parked again after the poll", 10)

  t.match(ctx.call(c, "transcript", { session_id = id }).last_text, "hello parking")
  local obs = ctx.client("dashboard", nil, { observer = true })
  local o = ctx.call(obs, "observe_session", { session_id = id })
  t.eq(o.agent_config.model, "fake/fake-model")
  t.eq(o.session.status, "exited")
  local cfg = ctx.call(c, "configure", { session_id = id, model = "fake/fake-model-b" })
  t.eq(cfg.applies, "at_resume")
  t.eq(cfg.agent_config.model, "fake/fake-model", "what the agent reported, apart from what is queued")
  t.eq(cfg.queued.model, "fake/fake-model-b")
  local st = ctx.call(c, "stop", { session_id = id })
  t.eq({ st.status, st.exit_reason }, { "exited", "stopped" })
  local rows = ctx.call(c, "list", { all = true }).sessions
  t.eq({ rows[1].session_id, rows[1].status, rows[1].task }, { id, "exited", "hello parking" })

  t.wait_for(function() return parked(ctx, id) end, 5000, "parked", 10)
  local r = ctx.call(c, "resume", { session_id = id })
  t.eq(r.status, "idle")
  t.eq(r.model, "fake/fake-model-b", "the configured model, set at the resume")
  t.eq(parked(ctx, id), false, "live again: nothing parked")
  t.match(ctx.call(c, "transcript", { session_id = id }).last_text, "hello parking", "the last text came back with it")
  ctx.call(c, "stop", { session_id = id })
end)

test("a restarted daemon parks its finished sessions on their records and answers for them", function(t)
  local ctx = support.setup(t, { env = { REASONIX_BIN = support.fake_agent(t) } })
  local c = ctx.client()
  local id = ctx.call(c, "spawn", { task = "before the restart" }).session_id
  ctx.watch_until(c, { id }, function(_, r) return r.status == "idle" end)
  ctx.call(c, "stop", { session_id = id })
  ctx.call(c, "watch", { session_ids = { id }, timeout = 0 })
  ctx.shutdown()
  c = ctx.client()
  local rows = ctx.call(c, "list", { all = true }).sessions
  t.eq({ rows[1].session_id, rows[1].status }, { id, "exited" })
  t.eq(parked(ctx, id), false, "parked on its record: no file")
  t.match(ctx.call(c, "transcript", { session_id = id }).last_text, "before the restart")
  local p = ctx.call(c, "poll", { session_id = id, detail = true, include_full = true })
  t.match(p.full_text, "before the restart")
  t.eq(p.counters.turns, 0, "a runtime starts afresh with its daemon, as before")
  t.eq(p.config, {})
  t.eq(ctx.call(c, "resume", { session_id = id }).status, "idle")
  t.match(ctx.call(c, "transcript", { session_id = id }).last_text, "before the restart")
  ctx.call(c, "stop", { session_id = id })
end)
