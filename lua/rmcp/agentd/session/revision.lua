-- The one writer of what a list reads of a session (rules/list.lua: a plain row, the counts by
-- status and the spend, whether a view shows it; tally.lua: parked or not): every such write bumps
-- the session's revision (s.list_rev) and the daemon-wide list generation, so a list reuses a row's
-- encoded text while its session's revision is the same, and its owner's whole tally (and the pages
-- of settled sessions kept with it) while the generation is (tally.lua).
-- tests/lua/list_revision_spec.lua holds every file to it: a field of M.LISTED, or anything in one
-- (s.usage.total, s.integration.state, table.insert(s.pending, …)), or a field named at run time
-- (s[key]), is written here alone. Each write also makes the answers agentd keeps in C stale
-- (answers.lua). This module is never hot-reloaded (rmcp/reloadable.lua): its generation only
-- grows.
local answers = require "rmcp.agentd.answers"

local M = {}

-- The Session fields a list reads (but the detail view's, never kept): only M.set writes them.
M.LISTED = {
  id = true, owner = true, status = true, cwd = true, task = true, transcript_path = true, stop_reason = true,
  exit_reason = true, model = true, created_at = true, updated_at = true, keep_alive = true, terminal_pending = true,
  damaged = true, unreadable = true, usage = true, agent = true, integration = true, pending = true, parked = true,
}

local generation = 0

-- Sets field of session s to value (any field: a key named at run time may be a listed one) and
-- bumps s's revision and the list generation.
function M.set(s, field, value)
  s[field] = value
  generation = generation + 1
  s.list_rev = generation
  answers.changed()
end

-- Sets key of the table in s's field (s.usage.unreported) to value, and bumps as M.set does.
function M.set_in(s, field, key, value)
  s[field][key] = value
  M.set(s, field, s[field])
end

-- Adds decision dec to s's pending decisions.
function M.add_pending(s, dec)
  local pending = s.pending
  pending[#pending + 1] = dec
  M.set(s, "pending", pending)
end

-- Takes the pending decision at index out of s's.
function M.remove_pending(s, index)
  table.remove(s.pending, index)
  M.set(s, "pending", s.pending)
end

-- The list generation: it changes whenever anything a list reads of any session changes.
function M.generation()
  return generation
end

return M
