-- List shaping: one compact row per session and counts by status.
local json = require "rmcp.lib.json"
local caps = require "rmcp.rules.caps"

local M = {}

M.task_preview = 120

-- Shortens a task to one line of at most n bytes (cut on a UTF-8 boundary) for previews. Only its
-- head is looked at, so a list costs the same however long the tasks are.
local function preview(task, n)
  task = task or ""
  local line = task:sub(1, 4 * n):gsub("%s+", " ")
  if #line <= n and #task <= 4 * n then return line end
  return caps.head(line, n) .. "…"
end

-- Builds the row for session s; opts.include_task gives the full prompt, opts.detail adds config,
-- the plan and what the agent is doing now (opts.current_work(s), for a live session).
function M.row(s, opts)
  local pending
  for _, d in ipairs(s.pending or {}) do pending = pending or d end
  local r = {
    session_id = s.id,
    status = s.status,
    cwd = s.cwd,
    task = opts.include_task and s.task or preview(s.task, M.task_preview),
    transcript_path = s.transcript_path,
    stop_reason = s.stop_reason,
    exit_reason = (s.status == "exited" or s.status == "orphaned") and s.exit_reason or nil,
    model = s.model,
    created_at = s.created_at,
    updated_at = s.updated_at,
    keep_alive = s.keep_alive or nil,
    terminal_pending = s.terminal_pending or nil,
    damaged = s.damaged, -- its file had fields of the wrong type, reset at load (which, and why)
  }
  if pending then
    r.pending_decision = { request_id = pending.request_id, kind = pending.kind, title = pending.tool_call and pending.tool_call.title }
  end
  if opts.detail then
    r.effort, r.tool_approval, r.work_mode = s.effort, s.tool_approval, s.work_mode
    r.error_text = s.error_text
    r.idle_timeout = s.idle_timeout
    r.agent_pid = s.rt and s.rt.agent and s.rt.agent:pid() or nil
    if s.plan and #s.plan > 0 then r.plan = s.plan end
    if M.active[s.status] and s.rt and opts.current_work then r.current_work = opts.current_work(s) end
  end
  return r
end

-- Statuses of an agent at work (pending_only keeps them).
M.active = { starting = true, running = true, awaiting_decision = true }

-- True when s needs the orchestrator's attention (list pending_only): active, blocked on a
-- decision, or holding a terminal state no watch has collected yet.
function M.pending(s)
  return M.active[s.status] == true or (s.pending ~= nil and #s.pending > 0) or s.terminal_pending == true
end

-- Builds the list result from sessions (already filtered to the caller's), newest first.
function M.shape(sessions, opts)
  local rows, counts = json.array(), {}
  table.sort(sessions, function(a, b) return (a.created_at or 0) > (b.created_at or 0) end)
  for _, s in ipairs(sessions) do
    if not opts.pending_only or M.pending(s) then
      rows[#rows + 1] = M.row(s, opts)
      counts[s.status] = (counts[s.status] or 0) + 1
    end
  end
  return { sessions = rows, counts = counts }
end

return M
