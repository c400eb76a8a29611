-- The merge queue: takes worktree sessions' branches into a target branch, one after another, on real
-- git (integrate/steps.lua). Each branch: brought up to date with the target in its agent's
-- worktree (rebase or merge), the verify command run there, the merged commit made and the target
-- moved to it (merge commit, squash or fast-forward), pushed when asked. A branch that conflicts goes
-- back to the agent that made it, as a new turn in its worktree with the conflict left there; when
-- that turn ends its integration goes on by itself (on_conflict "continue") or waits for the
-- orchestrator ("wait"). Each step marks the session (its watch wakes with it).
-- A queue is saved at each step (<home>/integrations/<id>.json, written whole and renamed): a
-- daemon that dies mid-way finds the target before or after each merge, never half (the target
-- moves by one compare-and-swap, or one fast-forward git finishes on its own), and goes on at its
-- next start. Owns d.integrations {by_id}; loads with the first integrate call or a saved queue.
local uv = require "luv"
local json = require "rmcp.lib.json"
local log = require "rmcp.lib.log"
local files = require "rmcp.lib.files"
local async = require "rmcp.lib.async"
local store = require "rmcp.agentd.store"
local session = require "rmcp.agentd.session"
local steps = require "rmcp.agentd.integrate.steps"

local M = {}

-- The states of a branch in a queue; done ones are never taken up again.
local DONE = { merged = true, failed = true, skipped = true }

-- d's queues, loaded from disk the first time.
local function queues(d)
  if not d.integrations then d.integrations = { by_id = {} } end
  return d.integrations
end

-- Saves queue q whole (a rename: never half written).
local function save(d, q)
  files.mkdir_p(d.paths.integrations, tonumber("700", 8))
  local ok, err = files.write_atomic(d.paths.integrations .. "/" .. q.id .. ".json", json.encode(q), true)
  if not ok then log.warn("integration %s: not saved: %s", q.id, tostring(err)) end
end

-- Sets item's state (and note, files, commit) and tells its session.
local function mark(d, q, item, state, extra)
  item.state, item.note, item.files, item.pushed = state, nil, nil, nil
  for k, v in pairs(extra or {}) do item[k] = v end
  save(d, q)
  local s = d.sessions[item.session_id]
  if s then
    session.mark_integration(d, s, { id = q.id, state = state, target = q.target, note = item.note, files = item.files,
                                     commit = item.commit })
  end
  log.info("integration %s: %s %s%s", q.id, item.session_id, state, item.note and (": " .. item.note) or "")
end

-- The message that hands conflict files of item back to its agent: what conflicts, the intent on
-- the other side, what to do.
local function conflict_message(d, q, item, conflict_files)
  local others = {}
  for _, o in ipairs(q.items) do
    local os_ = d.sessions[o.session_id]
    if o ~= item and o.state == "merged" and os_ then others[#others + 1] = "- " .. o.branch .. ": " .. (os_.task or ""):sub(1, 300) end
  end
  return table.concat({
    "Integration: merging " .. q.target .. " into your branch " .. item.branch .. " conflicts in: "
      .. table.concat(conflict_files, ", ") .. ".",
    "The merge is in progress in your worktree (conflict markers in those files).",
    #others > 0 and ("Already taken into " .. q.target .. ", with these tasks:\n" .. table.concat(others, "\n")) or "",
    "Resolve each conflict keeping both intents, " .. (q.with.verify and ("run `" .. q.with.verify .. "`, ") or "")
      .. "then `git add` the files and `git commit` (no other branch, no reset, no push).",
  }, "\n")
end

-- Hands item's conflict back to its agent: the merge left in its worktree, a new turn asking to
-- resolve it (its session resumed when it has no live agent). Returns true, or nil and why.
local function hand_back(d, q, item, s, onto)
  local conflict_files, err = steps.leave_conflict(s.worktree, onto, q.target)
  if not conflict_files then return nil, err end
  local text = conflict_message(d, q, item, conflict_files)
  -- the queue goes on when the turn this message starts has ended ("pending" until it is sent: a
  -- resume's own idle is not that turn's end)
  item.waiting_turn = "pending"
  local function send()
    session.send(d, s, text, nil, function(_, serr)
      if serr then
        item.waiting_turn = nil
        mark(d, q, item, "failed", { note = "the conflict could not be handed back: " .. tostring(serr.message) })
        return M.run(d, q)
      end
      item.waiting_turn = q.with.on_conflict == "continue" or nil
      if item.waiting_turn and (not session.is_live(s) or s.status == "idle") then
        item.waiting_turn = nil -- (the turn is over already)
        M.run(d, q)
      end
    end)
  end
  mark(d, q, item, "conflict", { files = json.array(conflict_files), note = "handed back to its agent" })
  if session.is_live(s) then
    send()
  else
    session.resume(d, s, {}, nil, function(_, rerr)
      if rerr then
        item.waiting_turn = nil
        mark(d, q, item, "failed", { note = "the conflict could not be handed back: " .. tostring(rerr.message) })
        return M.run(d, q)
      end
      send()
    end)
  end
  return true
end

-- Takes item into the target once its branch holds it: verify, merged commit, target moved
-- (journaled before and after the move), pushed. Returns true when merged, or nil and the state
-- ("failed") with why. Coroutine.
local function take_in(d, q, item, s, target_tip)
  local wt = s.worktree
  if q.with.verify then
    mark(d, q, item, "verifying")
    -- (it runs the agent's code: in the agent's sandbox when it has one, never outside it)
    local argv, why = session.command_in(d, s, { "sh", "-c", q.with.verify })
    if not argv then return nil, "verify not run: its sandbox cannot be had: " .. why end
    local ok, out = steps.verify(wt.rel == "" and wt.path or (wt.path .. "/" .. wt.rel), argv)
    if not ok then return nil, "verify failed: " .. out end
  end
  local tip = steps.tip(wt.path, "HEAD")
  local message = string.format("Merge %s (%s)\n\n%s", item.branch, s.id, (s.task or ""):sub(1, 2000))
  local new, err = steps.merged_commit(q.repo, target_tip, tip, q.with.merge, message)
  if not new then return nil, err end
  q.moving = { session_id = item.session_id, old = target_tip, new = new }
  mark(d, q, item, "merging")
  local moved, merr = steps.move_target(q.repo, q.target, target_tip, new, steps.checkout_of(q.repo, q.target))
  q.moving = nil
  if not moved then return nil, merr end
  local pushed, note
  if q.with.push == "target" or q.with.push == "both" then
    local perr
    pushed, perr = steps.push(q.repo, q.with.remote, "refs/heads/" .. q.target .. ":refs/heads/" .. q.target)
    if not pushed then note = "merged; the push of " .. q.target .. " to " .. q.with.remote .. " failed: " .. perr end
  end
  mark(d, q, item, "merged", { commit = new, pushed = pushed, note = note })
  return true
end

-- Works item (a branch not done): up to date with the target, or its conflict handed back (the
-- queue then waits for that agent's turn); else taken in. Returns "next" or "wait". Coroutine.
local function work(d, q, item)
  local s = d.sessions[item.session_id]
  if not s or type(s.worktree) ~= "table" or s.worktree.state ~= "ready" then
    mark(d, q, item, "skipped", { note = "its session or worktree is gone" })
    return "next"
  end
  if session.is_live(s) and s.status ~= "idle" then
    item.waiting_turn = true
    mark(d, q, item, item.state == "conflict" and "conflict" or "queued", { note = "waits for its agent's turn to end",
      files = item.files })
    return "wait"
  end
  local target_tip = steps.tip(q.repo, "refs/heads/" .. q.target)
  if item.state == "conflict" then
    local why = steps.unresolved(s.worktree, target_tip, item.files)
    if why then
      mark(d, q, item, "failed", { note = "its agent's turn ended with the conflict unresolved: " .. why })
      return "next"
    end
  else
    mark(d, q, item, "updating")
    local how, conflict_files = steps.update(s.worktree, target_tip, q.with.update)
    if how == "conflict" then
      local ok, herr = hand_back(d, q, item, s, target_tip)
      if not ok then mark(d, q, item, "failed", { note = herr }) return "next" end
      return q.with.on_conflict == "continue" and "wait" or "next"
    elseif not how then
      mark(d, q, item, "failed", { note = conflict_files })
      return "next"
    end
    session.branch_moved(d, s, steps.tip(s.worktree.path, "HEAD")) -- (a sandboxed agent's own copy follows)
    if q.with.push == "branches" or q.with.push == "both" then -- (a rebased branch: over its old self, with a lease)
      local ok, perr = steps.push(q.repo, q.with.remote, "refs/heads/" .. item.branch .. ":refs/heads/" .. item.branch,
        q.with.update == "rebase")
      if not ok then log.warn("integration %s: push of %s failed: %s", q.id, item.branch, perr) end
    end
  end
  local ok, err = take_in(d, q, item, s, target_tip)
  if not ok then mark(d, q, item, "failed", { note = err }) end
  return "next"
end

-- Runs queue q from its first branch not done, until all are done or one waits on its agent.
function M.run(d, q)
  if q.running then return end
  q.running = true
  async.run(function()
    for _, item in ipairs(q.items) do
      if not DONE[item.state] and not (item.state == "conflict" and q.with.on_conflict == "wait") then
        if work(d, q, item) == "wait" then q.running = nil return end
      end
    end
    q.status = "done"
    q.running = nil
    save(d, q)
    log.info("integration %s: done", q.id)
  end, function(e)
    q.running = nil
    log.error("integration %s failed: %s", q.id, tostring(e))
  end)
end

-- A session changed: a queue waiting on its agent's turn goes on once that turn has ended.
function M.session_changed(d, s)
  local st = d.integrations
  if not st or type(s.integration) ~= "table" then return end
  local q = st.by_id[s.integration.id]
  if not q or q.running or q.status == "done" then return end
  if s.status == "running" or s.status == "starting" or s.status == "awaiting_decision" then return end
  for _, item in ipairs(q.items) do
    if item.session_id == s.id and item.waiting_turn == true then
      item.waiting_turn = nil
      return M.run(d, q)
    end
  end
end

-- Starts a queue of owner taking sessions (in order) into target of repo with options with (rules/
-- integrate.lua's); returns it.
function M.start(d, owner, repo, target, sessions, with)
  local q = { id = "ig-" .. store.random_hex(4), owner = owner, repo = repo, target = target, with = with,
              created_at = store.now(), status = "running", items = json.array() }
  for _, s in ipairs(sessions) do
    q.items[#q.items + 1] = { session_id = s.id, branch = s.worktree.branch, state = "queued" }
  end
  queues(d).by_id[q.id] = q
  save(d, q)
  for _, item in ipairs(q.items) do mark(d, q, item, "queued") end
  M.run(d, q)
  return q
end

-- Takes up the queues a daemon left running: a move the daemon died in is settled by where the
-- target is (before: the branch is worked again; after: it is merged), the branches' worktrees
-- tidied (a rebase or merge cut short, a stale index lock), then each queue goes on. At start.
function M.recover(d)
  local h = uv.fs_scandir(d.paths.integrations)
  if not h then return end
  while true do
    local name = uv.fs_scandir_next(h)
    if not name then break end
    local ok, q = pcall(json.decode, files.read(d.paths.integrations .. "/" .. name) or "")
    if ok and type(q) == "table" and q.status == "running" and type(q.items) == "table" then
      queues(d).by_id[q.id] = q
      async.run(function() M.take_up(d, q) end, function(e) log.error("integration %s: %s", q.id, tostring(e)) end)
    end
  end
end

-- Settles queue q after a daemon death and goes on with it (see recover). Coroutine.
function M.take_up(d, q)
  q.running = nil
  for _, item in ipairs(q.items) do
    local s = d.sessions[item.session_id]
    if q.moving and q.moving.session_id == item.session_id then
      local checkout = steps.checkout_of(q.repo, q.target)
      if checkout then steps.wait_unlocked(checkout) end
      local now = steps.tip(q.repo, "refs/heads/" .. q.target)
      if now == q.moving.new then
        item.state, item.commit = "merged", q.moving.new
      else
        item.state = "queued"
      end
      q.moving = nil
    elseif (item.state == "updating" or item.state == "verifying" or item.state == "merging") and s and s.worktree then
      steps.tidy(s.worktree.path, steps.gitdir(s.worktree.path))
      item.state = "queued"
    end
  end
  save(d, q)
  log.info("integration %s: taken up after a restart", q.id)
  M.run(d, q)
end

return M
