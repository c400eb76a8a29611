-- The conflict forecast of worktree sessions (issue 36): for each session's branch, whether it merges
-- cleanly into a target branch as it is now (and which files conflict), how far ahead and behind it
-- is; for each pair of branches, which files and hunks collide. Computed with `git merge-tree
-- --write-tree` (objects only: no checkout, index or ref is touched) from the repository's top,
-- through agentd/worktree.lua's git with its safe options; the parsing and the best order are
-- rules/integrate.lua's. Committed work only: what an agent has not committed is not in its branch.
local uv = require "luv"
local json = require "rmcp.lib.json"
local async = require "rmcp.lib.async"
local worktree = require "rmcp.agentd.worktree"
local rules = require "rmcp.rules.integrate"

local M = {}

-- git calls in flight at once (merge-tree is a short CPU-bound process: a few per core).
M.parallel = 4

-- A branch or target name git may take as an argument.
local function safe_name(name)
  return type(name) == "string" and name ~= "" and name:sub(1, 1) ~= "-" and not name:find("[%z\n]")
end

-- The repository and default target of sessions (each with a worktree): {repo, head}, or nil and why.
local function fleet_of(sessions)
  local repo, head, heads_differ = nil, nil, false
  for i, s in ipairs(sessions) do
    local wt = s.worktree
    if type(wt) ~= "table" then return nil, "session " .. s.id .. " has no worktree (spawn it with isolate=\"worktree\")" end
    if wt.state == "creating" then return nil, "session " .. s.id .. "'s worktree is still being made" end
    if i == 1 then repo, head = wt.repo, wt.head
    elseif wt.repo ~= repo then
      return nil, string.format("sessions %s and %s work in different repositories (%s, %s)", sessions[1].id, s.id, repo, wt.repo)
    elseif wt.head ~= head then heads_differ = true
    end
  end
  return { repo = repo, head = not heads_differ and head or nil, heads_differ = heads_differ }
end

-- The commit of target in repo, once every branch is there too (one git call each way); or nil and
-- why (naming what is missing).
local function resolve(repo, target, branches)
  local commit = worktree.git(repo, { "rev-parse", "--verify", "--quiet", target .. "^{commit}" })
  if not commit then return nil, "target " .. target .. " is not a branch or commit of " .. repo end
  local args = { "for-each-ref", "--format=%(objectname) %(refname)" }
  for _, b in ipairs(branches) do args[#args + 1] = "refs/heads/" .. b end
  local out, err = worktree.git(repo, args)
  if not out then return nil, err end
  local tips = {}
  for sha, ref in out:gmatch("(%x+) refs/heads/([^\n]+)") do tips[ref] = sha end
  for _, b in ipairs(branches) do
    if not tips[b] then return nil, "branch " .. b .. " is gone from " .. repo end
  end
  return commit
end

-- One merge-tree of ours and theirs in repo, parsed (rules.parse_merge_tree); raises on a failure.
local function merge_tree(repo, ours, theirs)
  local r, err = worktree.git_result(repo, { "merge-tree", "--write-tree", "--name-only", "--messages", "-z", ours, theirs },
    60000)
  if not r then error(err, 0) end
  local m, perr = rules.parse_merge_tree(r.stdout, r.code)
  if not m then error(perr .. ((r.stderr or "") ~= "" and (": " .. r.stderr:gsub("%s+$", "")) or ""), 0) end
  return m
end

-- The colliding hunks of merge m's conflicted text files (git grep of its markers in its tree).
local function hunks_of(repo, m)
  local args = { "grep", "-z", "-n", "-I", "--no-color", "-E", rules.MARKERS, m.tree, "--" }
  for _, f in ipairs(m.files) do args[#args + 1] = ":(literal)" .. f end
  local r = worktree.git_result(repo, args, 60000)
  if not r or (r.code ~= 0 and r.code ~= 1) then return nil end
  local hunks = rules.hunks(r.stdout)
  return #hunks > 0 and hunks or nil
end

-- A branch's entry: merge-tree against the target's commit (which git's notes then name as target)
-- and ahead/behind.
local function against_target(repo, target, target_commit, s)
  local b = s.worktree.branch
  local m = merge_tree(repo, target_commit, b)
  local counts, err = worktree.git(repo, { "rev-list", "--left-right", "--count", target_commit .. "..." .. b })
  if not counts then error(err, 0) end
  local behind, ahead = counts:match("^(%d+)%s+(%d+)")
  local e = { session_id = s.id, branch = b, ahead = tonumber(ahead), behind = tonumber(behind), clean = m.clean }
  if not m.clean then
    e.conflicts = m.files
    e.notes = rules.conflict_notes(m)
    for i, note in ipairs(e.notes or {}) do e.notes[i] = note:gsub(target_commit, (target:gsub("%%", "%%%%"))) end
  end
  return e
end

-- A pair's entry when its branches collide: {a, b, files, hunks?, notes?}; nil when they merge cleanly.
local function pair(repo, sa, sb)
  local m = merge_tree(repo, sa.worktree.branch, sb.worktree.branch)
  if m.clean then return nil end
  return { a = sa.id, b = sb.id, files = m.files, hunks = hunks_of(repo, m), notes = rules.conflict_notes(m) }
end

-- The forecast of sessions (Session tables with their worktrees, in the caller's order) into target
-- (a branch; default the branch the sessions' repository was on at their spawn, when they agree):
-- {target, target_commit, branches, pairs (only colliding ones), order (rules.best_order), ms}, or
-- nil, why and "GIT" when git itself failed (else what was asked cannot be forecast). Coroutine.
function M.run(sessions, target)
  local t0 = uv.hrtime()
  local fleet, ferr = fleet_of(sessions)
  if not fleet then return nil, ferr end
  if target == nil or target == json.null then
    if fleet.heads_differ then return nil, "the sessions started from different branches: name the target" end
    target = fleet.head
    if not target then return nil, "the repository's HEAD was detached at spawn: name the target" end
  end
  if not safe_name(target) then return nil, "target must be a branch name" end
  local branches = {}
  for i, s in ipairs(sessions) do branches[i] = s.worktree.branch end
  local target_commit, rerr = resolve(fleet.repo, target, branches)
  if not target_commit then return nil, rerr end
  local jobs = {}
  for _, s in ipairs(sessions) do jobs[#jobs + 1] = { s } end
  for i = 1, #sessions do
    for j = i + 1, #sessions do jobs[#jobs + 1] = { sessions[i], sessions[j] } end
  end
  local ok, results = pcall(async.map, jobs, M.parallel, function(job)
    if job[2] then return pair(fleet.repo, job[1], job[2]) or false end
    return against_target(fleet.repo, target, target_commit, job[1])
  end)
  if not ok then return nil, "git merge-tree failed: " .. tostring(results), "GIT" end
  local out = { target = target, target_commit = target_commit, branches = json.array(), pairs = json.array() }
  for i = 1, #sessions do out.branches[i] = results[i] end
  for k = #sessions + 1, #jobs do
    if results[k] then out.pairs[#out.pairs + 1] = results[k] end
  end
  local weights = {}
  for i, b in ipairs(out.branches) do weights[i] = { id = b.session_id, clean = b.clean, conflicts = b.conflicts } end
  out.order = json.array(rules.best_order(weights, out.pairs))
  out.ms = math.floor((uv.hrtime() - t0) / 1e6 + 0.5)
  return out
end

return M
