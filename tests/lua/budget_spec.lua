-- Budgets (agentd/session/usage.lua, rules/usage.lua, routines/scheduler.lua), against the real agent
-- and a provider whose usage differs for every request ("by_index": request i reports
-- 1000+37i prompt and 11+5i completion tokens): each case computes from the provider's own request
-- log where a budget is crossed and checks that agentd stops, refuses, warns or goes on there.
-- needs: agent python3
local uv = require "luv"
local cjson = require "cjson"
local support = require "agentd_support"

-- The tokens the provider reports for its request i (mock_provider.py usage_by_index).
local function by_index(i)
  return 1000 + 37 * i + 11 + 5 * i
end

-- Every turn answers "done"; a HOLD turn's model call is held for a minute.
local EVERY_TURN = { rules = { { last_role = "user", user_contains = "HOLD", text = "held", usage = "by_index", delay_first = 60 },
                               { last_role = "user", text = "done", usage = "by_index" } } }

-- A turn of two model calls: a tool call, then the answer after it (held for a minute: only a
-- stop now ends that turn in time).
local TOOL_TURN = { rules = {
  { last_role = "user", user_contains = "TOOL", tool_calls = { { name = "read_file", arguments = { path = "a.txt" } } }, usage = "by_index" },
  { last_role = "tool", text = "never", usage = "by_index", delay_first = 60 },
  { last_role = "user", text = "done", usage = "by_index" },
} }

-- The tokens of the provider's requests whose conversation mentions mark (a word of one agent's
-- task), and how many there were.
local function served_for(ctx, mark)
  local sum, n = 0, 0
  for _, r in ipairs(ctx.prov:requests()) do
    if cjson.encode(r.body.messages or {}):find(mark, 1, true) then sum, n = sum + by_index(r.index), n + 1 end
  end
  return sum, n
end


local settled = support.settled

-- A client of orchestrator orch whose agents (and daily budget) take this environment plus extra.
local function client_with(ctx, orch, extra)
  local env = uv.os_environ()
  for k, v in pairs(extra) do env[k] = v end
  return ctx.client(orch, nil, { env = env })
end

test("a fleet of four, one with a session budget: it stops at the turn the provider's tokens cross it, the others go on; a higher budget and a resume let it continue", function(t)
  local ctx = support.setup(t, { scenario = EVERY_TURN })
  local c = ctx.client()
  local BUDGET = 2500
  local f = ctx.call(c, "spawn_fleet", { name = "four", agents = {
    { name = "a", task = "task alpha" }, { name = "b", task = "task zeta", budget = BUDGET },
    { name = "c", task = "task gamma" }, { name = "d", task = "task delta" } } })
  local ids = f.session_ids
  t.eq(#ids, 4)
  local b = ids[2]
  local stopped_at
  for round = 1, 4 do
    local going = {}
    for _, id in ipairs(ids) do
      if round > 1 and id == b and stopped_at then
        local err = ctx.call_err(c, "send", { session_id = b, message = "again " .. round })
        t.eq(err.code, -32022, "a send to the stopped agent is refused for its budget")
        t.match(err.message, "session budget reached")
      else
        if round > 1 then ctx.call(c, "send", { session_id = id, message = "again " .. round }) end
        going[#going + 1] = id
      end
    end
    local last = ctx.watch_each(c, going, settled)
    for _, id in ipairs(going) do
      if id ~= b then t.eq(last[id].status, "idle", "round " .. round .. ": an agent without a budget goes on") end
    end
    if not stopped_at then
      local spent, turns = served_for(ctx, "zeta")
      t.eq(turns, round, "one model call a turn")
      local r = last[b]
      if spent >= BUDGET and r.status == "idle" then
        -- the turn's own result came before the exit: it says already that it was the last
        t.match(r.usage.budget or "", "session budget reached", "the turn's result says the budget ends it")
        r = ctx.watch_each(c, { b }, function(_, x) return x.status == "exited" end)[b]
      end
      t.eq(r.usage.total, spent, "round " .. round .. ": its total is what the provider served it")
      if spent >= BUDGET then
        t.eq({ r.status, r.exit_reason }, { "exited", "budget" }, "round " .. round .. ": it crossed its budget, it stops")
        t.match(r.usage.budget, string.format("session budget reached: tokens %d of %d", spent, BUDGET))
        stopped_at = round
      else
        t.eq(r.status, "idle", "round " .. round .. ": under its budget, it goes on")
        if spent >= 0.8 * BUDGET then t.match(r.usage.warning or "", "of the session budget", "80 % warns") end
      end
    end
  end
  t.eq(stopped_at, 3, "by the provider's figures the budget is crossed in the third turn")
  t.eq(select(2, served_for(ctx, "zeta")), 3, "no model call after it stopped")
  t.eq(ctx.call(c, "poll", { session_id = b }).exit_reason, "budget")
  local err = ctx.call_err(c, "resume", { session_id = b })
  t.eq(err.code, -32022, "a resume while over budget is refused")
  local conf = ctx.call(c, "configure", { session_id = b, budget = 20000 })
  t.eq(conf.budget.tokens, 20000)
  t.eq(ctx.call(c, "resume", { session_id = b }).status, "idle", "a higher budget lets it go on")
  ctx.call(c, "send", { session_id = b, message = "go on" })
  local r = ctx.watch_each(c, { b }, settled)[b]
  t.eq(r.status, "idle")
  t.eq(r.usage.total, (served_for(ctx, "zeta")), "counted on from where it stopped")
  t.eq(select(2, served_for(ctx, "zeta")), 4)
  ctx.call(c, "stop", { session_id = b })
  ctx.call(c, "configure", { session_id = b, budget = BUDGET })
  t.eq(ctx.call_err(c, "resume", { session_id = b }).code, -32022, "back under its first budget: refused again")
  t.eq(ctx.call(c, "resume", { session_id = b, budget = cjson.null }).status, "idle", "a resume's budget null removes it")
  ctx.call(c, "send", { session_id = b, message = "go on" })
  t.eq(ctx.watch_each(c, { b }, settled)[b].status, "idle", "no budget stops it now")
  ctx.shutdown()
end)

test("a message queued behind the turn a budget ends is kept: the result says so, the resume delivers it", function(t)
  local ctx = support.setup(t, { scenario = { rules = {
    { last_role = "user", user_contains = "SLOW", text = "done", usage = "by_index", delay_first = 3 },
    { last_role = "user", text = "done", usage = "by_index" } } } })
  -- reasonix steered by queueing, as codex, gemini and opencode are: a message for a running turn waits for its end
  assert(uv.fs_mkdir(ctx.mcp_home, tonumber("700", 8)))
  assert(uv.fs_mkdir(ctx.mcp_home .. "/policy", tonumber("755", 8)))
  local f = assert(io.open(ctx.mcp_home .. "/policy/queue.lua", "w"))
  f:write("return { agent_command = function(argv) return { argv = argv, profile = { base = 'reasonix', steer = 'queue' } } end }\n")
  f:close()
  local c = ctx.client()
  local id = ctx.call(c, "spawn", { task = "iota SLOW", budget = 1000 }).session_id
  t.eq(ctx.call(c, "send", { session_id = id, message = "kappa follow-up" }).delivered, "queued")
  local r = ctx.watch_each(c, { id }, function(_, x) return x.status == "exited" end)[id]
  t.eq(r.exit_reason, "budget")
  t.match(r.usage.budget, "1 message sent to it not delivered yet: a resume delivers them")
  local function kappa_asked()
    for _, q in ipairs(ctx.prov:requests()) do
      if cjson.encode(q.body.messages or {}):find("kappa follow-up", 1, true) then return true end
    end
    return false
  end
  t.eq(kappa_asked(), false, "the stop kept it from the agent")
  ctx.call(c, "configure", { session_id = id, budget = 100000 })
  ctx.call(c, "resume", { session_id = id })
  t.eq(ctx.watch_each(c, { id }, settled)[id].status, "idle")
  t.eq(kappa_asked(), true, "the resume delivered it")
  ctx.shutdown()
end)

test("a daily orchestrator budget: the spawn that reaches it stops its agents; the next spawn is refused; another orchestrator's day is its own", function(t)
  local ctx = support.setup(t, { scenario = EVERY_TURN })
  local c = client_with(ctx, "orch-a", { REASONIX_MCP_DAILY_TOKENS = "1500" })
  local one = ctx.call(c, "spawn", { task = "one", keep_alive = true }).session_id
  t.eq(ctx.watch_each(c, { one }, settled)[one].status, "idle", "under the day's budget (" .. by_index(0) .. " tokens)")
  local two = ctx.call(c, "spawn", { task = "two", keep_alive = true }).session_id
  local last = ctx.watch_each(c, { one, two }, function(_, r) return r.status == "exited" end)
  t.ok(ctx.prov:served().total_tokens >= 1500)
  for _, id in ipairs({ one, two }) do
    t.eq(last[id].exit_reason, "budget", "the day's budget stops every agent of the orchestrator")
    t.match(last[id].usage.budget, "daily budget of orch%-a reached")
  end
  local err = ctx.call_err(c, "spawn", { task = "three" })
  t.eq(err.code, -32022)
  t.match(err.message, string.format("spawn refused: daily budget of orch%%-a reached: tokens %d of 1500", ctx.prov:served().total_tokens))
  t.match(err.message, "REASONIX_MCP_DAILY_TOKENS")
  t.match(err.message, "reasonix_list's usage.today", "it says where the day's spend is shown")
  t.eq(ctx.call(c, "list", {}).usage.today.tokens, ctx.prov:served().total_tokens)
  local other = client_with(ctx, "orch-b", { REASONIX_MCP_DAILY_TOKENS = "1500" })
  local three = ctx.call(other, "spawn", { task = "three" }).session_id
  t.eq(ctx.watch_each(other, { three }, settled)[three].status, "idle", "orch-b's day has its own budget")
  ctx.shutdown()
end)

-- The routine's newest run, as routine_list shows it, once it is no longer at work.
local function run_ended(ctx, c, id, n)
  local row
  ctx.t.wait_for(function()
    row = ctx.call(c, "routine_list", {}).routines[1]
    local run = row.runs[1]
    return run and run.run_id == id .. "-" .. n and run.status ~= "starting" and run.status ~= "running" and run
  end, 30000, "the run to end")
  return row.runs[1], row
end

test("a routine run stops at its budget, mid-turn; its record says why and what it spent, the routine its totals", function(t)
  local ctx = support.setup(t, { scenario = { rules = { { last_role = "user", text = "done", usage = "by_index" } } } })
  assert(io.open(ctx.ws .. "/a.txt", "w")):write("hello\n"):close()
  local c = ctx.client()
  local r = ctx.call(c, "routine_create", { name = "reader", prompt = "TOOL read a.txt", budget = 5000 })
  t.eq(r.budget, { tokens = 5000 }, "the routine keeps its budget")
  ctx.call(c, "routine_run", { routine_id = r.routine_id })
  local run1 = run_ended(ctx, c, r.routine_id, 1)
  t.eq(run1.status, "done", "under its budget the run is done")
  t.eq(run1.usage.tokens, ctx.prov:served().total_tokens, "the run's figures are the provider's")
  t.eq(run1.budget, nil)
  -- the next run: a budget its first model call crosses; the call after the tool is held
  ctx.prov:set_scenario(TOOL_TURN)
  t.eq(ctx.call(c, "routine_configure", { routine_id = r.routine_id, budget = 500 }).budget, { tokens = 500 })
  ctx.call(c, "routine_run", { routine_id = r.routine_id })
  local run2, row = run_ended(ctx, c, r.routine_id, 2)
  local served = ctx.prov:served()
  t.eq(served.responses, 2, "one model call of the second run was served")
  t.eq(run2.status, "stopped", "its budget stopped the run")
  t.match(run2.error, "stopped by its budget")
  t.match(run2.budget, "session budget reached: tokens %d+ of 500")
  t.eq(run2.usage.tokens, served.total_tokens - run1.usage.tokens, "the run's figures")
  t.eq(row.usage.tokens, served.total_tokens, "the routine's total over its runs")
  t.eq(row.budget, { tokens = 500 })
  ctx.call(c, "routine_configure", { routine_id = r.routine_id, budget = cjson.null })
  t.eq(ctx.call(c, "routine_list", {}).routines[1].budget, nil, "null removes the budget")
  local bad = ctx.call_err(c, "routine_configure", { routine_id = r.routine_id, budget = { tokens = 0 } })
  t.match(bad.message, "budget.tokens must be a whole number >= 1")
  ctx.shutdown()
end)

test("a policy's budget hook warns at 80 %: a field of the watch result, not a wake-up", function(t)
  local ctx = support.setup(t, { scenario = EVERY_TURN })
  local policy = ctx.mcp_home .. "/policy"
  assert(require("rmcp.lib.files").mkdir_p(policy, tonumber("700", 8)))
  assert(io.open(policy .. "/warn.lua", "w")):write([[return { name = "warn80", budget = function(s, usage, verdict)
    local b = s.budget
    if b and b.tokens and usage.tokens >= 0.8 * b.tokens and usage.tokens < b.tokens then
      return "warn", string.format("policy: %d of %d tokens", usage.tokens, b.tokens)
    end
  end }]]):close()
  local c = ctx.client()
  -- the built-in warning is off (warn_at 0): only the policy can warn
  local sid = ctx.call(c, "spawn", { task = "one", budget = { tokens = 2500, warn_at = 0 } }).session_id
  local r = ctx.watch_each(c, { sid }, settled)[sid]
  t.eq({ r.status, r.usage.total, r.usage.warning }, { "idle", by_index(0), nil }, "40 %: no warning")
  ctx.call(c, "send", { session_id = sid, message = "again" })
  r = ctx.watch_each(c, { sid }, settled)[sid]
  local spent = by_index(0) + by_index(1)
  t.eq({ r.status, r.usage.total }, { "idle", spent })
  t.eq(r.usage.warning, "policy: " .. spent .. " of 2500 tokens", "the policy's warning rides the result")
  local w = ctx.call(c, "watch", { session_ids = { sid }, timeout = 1 })
  t.eq(next(w.results or {}), nil, "a warning wakes no watch")
  t.eq(ctx.call(c, "poll", { session_id = sid }).usage.warning, r.usage.warning, "and a poll shows it too")
  ctx.shutdown()
end)

test("on_exceed stop: the budget cuts a turn of two model calls after the first", function(t)
  local ctx = support.setup(t, { scenario = TOOL_TURN })
  assert(io.open(ctx.ws .. "/a.txt", "w")):write("hello\n"):close()
  local c = ctx.client()
  local sid = ctx.call(c, "spawn", { task = "TOOL read a.txt", budget = { tokens = 500, on_exceed = "stop" } }).session_id
  local t0 = uv.now()
  local r = ctx.watch_each(c, { sid }, function(_, x) return x.status == "exited" end)[sid]
  t.ok(uv.now() - t0 < 30000, "stopped long before the held model call would answer")
  t.eq({ r.exit_reason, r.stop_reason }, { "budget", "cancelled" }, "stopped now, its turn cancelled")
  t.match(r.usage.budget, string.format("session budget reached: tokens %d of 500", by_index(0)))
  local served = ctx.prov:served()
  t.eq(served.responses, 1, "the model call after the tool was never answered")
  t.eq(r.usage.total, served.total_tokens)
  ctx.shutdown()
end)

test("a fleet budget stops every agent of the fleet, the idle ones too", function(t)
  local ctx = support.setup(t, { scenario = EVERY_TURN })
  local c = ctx.client()
  local f = ctx.call(c, "spawn_fleet", { name = "trio", fleet_budget = 4000, agents = {
    { name = "a", task = "task alpha", keep_alive = true }, { name = "b", task = "task beta", keep_alive = true },
    { name = "c", task = "task gamma", keep_alive = true } } })
  t.eq(f.fleet_budget, { tokens = 4000 })
  local ids = f.session_ids
  local last = ctx.watch_each(c, ids, settled)
  local round1 = by_index(0) + by_index(1) + by_index(2)
  t.eq(ctx.prov:served().total_tokens, round1)
  for _, id in ipairs(ids) do t.eq(last[id].status, "idle", "under the fleet's budget (" .. round1 .. " of 4000)") end
  -- one agent's next turn takes the fleet over its budget: all three stop
  ctx.call(c, "send", { session_id = ids[1], message = "again" })
  last = ctx.watch_each(c, ids, function(_, r) return r.status == "exited" end)
  local total = round1 + by_index(3)
  t.eq(ctx.prov:served().total_tokens, total)
  for _, id in ipairs(ids) do
    t.eq(last[id].exit_reason, "budget")
    t.match(last[id].usage.budget, string.format("fleet budget of trio reached: tokens %d of 4000", total))
  end
  t.eq(ctx.call_err(c, "resume", { session_id = ids[2] }).code, -32022, "the fleet's budget holds a resume too")
  ctx.shutdown()
end)

test("a budget raised while the turn that reached it still runs: that turn's end no longer stops the agent", function(t)
  local ctx = support.setup(t, { scenario = { rules = {
    { last_role = "user", user_contains = "TOOL", tool_calls = { { name = "read_file", arguments = { path = "a.txt" } } }, usage = "by_index" },
    { last_role = "tool", text = "read it", usage = "by_index", delay_first = 3 },
  } } })
  assert(io.open(ctx.ws .. "/a.txt", "w")):write("hello\n"):close()
  local c = ctx.client()
  local sid = ctx.call(c, "spawn", { task = "TOOL read a.txt", budget = 500, keep_alive = true }).session_id
  -- the first model call (served) reached the budget; the second is held
  t.wait_for(function() return ctx.prov:served().responses == 1 and #ctx.prov:requests() == 2 end, 20000, "the held call")
  t.wait_for(function() return ctx.call(c, "list", { all = true }).sessions[1].usage ~= nil end, 5000, "the first call counted")
  ctx.call(c, "configure", { session_id = sid, budget = 20000 })
  local r = ctx.watch_each(c, { sid }, settled)[sid]
  t.eq(r.status, "idle", "it goes on after the turn")
  t.eq(r.usage.budget, nil)
  t.eq(r.usage.total, ctx.prov:served().total_tokens)
  require("rmcp.lib.async").sleep(1500) -- (a stop at the turn's end would have ended the agent by now)
  t.eq(ctx.call(c, "poll", { session_id = sid }).status, "idle", "still live")
  ctx.call(c, "send", { session_id = sid, message = "TOOL again" })
  t.eq(ctx.watch_each(c, { sid }, settled)[sid].status, "idle", "and it takes the next turn")
  ctx.shutdown()
end)
