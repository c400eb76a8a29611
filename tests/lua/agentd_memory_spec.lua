-- What agentd holds per finished session it retains: its Lua heap after a full collection (the
-- RMCP_TEST_HEAP seam, tests/support/seams.lua) with N finished sessions more than a warmed-up
-- daemon, divided by N. The heap, not RSS: after a full collection it counts what is reachable,
-- exactly, where RSS moves with the allocator and ASan. Both kinds of retained session are
-- measured: those that finished in this daemon's life and those a restarted daemon read back from
-- disk. Each session lives as an orchestrator's do: a task of a real prompt's size, two turns,
-- default lists while it is idle, stopped, its end collected, then every row listed once
-- (all=true). The agents are the fake ACP agent (tests/fake_agent), for speed.
local procs = require "procs"
local uv = require "luv"
local async = require "rmcp.lib.async"
local support = require "agentd_support"

-- The bound (bytes per retained finished session).
local BUDGET = 10 * 1024
-- Sessions measured (beyond the warm-up batch), a multiple of the batch.
local N = tonumber(os.getenv("RMCP_MEMORY_SESSIONS") or "") or 200
local BATCH = 20

-- A task of about a kilobyte, different for each session (a real prompt's size).
local function task(tag)
  local words = {}
  for i = 1, 60 do words[i] = string.format("%s-step%02d", tag, i) end
  return "Refactor the module and keep its tests green: " .. table.concat(words, " ")
end

-- Watches ids until each is idle.
local function until_idle(ctx, c, ids)
  local waiting, left = {}, #ids
  for _, id in ipairs(ids) do waiting[id] = true end
  for _ = 1, 10 * #ids do
    if left == 0 then break end
    local list = {}
    for id in pairs(waiting) do list[#list + 1] = id end
    for sid, res in pairs(ctx.call(c, "watch", { session_ids = list }).results or {}) do
      if res.status == "idle" and waiting[sid] then waiting[sid], left = nil, left - 1 end
    end
  end
  ctx.t.eq(left, 0, "every session finished its turn")
end

-- One batch of sessions through their whole life (see the header); returns their ids.
local function live_batch(ctx, c, tag)
  local ids = {}
  for i = 1, BATCH do ids[i] = ctx.call(c, "spawn", { task = task(tag .. "." .. i) }).session_id end
  until_idle(ctx, c, ids)
  ctx.call(c, "list", {})
  for _, id in ipairs(ids) do
    ctx.call(c, "send", { session_id = id, message = "Now also update the changelog and say what you changed." })
  end
  until_idle(ctx, c, ids)
  ctx.call(c, "list", {})
  for _, id in ipairs(ids) do ctx.call(c, "stop", { session_id = id }) end
  for _, id in ipairs(ids) do ctx.call(c, "watch", { session_ids = { id }, timeout = 0 }) end
  return ids
end

-- Lists every row of the caller's sessions, page after page; returns how many.
local function list_all(ctx, c)
  local n, cursor = 0, nil
  repeat
    local r = ctx.call(c, "list", { all = true, limit = 500, cursor = cursor })
    n, cursor = n + #r.sessions, r.next_cursor
  until not cursor
  return n
end


-- agentd's Lua heap in bytes after a full collection (the seam writes it to file on SIGUSR2), once
-- the agents just stopped are gone (a stop waits up to 500 ms for the agent to close its session).
local function heap(ctx, c, file)
  async.sleep(700)
  os.remove(file)
  ctx.call(c, "list", {})
  uv.kill(c.info.agentd_pid, "sigusr2")
  local bytes
  ctx.t.wait_for(function()
    local f = io.open(file, "r")
    if f then bytes = tonumber(f:read("a")); f:close() end
    return bytes
  end, 10000, "agentd to write its heap", 20)
  return bytes
end

test("a retained finished session costs agentd at most 10 KB of heap, live-finished or restored", function(t)
  local file = t.tmpdir("rmcp-heap") .. "/heap"
  local ctx = support.setup(t, { env = {
    REASONIX_BIN = support.fake_agent(t), REASONIX_MCP_RETAIN_MAX = "100000",
    REASONIX_MCP_TEST_SEAMS = support.repo .. "/tests/support/seams.lua", RMCP_TEST_HEAP = file,
  } })
  local c = ctx.client()
  live_batch(ctx, c, "warm")
  list_all(ctx, c)
  local before, rss_before = heap(ctx, c, file), procs.rss_kib(c.info.agentd_pid)
  for b = 1, N // BATCH do live_batch(ctx, c, "b" .. b) end
  t.eq(list_all(ctx, c), N + BATCH, "all=true pages through every row")
  local after, rss_after = heap(ctx, c, file), procs.rss_kib(c.info.agentd_pid)
  local live = (after - before) / N
  print(string.format("# finished in this daemon: heap %d -> %d bytes for %d sessions: %.0f bytes each (RSS %d -> %d KiB: %.0f bytes each)",
    before, after, N, live, rss_before, rss_after, (rss_after - rss_before) * 1024 / N))

  ctx.shutdown()
  c = ctx.client()
  list_all(ctx, c)
  local all = heap(ctx, c, file)
  t.eq(#ctx.call(c, "prune", { keep = BATCH }).pruned, N, "the prune leaves the batch's worth")
  list_all(ctx, c)
  local kept = heap(ctx, c, file)
  local restored = (all - kept) / N
  print(string.format("# restored from disk: heap %d with %d sessions, %d with %d: %.0f bytes each", all, N + BATCH, kept,
    BATCH, restored))
  t.ok(live <= BUDGET, string.format("a session finished in this daemon holds %.0f bytes (budget %d)", live, BUDGET))
  t.ok(restored <= BUDGET, string.format("a restored finished session holds %.0f bytes (budget %d)", restored, BUDGET))
end)
