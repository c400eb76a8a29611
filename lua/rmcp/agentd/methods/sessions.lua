-- The socket methods on one session of the caller's (PROTOCOL.md): spawn, resume, configure, send,
-- poll, watch, wait, list, transcript, respond_permission, stop, and the delivered / undelivered
-- word about an answer's receipt. Each is handler(d, conn, params, reply, request_id); the dispatcher
-- (agentd/api.lua) finds it by name.
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local log = require "rmcp.lib.log"
local lazy = require "rmcp.lib.lazy"
local config = require "rmcp.config"
local session = require "rmcp.agentd.session"
local store = require "rmcp.agentd.store"
local watch = require "rmcp.agentd.watch"
local receipts = require "rmcp.agentd.receipts"
local ownership = require "rmcp.agentd.ownership"
local health = require "rmcp.agentd.health"
local upgrade = require "rmcp.agentd.upgrade"
local params = require "rmcp.agentd.methods.params"
local rules_spawn = require "rmcp.rules.spawn"
local rules_poll = require "rmcp.rules.poll"
local rules_list = require "rmcp.rules.list"
local usage_ledger = require "rmcp.agentd.usage_ledger"
local answers = require "rmcp.agentd.answers"
-- (loaded by the first request that needs it: an idle daemon stays small)
local transcript = lazy "rmcp.agentd.transcript"
local fit = lazy "rmcp.rules.fit" -- (the transcript's: loaded with the first one)
local caps = require "rmcp.rules.caps"

local M = {}

local bad, owned_ids = params.bad, params.owned_ids

-- spawn: a new session; returns once the agent is configured and the first prompt sent.
function M.spawn(d, conn, p, reply)
  local o, err = rules_spawn.options(p, false, conn.env)
  if not o then return reply(nil, bad(err)) end
  local cwd, cerr = ownership.confine(conn.project_dir, o.cwd, conn.env)
  if not cwd then return reply(nil, cerr) end
  local info = { cwd = cwd, project_dir = conn.project_dir, orchestrator_id = conn.orch }
  rules_spawn.adjust(o, info)
  local ok, berr = params.sandbox(o, conn, info)
  if not ok then return reply(nil, berr) end
  o.env = conn.env
  session.spawn(d, conn.orch, conn.project_dir, o, cwd, reply)
end

-- resume: revives a tombstone (exited/orphaned) with session/resume on a fresh agent.
function M.resume(d, conn, p, reply)
  local s, err = ownership.lookup(d.sessions, conn.orch, p.session_id)
  if not s then return reply(nil, err) end
  local changes, cherr = params.resume_changes(p)
  if not changes then return reply(nil, cherr) end
  if p.cwd ~= nil and not session.is_live(s) then
    local cwd, cerr = ownership.confine(conn.project_dir, p.cwd, conn.env)
    if not cwd then return reply(nil, cerr) end
    changes.cwd = cwd
  end
  session.resume(d, s, changes, conn.env, reply)
end

-- configure: change a session's model, effort, work_mode or tool_approval (now when idle, before
-- the next turn when busy, at the resume when exited).
function M.configure(d, conn, p, reply)
  local s, err = ownership.lookup(d.sessions, conn.orch, p.session_id)
  if not s then return reply(nil, err) end
  local o, oerr = rules_spawn.options(p, true)
  if not o then return reply(nil, bad(oerr)) end
  local wanted, any = {}, false
  for _, k in ipairs(rules_spawn.order) do
    if o.explicit[k] then wanted[k], any = o[k], true end
  end
  if not any and p.budget == nil then return reply(nil, bad("give at least one of model, effort, work_mode, tool_approval, budget")) end
  if s.unreadable then return reply(nil, bad("session " .. s.id .. " is unreadable (" .. s.unreadable .. "); it cannot be configured")) end
  if p.budget ~= nil then
    -- at once, whatever the agent is doing: null removes it
    session.set_budget(d, s, p.budget ~= json.null and o.budget or nil)
    if not any then return reply({ session_id = s.id, status = s.status, budget = s.budget or json.null, usage = session.usage_line(s) }) end
  end
  session.configure(d, s, wanted, function(r, e)
    if r and p.budget ~= nil then r.budget = s.budget or json.null end
    reply(r, e)
  end)
end

-- send: forced steer (never dropped); expect narrows it.
function M.send(d, conn, p, reply)
  local s, err = ownership.lookup(d.sessions, conn.orch, p.session_id)
  if not s then return reply(nil, err) end
  if type(p.message) ~= "string" or p.message:match("^%s*$") then return reply(nil, bad("message must be a non-empty string")) end
  if p.expect ~= nil and p.expect ~= json.null and p.expect ~= "steer" and p.expect ~= "new_turn" then
    return reply(nil, bad('expect must be "steer" or "new_turn"'))
  end
  session.send(d, s, p.message, p.expect ~= json.null and p.expect or nil, reply)
end

-- Per session, what rules/poll.lua shape keeps of its last lean poll result (weak: a forgotten
-- session's goes with it).
local kept_polls = setmetatable({}, { __mode = "k" })

-- poll: what is new since the last poll, lean by default.
function M.poll(d, conn, p, reply)
  local s, err = ownership.lookup(d.sessions, conn.orch, p.session_id)
  if not s then return reply(nil, err) end
  local o, oerr = rules_poll.options(p)
  if not o then return reply(nil, bad(oerr)) end
  -- held until its receipt, like a watch's answer (receipts.lua); a lost one comes first, as it was
  local asker = receipts.asker("poll", conn, p)
  local given = receipts.due(d, asker, s.id)
  if given then
    log.info("poll %s: an answer the host may not have got, given again", tostring(asker.key))
    receipts.hold(d, asker, s.id, given)
    return reply(given.result)
  end
  local snap, took_turns = session.drain(d, s, o)
  snap.health = health.anomaly(d, s)
  local kept = kept_polls[s]
  if not kept then
    kept = {}
    kept_polls[s] = kept
  end
  local result, text = rules_poll.shape(snap, o, kept)
  receipts.hold(d, asker, s.id, nil, result)
  reply(text and json.raw(text) or result) -- (encoded once: the text fit measured)
  if took_turns then session.journal_delivered(d, s) end
end

-- transcript: what the agent did, from the journal.
function M.transcript(d, conn, p, reply)
  local s, err = ownership.lookup(d.sessions, conn.orch, p.session_id)
  if not s then return reply(nil, err) end
  if p.max_tool_calls ~= nil and (type(p.max_tool_calls) ~= "number" or p.max_tool_calls < 0) then
    return reply(nil, bad("max_tool_calls must be a number >= 0"))
  end
  reply(fit.fit(transcript.build(s, store.read_journal(s.transcript_path), p.max_tool_calls and math.floor(p.max_tool_calls),
    session.last_text(d, s))))
end

-- watch: blocks until a watched session finishes, needs a decision or dies.
function M.watch(d, conn, p, reply, req_id)
  local ids, err = owned_ids(d, conn, p)
  if not ids then return reply(nil, err) end
  local terr = params.check_timeout(p)
  if terr then return reply(nil, terr) end
  local o, oerr = rules_poll.options(p)
  if not o then return reply(nil, bad(oerr)) end
  if req_id == nil then return reply(nil, bad("watch must be a request (with an id)")) end
  watch.watch(d, conn, req_id, ids, p, o, reply)
end

-- delivered (a notification): the receipt of the answer to host request key is confirmed (receipts.lua).
function M.delivered(d, conn, p, reply)
  if type(p.key) ~= "string" then return reply(nil, bad("key must be a string")) end
  receipts.confirmed(d, conn.orch, p.key)
  reply()
end

-- asking (a notification): the host shows a person a form for a decision (open), or the form closed
-- without an answer: the decision is the orchestrator's again (its watch wakes once more).
function M.asking(d, conn, p, reply)
  local s, err = ownership.lookup(d.sessions, conn.orch, p.session_id)
  if not s then return reply(nil, err) end
  if math.type(p.request_id) ~= "integer" then return reply(nil, bad("request_id must be an integer")) end
  session.mark_asking(d, s, p.request_id, p.open == true and "elicitation" or nil)
  reply()
end

-- undelivered (a notification): the receipt of the answer to host request key is lost (receipts.lua).
function M.undelivered(d, conn, p, reply)
  if type(p.key) ~= "string" then return reply(nil, bad("key must be a string")) end
  watch.offer(d, receipts.lost(d, conn.orch, p.key))
  reply()
end

-- wait: blocks until a session has new output, a turn end or a decision.
function M.wait(d, conn, p, reply, req_id)
  local ids, err = owned_ids(d, conn, p)
  if not ids then return reply(nil, err) end
  local terr = params.check_timeout(p)
  if terr then return reply(nil, terr) end
  if req_id == nil then return reply(nil, bad("wait must be a request (with an id)")) end
  watch.wait(d, conn, req_id, ids, p, reply)
end

-- Keeps the text of list result r (asked with no params) as conn's answer to its next such list
-- (answers.lua), unless the result changes by itself: an agent at work shows its health, a queued
-- reload what it waits for; today's spend (spent_today) holds until midnight.
local function keep_list(conn, r, text, spent_today)
  if r.reload then return end
  for status in pairs(rules_list.active) do
    if r.counts[status] then return end
  end
  local for_s
  if spent_today then
    local t = os.date("*t")
    t.day, t.hour, t.min, t.sec, t.isdst = t.day + 1, 0, 0, 0, nil
    for_s = os.time(t) - os.time()
  end
  answers.keep(conn, "list", text, for_s)
end

-- list: the caller's sessions.
function M.list(d, conn, p, reply)
  local mine = session.newest_first(d, conn.orch)
  local limit = p.limit
  if limit ~= nil and (math.type(limit) ~= "integer" or limit < 1 or limit > 500) then
    return reply(nil, bad("limit must be an integer from 1 to 500"))
  end
  local cursor
  if p.cursor ~= nil then
    local cerr
    cursor, cerr = rules_list.parse_cursor(p.cursor)
    if not cursor then return reply(nil, bad(cerr)) end
  end
  -- a view leaves out the parked sessions whose result was collected: it looks at the rest alone
  local every = p.all == true and p.pending_only ~= true
  local r, err = rules_list.shape(every and mine or session.parked_tally(d, conn.orch).listed, {
    whole = session.list_tally(d, conn.orch), encoded = true, sorted = true, include_task = p.include_task == true, pending_only = p.pending_only == true, all = p.all == true,
    detail = p.detail == true, current_work = session.current_work,
    health = function(s) return health.of(d, s) end,
    budget = caps.limit("max_result_bytes"),
    limit = limit or math.floor(config.limit("list_limit")), cursor = cursor,
  })
  if not r then return reply(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "result not encodable: " .. tostring(err))) end
  r.reload = upgrade.status(d, conn.orch)
  if r.reload and r.reload.pending then r.reload_pending = true end
  local today = usage_ledger.spent_today(d, conn.orch)
  if today.tokens > 0 then
    r.usage = r.usage or { tokens = 0 }
    r.usage.today = rules_list.spent({ total = today.tokens, cost = today.cost, cost_unknown = today.cost_unknown })
  end
  local text, terr = rules_list.result_text(r)
  if not text then return reply(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "result not encodable: " .. tostring(terr))) end
  reply(json.raw(text))
  if next(p) == nil then keep_list(conn, r, text, today.tokens > 0) end
end

-- respond_permission: answers a pending permission request or question.
function M.respond_permission(d, conn, p, reply)
  local s, err = ownership.lookup(d.sessions, conn.orch, p.session_id)
  if not s then return reply(nil, err) end
  reply(session.respond(d, s, p.option_id, p.request_id))
end

-- stop: cancel + close + kill; the session stays as an exited tombstone.
function M.stop(d, conn, p, reply)
  local s, err = ownership.lookup(d.sessions, conn.orch, p.session_id)
  if not s then return reply(nil, err) end
  session.stop(d, s, "stopped", function()
    reply({ session_id = s.id, status = s.status, exit_reason = s.exit_reason })
  end)
end

return M
