-- The conflict forecast (issue 36) on real repositories the test makes: four worktree branches, two
-- touching disjoint files and two changing the same lines differently — the forecast names exactly
-- that pair, file and hunk, both others clean, the best order; nothing checked out or staged is
-- touched; a branch behind the target; modify/delete and rename/rename conflicts; the options an
-- integration takes; and one forecast through agentd for agents that committed in their worktrees.
-- The unit part calls agentd/integrate/forecast.lua and rules/integrate.lua with fake sessions.
-- needs: agent python3 git
local uv = require "luv"
local json = require "rmcp.lib.json"
local forecast = require "rmcp.agentd.integrate.forecast"
local rules = require "rmcp.rules.integrate"

local sh, out = require("shell").sh, require("shell").out

local COMMIT = "git -c user.email=t@e -c user.name=t commit -qm"

-- A repository on main with a.txt, b.txt, shared.txt (20 numbered lines) and gone.txt; returns
-- its path and a maker of worktree sessions: branch(name, script) runs script in a new worktree
-- on branch fc/<name>, commits what it did and returns the fake session.
local function fleet_repo(t)
  local root = uv.fs_realpath(t.tmpdir("rmcp-fc"))
  local r = root .. "/repo"
  sh(t, string.format("mkdir -p %s && cd %s && git init -q -b main && printf 'A\\n' > a.txt && printf 'B\\n' > b.txt && "
    .. "seq 1 20 > shared.txt && printf 'keep\\n' > gone.txt && git add -A && %s base", r, r, COMMIT))
  local base = out("git -C " .. r .. " rev-parse HEAD"):gsub("%s+$", "")
  local function branch(name, script)
    local path = root .. "/wt-" .. name
    sh(t, string.format("git -C %s worktree add -q -b fc/%s %s %s", r, name, path, base))
    sh(t, string.format("cd %s && %s && git add -A && %s %q", path, script, COMMIT, "work of " .. name))
    return { id = "rx-" .. name, worktree = { path = path, branch = "fc/" .. name, base = base, repo = r, rel = "",
                                               head = "main", state = "ready" } }
  end
  return r, branch, root
end

-- What must not change under a forecast: every checkout's status, index mtime and HEAD, and the refs.
local function untouched(r, sessions)
  local parts = { out("git -C " .. r .. " for-each-ref --format='%(refname) %(objectname)'") }
  local dirs = { r }
  for _, s in ipairs(sessions) do dirs[#dirs + 1] = s.worktree.path end
  for _, dir in ipairs(dirs) do
    local git_dir = out("git -C " .. dir .. " rev-parse --absolute-git-dir"):gsub("%s+$", "")
    local st = uv.fs_stat(git_dir .. "/index")
    parts[#parts + 1] = table.concat({ dir, out("git --no-optional-locks -C " .. dir .. " status --porcelain"),
      st and (st.mtime.sec .. "." .. st.mtime.nsec) or "no index", out("cat " .. git_dir .. "/HEAD") }, "|")
  end
  return table.concat(parts, "\n")
end

test("four branches: the colliding pair, its file and hunk named; the others clean; the best order; nothing touched", function(t)
  local r, branch = fleet_repo(t)
  local a = branch("a", "printf 'A2\\n' > a.txt")
  local b = branch("b", "printf 'B2\\n' > b.txt")
  local c = branch("c", "sed -i 's/^5$/five by c/; s/^6$/six by c/' shared.txt")
  local d = branch("d", "sed -i 's/^5$/five by d/' shared.txt")
  local sessions = { d, a, c, b }
  local before = untouched(r, sessions)
  local f = assert(forecast.run(sessions))
  t.eq(untouched(r, sessions), before, "no checkout, index, HEAD or ref changed")
  t.eq(f.target, "main", "the branch the sessions started from")
  t.eq(f.target_commit, out("git -C " .. r .. " rev-parse main"):gsub("%s+$", ""))
  t.eq(#f.branches, 4)
  for i, s in ipairs(sessions) do
    local e = f.branches[i]
    t.eq({ e.session_id, e.branch, e.ahead, e.behind, e.clean, e.conflicts }, { s.id, s.worktree.branch, 1, 0, true, nil }, s.id)
  end
  t.eq(#f.pairs, 1, "exactly one pair collides: " .. json.encode(f.pairs))
  local p = f.pairs[1]
  t.eq({ p.a, p.b, p.files }, { "rx-d", "rx-c", { "shared.txt" } })
  t.eq(p.hunks, { { file = "shared.txt", a = { 5, 2 }, b = { 5, 2 } } }, "the region both changes cover: lines 5-6 of each")
  t.eq(p.notes, nil, "a content conflict needs no note")
  t.eq(f.order, { "rx-a", "rx-b", "rx-d", "rx-c" }, "clean and uncontested first, ties in the given order")
  t.ok(type(f.ms) == "number")
  t.eq(out("git -C " .. r .. " worktree list | wc -l"):match("%d+"), "5", "no worktree made or left")
end)

test("a branch behind the target, one conflicting with it (modify/delete), a rename/rename pair", function(t)
  local r, branch = fleet_repo(t)
  local stale = branch("stale", "printf 'A3\\n' > a.txt")
  local edit = branch("edit", "printf 'edited\\n' >> gone.txt")
  local ren1 = branch("ren1", "git mv gone.txt one.txt")
  local ren2 = branch("ren2", "git mv gone.txt two.txt")
  sh(t, string.format("cd %s && printf 'main moved\\n' > b.txt && %s 'main moves' -a && %s 'and again' --allow-empty", r, COMMIT, COMMIT))
  local before = untouched(r, { stale, edit, ren1, ren2 })
  local f = assert(forecast.run({ stale, edit, ren1, ren2 }, "main"))
  t.eq(untouched(r, { stale, edit, ren1, ren2 }), before, "nothing touched")
  t.eq({ f.branches[1].ahead, f.branches[1].behind, f.branches[1].clean }, { 1, 2, true }, "behind by main's two commits")
  local by = {}
  for _, p in ipairs(f.pairs) do by[p.a .. "+" .. p.b] = p end
  t.eq(by["rx-edit+rx-ren1"], nil, "an edit of a renamed file merges (rename detection)")
  local rr = assert(by["rx-ren1+rx-ren2"], "the two renames collide: " .. json.encode(f.pairs))
  t.eq(rr.files, { "gone.txt", "one.txt", "two.txt" })
  t.match(rr.notes[1], "CONFLICT %(rename/rename%): gone.txt renamed to one.txt in fc/ren1 and to two.txt in fc/ren2")
  t.eq(rr.hunks, nil, "no text hunks")
  -- main deletes gone.txt: the edit conflicts with the target now, the stale branch still does not
  sh(t, string.format("cd %s && git rm -q gone.txt && %s 'drop gone'", r, COMMIT))
  f = assert(forecast.run({ stale, edit }))
  t.eq(f.branches[1].clean, true)
  t.eq(f.branches[2].clean, false)
  t.eq(f.branches[2].conflicts, { "gone.txt" })
  t.match(f.branches[2].notes[1], "^CONFLICT %(modify/delete%): gone.txt deleted in main and modified in fc/edit")
  t.eq(f.pairs, {})
  t.eq(f.order, { "rx-stale", "rx-edit" }, "clean against the target first")
end)

test("the target: named when the sessions started on different branches; refused when unknown; a gone branch named", function(t)
  local r, branch = fleet_repo(t)
  local a = branch("a", "printf 'A2\\n' > a.txt")
  local b = branch("b", "printf 'B2\\n' > b.txt")
  b.worktree.head = "dev"
  local none, err = forecast.run({ a, b })
  t.eq(none, nil)
  t.match(err, "different branches: name the target")
  t.ok(forecast.run({ a, b }, "main"), "named, it runs")
  none, err = forecast.run({ a }, "nope")
  t.match(err, "target nope is not a branch or commit")
  none, err = forecast.run({ a }, "--all")
  t.match(err, "target must be a branch name")
  sh(t, string.format("git -C %s worktree remove --force %s && git -C %s branch -D fc/b", r, b.worktree.path, r))
  none, err = forecast.run({ a, b }, "main")
  t.match(err, "branch fc/b is gone")
  none, err = forecast.run({ a, { id = "rx-plain" } })
  t.match(err, "rx%-plain has no worktree")
end)

test("merge-tree output, hunks of a conflicted tree (diff3 too), the best order", function(t)
  local m = assert(rules.parse_merge_tree(("a"):rep(40) .. "\0f.txt\0g.txt\0f.txt\0\0"
    .. "1\0f.txt\0Auto-merging\0Auto-merging f.txt\n\0" .. "1\0g.txt\0CONFLICT (modify/delete)\0CONFLICT (modify/delete): g.txt gone\n\0", 1))
  t.eq({ m.clean, m.tree, m.files }, { false, ("a"):rep(40), { "f.txt", "g.txt" } })
  t.eq(#m.messages, 2)
  t.eq(m.messages[2].paths, { "g.txt" })
  t.eq(rules.conflict_notes(m), { "CONFLICT (modify/delete): g.txt gone" })
  local clean = assert(rules.parse_merge_tree(("b"):rep(40) .. "\0\0", 0))
  t.eq({ clean.clean, #clean.files, #clean.messages }, { true, 0, 0 })
  t.eq(select(2, rules.parse_merge_tree("", 128)), "git merge-tree exited 128")
  t.match(select(2, rules.parse_merge_tree("fatal\n", 1)), "printed no tree")
  local T = ("c"):rep(40)
  local function rec(path, n, text) return T .. ":" .. path .. "\0" .. n .. "\0" .. text .. "\n" end
  -- x.txt: two conflicts; the first's ours has 2 lines, theirs 1; y.txt in diff3 style; z.txt broken
  local grep = rec("x.txt", 3, "<<<<<<< fc/a") .. rec("x.txt", 6, "=======") .. rec("x.txt", 8, ">>>>>>> fc/b")
    .. rec("x.txt", 10, "=======") -- a line of the file itself, outside a conflict
    .. rec("x.txt", 12, "<<<<<<< fc/a") .. rec("x.txt", 13, "=======") .. rec("x.txt", 15, ">>>>>>> fc/b")
    .. rec("y.txt", 1, "<<<<<<< fc/a") .. rec("y.txt", 3, "||||||| base") .. rec("y.txt", 5, "=======")
    .. rec("y.txt", 6, ">>>>>>> fc/b")
    .. rec("z.txt", 1, "=======") .. rec("z.txt", 2, ">>>>>>> x")
  t.eq(rules.hunks(grep), {
    { file = "x.txt", a = { 3, 2 }, b = { 3, 1 } },
    -- before it: 2 common lines, the first conflict (a: 2 lines, b: 1), 3 common: a's line 8, b's 7
    { file = "x.txt", a = { 8, 0 }, b = { 7, 1 } },
    { file = "y.txt", a = { 1, 1 }, b = { 1, 0 } },
  })
  t.eq(rules.best_order({ { id = "p", clean = false, conflicts = { "f" } }, { id = "q", clean = true }, { id = "r", clean = true },
    { id = "s", clean = true } }, { { a = "q", b = "r", files = { "f", "g" } }, { a = "s", b = "q", files = { "f" } } }),
    { "s", "r", "q", "p" }, "clean first, then the fewest colliding files")
end)

test("the integrate options: defaults filled, each wrong field named", function(t)
  t.eq(rules.check_options(nil), { order = "forecast", update = "rebase", merge = "merge", push = false, remote = "origin",
                                   on_conflict = "continue" })
  t.eq(rules.check_options(json.null).remote, "origin")
  local all = { order = "given", update = "merge", merge = "squash", verify = "make test", push = "both", remote = "up",
                on_conflict = "wait" }
  t.eq(rules.check_options(all), all)
  t.eq(rules.check_options({ merge = "ff", verify = json.null }).merge, "ff")
  local cases = {
    { { merge = "octopus" }, 'with.merge must be one of "merge", "squash", "ff" %(default "merge"%), got "octopus"' },
    { { push = true }, "with.push must be one of false, \"target\"" },
    { { order = 1 }, "with.order must be one of" },
    { { verify = "" }, "with.verify must be a non%-empty string" },
    { { remote = "--upload-pack=x" }, "with.remote must name a remote" },
    { { onconflict = "wait" }, "with.onconflict is not an option" },
    { { "rebase" }, "with must be an object" },
    { "rebase", "with must be an object" },
  }
  for _, c in ipairs(cases) do
    local none, err = rules.check_options(c[1])
    t.eq(none, nil, json.encode(c[1]))
    t.match(err, c[2])
  end
end)

test("the tool: forecast and integrate take session_ids and target (integrate also with); each forwards to its method", function(t)
  local tool = require "rmcp.tools.worktree"
  local sent = {}
  local ctx = { agentd = function(method, params) sent[#sent + 1] = { method, params }; return {} end }
  t.ok(tool.handler({ action = "forecast", session_ids = { "rx-a", "rx-b" }, target = "main" }, ctx))
  t.ok(tool.handler({ action = "integrate", session_ids = { "rx-a" }, with = { merge = "squash" } }, ctx))
  t.eq(sent, { { "worktree_forecast", { session_ids = { "rx-a", "rx-b" }, target = "main" } },
               { "worktree_integrate", { session_ids = { "rx-a" }, with = { merge = "squash" } } } })
  t.eq(select(2, tool.handler({ action = "forecast", session_id = "rx-a" }, ctx)), "session_id does not go with action forecast")
  t.eq(select(2, tool.handler({ action = "forecast" }, ctx)), "action forecast needs session_ids")
  t.eq(select(2, tool.handler({ action = "diff", session_ids = { "rx-a" } }, ctx)), "session_ids does not go with action diff")
  local words = require("rmcp.ctl.args").parse(tool, { "forecast", "rx-a", "rx-b", "--target", "dev" }, {})
  t.eq(words, { action = "forecast", session_ids = { "rx-a", "rx-b" }, target = "dev" }, "ctl worktree forecast ID ID")
  words = require("rmcp.ctl.args").parse(tool, { "integrate", "rx-a", "--with", '{"push":"target"}' }, {})
  t.eq(words.with, { push = "target" }, "with given as JSON")
end)

test("through agentd: three agents commit in their worktrees; the forecast names the colliding pair; owners only", function(t)
  local support = require "agentd_support"
  -- each agent's task names what its bash call does: it writes and commits in its own worktree
  local function job(tag, script)
    return { last_role = "user", user_contains = "FC-" .. tag .. " ", tool_calls = { { name = "bash", arguments = {
      command = script .. " && git add -A && git -c user.email=a@e -c user.name=agent commit -qm 'work " .. tag .. "' && echo committed" } } } }
  end
  local ctx = support.setup(t, { scenario = { rules = {
    job("A", "printf 'A2\\n' > a.txt"),
    job("C", "sed -i 's/^3$/three by C/' shared.txt"),
    job("D", "sed -i 's/^3$/three by D/' shared.txt"),
    { last_tool_name = "bash", text = "done" },
  }, default = { text = "ok" } } })
  sh(t, string.format("cd %s && git init -q -b main && printf 'A\\n' > a.txt && seq 1 10 > shared.txt && git add -A && %s base",
    ctx.ws, COMMIT))
  local c = ctx.client()
  local ids = {}
  for _, tag in ipairs({ "A", "C", "D" }) do
    ids[#ids + 1] = ctx.call(c, "spawn", { task = "FC-" .. tag .. " work", isolate = "worktree", keep_alive = true }).session_id
  end
  local left = { [ids[1]] = true, [ids[2]] = true, [ids[3]] = true }
  for _ = 1, 30 do
    if not next(left) then break end
    local list = {}
    for id in pairs(left) do list[#list + 1] = id end
    for id, res in pairs(ctx.call(c, "watch", { session_ids = list }).results or {}) do
      if res.status ~= "running" and res.status ~= "starting" then
        t.match(res.message or "", "done", id .. "'s turn ran its commit")
        left[id] = nil
      end
    end
  end
  t.eq(next(left), nil, "every turn ended")
  local before = out("git --no-optional-locks -C " .. ctx.ws .. " status --porcelain") .. out("git -C " .. ctx.ws .. " rev-parse HEAD")
  local f = ctx.call(c, "worktree_forecast", { session_ids = ids })
  t.eq(out("git --no-optional-locks -C " .. ctx.ws .. " status --porcelain") .. out("git -C " .. ctx.ws .. " rev-parse HEAD"), before,
    "the user's checkout is untouched")
  t.eq(f.target, "main")
  for i, b in ipairs(f.branches) do
    t.eq({ b.session_id, b.ahead, b.behind, b.clean }, { ids[i], 1, 0, true }, ids[i])
  end
  t.eq(#f.pairs, 1, json.encode(f.pairs))
  t.eq({ f.pairs[1].a, f.pairs[1].b, f.pairs[1].files }, { ids[2], ids[3], { "shared.txt" } })
  t.eq(f.pairs[1].hunks, { { file = "shared.txt", a = { 3, 1 }, b = { 3, 1 } } })
  t.eq(f.order, ids)
  local rows = {}
  for _, row in ipairs(ctx.call(c, "list", { detail = true }).sessions) do rows[row.session_id] = row end
  t.eq({ rows[ids[3]].forecast.clean, rows[ids[3]].forecast.ahead, rows[ids[3]].forecast.collides_with },
    { true, 1, { ids[2] } }, "each row keeps its last forecast")
  t.eq(rows[ids[1]].forecast.collides_with, nil)
  local err = ctx.call_err(ctx.client("orch-b"), "worktree_forecast", { session_ids = ids })
  t.eq(err.code, -32001, "another orchestrator's sessions look unknown")
  local plain = ctx.call(c, "spawn", { task = "hello" }).session_id
  err = ctx.call_err(c, "worktree_forecast", { session_ids = { ids[1], plain } })
  t.ok(err.message:find(plain .. " has no worktree", 1, true), err.message)
  err = ctx.call_err(c, "worktree_forecast", { session_ids = ids, target = "nope" })
  t.match(err.message, "target nope is not a branch")
  for _, id in ipairs(ids) do ctx.call(c, "stop", { session_id = id }) end
end)
