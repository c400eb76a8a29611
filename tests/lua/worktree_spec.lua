-- isolate=worktree without an agent: a worktree made on a new branch at the same relative path, the
-- changes summary and the diff against its base (untracked files in, the agent's index untouched),
-- removal keeping a branch with commits; and each refusal or stated choice — not a repository, no
-- commit yet, a branch that exists, a detached HEAD, uncommitted changes, a cwd not in the commit —
-- with nothing half-made left behind, also after a daemon died while making one. Git's side is
-- agentd/worktree.lua, the session's record of it agentd/session/isolate.lua.
-- needs: git
local uv = require "luv"
local json = require "rmcp.lib.json"
local worktree = require "rmcp.agentd.worktree"
local isolate = require "rmcp.agentd.session.isolate"
local state = require "rmcp.agentd.session.state"

local sh, out = require("shell").sh, require("shell").out

-- A repository with one commit (a.txt, sub/b.txt) in a fresh dir; returns its path, the daemon
-- table (paths.home, paths.sessions) and the dir the worktrees go under.
local function repo(t)
  local root = t.tmpdir("rmcp-wt")
  local r = root .. "/repo"
  sh(t, string.format("mkdir -p %s/sub && cd %s && git init -q -b main && printf 'A\\n' > a.txt && printf 'B\\n' > sub/b.txt && "
    .. "git add -A && git -c user.email=t@e -c user.name=t commit -qm base", r, r))
  local home = root .. "/home"
  uv.fs_mkdir(home, tonumber("700", 8))
  uv.fs_mkdir(home .. "/sessions", tonumber("700", 8))
  return r, { paths = { home = home, sessions = home .. "/sessions" }, sessions = {} }, root
end

-- Runs fn with the worktrees under root/wt and this run's branch prefix.
local function with_root(t, root, fn)
  require("testing").with_env({ REASONIX_MCP_WORKTREE_DIR = root .. "/wt", REASONIX_MCP_WORKTREE_BRANCH_PREFIX = "rx-test/" }, fn)
end

test("a worktree on a new branch at the same relative path; changes and the diff against its base; removal", function(t)
  local r, d, root = repo(t)
  with_root(t, root, function()
    local saved = {}
    local save_first = state.save_first
    state.save_first = function(d_, s_) saved[#saved + 1] = s_.worktree.state; return save_first(d_, s_) end
    t.defer(function() state.save_first = save_first end)
    local s = { id = "rx-one" }
    local warnings, err = isolate.make(d, s, uv.fs_realpath(r .. "/sub"))
    t.ok(warnings, tostring(err and err.message))
    local cwd = s.cwd
    t.eq(saved, { "creating", "ready" }, "the intent is saved before git runs")
    t.eq(s.worktree.state, "ready")
    t.eq(s.worktree.branch, "rx-test/rx-one")
    t.eq(cwd, s.worktree.path .. "/sub", "the same relative path")
    t.eq(#warnings, 0)
    t.ok(s.worktree.path:find(root .. "/wt/", 1, true) == 1, "under the managed dir")
    t.eq(worktree.changes(s.worktree), nil, "nothing changed yet")
    sh(t, string.format("cd %s && printf 'changed\\n' > b.txt && printf 'new\\n' > new.txt", cwd))
    local c = worktree.changes(s.worktree)
    t.eq(c.files, 1)
    t.eq(c.insertions, 1)
    t.eq(c.deletions, 1)
    t.eq(c.untracked, 1)
    t.eq(c.commits, 0)
    local stat = assert(worktree.diff(d, s.worktree, {}))
    t.match(stat.stat, "sub/b.txt")
    t.match(stat.stat, "sub/new.txt", "untracked files are in the diff")
    t.eq(out("cd " .. cwd .. " && git status --porcelain"), " M sub/b.txt\n?? sub/new.txt\n", "the agent's own index is untouched")
    local patch = assert(worktree.diff(d, s.worktree, { stat = false, paths = { "sub/new.txt" } }))
    t.match(patch.diff, "%+new")
    t.ok(not patch.diff:find("changed", 1, true), "paths filter the diff")
    local small = assert(worktree.diff(d, s.worktree, { stat = false, max_bytes = 50 }))
    t.eq(#small.diff, 50)
    t.eq(small.truncated, true)
    t.eq(out("cat " .. r .. "/sub/b.txt"), "B\n", "the main tree is untouched")
    sh(t, string.format("cd %s && git add -A && git -c user.email=t@e -c user.name=t commit -qm work", cwd))
    t.eq(worktree.changes(s.worktree).commits, 1)
    local gone = assert(worktree.remove(s.worktree, false))
    t.eq(gone.branch_kept, true, "a branch with commits stays")
    t.match(gone.merge, "git %-C .* merge rx%-test/rx%-one")
    t.eq(uv.fs_stat(s.worktree.path), nil)
    t.match(out("git -C " .. r .. " branch --list 'rx-test/*'"), "rx%-test/rx%-one")
    -- one without commits: its branch goes with it
    local s2 = { id = "rx-two" }
    assert(isolate.make(d, s2, uv.fs_realpath(r)))
    t.eq(assert(worktree.remove(s2.worktree, false)).branch_kept, false)
    t.eq(out("git -C " .. r .. " branch --list 'rx-test/rx-two'"), "")
  end)
end)

test("refusals and stated choices: not a repository, no commit, an existing branch, detached HEAD, dirty tree", function(t)
  local r, d, root = repo(t)
  with_root(t, root, function()
    local plain = root .. "/plain"
    uv.fs_mkdir(plain, tonumber("755", 8))
    local none, err = isolate.make(d, { id = "rx-a" }, plain)
    t.eq(none, nil)
    t.match(err.message, "is not inside a git repository")
    sh(t, "mkdir -p " .. root .. "/empty && git -C " .. root .. "/empty init -q")
    none, err = isolate.make(d, { id = "rx-b" }, root .. "/empty")
    t.match(err.message, "has no commit yet")
    sh(t, "git -C " .. r .. " branch rx-test/rx-c")
    local s = { id = "rx-c" }
    none, err = isolate.make(d, s, uv.fs_realpath(r))
    t.match(err.message, "branch rx%-test/rx%-c already exists")
    t.eq(s.worktree, nil, "nothing recorded")
    sh(t, "cd " .. r .. " && printf 'dirty\\n' >> a.txt && mkdir -p untracked/dir")
    local dirty = { id = "rx-d" }
    local warnings = isolate.make(d, dirty, uv.fs_realpath(r .. "/untracked/dir"))
    local cwd = dirty.cwd
    t.ok(warnings, "made")
    t.match(table.concat(warnings, "\n"), "1 uncommitted change%(s%) in .* stay there")
    t.match(table.concat(warnings, "\n"), "untracked/dir is not in commit .*: made empty")
    t.ok(uv.fs_stat(cwd), "the cwd exists in the worktree")
    sh(t, "git -C " .. r .. " checkout -q --detach")
    local detached = { id = "rx-e" }
    warnings = isolate.make(d, detached, uv.fs_realpath(r))
    t.ok(warnings)
    t.match(table.concat(warnings, "\n"), "HEAD of .* is detached: the worktree starts at its commit")
    for _, x in ipairs({ dirty, detached }) do assert(worktree.remove(x.worktree, false)) end
  end)
end)

test("a worktree a dead daemon left half-made is removed at the next start, lock and branch included", function(t)
  local r, d, root = repo(t)
  with_root(t, root, function()
    local s = { id = "rx-crash", status = "starting" }
    assert(isolate.make(d, s, uv.fs_realpath(r)))
    s.worktree.state = "creating" -- as saved before git ran, when the daemon died
    d.sessions[s.id] = s
    sh(t, "printf 'initializing\\n' > " .. r .. "/.git/worktrees/rx-crash/locked")
    isolate.recover(d)
    t.eq(s.status, "exited")
    t.eq(s.exit_reason, "worktree_interrupted")
    local f = assert(io.open(d.paths.sessions .. "/rx-crash.json"))
    local saved = json.decode(f:read("a"))
    f:close()
    t.eq({ saved.status, saved.exit_reason, saved.worktree.state }, { "exited", "worktree_interrupted", "removed" }, "saved")
    t.eq(uv.fs_stat(s.worktree.path), nil)
    t.eq(out("git -C " .. r .. " worktree list --porcelain"):match("worktree (%S+)"), uv.fs_realpath(r))
    t.eq(select(2, out("git -C " .. r .. " worktree list"):gsub("\n", "")), 1, "only the main tree")
    t.eq(out("git -C " .. r .. " branch --list 'rx-test/*'"), "", "its branch is gone")
    t.eq(uv.fs_stat(r .. "/.git/worktrees/rx-crash"), nil, "no lock left")
  end)
end)

-- Runs fn(item) for every item at once, each in its own task, and waits until all are done.
local function all_at_once(t, items, fn, what)
  local async = require "rmcp.lib.async"
  t.await(function(done)
    local left = #items
    for _, item in ipairs(items) do
      async.run(function()
        fn(item)
        left = left - 1
        if left == 0 then done() end
      end)
    end
  end, 60000, what)
end

test("worktrees of one repository made and removed all at once: each add and removal has the repository to itself", function(t)
  local r, d, root = repo(t)
  -- half the spawns start in a linked worktree of the same repository: they share its .git
  local linked = root .. "/linked"
  sh(t, string.format("git -C %s worktree add -q -b side %s", r, linked))
  with_root(t, root, function()
    local made, errors = {}, {}
    all_at_once(t, { 1, 2, 3, 4, 5, 6, 7, 8 }, function(i)
      local s = { id = "rx-many-" .. i }
      local ok, err = isolate.make(d, s, uv.fs_realpath(i % 2 == 0 and linked or r))
      if ok then made[#made + 1] = s.worktree else errors[#errors + 1] = tostring(err and err.message) end
    end, "the creations")
    t.eq(errors, {}, "every add succeeded (git reads .git/worktrees/* during an add)")
    t.eq(#made, 8)
    all_at_once(t, made, function(wt)
      local res, err = worktree.remove(wt, true)
      if not res then errors[#errors + 1] = tostring(err) end
    end, "the removals")
    t.eq(errors, {}, "every removal succeeded")
    t.eq(out("git -C " .. r .. " worktree list | wc -l"):match("%d+"), "2", "only the main tree and the linked one are left")
  end)
end)

test("a long queue of turns that end at once is worked through from the loop, never nested", function(t)
  local async = require "rmcp.lib.async"
  local key, release, order = t.tmpdir("rmcp-wt-turns"), nil, {}
  t.await(function(done)
    local left = 301
    local function finished()
      left = left - 1
      if left == 0 then done() end
    end
    async.run(function() -- holds the turn until released
      worktree.take_turns(key, function() async.await(function(resume) release = resume end) end)
      finished()
    end)
    for i = 1, 300 do -- queue behind it; each ends at once, like a git that fails to start
      async.run(function()
        worktree.take_turns(key, function() order[#order + 1] = i end)
        finished()
      end)
    end
    release()
  end, 30000, "the holder and the 300 queued calls")
  t.eq(#order, 300, "every queued call had its turn")
  t.eq(order[1], 1)
  t.eq(order[300], 300, "in order")
  local again = false
  t.await(function(done)
    async.run(function()
      worktree.take_turns(key, function() again = true end)
      done()
    end)
  end, 5000, "a later call")
  t.ok(again, "the key is free again")
end)
