-- List shaping: one compact row per session and counts by status.
local json = require "rmcp.lib.json"
local caps = require "rmcp.rules.caps"
local usage = require "rmcp.rules.usage"

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

-- The compact spend of figure u (rules/usage.lua; nil: none yet): {tokens, cost?, currency?,
-- cost_partial?, estimated?}.
function M.spent(u)
  if not u then return nil end
  local r = { tokens = u.total }
  if u.cost then r.cost, r.currency = tonumber(string.format("%.6g", u.cost)), u.currency end
  if u.cost and u.cost_unknown then r.cost_partial = true end
  if (u.unreported or 0) > 0 then r.estimated = true end
  return r
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
    usage = M.spent(s.usage),
    agent = s.agent ~= nil and s.agent ~= "reasonix" and s.agent or nil, -- (reasonix: the default, not said)
    integration = type(s.integration) == "table" and { id = s.integration.id, state = s.integration.state,
                                                       target = s.integration.target } or nil,
  }
  if pending then
    r.pending_decision = { request_id = pending.request_id, kind = pending.kind, title = pending.tool_call and pending.tool_call.title }
  end
  r.health = opts.health and M.active[s.status] and opts.health(s) or nil -- a running turn's (agentd/health.lua)
  if opts.detail then
    r.effort, r.tool_approval, r.work_mode = s.effort, s.tool_approval, s.work_mode
    r.profile = s.agent_profile -- (how agentd speaks to its agent: rules/profiles.lua)
    r.error_text = s.error_text
    r.idle_timeout = s.idle_timeout
    r.queued_config = s.queued_config -- configured, not yet on the agent (its next turn or resume)
    r.agent_pid = s.rt and s.rt.agent and s.rt.agent:pid() or nil
    if s.plan and #s.plan > 0 then r.plan = s.plan end
    if type(s.worktree) == "table" and s.worktree.state == "ready" then
      r.worktree = { path = s.worktree.path, branch = s.worktree.branch, base = s.worktree.base }
      r.changes = s.changes
      r.forecast = s.forecast -- its last forecast: {target, ahead, behind, clean, conflicts?, collides_with?, at}
    end
    if M.active[s.status] and s.rt and opts.current_work then r.current_work = opts.current_work(s) end
  end
  return r
end

-- Statuses of an agent at work (pending_only keeps them).
M.active = { starting = true, running = true, awaiting_decision = true }

-- The fields of a session the plain row (no detail) of a settled session is made of (a settled
-- session, with no agent at work and no decision pending, has no health and no pending_decision),
-- as they were when the row was encoded: { text = JSON, include_task = ..., id = s.id, ... }.
local function plain_inputs(s, include_task, text)
  local u, i = s.usage, s.integration
  return { text = text, include_task = include_task, id = s.id, task = s.task, transcript_path = s.transcript_path,
           created_at = s.created_at, status = s.status, cwd = s.cwd, stop_reason = s.stop_reason,
           exit_reason = s.exit_reason, model = s.model, updated_at = s.updated_at, keep_alive = s.keep_alive,
           terminal_pending = s.terminal_pending, damaged = s.damaged, spent = u and u.total, spent_cost = u and u.cost,
           integration = i, integration_id = i and i.id, integration_state = i and i.state, integration_target = i and i.target }
end

-- True when the fields plain_inputs kept in c are still those of s.
local function same_inputs(c, s)
  if c.status ~= s.status or c.updated_at ~= s.updated_at or c.id ~= s.id or c.task ~= s.task
    or c.transcript_path ~= s.transcript_path or c.created_at ~= s.created_at or c.cwd ~= s.cwd or c.stop_reason ~= s.stop_reason
    or c.exit_reason ~= s.exit_reason or c.model ~= s.model or c.keep_alive ~= s.keep_alive
    or c.terminal_pending ~= s.terminal_pending or c.damaged ~= s.damaged then
    return false
  end
  local u, i = s.usage, s.integration
  if u then
    if c.spent ~= u.total or c.spent_cost ~= u.cost then return false end
  elseif c.spent ~= nil then
    return false
  end
  if i == nil then return c.integration == nil end
  return c.integration == i and c.integration_id == i.id and c.integration_state == i.state and c.integration_target == i.target
end

-- The encoded plain rows of settled sessions, by the session's runtime table s.rt (weak: the row
-- goes with it), as plain_inputs made them. A finished session that agentd parked (its runtime on
-- disk: agentd/session/park.lua) has none: its row, listed only with all=true, is encoded when
-- asked, and the row cached while it was idle goes when it is parked.
local encoded_rows = setmetatable({}, { __mode = "k" })

-- The JSON text of s's row (M.row), or nil and the encoder's error. A settled session's plain row
-- is encoded once and reused while every field it is made of is unchanged: a fleet that is listed
-- again and again is mostly settled sessions.
function M.row_text(s, opts)
  local key = s.rt
  if not key or opts.detail or M.active[s.status] or (s.pending and #s.pending > 0) then return json.encode(M.row(s, opts)) end
  local c, include_task = encoded_rows[key], not not opts.include_task -- (M.row reads it as truthy)
  if c and c.include_task == include_task and same_inputs(c, s) then return c.text end
  local text, err = json.encode(M.row(s, opts))
  if not text then return nil, err end
  encoded_rows[key] = plain_inputs(s, include_task, text)
  return text
end

-- True when s needs the orchestrator's attention (list pending_only): active, blocked on a
-- decision, or holding a terminal state no watch has collected yet.
function M.pending(s)
  return M.active[s.status] == true or (s.pending ~= nil and #s.pending > 0) or s.terminal_pending == true
end

-- Orders sessions newest first (created_at, then id): the order of rows and of cursors.
function M.newer(a, b)
  local ta, tb = a.created_at or 0, b.created_at or 0
  if ta ~= tb then return ta > tb end
  return a.id > b.id
end
local newer = M.newer

-- The cursor after session s: where the next page starts.
local function cursor_of(s)
  return string.format("%.3f/%s", s.created_at or 0, s.id)
end

-- Checks a list cursor; returns the {created_at, id} it names, or nil and why.
function M.parse_cursor(c)
  local t, id = tostring(c):match("^(%-?[%d.]+)/([%w%-_]+)$")
  if not t then return nil, "cursor must be a next_cursor from an earlier list" end
  return { created_at = tonumber(t), id = id }
end

-- The bytes a list result holds for what is not a row (counts, hidden, next_cursor, reload, the
-- flags): a page's rows get the rest of the budget.
local ENVELOPE = 1024

-- The row text of s with its task cut to fit room bytes (a row alone over a page's budget: its
-- task is what is long), flagged task_truncated. The whole task is never encoded: a long one is
-- cut first, the rest of the row measured without it.
local function cut_row(s, opts, room)
  local row = M.row(s, opts)
  local task = row.task or ""
  row.task, row.task_truncated = "", true
  local without = #(json.encode(row) or "")
  row.task = caps.head(task, math.max(0, room - without - 16))
  return json.encode(row)
end

-- A tally of no session: {counts = {status → n}, total = the spend summed as M.spent shows it}.
function M.new_tally()
  return { counts = {}, total = { total = 0 } }
end

-- Counts session s into tally t: its status, and of its spend (a rules/usage.lua figure; nil: none)
-- what M.spent shows (tokens, cost and its currency, whether some cost or count is missing): a
-- list sums every session of its caller, so the other token kinds are not added up.
function M.count(t, s)
  local counts = t.counts
  counts[s.status] = (counts[s.status] or 0) + 1
  local u = s.usage
  if not u then return end
  local total = t.total
  total.any = true
  total.total = total.total + (u.total or 0)
  usage.add_cost(total, u)
  if (u.unreported or 0) > 0 then total.unreported = (total.unreported or 0) + u.unreported end
end

-- The tally of the sessions of list for which pick(s) is true.
function M.tally(list, pick)
  local t = M.new_tally()
  for _, s in ipairs(list) do
    if pick(s) then M.count(t, s) end
  end
  return t
end

-- A copy of tally t that a list can go on counting into.
local function copy_tally(t)
  local c = M.new_tally()
  for k, v in pairs(t.counts) do c.counts[k] = v end
  for k, v in pairs(t.total) do c.total[k] = v end
  return c
end

-- Builds the list result from sessions (already filtered to the caller's; opts.sorted: already
-- newest first, as M.newer orders them), newest first. The view:
-- opts.pending_only (active, decision-blocked, uncollected), opts.all (every session), else what
-- the default view keeps: what an orchestrator acts on (M.pending), a live agent, or one whose file
-- could not be read (a finished session whose result was collected is counted, not shown: the
-- default list stays the size of the work at hand, however long the day's history); counts are by status over every session given (opts.counted: a tally (M.tally) of
-- those of them for which opts.is_counted(s) is true, kept by the caller: they are not counted again;
-- opts.uncounted, how many are not, ends a list of every session at its page). opts.hidden: sessions
-- the caller left out of sessions that the view would not show either. A page holds opts.limit rows (nil:
-- all) after opts.cursor ({created_at, id}); next_cursor when more follow; hidden counts the
-- caller's sessions the view leaves out; usage is what every session given spent, together. With opts.encoded the rows are JSON already (M.row_text):
-- sessions is then one json.raw array, or nil and the encoder's error; opts.budget (bytes) then ends
-- a page early (next_cursor, result_truncated) and cuts the task of a row alone over it.
function M.shape(sessions, opts)
  local rows = json.array()
  local tally = opts.counted and copy_tally(opts.counted) or M.new_tally()
  local is_counted = opts.counted and opts.is_counted
  if not opts.sorted then table.sort(sessions, newer) end
  local after, hidden, more, last, used, cut = opts.cursor, opts.hidden or 0, false, nil, 0, false
  local room = opts.budget and opts.budget - ENVELOPE
  local pending_only, all, active = opts.pending_only, opts.all, M.active
  -- (every session shown: once the page is full and the last uncounted one counted, the rest
  -- changes nothing)
  local uncounted = all and not pending_only and opts.uncounted
  for _, s in ipairs(sessions) do
    if not (is_counted and is_counted(s)) then
      M.count(tally, s)
      if uncounted then uncounted = uncounted - 1 end
    end
    local show = all and not pending_only
    if not show then -- M.pending, or in_view, inline: a list asks it of every session of its caller
      local status, decisions = s.status, s.pending
      show = active[status] or (decisions ~= nil and #decisions > 0) or s.terminal_pending == true
        or not pending_only and (status == "idle" or s.unreadable ~= nil)
    end
    if not show then
      hidden = hidden + 1
    elseif after and not newer(after, s) then
      -- on an earlier page
    elseif more or (opts.limit and #rows >= opts.limit) then
      more = true
      if uncounted == 0 then break end
    elseif opts.encoded and room and opts.include_task and #(s.task or "") > room then
      -- a task longer than a page's whole budget: its row opens a page, the task cut (never encoded whole)
      if #rows == 0 then
        local text = cut_row(s, opts, room)
        rows[1], used, last, cut = text, #text + 1, s, true
      else
        more, cut = true, true
      end
    elseif opts.encoded then
      local text, err = M.row_text(s, opts)
      if not text then return nil, err end
      if room and used + #text + 1 > room then
        if #rows == 0 then
          text, cut = cut_row(s, opts, room), true
        else
          more, cut = true, true
        end
      end
      if not more then
        rows[#rows + 1] = text
        used, last = used + #text + 1, s
      end
    else
      rows[#rows + 1] = M.row(s, opts)
      last = s
    end
  end
  local r = { sessions = opts.encoded and json.raw("[" .. table.concat(rows, ",") .. "]") or rows, counts = tally.counts,
              usage = tally.total.any and M.spent(tally.total) or nil }
  if hidden > 0 then r.hidden = hidden end
  if more then r.next_cursor = cursor_of(last) end
  if cut then r.result_truncated = true end
  return r
end

-- The JSON text of list result r (M.shape's with opts.encoded, and what the caller added to it), or
-- nil and the encoder's error: its rows are spliced in as they are and only the rest is encoded, so
-- the rows of a reply are not walked and copied once more.
function M.result_text(r)
  local rows = r.sessions
  r.sessions = nil
  local rest, err = json.encode(r)
  r.sessions = rows
  if not rest then return nil, err end
  if rest == "{}" then return '{"sessions":' .. json.raw_text(rows) .. "}" end
  return '{"sessions":' .. json.raw_text(rows) .. "," .. rest:sub(2)
end

return M
