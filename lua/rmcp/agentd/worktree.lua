-- A git worktree per agent (spawn option isolate = "worktree"): the daemon makes a worktree of the
-- repository that holds the spawn's cwd, on a new branch named after the session, under a managed
-- directory outside the user's tree, and the agent runs there at the same relative path. What the
-- agent changed is read back against the commit it started from (the changes summary, the diff),
-- and the worktree goes only when asked, its branch kept when it has commits. Git is called as a
-- process (Debian's git). This module is git's side only: the worktree's record is the session's
-- (agentd/session/isolate.lua keeps it), and one saved as "creating" is a half-made worktree of a
-- daemon that died, removed at the next start.
local uv = require "luv"
local log = require "rmcp.lib.log"
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local command = require "rmcp.lib.command"
local async = require "rmcp.lib.async"
local fault = require "rmcp.lib.fault"
local config = require "rmcp.config"
local store = require "rmcp.agentd.store"

local M = {}

M.ISOLATE_FAILED = -32020

-- The branch prefix (REASONIX_MCP_WORKTREE_BRANCH_PREFIX, default "reasonix/").
function M.branch_prefix()
  return config.env("REASONIX_MCP_WORKTREE_BRANCH_PREFIX") or "reasonix/"
end

-- The managed directory worktrees go under (REASONIX_MCP_WORKTREE_DIR, default
-- $REASONIX_MCP_HOME/worktrees).
function M.root()
  return config.env("REASONIX_MCP_WORKTREE_DIR") or (config.home() .. "/worktrees")
end

-- The options of every git call agentd makes in a tree an agent wrote: no hook, no fsmonitor, no
-- descent into submodules (whose `.git` the agent may have pointed anywhere), no optional locks;
-- so nothing the agent left there runs as you.
M.SAFE = { "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "diff.ignoreSubmodules=all",
           "-c", "submodule.recurse=false", "--no-optional-locks" }

-- Runs git with M.SAFE and args in dir (coroutine) to its end, whatever its exit code (merge-tree
-- says "conflicts" with 1): returns command.run's result {code, stdout, stderr, …}, or nil and why
-- it did not run or end. env: its whole environment (default ours).
function M.git_result(dir, args, timeout_ms, env)
  local argv = { table.unpack(M.SAFE) }
  argv[#argv + 1], argv[#argv + 2] = "-C", dir
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  local r, err = command.run("git", argv, { timeout_ms = timeout_ms or 30000, env = env })
  if not r then return nil, "cannot run git: " .. tostring(err) end
  if r.timed_out then return nil, "git " .. args[1] .. " timed out" end
  return r
end

-- Runs git with M.SAFE and args in dir (coroutine; env as git_result's); returns stdout without its
-- last newline, or nil and the reason (git's own words).
local function git(dir, args, timeout_ms, env)
  local r, err = M.git_result(dir, args, timeout_ms, env)
  if not r then return nil, err end
  if r.code ~= 0 then
    local why = (r.stderr or ""):gsub("%s+$", "")
    return nil, why ~= "" and why or ("git " .. args[1] .. " exited " .. tostring(r.code))
  end
  return (r.stdout:gsub("\n$", ""))
end
M.git = git

-- The repositories whose worktrees a call here is adding or removing: the repository's common git
-- dir -> the resumes of the calls waiting their turn, in order. This module's one piece of state.
local busy = {}

-- The key of repository top's turns: its common git dir (what every worktree of it shares, so a
-- checkout and a linked worktree of one repository take turns too), else top. Coroutine.
local function repository_of(top)
  local common = git(top, { "rev-parse", "--path-format=absolute", "--git-common-dir" })
  return common and (uv.fs_realpath(common) or common) or top
end

-- Runs fn() (coroutine) once every earlier call for key has had its turn, and returns what fn
-- returns; an error in fn is raised again after the next call got its turn. The next call starts
-- from the loop, not from inside this one, so a long queue of calls that end at once (git failing
-- to start) is worked through without nesting.
function M.take_turns(key, fn)
  local waiting = busy[key]
  if waiting then
    async.await(function(resume) waiting[#waiting + 1] = resume end)
  else
    busy[key] = {}
  end
  local results = table.pack(pcall(fn))
  local next_turn = table.remove(busy[key], 1)
  if next_turn then
    local timer = uv.new_timer()
    timer:start(0, 0, function()
      timer:close()
      next_turn()
    end)
  else
    busy[key] = nil
  end
  if not results[1] then error(results[2], 0) end
  return table.unpack(results, 2, results.n)
end

-- Runs fn() (coroutine) while no other call here adds or removes a worktree of the repository at
-- top: a `git worktree add` reads every entry under .git/worktrees, and one that a concurrent add
-- has made but not filled yet fails it ("failed to read .git/worktrees/<name>/commondir").
function M.exclusive(top, fn)
  return M.take_turns(repository_of(top), fn)
end

-- A refusal of the isolate option, as the spawn's error: nil and the error.
local function refuse(fmt, ...)
  return nil, jsonrpc.error(M.ISOLATE_FAILED, "isolate=worktree: " .. string.format(fmt, ...))
end
M.refuse = refuse

-- The worktree session id, spawned in cwd (realpath, confined already), is to get: its record
-- {state = "creating", path, branch, base, repo, rel, head} and the warnings about where it starts,
-- or nil and the refusal (the spawn's error). Nothing is made yet: the session saves the record
-- first, so a daemon that dies while git runs leaves a record the next start cleans up. Coroutine.
function M.plan(id, cwd)
  local top, terr = git(cwd, { "rev-parse", "--show-toplevel" })
  if not top then return refuse("%s is not inside a git repository (%s)", cwd, terr) end
  top = uv.fs_realpath(top) or top
  local rel = cwd == top and "" or cwd:sub(#top + 2)
  local base = git(top, { "rev-parse", "--verify", "--quiet", "HEAD^{commit}" })
  if not base then return refuse("the repository %s has no commit yet to start from", top) end
  local warnings = json.array()
  local head = git(top, { "symbolic-ref", "--quiet", "--short", "HEAD" })
  if not head then
    warnings[#warnings + 1] = string.format("HEAD of %s is detached: the worktree starts at its commit %s", top, base:sub(1, 12))
  end
  local dirty = git(top, { "status", "--porcelain", "--untracked-files=no" }) or ""
  if dirty ~= "" then
    local n = select(2, dirty:gsub("\n", "")) + 1
    warnings[#warnings + 1] = string.format("%d uncommitted change(s) in %s stay there: the worktree starts at HEAD %s",
      n, top, base:sub(1, 12))
  end
  local branch = M.branch_prefix() .. id
  if git(top, { "show-ref", "--verify", "--quiet", "refs/heads/" .. branch }) then
    return refuse("branch %s already exists in %s; it is never reused", branch, top)
  end
  local dir = string.format("%s/%s/%s", M.root(), require("rmcp.lib.hash").fnv1a64(top):sub(1, 12), id)
  require("rmcp.sock").secure_dir(M.root())
  uv.fs_mkdir(dir:match("^(.*)/[^/]+$"), tonumber("700", 8))
  return { state = "creating", path = dir, branch = branch, base = base, repo = top, rel = rel, head = head }, warnings
end

-- Makes worktree wt (from plan, its record saved) and returns the agent's cwd inside it, what to
-- warn about appended to warnings; or nil and the refusal, nothing left behind. Coroutine.
function M.add(wt, warnings)
  local _, aerr = M.exclusive(wt.repo, function()
    return git(wt.repo, { "worktree", "add", "--quiet", "-b", wt.branch, wt.path, wt.base }, 120000)
  end)
  if aerr then
    M.discard(wt)
    return refuse("git worktree add failed: %s", aerr)
  end
  fault.point("worktree_mid_create")
  local agent_cwd = wt.rel == "" and wt.path or (wt.path .. "/" .. wt.rel)
  if not uv.fs_stat(agent_cwd) then
    -- cwd is not in the commit (an untracked or ignored directory): made empty, and said so
    command.run("mkdir", { "-p", "--", agent_cwd })
    warnings[#warnings + 1] = string.format("%s is not in commit %s: made empty in the worktree", wt.rel, wt.base:sub(1, 12))
  end
  return agent_cwd
end

-- Removes a worktree (however far it got) and its branch when that has no commit of its own; used
-- for a failed or interrupted creation. Coroutine.
function M.discard(wt)
  M.exclusive(wt.repo, function()
    git(wt.repo, { "worktree", "remove", "--force", "--force", wt.path })
    command.run("rm", { "-rf", "--", wt.path }, { timeout_ms = 120000 }) -- a child: agentd's loop goes on
    git(wt.repo, { "worktree", "prune" })
  end)
  local tip = git(wt.repo, { "rev-parse", "--verify", "--quiet", "refs/heads/" .. wt.branch })
  if tip and tip == wt.base then git(wt.repo, { "branch", "-D", wt.branch }) end
end

-- The changes summary of worktree wt: {files, insertions, deletions, commits, untracked}, nil when
-- it changed nothing (or is gone): git diff --shortstat against the base, the commits since it,
-- the untracked files. Coroutine.
function M.changes(wt)
  if type(wt) ~= "table" or wt.state ~= "ready" then return nil end
  local script = 'cd "$1" && shift 2 && git "$@" diff --shortstat "$B"; echo "|"; git "$@" rev-list --count "$B"..HEAD; '
    .. 'echo "|"; git "$@" ls-files --others --exclude-standard | wc -l'
  local r = command.run("sh", { "-c", 'B="$2"; ' .. script, "changes", wt.path, wt.base, table.unpack(M.SAFE) },
    { timeout_ms = 10000 })
  if not r or r.code ~= 0 then return nil end
  local stat, commits, untracked = r.stdout:match("^(.-)|%s*(%d*)%s*|%s*(%d+)")
  local c = {
    files = tonumber((stat or ""):match("(%d+) files? changed") or "0"),
    insertions = tonumber((stat or ""):match("(%d+) insertion") or "0"),
    deletions = tonumber((stat or ""):match("(%d+) deletion") or "0"),
    commits = tonumber(commits or "") or 0,
    untracked = tonumber(untracked or "") or 0,
  }
  if c.files == 0 and c.commits == 0 and c.untracked == 0 then return nil end
  return c
end

-- The diff of worktree wt against its base, untracked files included (staged in a private index, so
-- the agent's own index is untouched): {stat | diff, truncated, commits[], base, branch, path}.
-- o: stat (default true), paths (limit to these), max_bytes. Coroutine.
function M.diff(d, wt, o)
  local index = string.format("%s/tmp-index-%d-%s", d.paths.home, uv.os_getpid(), store.random_hex(4))
  local env = {}
  for k, v in pairs(uv.os_environ()) do env[#env + 1] = k .. "=" .. v end
  env[#env + 1] = "GIT_INDEX_FILE=" .. index
  local function g(args)
    local argv = { table.unpack(M.SAFE) }
    argv[#argv + 1], argv[#argv + 2] = "-C", wt.path
    for _, a in ipairs(args) do argv[#argv + 1] = a end
    return command.run("git", argv, { env = env, timeout_ms = 60000 })
  end
  local paths = { "--" }
  for _, p in ipairs(o.paths or {}) do paths[#paths + 1] = p end
  local steps = { { "read-tree", "HEAD" }, { "add", "-A", table.unpack(paths) } }
  for _, a in ipairs(steps) do
    local r = g(a)
    if not r or r.code ~= 0 then os.remove(index); return nil, "git " .. a[1] .. " failed: " .. tostring(r and r.stderr) end
  end
  local args = { "diff", "--cached", "--no-color", o.stat == false and "--patch" or "--stat", wt.base, table.unpack(paths) }
  local r = g(args)
  os.remove(index)
  if not r or r.code ~= 0 then return nil, "git diff failed: " .. tostring(r and r.stderr) end
  local max = o.max_bytes or 40000
  local text = r.stdout
  local out = { base = wt.base, branch = wt.branch, worktree = wt.path, truncated = #text > max or nil }
  if #text > max then text = text:sub(1, max) end
  if o.stat == false then out.diff = text else out.stat = text end
  local log_args = { table.unpack(M.SAFE) }
  for _, a in ipairs({ "-C", wt.path, "log", "--format=%H %s", wt.base .. "..HEAD" }) do log_args[#log_args + 1] = a end
  local log_r = command.run("git", log_args, { timeout_ms = 30000 })
  out.commits = json.array()
  for line in ((log_r and log_r.stdout) or ""):gmatch("[^\n]+") do
    local sha, subject = line:match("^(%x+) (.*)$")
    if sha then out.commits[#out.commits + 1] = { sha = sha, subject = subject } end
  end
  return out
end

-- Removes worktree wt of a session that is not live; its branch is kept when it has commits unless
-- delete_branch. Returns {removed, branch, branch_kept, commits, merge?, patch?} (the session then
-- records it removed), or nil and why. Coroutine.
function M.remove(wt, delete_branch)
  local count = tonumber(git(wt.repo, { "rev-list", "--count", wt.base .. ".." .. wt.branch }) or "0") or 0
  local _, rerr = M.exclusive(wt.repo, function()
    local _, err = git(wt.repo, { "worktree", "remove", "--force", wt.path })
    if err and uv.fs_stat(wt.path) then return nil, err end
    git(wt.repo, { "worktree", "prune" })
    return true
  end)
  if rerr then return nil, "git worktree remove failed: " .. rerr end
  local kept = count > 0 and not delete_branch
  if not kept then git(wt.repo, { "branch", "-D", wt.branch }) end
  local out = { removed = wt.path, branch = wt.branch, branch_kept = kept, commits = count }
  if kept then
    out.merge = string.format("git -C %s merge %s", wt.repo, wt.branch)
    out.patch = string.format("git -C %s diff %s %s", wt.repo, wt.base, wt.branch)
  end
  return out
end

return M
