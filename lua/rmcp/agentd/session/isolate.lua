-- A session's git worktree (spawn option isolate = "worktree"), the session's side of it: the record
-- s.worktree {state, path, branch, base, repo, rel, head} is saved as "creating" before git makes it,
-- "ready" once the agent can run there, "removed" when it went. Git itself is agentd/worktree.lua
-- (loaded only when a session has a worktree to make or end).
local log = require "rmcp.lib.log"
local state = require "rmcp.agentd.session.state"
local revision = require "rmcp.agentd.session.revision"

local M = {}

-- Makes the worktree of spawning session s whose cwd is cwd (realpath, confined already) and moves
-- the session's cwd into it: the record is saved first, so a daemon that dies while git runs leaves
-- one the next start cleans up. Returns the warnings about where it starts, or nil and the refusal
-- (the spawn's error; nothing left behind). Coroutine.
function M.make(d, s, cwd)
  local worktree = require "rmcp.agentd.worktree"
  local wt, warnings = worktree.plan(s.id, cwd)
  if not wt then return nil, warnings end
  s.worktree = wt
  local saved, serr = state.save_first(d, s)
  if not saved then
    s.worktree = nil
    return worktree.refuse("cannot save the session first: %s", tostring(serr))
  end
  local agent_cwd, aerr = worktree.add(wt, warnings)
  if not agent_cwd then
    s.worktree = nil
    return nil, aerr
  end
  s.worktree.state = "ready"
  log.info("session %s: worktree %s on branch %s from %s", s.id, wt.path, wt.branch, wt.base:sub(1, 12))
  revision.set(s, "cwd", agent_cwd)
  state.save_first(d, s)
  return warnings
end

-- Records that the worktree of s (not live) was removed (agentd/worktree.lua remove), and saves it.
function M.removed(d, s)
  s.worktree.state = "removed"
  state.persist(d, s)
end

-- At start: ends the sessions whose worktree a dead daemon left half-made ("creating"). They are
-- marked exited before the first git call (so no caller sees them as resumable), then each worktree,
-- its lock and its branch go. Coroutine.
function M.recover(d)
  local half = {}
  for _, s in pairs(d.sessions) do
    local wt = s.worktree
    if type(wt) == "table" and wt.state == "creating" then
      log.warn("session %s: its worktree %s was being made when agentd stopped; removing it", s.id, tostring(wt.path))
      half[#half + 1] = wt
      s.worktree.state = "removed"
      revision.set(s, "status", "exited")
      revision.set(s, "exit_reason", "worktree_interrupted")
      s.error_text = "agentd stopped while making this session's worktree; it was removed (spawn again)"
      state.persist(d, s)
    end
  end
  if #half == 0 then return end
  local worktree = require "rmcp.agentd.worktree"
  for _, wt in ipairs(half) do worktree.discard(wt) end
end

return M
