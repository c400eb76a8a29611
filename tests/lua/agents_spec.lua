-- The agent a spawn names (`agent`: rules/agents.lua): an unknown one refused with every agent this
-- install knows (built-in and a policy's); a policy's agent spawned, shown in list rows, kept by a
-- resume, its profile taken from its initialize answer when the policy names none; models per agent.
-- Claude Code as the built-in `claude` is tests/e2e/claude_acp_usage.test.mjs.
-- needs: agent python3
local support = require "agentd_support"

local policy = support.write_policy

test("an unknown agent is refused with the agents this install knows, a policy's among them", function(t)
  local ctx = support.setup(t, {})
  policy(ctx, "mine.lua", string.format("return { agents = { mine = { argv = { %q, 'acp' } } } }", support.bin))
  local c = ctx.client()
  local err = ctx.call_err(c, "spawn", { task = "x", agent = "nope" })
  t.match(err.message, "unknown agent nope %(this install knows: reasonix, claude, .*mine")
  err = ctx.call_err(c, "models", { agent = "nope" })
  t.match(err.message, "unknown agent nope")
  t.eq(ctx.call(c, "models", { agent = "reasonix" }).agent, "reasonix")
  t.eq(#ctx.call(c, "list", {}).sessions, 0, "nothing started")
  ctx.shutdown()
end)

test("a policy's agent: spawned by name, its profile from its initialize answer, in list rows, kept by a resume", function(t)
  local ctx = support.setup(t, { scenario = { rules = { { last_role = "user", text = "done" } } } })
  policy(ctx, "mine.lua", string.format("return { agents = { mine = { argv = { %q, 'acp' } } } }", support.bin))
  local c = ctx.client()
  local sid = ctx.call(c, "spawn", { task = "hello", agent = "mine" }).session_id
  ctx.watch_until(c, { sid }, function(_, r) return r.status == "idle" end)
  local function row()
    for _, r in ipairs(ctx.call(c, "list", { detail = true, all = true }).sessions) do if r.session_id == sid then return r end end
  end
  t.eq({ row().agent, row().profile }, { "mine", "reasonix" }, "its agent said it is reasonix: reasonix's profile")
  ctx.call(c, "stop", { session_id = sid })
  t.eq(ctx.call(c, "resume", { session_id = sid }).status, "idle")
  t.eq({ row().agent, row().profile }, { "mine", "reasonix" }, "kept by the resume")
  ctx.call(c, "stop", { session_id = sid })
  ctx.shutdown()
end)
