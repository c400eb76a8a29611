-- The session index (agentd/session/index.lua) through the daemon: a clean shutdown writes it, the
-- next start takes the finished sessions from it and answers for them as a start that read every
-- record; a missing, stale, older or broken index is not trusted (every record is read, nothing is
-- lost or shown otherwise), a kill -9 leaves none to trust, and retention still prunes what it
-- holds. The agents are the fake ACP agent (tests/fake_agent).
local uv = require "luv"
local support = require "agentd_support"
local files = require "rmcp.lib.files"
local json = require "rmcp.lib.json"

-- The rows of list all=true as {id = "status exit_reason task turns updated_at"}, to compare starts.
local function rows(ctx, c)
  local out = {}
  for _, r in ipairs(ctx.call(c, "list", { all = true }).sessions) do
    out[r.session_id] = table.concat({ r.status, tostring(r.exit_reason), r.task, tostring(r.turns),
      tostring(r.updated_at) }, " ")
  end
  return out
end

-- Waits until each of ids is parked on its file (a shutdown saves a finished session that is not
-- yet, and so moves its updated_at).
local function parked(ctx, ids)
  for _, id in ipairs(ids) do
    ctx.t.wait_for(function() return uv.fs_stat(ctx.mcp_home .. "/sessions/" .. id .. ".parked.json") ~= nil end,
      5000, id .. " to be parked", 5)
  end
end

-- Spawns one session per task, waits until each turn ended, stops them, collects each exit and
-- waits until they are parked.
local function finished(ctx, c, tasks)
  local ids = {}
  for i, task in ipairs(tasks) do ids[i] = ctx.call(c, "spawn", { task = task }).session_id end
  ctx.watch_each(c, ids, support.settled)
  for _, id in ipairs(ids) do ctx.call(c, "stop", { session_id = id }) end
  ctx.watch_each(c, ids, function(_, r) return r.status == "exited" end)
  parked(ctx, ids)
  return ids
end

-- The text agentd's log holds after byte offset from (and its size now).
local function log_after(ctx, from)
  local text = files.read(ctx.mcp_home .. "/agentd.log") or ""
  return text:sub(from + 1), #text
end

-- Kills the daemon of client c with SIGKILL and waits until it is gone.
local function kill9(t, c)
  local pid = c.info.agentd_pid
  uv.kill(pid, "sigkill")
  t.wait_for(function() return not support.alive(pid) end, 2000, "agentd gone")
end

-- A daemon home of case t whose agents are the fake one: ctx, and a client (the daemon autostarts).
local function daemon(t)
  local ctx = support.setup(t, { env = { REASONIX_BIN = support.fake_agent(t) } })
  return ctx, ctx.client()
end

-- Shuts ctx's daemon down cleanly (after spoil(), if given, spoils what it left): a client of the
-- next daemon, and the size of the log before it started.
local function restart(ctx, spoil)
  ctx.shutdown()
  if spoil then spoil() end
  local _, at = log_after(ctx, 0)
  return ctx.client(), at
end

-- The index's two files of ctx.
local function index_paths(ctx)
  local body = ctx.mcp_home .. "/sessions.index"
  return body, body .. ".head"
end

test("a clean shutdown writes the index; the next start takes its sessions from it and answers as before", function(t)
  local ctx, c = daemon(t)
  local ids = finished(ctx, c, { "one", "two", "three" })
  local live = ctx.call(c, "spawn", { task = "live at the shutdown", keep_alive = true }).session_id
  ctx.watch_each(c, { live }, support.settled)
  local before = rows(ctx, c)
  local body, head = index_paths(ctx)
  local at
  c, at = restart(ctx, function() t.ok(uv.fs_stat(body) and uv.fs_stat(head), "the index written") end)
  local after = rows(ctx, c)
  for _, id in ipairs(ids) do t.eq(after[id], before[id], "finished session " .. id .. " as it was") end
  t.match(after[live], "^orphaned", "the live one came back orphaned, read from its record")
  local logged = log_after(ctx, at)
  t.match(logged, "took 3 finished session%(s%) from the session index")
  t.eq(uv.fs_stat(head), nil, "a start removes the head: a crash leaves nothing to trust")
  t.match(ctx.call(c, "transcript", { session_id = ids[2] }).last_text or "", ".")
  local p = ctx.call(c, "poll", { session_id = ids[1], detail = true })
  t.eq({ p.status, p.exit_reason }, { "exited", "stopped" })
  t.eq(ctx.call(c, "resume", { session_id = ids[3] }).status, "idle", "resumed from its record")
  ctx.call(c, "stop", { session_id = ids[3] })
  ctx.watch_each(c, { ids[3] }, function(_, r) return r.status == "exited" end)
  parked(ctx, { ids[1], ids[3] })
  before = rows(ctx, c)
  c = restart(ctx)
  t.eq(rows(ctx, c), before, "what changed was added to the index: the next start shows it")
end)

test("a missing, older, unreadable or stale index is not used: every record is read, nothing lost", function(t)
  local ctx, c = daemon(t)
  finished(ctx, c, { "a", "b" })
  local expect = rows(ctx, c)
  local body, head = index_paths(ctx)
  -- Shuts down cleanly, spoils the index with spoil(), starts again: every record read, for why.
  local function restart_with(spoil, why)
    local at
    c, at = restart(ctx, spoil)
    t.eq(rows(ctx, c), expect, "every session as it was: " .. why)
    t.match(log_after(ctx, at), "session index not used %(" .. why)
  end
  restart_with(function() os.remove(head) end, "missing")
  restart_with(function()
    local h = json.decode(files.read(head))
    h.version = 0
    assert(files.write_atomic(head, json.encode(h), false))
  end, "version 0, not 1")
  restart_with(function() assert(files.write_atomic(head, "{not json", false)) end, "its head is unreadable")
  restart_with(function()
    local f = assert(io.open(body, "ab"))
    f:write("{}\n")
    f:close()
  end, "its body changed since it was written")
  -- a record written behind the index's back (a session added by hand, as an older daemon would)
  local id = next(expect)
  local rec = files.read(ctx.mcp_home .. "/sessions/" .. id .. ".json")
  local copy = "rx-0000000c0b1e"
  expect[copy] = expect[id]
  restart_with(function()
    assert(files.write_atomic(ctx.mcp_home .. "/sessions/" .. copy .. ".json", (rec:gsub(id:gsub("%p", "%%%0"), copy)), false))
  end, "the sessions dir changed since it was written")
end)

test("a body line found broken puts every session back to its record", function(t)
  local ctx, c = daemon(t)
  finished(ctx, c, { "x", "y" })
  local expect = rows(ctx, c)
  local body = index_paths(ctx)
  local at
  c, at = restart(ctx, function()
    local size = #assert(files.read(body))
    -- same size and inode (the head's check passes): a flipped byte inside the first entry
    local f = assert(io.open(body, "r+b"))
    f:seek("set", 10)
    f:write("#")
    f:close()
    t.eq(#assert(files.read(body)), size)
  end)
  t.eq(rows(ctx, c), expect)
  t.match(log_after(ctx, at), "session index body unusable")
  c = restart(ctx)
  t.eq(rows(ctx, c), expect, "the next shutdown wrote the index whole again")
end)

test("kill -9 at any point leaves no index to trust; a head from before later writes is stale", function(t)
  local ctx, c = daemon(t)
  local ids = finished(ctx, c, { "first" })
  local body, head = index_paths(ctx)
  local saved_head, saved_body
  c = restart(ctx, function() saved_head, saved_body = files.read(head), files.read(body) end)
  local newer = finished(ctx, c, { "after the index" })[1]
  ctx.call(c, "resume", { session_id = ids[1] })
  local expect = rows(ctx, c)
  kill9(t, c)
  t.eq(uv.fs_stat(head), nil, "no head after a kill")
  local _, at = log_after(ctx, 0)
  c = ctx.client()
  local got = rows(ctx, c)
  t.eq(got[newer], expect[newer], "the session made after the index is there")
  t.match(got[ids[1]], "^orphaned", "the resumed one came back orphaned, as its record says")
  t.match(log_after(ctx, at), "session index not used %(missing")
  expect = rows(ctx, c)
  kill9(t, c)
  -- the head and body of the first clean shutdown put back: the dir changed since
  assert(files.write_atomic(body, saved_body, false))
  assert(files.write_atomic(head, saved_head, false))
  c = ctx.client()
  t.eq(rows(ctx, c), expect)
end)

test("retention prunes sessions taken from the index, and the index forgets them", function(t)
  local ctx, c = daemon(t)
  finished(ctx, c, { "old", "middle", "new" })
  t.defer(function() uv.os_unsetenv("REASONIX_MCP_RETAIN_MAX") end)
  c = restart(ctx, function() uv.os_setenv("REASONIX_MCP_RETAIN_MAX", "1") end)
  local kept = rows(ctx, c)
  local n = 0
  for _ in pairs(kept) do n = n + 1 end
  t.eq(n, 1, "the start's prune kept the newest")
  local at
  c, at = restart(ctx, function() uv.os_unsetenv("REASONIX_MCP_RETAIN_MAX") end)
  t.eq(rows(ctx, c), kept, "the pruned ones stay gone")
  t.match(log_after(ctx, at), "took 1 finished session%(s%) from the session index")
end)
