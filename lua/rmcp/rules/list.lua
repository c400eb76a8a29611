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

-- The encoded plain rows of settled sessions, by the session's runtime table s.rt (weak: the row
-- goes with it): {text, include_task, session, rev = s.list_rev when it was encoded}. A finished
-- session that agentd parked (its runtime on disk: agentd/session/park.lua) has none: its row,
-- listed only with all=true, is encoded when asked, and the row cached while it was idle goes when
-- it is parked.
local encoded_rows = setmetatable({}, { __mode = "k" })

-- The JSON text of s's row (M.row), or nil and the encoder's error. A settled session's plain row
-- is encoded once and reused while its revision s.list_rev is the same: agentd writes every field a
-- list reads through agentd/session/revision.lua, which bumps it (tests/lua/list_revision_spec.lua
-- holds agentd to that). A fleet that is listed again and again is mostly settled sessions.
function M.row_text(s, opts)
  local key = s.rt
  if not key or opts.detail or M.active[s.status] or (s.pending and #s.pending > 0) then return json.encode(M.row(s, opts)) end
  local c, include_task = encoded_rows[key], not not opts.include_task -- (M.row reads it as truthy)
  if c and c.rev == s.list_rev and c.session == s and c.include_task == include_task then return c.text end
  local text, err = json.encode(M.row(s, opts))
  if not text then return nil, err end
  encoded_rows[key] = { text = text, include_task = include_task, session = s, rev = s.list_rev }
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

-- True when a view shows session s: every session (all, not pending_only), or those an
-- orchestrator acts on (M.pending); the default view those, a live agent and one whose file could
-- not be read.
local function shown(s, pending_only, all)
  if all and not pending_only then return true end
  local status, decisions = s.status, s.pending
  return M.active[status] or (decisions ~= nil and #decisions > 0) or s.terminal_pending == true
    or not pending_only and (status == "idle" or s.unreadable ~= nil)
end

-- The whole tally of a caller's sessions, for M.shape's opts.whole: parked, a tally (M.tally) of
-- those for which is_counted(s) is true, of which the view leaves out hidden (none of them in
-- listed); listed, the others and the rest of those parked, in any order. Made again by the caller
-- whenever any of them changes: {counts, total, hidden = {default = n, pending_only = n}}.
function M.whole(listed, parked, is_counted, hidden)
  local t = copy_tally(parked)
  local default, pending_only = hidden, hidden
  for _, s in ipairs(listed) do
    if not is_counted(s) then M.count(t, s) end
    if not shown(s, false, false) then default = default + 1 end
    if not shown(s, true, false) then pending_only = pending_only + 1 end
  end
  t.hidden, t.pages, t.page_count = { default = default, pending_only = pending_only }, {}, 0
  return t
end

-- The index in sessions (newest first) of the first session past cursor ({created_at, id}): the
-- first one it is newer than (#sessions + 1: none).
local function first_after(sessions, cursor)
  local lo, hi = 1, #sessions + 1
  while lo < hi do
    local mid = (lo + hi) // 2
    if newer(cursor, sessions[mid]) then hi = mid else lo = mid + 1 end
  end
  return lo
end

-- The page of sessions a view shows (M.shape's opts): {sessions = its rows (opts.encoded: one
-- json.raw array), tally, hidden, next_cursor?, truncated?, kept = true when no row has a health or
-- a pending decision (they change with time or in place) and none was cut},
-- or nil and the encoder's error. With opts.whole nothing is counted and the walk starts at the
-- cursor and ends with the page; else tally and hidden are counted over sessions.
local function walk(sessions, opts)
  local rows, whole = json.array(), opts.whole
  local tally = whole or M.new_tally()
  local pending_only, all = opts.pending_only, opts.all
  local after, hidden, more, last, used, cut, kept = opts.cursor, 0, false, nil, 0, false, true
  if whole and not (all and not pending_only) then hidden = whole.hidden[pending_only and "pending_only" or "default"] end
  local room = opts.budget and opts.budget - ENVELOPE
  local first = 1
  if whole and after then -- (nothing to count: the page starts at the first session past the cursor)
    first, after = first_after(sessions, after), nil
  end
  for i = first, #sessions do
    local s = sessions[i]
    if not whole then M.count(tally, s) end
    if not shown(s, pending_only, all) then
      if not whole then hidden = hidden + 1 end
    elseif after and not newer(after, s) then
      -- on an earlier page
    elseif more or (opts.limit and #rows >= opts.limit) then
      more = true
      if whole then break end -- (the rest changes nothing: counted already)
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
        kept = kept and not M.active[s.status] and not (s.pending and #s.pending > 0)
      end
    else
      rows[#rows + 1] = M.row(s, opts)
      last = s
    end
  end
  return { sessions = opts.encoded and json.raw("[" .. table.concat(rows, ",") .. "]") or rows, tally = tally,
           hidden = hidden, next_cursor = more and cursor_of(last) or nil, truncated = cut or nil, kept = kept and not cut }
end

-- How many pages a whole tally keeps (M.shape): a caller paging through a long list does not grow it.
local KEPT_PAGES = 16

-- What names a page of opts among those kept with its whole tally: the view, the page and how rows
-- are made.
local function page_key(opts)
  local c = opts.cursor
  return string.format("%s|%s|%s|%s|%s|%s", opts.pending_only, opts.all, not not opts.include_task, opts.limit,
    opts.budget, c and string.format("%.17g/%s", c.created_at, c.id) or "")
end

-- Builds the list result from sessions (already filtered to the caller's; opts.sorted: already
-- newest first, as M.newer orders them), newest first. The view: opts.pending_only (active,
-- decision-blocked, uncollected), opts.all (every session), else the default (shown): a finished
-- session whose result was collected is counted, not shown, so the default list stays the size of
-- the work at hand, however long the day's history. Counts are by status over every session of the
-- caller and usage is what they spent, together; hidden counts those the view leaves out. Those are
-- opts.whole's (M.whole, kept by the caller while nothing a list reads changes: sessions may then
-- be only those the view can show, the same for each call of the same view, the walk ends with the
-- page, and a page of plain rows of settled sessions is kept with it), else counted over sessions.
-- A page holds opts.limit rows (nil: all) after opts.cursor ({created_at, id}); next_cursor when
-- more follow. With opts.encoded the rows are JSON already (M.row_text): sessions is then one
-- json.raw array, or nil and the encoder's error; opts.budget (bytes) then ends a page early
-- (next_cursor, result_truncated) and cuts the task of a row alone over it.
function M.shape(sessions, opts)
  if not opts.sorted then table.sort(sessions, newer) end
  local whole = opts.whole
  local key = whole and opts.encoded and not opts.detail and page_key(opts)
  local page = key and whole.pages[key]
  if not page then
    local err
    page, err = walk(sessions, opts)
    if not page then return nil, err end
    if key and page.kept then
      if whole.page_count >= KEPT_PAGES then whole.pages, whole.page_count = {}, 0 end
      whole.pages[key], whole.page_count = page, whole.page_count + 1
    end
  end
  local tally = page.tally
  return { sessions = page.sessions, counts = tally.counts, usage = tally.total.any and M.spent(tally.total) or nil,
           hidden = page.hidden > 0 and page.hidden or nil, next_cursor = page.next_cursor,
           result_truncated = page.truncated }
end

-- The last result text made of each rows array (a kept page's: M.shape), by the array (weak: the
-- text goes with the page): {rest = the rest of the result encoded, text}.
local result_texts = setmetatable({}, { __mode = "k" })

-- The JSON text of list result r (M.shape's with opts.encoded, and what the caller added to it), or
-- nil and the encoder's error: its rows are spliced in as they are and only the rest is encoded, so
-- the rows of a reply are not walked and copied once more; the same rows (a kept page) with the
-- same rest give the text made last time.
function M.result_text(r)
  local rows = r.sessions
  r.sessions = nil
  local rest, err = json.encode(r)
  r.sessions = rows
  if not rest then return nil, err end
  local last = result_texts[rows]
  if last and last.rest == rest then return last.text end
  local text = rest == "{}" and '{"sessions":' .. json.raw_text(rows) .. "}"
    or '{"sessions":' .. json.raw_text(rows) .. "," .. rest:sub(2)
  result_texts[rows] = { rest = rest, text = text }
  return text
end

return M
