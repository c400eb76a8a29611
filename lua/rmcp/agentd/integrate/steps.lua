-- The git steps of taking one agent's branch into a target branch, each on real git (Debian's, as a
-- process, with worktree.SAFE: nothing an agent planted runs): bring the branch up to date in the
-- agent's own worktree, leave a conflict there for the agent to resolve, see that it did, run the
-- verify command, make the merged commit without touching any checkout, move the target (a clean
-- checkout of it brought along, as `git merge` there would), push. Stateless: the queue
-- (integrate/queue.lua) keeps what was done.
local uv = require "luv"
local command = require "rmcp.lib.command"
local worktree = require "rmcp.agentd.worktree"

local M = {}

-- The environment a commit made here needs when git has no identity configured (the daemon may run
-- where user.email is unset): reasonix-mcp as author and committer; nil when git has one.
local function identity_env(dir)
  if worktree.git(dir, { "config", "user.email" }) then return nil end
  local env = {}
  for k, v in pairs(uv.os_environ()) do env[#env + 1] = k .. "=" .. v end
  for _, k in ipairs({ "GIT_AUTHOR", "GIT_COMMITTER" }) do
    env[#env + 1] = k .. "_NAME=reasonix-mcp"
    env[#env + 1] = k .. "_EMAIL=reasonix-mcp@localhost"
  end
  return env
end

-- Runs git (worktree.git: SAFE) with args in dir; commit-making commands get an identity when git
-- has none. Returns stdout (no last newline), or nil and why. Coroutine.
local function git(dir, args, timeout_ms)
  local makes = { rebase = true, merge = true, ["commit-tree"] = true, commit = true }
  return worktree.git(dir, args, timeout_ms, makes[args[1]] and identity_env(dir) or nil)
end

-- The commit ref names (nil: none).
function M.tip(repo, ref)
  return git(repo, { "rev-parse", "--verify", "--quiet", ref .. "^{commit}" })
end

-- True when commit a is an ancestor of (or is) commit b.
function M.contains(repo, b, a)
  return git(repo, { "merge-base", "--is-ancestor", a, b }) ~= nil
end

-- The checkout (a worktree's path, the main one included) that has branch target checked out, or nil.
function M.checkout_of(repo, target)
  local out = git(repo, { "worktree", "list", "--porcelain" }) or ""
  local path
  for line in (out .. "\n"):gmatch("([^\n]*)\n") do
    local p = line:match("^worktree (.+)$")
    if p then path = p end
    if line == "branch refs/heads/" .. target then return path end
  end
  return nil
end

-- What is uncommitted in checkout path (tracked files), "" when clean; or nil and why.
function M.dirt(path)
  return git(path, { "status", "--porcelain", "--untracked-files=no" })
end

-- The unmerged files of the tree at path.
local function unmerged(path)
  local out = git(path, { "diff", "--name-only", "--diff-filter=U" }) or ""
  local files = {}
  for f in out:gmatch("[^\n]+") do files[#files + 1] = f end
  return files
end

-- Takes back a rebase or merge left half-done in the tree at path (by a conflict, or a daemon that
-- died while git ran: its index.lock is stale then, no git of ours runs there any more).
function M.tidy(path, gitdir)
  if gitdir then os.remove(gitdir .. "/index.lock") end
  if git(path, { "rev-parse", "--verify", "--quiet", "REBASE_HEAD" }) or (gitdir and uv.fs_stat(gitdir .. "/rebase-merge")) then
    git(path, { "rebase", "--abort" })
  end
  if git(path, { "rev-parse", "--verify", "--quiet", "MERGE_HEAD" }) then git(path, { "merge", "--abort" }) end
end

-- The git dir of the worktree at path.
function M.gitdir(path)
  return git(path, { "rev-parse", "--absolute-git-dir" })
end

-- Brings the branch checked out at wt.path up to date with commit onto: "rebase" (its commits
-- replayed on top) or "merge" (onto merged in). Returns "ok", or "conflict" and the files (the tree
-- left as it was), or nil and why.
function M.update(wt, onto, how)
  if M.contains(wt.path, "HEAD", onto) then return "ok" end
  local args = how == "merge" and { "merge", "--no-edit", "--no-ff", onto } or { "rebase", "--no-autostash", onto }
  local _, err = git(wt.path, args, 300000)
  if not err then return "ok" end
  local files = unmerged(wt.path)
  M.tidy(wt.path)
  if #files == 0 then return nil, "git " .. args[1] .. " failed: " .. err end
  return "conflict", files
end

-- Starts merging commit onto (the target, named target) into the branch at wt.path and leaves the
-- conflict there for the agent: returns the conflicted files, or nil and why.
function M.leave_conflict(wt, onto, target)
  local _, err = git(wt.path, { "merge", "--no-ff", "-m", "Merge " .. target .. " into " .. wt.branch, onto }, 300000)
  local files = unmerged(wt.path)
  if #files == 0 then
    M.tidy(wt.path)
    return nil, err and ("git merge failed: " .. err) or "the merge went through: no conflict to hand back"
  end
  return files
end

-- Why the branch at wt.path does not yet hold commit onto with nothing left unresolved (conflict
-- markers committed in files, the files that conflicted, count), or nil.
function M.unresolved(wt, onto, files)
  if git(wt.path, { "rev-parse", "--verify", "--quiet", "MERGE_HEAD" }) then
    local files = unmerged(wt.path)
    return #files > 0 and ("still unmerged: " .. table.concat(files, ", ")) or "the merge is not committed yet"
  end
  local dirt = M.dirt(wt.path)
  if dirt and dirt ~= "" then return "uncommitted changes are left in the worktree" end
  if not M.contains(wt.path, "HEAD", onto) then return "the branch does not contain the target yet" end
  if files and #files > 0 then
    local args = { "grep", "-l", "-E", "^(<<<<<<<|>>>>>>>)( |$)", "HEAD", "--" }
    for _, f in ipairs(files) do args[#args + 1] = f end
    local marked = git(wt.path, args)
    if marked and marked ~= "" then return "conflict markers were committed in " .. marked:gsub("HEAD:", ""):gsub("\n", ", ") end
  end
  return nil
end

-- Runs the verify command argv (`sh -c LINE`, in the agent's sandbox when it has one) in dir;
-- returns true, or false and the tail of its output. Coroutine.
function M.verify(dir, argv, timeout_ms)
  local r, err = command.run(argv[1], { table.unpack(argv, 2) }, { cwd = dir, timeout_ms = timeout_ms or 600000 })
  if not r then return false, "cannot run the verify command: " .. tostring(err) end
  local out = ((r.stdout or "") .. (r.stderr or "")):sub(-2000)
  if r.timed_out then return false, "timed out\n" .. out end
  return r.code == 0, out
end

-- The commit the target becomes when branch tip (holding target) is taken in by how: "ff" (the tip
-- itself), "merge" (a merge commit of both) or "squash" (one commit on the target). Made with
-- merge-tree and commit-tree: no checkout or index is touched. Returns its id, or nil and why.
function M.merged_commit(repo, target_tip, tip, how, message)
  if how == "ff" then
    if not M.contains(repo, tip, target_tip) then return nil, "not a fast-forward" end
    return tip
  end
  local out, err = git(repo, { "merge-tree", "--write-tree", target_tip, tip }, 300000)
  if not out then return nil, "git merge-tree: " .. err end
  local tree = out:match("^(%x+)")
  local args = { "commit-tree", tree, "-p", target_tip }
  if how ~= "squash" then args[#args + 1], args[#args + 2] = "-p", tip end
  args[#args + 1], args[#args + 2] = "-m", message
  return git(repo, args)
end

-- Moves branch target from commit old to commit new: in checkout (the tree that has it checked
-- out: a fast-forward there, so its files follow; refused when it has local changes) or, checked
-- out nowhere, as a ref (compare-and-swap). The git that moves a checkout runs detached: a daemon
-- that dies meanwhile never leaves it half done. Returns true, or nil and why.
function M.move_target(repo, target, old, new, checkout)
  if not checkout then
    local _, err = git(repo, { "update-ref", "refs/heads/" .. target, new, old })
    if err then return nil, err end
    return true
  end
  local dirt = M.dirt(checkout)
  if dirt ~= "" then return nil, checkout .. " has local changes; commit or stash them first (never forced)" end
  if M.tip(checkout, "HEAD") ~= old then return nil, "the target moved meanwhile" end
  local argv = { table.unpack(worktree.SAFE) }
  for _, a in ipairs({ "-C", checkout, "merge", "--ff-only", "--quiet", new }) do argv[#argv + 1] = a end
  -- (sh waits for git, which is not our child: a daemon killed meanwhile leaves it to finish)
  local r = command.run("sh", { "-c", 'git "$@" & wait $!', "move", table.unpack(argv) }, { timeout_ms = 300000 })
  if not r or r.code ~= 0 then return nil, "git merge --ff-only: " .. tostring(r and r.stderr) end
  return true
end

-- Waits (at most 30 s) until the checkout at path has no index.lock: a fast-forward a dead daemon
-- started finishes on its own. Coroutine.
function M.wait_unlocked(path)
  local gitdir = M.gitdir(path)
  if not gitdir then return end
  local co = coroutine.running()
  for _ = 1, 300 do
    if not uv.fs_stat(gitdir .. "/index.lock") then return end
    local timer = uv.new_timer()
    timer:start(100, 0, function() timer:close() coroutine.resume(co) end)
    coroutine.yield()
  end
end

-- Pushes refspec to remote from repo (force-with-lease for a branch that was rebased); true, or nil
-- and why.
function M.push(repo, remote, refspec, lease)
  local args = { "push", "--quiet" }
  if lease then args[#args + 1] = "--force-with-lease" end
  args[#args + 1], args[#args + 2] = remote, refspec
  local _, err = git(repo, args, 300000)
  if err then return nil, err end
  return true
end

return M
