-- What agents spend (agentd/session/usage.lua, rules/usage.lua, agentd/usage_ledger.lua), against
-- the real agent and a provider whose usage differs for every response: every figure agentd reports
-- (a turn's, a session's, an orchestrator's, the day's ledger) equals what the provider reported,
-- summed; a kill -9 of agentd between turns or in the middle of one neither loses nor doubles any;
-- with no usage reported the figures say estimated and count nothing.
-- needs: agent python3
local uv = require "luv"
local support = require "agentd_support"

-- Every turn answers "done", its usage different for every request (the provider's "by_index").
local EVERY_TURN = { rules = { { last_role = "user", user_contains = "HOLD", text = "held", usage = "by_index", delay_first = 60 },
                               { last_role = "user", text = "done", usage = "by_index" } } }

-- Watches ids until each is idle (or gone); returns the last result of each.
local function until_idle(ctx, c, ids)
  return ctx.watch_each(c, ids, support.settled, 40)
end

-- The sum of the list's rows' tokens, and the list's own total.
local function listed(ctx, c)
  local l = ctx.call(c, "list", { all = true })
  local rows = 0
  for _, row in ipairs(l.sessions) do rows = rows + (row.usage and row.usage.tokens or 0) end
  return rows, l.usage and l.usage.tokens, l
end

-- Every record of today's ledger under mcp_home: tokens summed, and how many records.
local function ledger_sum(mcp_home)
  local sum, n = 0, 0
  local path = mcp_home .. "/usage/" .. os.date("%Y-%m-%d") .. ".jsonl"
  for line in io.lines(path) do
    local rec = require("cjson").decode(line)
    sum, n = sum + rec.total, n + 1
  end
  return sum, n
end

-- Runs `reasonix-mcp ctl --json usage ARGS…` (the environment is the case's: its REASONIX_MCP_HOME);
-- returns its exit code and stdout.
local function ctl_usage(ctx, ...)
  local r = assert(require("rmcp.lib.command").run(require("rmcp.host").exe, { "ctl", "--json", "usage", ... }))
  ctx.t.eq(support.find_procs("agentd", "REASONIX_MCP_HOME=" .. ctx.mcp_home), {}, "no agentd runs (ctl usage starts none)")
  return r.code, r.stdout
end

test("a fleet's figures, turn by turn, session, orchestrator and the day's ledger, equal the provider's sums", function(t)
  local ctx = support.setup(t, { scenario = EVERY_TURN })
  local c = ctx.client()
  local f = ctx.call(c, "spawn_fleet", { name = "trio", agents = { { name = "a", task = "one" }, { name = "b", task = "two" },
                                                                  { name = "c", task = "three" } } })
  local ids = f.session_ids
  t.eq(#ids, 3)
  local turns_sum = 0
  for round = 1, 3 do
    local before = round == 1 and 0 or ctx.prov:served().total_tokens -- (the fleet's first turns start with its spawn)
    if round > 1 then
      for _, id in ipairs(ids) do ctx.call(c, "send", { session_id = id, message = "again " .. round }) end
    end
    local last = until_idle(ctx, c, ids)
    local served = ctx.prov:served().total_tokens
    local round_sum = 0
    for _, id in ipairs(ids) do
      t.ok(last[id].usage, "the turn result carries its usage")
      round_sum = round_sum + last[id].usage.turn
    end
    t.eq(round_sum, served - before, "round " .. round .. ": the turns' figures are what the provider served in it")
    turns_sum = turns_sum + round_sum
  end
  local served = ctx.prov:served()
  t.eq(served.responses, 9, "one model call a turn")
  t.eq(turns_sum, served.total_tokens)
  local total = 0
  for _, id in ipairs(ids) do total = total + ctx.call(c, "poll", { session_id = id }).usage.total end
  t.eq(total, served.total_tokens, "the sessions' totals")
  local rows, list_total, l = listed(ctx, c)
  t.eq(rows, served.total_tokens, "the list's rows")
  t.eq(list_total, served.total_tokens, "the orchestrator's total")
  t.eq(l.usage.today.tokens, served.total_tokens, "the orchestrator's spend today")
  t.eq(ledger_sum(ctx.mcp_home), served.total_tokens, "the day's ledger")
  t.eq(l.usage.cost, nil, "no price known: the cost is unknown, not 0")
  ctx.shutdown()
  -- `ctl usage` reads the ledger itself: with agentd down it reports the provider's sums
  local code, out = ctl_usage(ctx, "--by", "orchestrator,agent")
  t.eq(code, 0)
  local rep = require("rmcp.lib.json").decode(out)
  t.eq(rep.total.total, served.total_tokens, "ctl usage's total")
  t.eq({ rep.total.cost_unknown, rep.total.cost }, { true, nil }, "its cost unknown, not 0")
  t.eq(#rep.rows, 3, "an agent a row")
  local by_agent = 0
  for i, row in ipairs(rep.rows) do
    t.eq(row.orchestrator, "orch-a")
    t.eq(row.total, ctx.call(c, "poll", { session_id = row.agent }).usage.total, "agent " .. i .. ": its session's total")
    by_agent = by_agent + row.total
  end
  t.eq(by_agent, served.total_tokens)
  print(string.format("# provider served %d responses, %d tokens (prompt %d, completion %d, cached %d, reasoning %d); "
    .. "turns %d, sessions %d, list rows %d, orchestrator %d, today %d, ledger %d, ctl usage %d", served.responses,
    served.total_tokens, served.prompt_tokens, served.completion_tokens, served.cached_tokens, served.reasoning_tokens,
    turns_sum, total, rows, list_total, l.usage.today.tokens, ledger_sum(ctx.mcp_home), rep.total.total))
  ctx.shutdown()
end)

test("a provider that reports no usage: the figures say estimated and count nothing", function(t)
  local ctx = support.setup(t, { scenario = { rules = { { last_role = "user", text = "done", usage = false } } } })
  local c = ctx.client()
  local sid = ctx.call(c, "spawn", { task = "one" }).session_id
  local r = until_idle(ctx, c, { sid })[sid]
  t.eq({ r.usage.turn, r.usage.total, r.usage.estimated }, { 0, 0, true })
  ctx.shutdown()
end)

-- Kills agentd (kill -9) and waits until it is gone.
local function kill_agentd(t, c)
  local daemon = c.info.agentd_pid
  uv.kill(daemon, "sigkill")
  t.wait_for(function() return not support.alive(daemon) end, 2000, "agentd gone")
end

test("kill -9 of agentd between turns and in the middle of one: the totals are still the provider's, nothing lost or twice", function(t)
  local ctx = support.setup(t, { scenario = { rules = {
    { last_role = "user", user_contains = "HOLD", text = "held", usage = "by_index", delay_first = 60 },
    { last_role = "user", user_contains = "TOOL", tool_calls = { { name = "read_file", arguments = { path = "a.txt" } } }, usage = "by_index" },
    { last_role = "user", text = "done", usage = "by_index" },
    { last_role = "tool", user_contains = "TOOL", text = "read it", usage = "by_index" },
  } } })
  local fh = assert(io.open(ctx.ws .. "/a.txt", "w"))
  fh:write("hello\n")
  fh:close()
  local c = ctx.client()
  local sid = ctx.call(c, "spawn", { task = "TOOL first" }).session_id
  until_idle(ctx, c, { sid })
  t.eq(ctx.prov:served().responses, 2, "a tool call and its answer")
  kill_agentd(t, c)
  t.eq(ctx.call(c, "poll", { session_id = sid }).usage.total, ctx.prov:served().total_tokens, "between turns")
  t.eq(ctx.call(c, "resume", { session_id = sid }).status, "idle")
  -- the next turn: a tool call answered (counted), then the model call after it held unanswered
  ctx.prov:set_scenario({ rules = {
    { last_role = "user", user_contains = "TOOL", tool_calls = { { name = "read_file", arguments = { path = "a.txt" } } }, usage = "by_index" },
    { last_role = "tool", text = "never", usage = "by_index", delay_first = 60 },
  } })
  local before = #ctx.prov:requests()
  ctx.call(c, "send", { session_id = sid, message = "TOOL again" })
  t.wait_for(function() return #ctx.prov:requests() >= before + 2 end, 20000, "the held model call to arrive", 20)
  kill_agentd(t, c)
  local p = ctx.call(c, "poll", { session_id = sid })
  t.eq(p.status, "orphaned")
  t.eq(p.usage.total, ctx.prov:served().total_tokens, "in the middle of a turn")
  kill_agentd(t, c)
  t.eq(ctx.call(c, "poll", { session_id = sid }).usage.total, ctx.prov:served().total_tokens, "and again after a second restart")
  t.eq(ledger_sum(ctx.mcp_home), ctx.prov:served().total_tokens, "the ledger")
  ctx.shutdown()
end)

test("a policy's price: reasonix_models shows it, and a cost is the served tokens at that price, exactly", function(t)
  local ctx = support.setup(t, { scenario = EVERY_TURN })
  local policy = ctx.mcp_home .. "/policy"
  assert(require("rmcp.lib.files").mkdir_p(policy, tonumber("700", 8)))
  local f = assert(io.open(policy .. "/prices.lua", "w"))
  f:write([[return { price = { ["mock/mock-model"] = { input = 2, output = 8, cache_read = 0.5, reasoning = 10, currency = "USD" } } }]])
  f:close()
  local c = ctx.client()
  local m = ctx.call(c, "models", {})
  t.eq(m.models[1].ref, "mock/mock-model")
  t.eq(m.models[1].price, { input = 2, output = 8, cache_read = 0.5, reasoning = 10, currency = "USD" })
  local sid = ctx.call(c, "spawn", { task = "one" }).session_id
  until_idle(ctx, c, { sid })
  ctx.call(c, "send", { session_id = sid, message = "two" })
  local r = until_idle(ctx, c, { sid })[sid]
  local sv = ctx.prov:served()
  local want = ((sv.prompt_tokens - sv.cached_tokens) * 2 + sv.cached_tokens * 0.5
    + (sv.completion_tokens - sv.reasoning_tokens) * 8 + sv.reasoning_tokens * 10) / 1e6
  t.ok(math.abs(r.usage.cost - want) < 1e-9, string.format("cost %.9f, want %.9f", r.usage.cost, want))
  t.eq(r.usage.currency, "USD")
  t.eq(r.usage.cost_partial, nil, "every token priced")
  ctx.shutdown()
end)

test("a list's counts and spend follow every change: a turn, a stop and its parking, a resume, a new session, a prune, a restart", function(t)
  local ctx = support.setup(t, { scenario = EVERY_TURN })
  local c = ctx.client()
  -- True when session id is parked on its file (agentd/session/park.lua): counted in the kept tally.
  local function parked(id)
    return uv.fs_stat(ctx.mcp_home .. "/sessions/" .. id .. ".parked.json") ~= nil
  end
  -- Stops session id, collects its end and waits until it is parked.
  local function stop_parked(id)
    ctx.call(c, "stop", { session_id = id })
    ctx.call(c, "watch", { session_ids = { id }, timeout = 0 })
    t.wait_for(function() return parked(id) end, 5000, "the stopped session to be parked", 10)
  end
  -- The list's counts and total after step, checked against the provider's and the rows' sums.
  local function check(step, counts)
    local rows, total, l = listed(ctx, c)
    t.eq(l.counts, counts, step .. ": the counts")
    t.eq(total, ctx.prov:served().total_tokens, step .. ": the orchestrator's total")
    t.eq(rows, total, step .. ": the rows' sum")
  end
  local a = ctx.call(c, "spawn", { task = "one" }).session_id
  until_idle(ctx, c, { a })
  check("a first turn", { idle = 1 })
  ctx.call(c, "send", { session_id = a, message = "two" })
  until_idle(ctx, c, { a })
  check("a second turn", { idle = 1 })
  local b = ctx.call(c, "spawn", { task = "three" }).session_id
  until_idle(ctx, c, { b })
  check("a new session", { idle = 2 })
  stop_parked(a)
  check("one parked", { idle = 1, exited = 1 })
  t.eq(ctx.call(c, "resume", { session_id = a }).status, "idle")
  check("resumed", { idle = 2 })
  ctx.call(c, "send", { session_id = a, message = "four" })
  until_idle(ctx, c, { a })
  check("a turn after the resume", { idle = 2 })
  stop_parked(a)
  check("parked again", { idle = 1, exited = 1 })
  local spent_b = ctx.call(c, "poll", { session_id = b }).usage.total
  t.eq(ctx.call(c, "prune", { keep = 0, older_than_days = 0 }).pruned, { a })
  local l = ctx.call(c, "list", { all = true })
  t.eq({ l.counts, l.usage.tokens }, { { idle = 1 }, spent_b }, "the pruned session no longer counted")
  ctx.call(c, "stop", { session_id = b })
  ctx.call(c, "watch", { session_ids = { b }, timeout = 0 })
  ctx.shutdown()
  c = ctx.client()
  l = ctx.call(c, "list", { all = true })
  t.eq({ l.counts, l.usage.tokens }, { { exited = 1 }, spent_b }, "a restarted daemon's, its session parked on its record")
  ctx.shutdown()
end)
