-- Long requests: watch (one per session; a newer one supersedes the older) and wait. Both end on a
-- ready session, a timeout, $/cancel or the connection dropping. The registry is d.watch_by_session
-- and d.waits (agentd/daemon.lua). Answers are held until their receipt (agentd/receipts.lua).
local uv = require "luv"
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local log = require "rmcp.lib.log"
local config = require "rmcp.config"
local session = require "rmcp.agentd.session"
local rules_watch = require "rmcp.rules.watch"
local rules_poll = require "rmcp.rules.poll"
local rules_caps = require "rmcp.rules.caps"
local health = require "rmcp.agentd.health"
local receipts = require "rmcp.agentd.receipts"
local store = require "rmcp.agentd.store"

local M = {}

local arm_reminder -- (defined after try_watch, which it calls back)

M.CANCELLED = -32800
M.WAIT_TIMEOUT = 30 -- seconds a wait without a timeout blocks (a legacy long poll, not a watch)

-- Closes a watch's timers and unregisters it.
local function release(d, w)
  w.done = true
  for _, t in ipairs({ w.timer, w.progress, w.remind }) do
    if t and not t:is_closing() then t:close() end
  end
  for _, sid in ipairs(w.ids) do
    if d.watch_by_session[sid] == w then d.watch_by_session[sid] = nil end
  end
  d.waits[w] = nil
  if w.conn then w.conn.requests[w.req_id] = nil end
end

-- Ends w with result (or error) once.
local function finish(d, w, result, err)
  if w.done then return end
  release(d, w)
  w.reply(result, err)
end

-- Delivers the ready sessions of watch w, if any: held answers it is to get again as they were, then
-- compact (or poll-shaped) results of the others, consuming undelivered terminal state and
-- decisions. Detailed results, and answers given again, share one result budget
-- (max_result_bytes). changed (a session of w, or nil: all) is the only one to look at: M.check.
-- Returns true when it ended the watch.
local function try_watch(d, w, changed)
  local results, given, again, ready, why = {}, {}, 0, {}, {}
  local now, watcher = store.now(), w.conn and w.conn.id
  for _, sid in ipairs(changed and { changed.id } or w.ids) do
    local u = receipts.due(d, w, sid)
    if u then
      results[sid], given[sid], again = u.result, u, again + 1
    else
      local s = d.sessions[sid]
      why[sid] = s and rules_watch.ready(s, watcher, now)
      if why[sid] then ready[#ready + 1] = s end
    end
  end
  if #ready + again == 0 then
    arm_reminder(d, w, now, changed)
    return false
  end
  local share = (again > 0 or w.detail) and rules_caps.limit("max_result_bytes") // (#ready + again)
  if again > 0 then
    log.info("watch %s: %d answer(s) the host may not have got, given again", tostring(w.key), again)
    -- each was fitted to the budget of the watch it first went to: now it gets its share of this one
    -- (the held copy is cut with it)
    for sid, u in pairs(given) do results[sid] = rules_poll.fit(u.result, share) end
  end
  if w.detail and #ready > 0 then w.poll_opts.budget = share end
  local took = {} -- [session] = true when this answer carries turns not delivered before
  for _, s in ipairs(ready) do
    local repeated = rules_watch.decision_repeated(s)
    local snap, took_turns = session.drain(d, s, w.detail and w.poll_opts or nil)
    took[s] = took_turns
    snap.health = health.anomaly(d, s)
    if w.detail then
      results[s.id] = rules_poll.shape(snap, w.poll_opts)
    else
      results[s.id] = rules_watch.compact(snap)
    end
    if repeated then results[s.id].decision_repeated = true end
    if why[s.id] == "reminder" then results[s.id].decision_reminder = true end
  end
  for sid, result in pairs(results) do receipts.hold(d, w, sid, given[sid], result) end
  finish(d, w, { results = results })
  -- what the answer delivered is recorded once it is out (a tombstone's record is saved at once)
  for _, s in ipairs(ready) do
    if took[s] then session.journal_delivered(d, s) end
    session.mark_delivered(d, s, watcher)
  end
  return true
end

-- Arms (again) the timer that wakes watch w when the first reminder of a decision it already
-- reported falls due (rules/watch.lua), if any of its sessions waits on one. With changed (the one
-- session looked at), the timer moves only earlier: one that fires early looks at them all and arms
-- it again.
arm_reminder = function(d, w, now, changed)
  local first
  for _, sid in ipairs(changed and { changed.id } or w.ids) do
    local s = d.sessions[sid]
    local t = s and rules_watch.next_reminder(s, w.conn and w.conn.id, now)
    if t and (not first or t < first) then first = t end
  end
  if changed and (not first or (w.remind_at and w.remind_at <= first)) then return end
  if w.remind then w.remind:stop() end
  w.remind_at = first
  if not first then return end
  w.remind = w.remind or uv.new_timer()
  w.remind:start(math.max(0, math.ceil((first - now) * 1000)), 0, function()
    w.remind_at = nil
    if not w.done then try_watch(d, w) end
  end)
end

-- True when a wait should return for s: new output, turn end, a pending decision (reported or not:
-- a wait consumes nothing) or exit.
local function wait_ready(s)
  return (s.rt ~= nil and s.rt.wait_dirty) or rules_watch.ready(s, nil, math.huge) ~= nil
end

-- A wait's result: woke (false: the timeout ended it), the ready ids, and each watched session's
-- state {status, stop_reason?, permission_request?} (a wait consumes nothing: poll or watch takes
-- the output).
local function wait_result(d, w, ready)
  local sessions = {}
  for _, sid in ipairs(w.ids) do
    local s = d.sessions[sid]
    if s then
      local first = s.pending[1]
      sessions[sid] = { status = s.status, stop_reason = (s.status ~= "running" and s.status ~= "starting") and s.stop_reason or nil,
                        permission_request = first and session.decision_view(first) or nil }
    end
  end
  return { woke = #ready > 0, ready = ready, timed_out = #ready == 0 or nil, sessions = sessions }
end

-- Ends wait w if any of its sessions is ready; returns true when it did.
local function try_wait(d, w)
  local ready = json.array()
  for _, sid in ipairs(w.ids) do
    local s = d.sessions[sid]
    if s and wait_ready(s) then ready[#ready + 1] = sid end
  end
  if #ready == 0 then return false end
  finish(d, w, wait_result(d, w, ready))
  return true
end

-- Arms the timeout, progress ticks and cancellation of a long request.
local function arm(d, w, params, on_timeout)
  w.conn.requests[w.req_id] = function()
    finish(d, w, nil, jsonrpc.error(M.CANCELLED, "request cancelled"))
  end
  if type(params.timeout) == "number" and params.timeout >= 0 then
    w.timer = uv.new_timer()
    w.timer:start(math.floor(params.timeout * 1000), 0, function() on_timeout() end)
  end
  if params.progress == true then
    local every = math.max(10, math.floor(tonumber(params.progress_interval_ms) or config.limit("progress_interval_ms")))
    w.progress = uv.new_timer()
    w.progress:start(every, every, function()
      w.conn.peer:notify("watch_progress", { request_id = w.req_id, message = "watching " .. #w.ids .. " session(s)" })
    end)
  end
end

-- Starts a watch for conn (request req_id) on sessions ids (already ownership-checked);
-- params.delivery_key names the host request (receipts.asker).
function M.watch(d, conn, req_id, ids, params, poll_opts, reply)
  local w = receipts.asker("watch", conn, params)
  w.req_id, w.ids, w.reply, w.detail, w.poll_opts = req_id, ids, reply, poll_opts.detail, poll_opts
  for _, sid in ipairs(ids) do
    local old = d.watch_by_session[sid]
    if old then
      log.info("watch %s on %s superseded by a newer watch", tostring(old.req_id), sid)
      finish(d, old, { results = {}, superseded = true })
    end
  end
  for _, sid in ipairs(ids) do d.watch_by_session[sid] = w end
  if try_watch(d, w) then return end
  arm(d, w, params, function() finish(d, w, { results = {}, timed_out = true }) end)
end

-- Starts a wait for conn on sessions ids.
function M.wait(d, conn, req_id, ids, params, reply)
  local w = { conn = conn, req_id = req_id, ids = ids, reply = reply }
  if try_wait(d, w) then return end
  d.waits[w] = true
  if params.timeout == nil then params.timeout = M.WAIT_TIMEOUT end
  arm(d, w, params, function() finish(d, w, wait_result(d, w, json.array())) end)
end

-- Re-checks the waits on session s after it has new output (a watch does not wake for output: what
-- makes a session ready for one comes with a change, M.check).
function M.check_waits(d, s)
  for wt in pairs(d.waits) do
    for _, sid in ipairs(wt.ids) do
      if sid == s.id then try_wait(d, wt); break end
    end
  end
end

-- Re-checks the watch and waits on session s after it changed. Only s can have become ready for its
-- watch: each other session of it was not ready when the watch last looked, and a change of one
-- comes here itself (session/state.lua M.changed); a reminder falls due on the watch's timer, and a
-- lost answer comes by M.offer. A watch over many sessions pays for one.
function M.check(d, s)
  local w = d.watch_by_session[s.id]
  if w and not w.done then try_watch(d, w, s) end
  M.check_waits(d, s)
end

-- Offers the answers of sessions sids whose receipt was lost just now (receipts.lost,
-- receipts.conn_closed) to the watches waiting on those sessions.
function M.offer(d, sids)
  for _, sid in ipairs(sids) do
    local w = d.watch_by_session[sid]
    if w and not w.done then try_watch(d, w) end
  end
end

-- How many requests agentd read from conn and has not answered yet, besides its long ones (the
-- watches and waits it holds): what a handover waits for before it closes the connection.
function M.short_in_flight(conn)
  local long = 0
  for _ in pairs(conn.requests) do long = long + 1 end
  return conn.peer:unanswered() - long
end

-- Ends every long request of a connection that went away (pending state stays undelivered); the
-- answers it carried whose receipt was pending are lost, and offered to the next watches.
function M.drop_conn(d, conn)
  for id, cancel in pairs(conn.requests) do
    conn.requests[id] = nil
    cancel()
  end
  M.offer(d, receipts.conn_closed(d, conn))
end

return M
