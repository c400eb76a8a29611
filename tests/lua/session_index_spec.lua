-- agentd/session/index.lua on its own, over more sessions than one body line holds: a start takes
-- the body in a line per turn of the loop, or all that is left at once when a request comes first;
-- a shutdown adds what changed (saved, removed) instead of writing the whole again, and a crash
-- between that addition and the head leaves a head that is not trusted.
local uv = require "luv"
local json = require "rmcp.lib.json"
local files = require "rmcp.lib.files"
local store = require "rmcp.agentd.store"
local index = require "rmcp.agentd.session.index"

-- A daemon table over home (its sessions dir made).
local function daemon(home)
  uv.fs_mkdir(home .. "/sessions", tonumber("700", 8))
  return { paths = require("rmcp.config").paths(home), sessions = {}, sessions_gen = 0 }
end

-- Puts n finished, collected sessions into d as a restore leaves them (the index reads no record).
local function forge(d, n)
  for i = 1, n do
    local s = { id = string.format("rx-%012x", i), owner = "orch", cwd = "/w", project_dir = "/w", task = "task " .. i,
                status = "exited", exit_reason = "stopped", created_at = 1000 + i, updated_at = 2000 + i,
                turns_total = 1, turns_drained = 1, plan = json.array(), pending = {}, parked = "record",
                usage = { total = i } }
    s.transcript_path = store.journal_path(d.paths.sessions, s.id)
    d.sessions[s.id] = s
  end
end

-- A fresh daemon table over d's home, given the index's head (nil when not usable, and why).
local function start(d)
  local d2 = daemon(d.paths.home)
  return d2, index.read(d2)
end

test("a start takes the body in a line per turn, or at once for a request; a shutdown adds what changed", function(t)
  local home = t.tmpdir("rmcp-index")
  local d = daemon(home)
  local n = 20 * index.LINE + 7
  forge(d, n)
  index.write(d)
  local body_size = uv.fs_stat(d.paths.sessions_index).size
  local d2, head = start(d)
  t.eq(head and #head.read, 0, "a usable head naming no record to read")
  local done = 0
  index.load_later(d2, function() done = done + 1 end)
  local some = 0
  t.wait_for(function()
    for _ in pairs(d2.sessions) do some = some + 1 end
    return some > 0
  end, 2000, "a turn of the loop to take a line", 1)
  t.ok(some < n, "a turn of the loop took part of the body (" .. some .. ")")
  index.complete(d2)
  t.eq(done, 1, "its end ran once")
  local s = d2.sessions[string.format("rx-%012x", 5)]
  t.eq({ s.task, s.status, s.turns_total, s.usage.total, s.parked, #s.pending }, { "task 5", "exited", 1, 5, "record", 0 })
  t.eq(s.transcript_path, store.journal_path(d.paths.sessions, s.id))
  local total = 0
  for _ in pairs(d2.sessions) do total = total + 1 end
  t.eq(total, n)

  -- one session saved, one removed: the shutdown adds a line, the body is not written again
  local changed, gone = d2.sessions[string.format("rx-%012x", 9)], string.format("rx-%012x", 10)
  changed.task = "changed"
  store.save(d.paths.sessions, changed, true)
  d2.sessions[gone] = nil
  store.remove(d.paths.sessions, gone)
  local ino = uv.fs_stat(d.paths.sessions_index).ino
  index.write(d2)
  local st = uv.fs_stat(d.paths.sessions_index)
  t.eq(st.ino, ino, "the same body, added to")
  t.ok(st.size > body_size and st.size < body_size + 4096, "by one short line")
  local head_text = files.read(d.paths.sessions_index_head)
  local d3 = start(d)
  index.load_later(d3, function() end)
  index.complete(d3)
  t.eq(d3.sessions[changed.id].task, "changed")
  t.eq(d3.sessions[gone], nil)

  -- a crash after the body was added to, before its head: that head is not trusted
  d3.sessions[changed.id].task = "again"
  store.save(d.paths.sessions, d3.sessions[changed.id], true)
  index.write(d3)
  assert(files.write_atomic(d.paths.sessions_index_head, head_text, false))
  local _, usable, why = start(d)
  t.eq(usable, nil)
  t.match(why, "changed since it was written")
end)

test("a drop or set for a session read from its record leaves that session alone", function(t)
  local home = t.tmpdir("rmcp-index")
  local d = daemon(home)
  forge(d, 3)
  local live = d.sessions[string.format("rx-%012x", 2)]
  live.status = "idle"
  index.write(d)
  local d2, head = start(d)
  t.eq(head.read, { live.id }, "the live one is read from its record")
  d2.sessions[live.id] = { id = live.id, status = "orphaned" }
  index.load_later(d2, function() end)
  index.complete(d2)
  t.eq(d2.sessions[live.id].status, "orphaned", "its stale entry, if any, does not replace it")
end)
