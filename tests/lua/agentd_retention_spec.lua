-- Retention (agentd/retention.lua) and the default list view on a daemon with many sessions: the
-- rule keeps the newest finished sessions per orchestrator and never a live or uncollected one;
-- prune on demand (the API ctl uses) and at daemon start; a short soak whose session count, files
-- and memory stay flat. The agents are the fake ACP agent (tests/fake_agent), for speed.
local procs = require "procs"
local uv = require "luv"
local support = require "agentd_support"

-- Spawns n sessions and watches until each has finished its first turn; returns their ids.
local function spawn_idle(ctx, c, n, tag)
  local ids, waiting = {}, {}
  for i = 1, n do
    local id = ctx.call(c, "spawn", { task = tag .. " " .. i }).session_id
    ids[#ids + 1], waiting[id] = id, true
  end
  local left = n
  for _ = 1, 10 * n do
    if left == 0 then break end
    local list = {}
    for id in pairs(waiting) do list[#list + 1] = id end
    for sid, res in pairs(ctx.call(c, "watch", { session_ids = list }).results or {}) do
      if res.status == "idle" and waiting[sid] then waiting[sid], left = nil, left - 1 end
    end
  end
  ctx.t.eq(left, 0, "every session finished its first turn")
  return ids
end

-- Stops ids and collects each exit with a watch (so their results count as delivered), in order:
-- the delivery saves the session, so the last id is the newest. Session times are in milliseconds,
-- and two watches can be answered within one: each waits for the next millisecond.
local function stop_collected(ctx, c, ids)
  local store = require "rmcp.agentd.store"
  for _, id in ipairs(ids) do ctx.call(c, "stop", { session_id = id }) end
  for _, id in ipairs(ids) do
    local before = store.now()
    ctx.t.wait_for(function() return store.now() > before end, 1000, "the clock to move a millisecond", 1)
    ctx.call(c, "watch", { session_ids = { id }, timeout = 0 })
  end
end

-- Files in the home's sessions dir.
local function session_files(ctx)
  local n, scan = 0, uv.fs_scandir(ctx.mcp_home .. "/sessions")
  while scan and uv.fs_scandir_next(scan) do n = n + 1 end
  return n
end


-- True when process pid runs with AddressSanitizer (its quarantine keeps freed memory resident,
-- so RSS says nothing about what the daemon holds).
local function sanitized(pid)
  local f = io.open("/proc/" .. pid .. "/maps", "r")
  local maps = f and f:read("a") or ""
  if f then f:close() end
  return maps:find("libasan", 1, true) ~= nil
end

test("prune keeps the newest finished sessions; never a live or uncollected one unless forced", function(t)
  local ctx = support.setup(t, { env = { REASONIX_BIN = support.fake_agent(t) } })
  local c = ctx.client()
  local ids = spawn_idle(ctx, c, 5, "hello")
  stop_collected(ctx, c, { ids[1], ids[2], ids[3], ids[4] })
  -- a session whose turn result no watch or poll collected, then stopped
  local u = ctx.call(c, "spawn", { task = "unseen" }).session_id
  t.wait_for(function()
    for _, row in ipairs(ctx.call(c, "list", {}).sessions) do
      if row.session_id == u then return row.status == "idle" end
    end
  end, 10000, "the unseen turn to end", 20)
  ctx.call(c, "stop", { session_id = u })
  local dry = ctx.call(c, "prune", { keep = 1, dry_run = true })
  t.eq(dry.dry_run, true)
  t.eq(#dry.pruned, 3, "of the four collected, all but the newest")
  t.eq(#ctx.call(c, "list", { all = true }).sessions, 6, "a dry run removes nothing")
  t.ok(uv.fs_stat(ctx.mcp_home .. "/sessions/" .. ids[1] .. ".parked.json"), "a finished session is parked")
  local r = ctx.call(c, "prune", { keep = 1 })
  t.eq(r.pruned, dry.pruned)
  local left = {}
  for _, row in ipairs(ctx.call(c, "list", { all = true }).sessions) do left[row.session_id] = row.status end
  t.eq(left[ids[5]], "idle", "a live one stays")
  t.eq(left[u], "exited", "an uncollected one stays")
  t.eq(left[ids[4]], "exited", "the newest collected one stays")
  t.eq(left[ids[1]], nil)
  t.eq(uv.fs_stat(ctx.mcp_home .. "/sessions/" .. ids[1] .. ".json"), nil, "its record is gone")
  t.eq(uv.fs_stat(ctx.mcp_home .. "/sessions/" .. ids[1] .. ".events.jsonl"), nil, "and its journal")
  t.eq(uv.fs_stat(ctx.mcp_home .. "/sessions/" .. ids[1] .. ".parked.json"), nil, "and its parked part")
  t.eq(ctx.call_err(c, "poll", { session_id = ids[1] }).code, -32001, "it is unknown now")
  t.eq(ctx.call(c, "prune", { keep = 0, force = true }).pruned, { ids[4], u }, "force takes the uncollected")
  t.eq(#ctx.call(c, "list", { all = true }).sessions, 1)
  local other = ctx.client("orch-b")
  t.eq(#ctx.call(other, "prune", { keep = 0, force = true }).pruned, 0, "an orchestrator prunes only its own")
  t.eq(ctx.call_err(c, "prune", { keep = -1 }).code, -32602)
end)

test("the rule applies at daemon start: REASONIX_MCP_RETAIN_MAX finished sessions per orchestrator", function(t)
  local ctx = support.setup(t, { env = { REASONIX_BIN = support.fake_agent(t), REASONIX_MCP_RETAIN_MAX = "2" } })
  local c = ctx.client()
  local ids = spawn_idle(ctx, c, 5, "hello")
  stop_collected(ctx, c, ids)
  ctx.shutdown()
  local rows = ctx.call(c, "list", { all = true }).sessions
  t.eq(#rows, 2, "the two newest are kept")
  t.eq(session_files(ctx), 4, "a record and a journal each")
end)

-- The soak's length: RMCP_SOAK_BATCHES batches of 20 sessions (default 4; the long run in the
-- closing notes used 50, i.e. 1,000 sessions).
local SOAK_BATCHES = tonumber(os.getenv("RMCP_SOAK_BATCHES") or "") or 4

test("soak: sessions come and go in batches; their count, files and agentd's memory stay flat", function(t)
  local ctx = support.setup(t, { env = { REASONIX_BIN = support.fake_agent(t), REASONIX_MCP_RETAIN_MAX = "5" } })
  local c = ctx.client()
  local rss, files = {}, {}
  local n = math.max(4, SOAK_BATCHES)
  for batch = 1, n do
    stop_collected(ctx, c, spawn_idle(ctx, c, 20, "batch " .. batch))
    ctx.call(c, "prune", {})
    local list = ctx.call(c, "list", { all = true })
    t.eq(#list.sessions, 5, "batch " .. batch .. ": the rule's five remain")
    rss[batch], files[batch] = procs.rss_kib(c.info.agentd_pid), session_files(ctx)
  end
  t.eq(files[n], 15, "files stay at the rule's bound: a record, a journal and a parked part each")
  if sanitized(c.info.agentd_pid) then
    print("# agentd runs under ASan: its RSS is not checked (the quarantine holds freed memory)")
  else
    t.ok(rss[n] - rss[2] < 4096, string.format("agentd RSS flat: batch 2 %d KiB, batch %d %d KiB", rss[2], n, rss[n]))
  end
  print(string.format("# soak: %d sessions in %d batches; agentd RSS %s KiB; files %s", 20 * n, n,
    table.concat(rss, " "), table.concat(files, " ")))
end)
