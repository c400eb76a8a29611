-- The merge queue (agentd/integrate/) with the real agent and real repositories the test makes, a
-- bare repository as the remote: four agents in worktrees, two changing files of their own, two
-- the same line differently; integration takes the clean ones and the first of the pair, hands the
-- conflict to the second agent (whose scripted turn resolves and commits it), then takes it too —
-- the target's history and tree as expected, the user's clean checkout brought along, the remote
-- given it. A failing verify leaves the target as it was; a dirty checkout of the target is
-- refused; kill -9 of agentd mid-queue leaves the target consistent and the queue goes on.
-- needs: agent python3 git bwrap
local uv = require "luv"
local support = require "agentd_support"

local COMMIT = "git add -A && git -c user.email=a@example.org -c user.name=agent commit -qm "

-- Each agent's scripted work: its file, or the shared line; the resolution of the handed-back conflict.
local SCENARIO = { rules = {
  { last_role = "user", user_contains = "conflicts in: shared.txt", tool_calls = { { name = "bash", arguments = {
      command = "printf 'from C\\nfrom D\\n' > shared.txt && git add shared.txt && git -c user.email=a@example.org -c user.name=agent commit -q --no-edit && echo resolved" } } } },
  { last_role = "user", user_contains = "IG-A", tool_calls = { { name = "bash", arguments = { command = "printf 'a\\n' > a.txt && " .. COMMIT .. "'add a'" } } } },
  { last_role = "user", user_contains = "IG-B", tool_calls = { { name = "bash", arguments = { command = "printf 'b\\n' > b.txt && " .. COMMIT .. "'add b'" } } } },
  { last_role = "user", user_contains = "IG-C", tool_calls = { { name = "bash", arguments = { command = "printf 'from C\\n' > shared.txt && " .. COMMIT .. "'C edits shared'" } } } },
  { last_role = "user", user_contains = "IG-D", tool_calls = { { name = "bash", arguments = { command = "printf 'from D\\n' > shared.txt && " .. COMMIT .. "'D edits shared'" } } } },
  { last_tool_name = "bash", text = "done: ", echo = "tool_result" },
  { last_role = "user", text = "ok" },
} }

-- Runs a shell line; returns its stdout (the case fails when it fails).
local function sh(t, cmd)
  local p = assert(io.popen(cmd .. " 2>&1; echo \"rc=$?\""))
  local out = p:read("a")
  p:close()
  local body, rc = out:match("^(.-)rc=(%d+)%s*$")
  t.eq(rc, "0", cmd .. ": " .. tostring(body))
  return body
end

-- A repository at ws (main: shared.txt "base"), with a bare remote "origin" beside it.
local function make_repo(t, ws, root)
  sh(t, string.format("cd %s && git init -q -b main && printf 'base\\n' > shared.txt && git add -A && "
    .. "git -c user.email=t@example.org -c user.name=t commit -qm base && git init -q --bare %s/remote.git && "
    .. "git remote add origin %s/remote.git && git push -q origin main", ws, root, root))
end

-- Spawns one worktree agent per task (kept alive) and waits until each is idle; returns their ids.
local function spawn_all(ctx, c, tasks)
  local ids = {}
  for i, task in ipairs(tasks) do
    ids[i] = ctx.call(c, "spawn", { task = task, isolate = "worktree", keep_alive = true }).session_id
  end
  for _, id in ipairs(ids) do ctx.watch_until(c, { id }, function(_, r) return r.status == "idle" end) end
  return ids
end

-- Watches ids until pred(states) holds, states being each id's last integration state; returns them.
local function until_states(ctx, c, ids, pred)
  local states, seen = {}, {}
  for _ = 1, 80 do
    if pred(states) then return states, seen end
    local w = ctx.call(c, "watch", { session_ids = ids, timeout = 30 })
    for sid, r in pairs(w.results or {}) do
      if r.integration then
        states[sid] = r.integration.state
        seen[#seen + 1] = sid .. ":" .. r.integration.state .. (r.integration.note and ("(" .. r.integration.note:sub(1, 300) .. ")") or "")
      end
    end
  end
  ctx.t.fail("the integration never got there: " .. table.concat(seen, " "))
end

test("four agents: the clean ones and the first of a conflicting pair merged, the conflict handed back, resolved and merged; the remote has it", function(t)
  local ctx = support.setup(t, { scenario = SCENARIO })
  make_repo(t, ctx.ws, ctx.home.root)
  local c = ctx.client()
  local t0 = uv.hrtime()
  local ids = spawn_all(ctx, c, { "IG-A work", "IG-B work", "IG-C work", "IG-D work" })
  -- given with the pair first: the forecast's order takes the clean ones first, the pair in its order
  local r = ctx.call(c, "worktree_integrate", { session_ids = { ids[3], ids[4], ids[1], ids[2] }, target = "main",
    with = { verify = "test -s shared.txt", push = "target" } })
  t.eq(r.order, ids, "the forecast's order")
  local states, seen = until_states(ctx, c, ids, function(st)
    for _, id in ipairs(ids) do if st[id] ~= "merged" and st[id] ~= "failed" then return false end end
    return true
  end)
  for _, id in ipairs(ids) do t.eq(states[id], "merged", id .. ": " .. table.concat(seen, " ")) end
  local handed = false
  for _, x in ipairs(seen) do handed = handed or x:find(ids[4] .. ":conflict", 1, true) == 1 end
  t.ok(handed, "the fourth agent's conflict was handed back to it: " .. table.concat(seen, " "))
  t.eq(sh(t, "cat " .. ctx.ws .. "/shared.txt"), "from C\nfrom D\n", "the user's checkout came along")
  t.eq(sh(t, "cd " .. ctx.ws .. " && git status --porcelain"), "", "and is clean")
  local log = sh(t, "cd " .. ctx.ws .. " && git log --format=%s main")
  for _, subject in ipairs({ "add a", "add b", "C edits shared", "D edits shared", "Merge main into reasonix/" .. ids[4] }) do
    t.ok(log:find(subject, 1, true), "main's history has " .. subject .. ":\n" .. log)
  end
  t.eq(select(2, log:gsub("Merge reasonix/", "")), 4, "one merge commit per branch")
  t.eq(sh(t, "git -C " .. ctx.home.root .. "/remote.git rev-parse main"), sh(t, "git -C " .. ctx.ws .. " rev-parse main"), "pushed")
  print(string.format("# four agents spawned, worked and integrated: %.1f s", (uv.hrtime() - t0) / 1e9))
  ctx.shutdown()
end)

test("on_conflict wait: the resolved conflict waits for the orchestrator, integrated again it merges; push branches sends the branches, not the target", function(t)
  local ctx = support.setup(t, { scenario = SCENARIO })
  make_repo(t, ctx.ws, ctx.home.root)
  local c = ctx.client()
  local ids = spawn_all(ctx, c, { "IG-C work", "IG-D work" })
  local base = sh(t, "git -C " .. ctx.ws .. " rev-parse main")
  local with = { order = "given", push = "branches", on_conflict = "wait" }
  ctx.call(c, "worktree_integrate", { session_ids = ids, target = "main", with = with })
  until_states(ctx, c, ids, function(st) return st[ids[1]] == "merged" and st[ids[2]] == "conflict" end)
  -- the second agent's turn resolves and commits the conflict; its integration stays where it was
  ctx.watch_until(c, { ids[2] }, function(_, r) return r.status == "idle" end)
  -- (an absence: a watch of two seconds sees the integration not move on by itself)
  local quiet = ctx.call(c, "watch", { session_ids = { ids[2] }, timeout = 2 }).results or {}
  t.eq(quiet[ids[2]] and quiet[ids[2]].integration and quiet[ids[2]].integration.state or "conflict", "conflict")
  local row
  for _, r in ipairs(ctx.call(c, "list", {}).sessions) do if r.session_id == ids[2] then row = r end end
  t.eq(row.integration.state, "conflict", "it waits for the orchestrator")
  t.eq(sh(t, "cd " .. ctx.ws .. " && git log --format=%s main"):find("D edits shared", 1, true), nil, "not merged by itself")
  ctx.call(c, "worktree_integrate", { session_ids = { ids[2] }, target = "main", with = with })
  until_states(ctx, c, { ids[2] }, function(st) return st[ids[2]] == "merged" end)
  t.eq(sh(t, "cat " .. ctx.ws .. "/shared.txt"), "from C\nfrom D\n")
  local remote = "git -C " .. ctx.home.root .. "/remote.git rev-parse "
  for _, id in ipairs(ids) do
    t.eq(sh(t, remote .. "reasonix/" .. id), sh(t, "git -C " .. ctx.ws .. " rev-parse reasonix/" .. id), id .. "'s branch pushed")
  end
  t.eq(sh(t, remote .. "main"), base, "the target is not pushed")
  ctx.shutdown()
end)

test("a failing verify leaves the target as it was; a dirty checkout of the target is refused", function(t)
  local ctx = support.setup(t, { scenario = SCENARIO })
  make_repo(t, ctx.ws, ctx.home.root)
  local c = ctx.client()
  local ids = spawn_all(ctx, c, { "IG-A work" })
  local before = sh(t, "git -C " .. ctx.ws .. " rev-parse main")
  ctx.call(c, "worktree_integrate", { session_ids = ids, with = { verify = "echo tests failed; false" } })
  local states = until_states(ctx, c, ids, function(st) return st[ids[1]] == "failed" or st[ids[1]] == "merged" end)
  t.eq(states[ids[1]], "failed")
  t.eq(sh(t, "git -C " .. ctx.ws .. " rev-parse main"), before, "the target did not move")
  sh(t, "printf 'local\\n' >> " .. ctx.ws .. "/shared.txt")
  local err = ctx.call_err(c, "worktree_integrate", { session_ids = ids })
  t.match(err.message, "checked out at .* with local changes")
  t.eq(sh(t, "git -C " .. ctx.ws .. " rev-parse main"), before)
  ctx.shutdown()
end)

test("kill -9 of agentd in the middle of the queue: the target before or after each merge, the queue goes on", function(t)
  local ctx = support.setup(t, { scenario = SCENARIO })
  make_repo(t, ctx.ws, ctx.home.root)
  local c = ctx.client()
  local ids = spawn_all(ctx, c, { "IG-A work", "IG-B work" })
  local gate = ctx.home.root .. "/verify-started"
  local r = ctx.call(c, "worktree_integrate", { session_ids = ids, target = "main",
    with = { order = "given", verify = "if [ -e " .. gate .. ".1 ] && [ ! -e " .. gate .. ".2 ]; then touch " .. gate .. ".2; "
      .. "exec sleep 30; fi; touch " .. gate .. ".1" } }) -- (exec: the sleep dies with agentd)
  -- the second branch's verify is running (the first merged): the daemon dies there
  t.wait_for(function() return uv.fs_stat(gate .. ".2") ~= nil end, 30000, "the second verify to start", 20)
  local daemon = c.info.agentd_pid
  uv.kill(daemon, "sigkill")
  t.wait_for(function() return not support.alive(daemon) end, 2000, "agentd gone")
  local file = ctx.mcp_home .. "/integrations/" .. r.integration_id .. ".json"
  ctx.call(c, "list", {}) -- a fresh daemon takes the queue up
  t.wait_for(function()
    local q = require("cjson").decode(io.open(file):read("a"))
    return q.status == "done"
  end, 60000, "the queue to finish after the restart", 50)
  local log = sh(t, "cd " .. ctx.ws .. " && git log --format=%s main")
  t.ok(log:find("add a", 1, true) and log:find("add b", 1, true), log)
  t.eq(select(2, log:gsub("Merge reasonix/", "")), 2, "each branch merged once")
  t.eq(sh(t, "cd " .. ctx.ws .. " && git status --porcelain"), "", "the checkout clean")
  t.eq(sh(t, "ls " .. ctx.ws .. "/.git/index.lock 2>/dev/null || true"), "", "no index lock left")
  ctx.shutdown()
end)

test("squash makes one commit a branch on the target; fast-forward moves it to the branch itself; bad options are refused", function(t)
  local ctx = support.setup(t, { scenario = SCENARIO })
  make_repo(t, ctx.ws, ctx.home.root)
  local c = ctx.client()
  local ids = spawn_all(ctx, c, { "IG-A work", "IG-B work" })
  t.match(ctx.call_err(c, "worktree_integrate", { session_ids = ids, with = { merge = "octopus" } }).message,
    "with.merge must be one of \"merge\", \"squash\", \"ff\"")
  t.match(ctx.call_err(c, "worktree_integrate", { session_ids = ids, with = { force = true } }).message, "with.force is not an option")
  local base = sh(t, "git -C " .. ctx.ws .. " rev-parse main"):gsub("%s+$", "")
  ctx.call(c, "worktree_integrate", { session_ids = { ids[1] }, with = { merge = "ff" } })
  until_states(ctx, c, { ids[1] }, function(st) return st[ids[1]] == "merged" end)
  t.eq(sh(t, "git -C " .. ctx.ws .. " rev-parse main"), sh(t, "git -C " .. ctx.ws .. " rev-parse reasonix/" .. ids[1]),
    "fast-forward: main is the branch")
  ctx.call(c, "worktree_integrate", { session_ids = { ids[2] }, with = { merge = "squash", update = "merge" } })
  until_states(ctx, c, { ids[2] }, function(st) return st[ids[2]] == "merged" end)
  t.eq(sh(t, "git -C " .. ctx.ws .. " rev-list --count --merges " .. base .. "..main"), "0\n", "no merge commit")
  t.eq(sh(t, "git -C " .. ctx.ws .. " rev-list --count " .. base .. "..main"), "2\n", "one commit per branch")
  t.eq(sh(t, "git -C " .. ctx.ws .. " ls-tree --name-only main"), "a.txt\nb.txt\nshared.txt\n")
  ctx.shutdown()
end)

test("a sandboxed agent's work: its verify runs in its sandbox (your home hidden), its commits came back through the sync", function(t)
  local ctx = support.setup(t, { scenario = SCENARIO })
  make_repo(t, ctx.ws, ctx.home.root)
  local secret = ctx.home.home .. "/secret.txt"
  sh(t, "printf 'key\\n' > " .. secret)
  local c = ctx.client()
  local sid = ctx.call(c, "spawn", { task = "IG-A work", isolate = "worktree", keep_alive = true, sandbox = "workspace" }).session_id
  ctx.watch_until(c, { sid }, function(_, r) return r.status == "idle" end)
  -- outside a sandbox this verify fails (the file is there); inside, your home is hidden
  ctx.call(c, "worktree_integrate", { session_ids = { sid }, with = { verify = "test ! -e " .. secret } })
  local states = until_states(ctx, c, { sid }, function(st) return st[sid] == "merged" or st[sid] == "failed" end)
  t.eq(states[sid], "merged", "the verify ran where the agent runs")
  t.eq(sh(t, "cat " .. ctx.ws .. "/a.txt"), "a\n", "the agent's commit, synced back from its sandbox, is on main")
  ctx.shutdown()
end)
