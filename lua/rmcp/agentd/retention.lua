-- Retention of finished sessions, so a daemon that runs for months keeps bounded memory and disk.
-- The rule: of each orchestrator's finished sessions (exited or orphaned) whose result was
-- delivered, the newest retain_max are kept, and none last updated more than retain_days ago; a
-- policy's retain hook may keep or release any of them. A live session, or a finished one whose
-- result no watch or poll collected yet, is never pruned unless the caller forces it. Pruning
-- removes the session's record, its journal (the transcript) and its place in memory. Runs at
-- daemon start, then hourly; `ctl prune` (the prune method) runs it for one orchestrator on demand.
-- A session whose git worktree (isolate=worktree) still exists is never pruned: its work may be
-- unmerged; prune names those (kept_worktrees) so the orchestrator removes them when it is done.
local uv = require "luv"
local log = require "rmcp.lib.log"
local config = require "rmcp.config"
local hooks = require "rmcp.policy.hooks"
local session = require "rmcp.agentd.session"
local store = require "rmcp.agentd.store"

local M = {}

M.INTERVAL_MS = 3600 * 1000

-- The rule from the configuration: {days, keep, force = false}.
function M.rule()
  return { days = config.limit("retain_days"), keep = math.floor(config.limit("retain_max")), force = false }
end

-- True when s still has its worktree (agentd/worktree.lua).
function M.has_worktree(s)
  return type(s.worktree) == "table" and s.worktree.state == "ready"
end

-- True when s may be pruned at all: finished, its result collected and its file readable (or
-- force: an unreadable one waits for a person to look).
local function prunable(s, force)
  if session.is_live(s) or M.has_worktree(s) then return false end
  return force or not (s.terminal_pending or s.unreadable)
end

-- The sessions of d that rule {days, keep, force} prunes (of orchestrator owner, or of every one
-- when owner is nil), oldest first.
function M.select(d, owner, rule)
  local by_owner = {}
  for _, s in pairs(d.sessions) do
    if (owner == nil or s.owner == owner) and prunable(s, rule.force) then
      local list = by_owner[s.owner] or {}
      by_owner[s.owner] = list
      list[#list + 1] = s
    end
  end
  local cutoff = store.now() - rule.days * 86400
  local out = {}
  for _, list in pairs(by_owner) do
    table.sort(list, function(a, b)
      if (a.updated_at or 0) ~= (b.updated_at or 0) then return (a.updated_at or 0) > (b.updated_at or 0) end
      return a.id > b.id
    end)
    for i, s in ipairs(list) do
      local keep = i <= rule.keep and (s.updated_at or 0) >= cutoff
      if not hooks.retain(s, keep) then out[#out + 1] = s end
    end
  end
  table.sort(out, function(a, b) return (a.updated_at or 0) < (b.updated_at or 0) end)
  return out
end

-- Prunes what rule selects (see select); dry_run only reports. Returns the pruned ids.
function M.prune(d, owner, rule, dry_run)
  local ids = {}
  for _, s in ipairs(M.select(d, owner, rule)) do
    ids[#ids + 1] = s.id
    if not dry_run then session.forget(d, s) end
  end
  if #ids > 0 and not dry_run then
    log.info("retention: pruned %d session(s)%s (keep %d, %g days%s)", #ids, owner and (" of " .. owner) or "",
      rule.keep, rule.days, rule.force and ", forced" or "")
  end
  return ids
end

-- Prunes by the configured rule now, then every hour (the timer does not keep the loop alive).
function M.start(d)
  M.prune(d, nil, M.rule())
  local timer = uv.new_timer()
  timer:unref()
  timer:start(M.INTERVAL_MS, M.INTERVAL_MS, function() M.prune(d, nil, M.rule()) end)
  d.retention_timer = timer
end

-- Stops the hourly prune (shutdown).
function M.stop(d)
  if d.retention_timer and not d.retention_timer:is_closing() then d.retention_timer:close() end
  d.retention_timer = nil
end

return M
