-- The receipts of watch and poll answers: whether the host really got each one (agentd/PROTOCOL.md
-- "Receipts" describes it for every process). Both consume the session's output, but an answer
-- reaches the host only through the MCP server and its launcher, and either can die with it in
-- hand. So an answer to a request that names its host request (a key) is held here, per session,
-- until its receipt comes: pending → confirmed (forgotten) | lost (the connection it went out on
-- closed first: the launcher died with its server; or the receipt said the host cancelled the
-- request first). A held answer is given again to a request with the same key (the launcher re-sent
-- it after its server died) and, once lost, to the next request of the same kind for its session,
-- oldest first (a watch never gets a poll's answer: it would wake without a reason). A request
-- whose own answer is held gets that one before any lost one. Under a launcher that reports no
-- receipts (one from before them) no receipt comes: the session's latest answer of each kind is
-- held for its own re-send only, and never lost. A resume of a session forgets its held death
-- notices (exited, orphaned): the host that resumes it knows. A daemon reload waits while a
-- receipt is pending, and while a watch answer is lost (upgrade.lua); a live handover waits while
-- one is pending and takes the rest along (handover.lua).
--
-- State: d.receipts[sid] = list, oldest first, of held answers (below). An asker is a watch
-- (watch.lua) or a poll (api.lua): {kind, key, conn, with_receipt}.
local log = require "rmcp.lib.log"

---@class HeldAnswer
---@field kind "watch"|"poll"
---@field key string                 the host request's key (`<launcher pid>/<id key>`, from the server)
---@field orch string                the orchestrator that asked
---@field result table               the answer as it was given
---@field conn table?                the connection it went out on; nil once lost, or when it came through a handover
---@field receipt "pending"|"lost"|nil nil: no receipt will come (a launcher from before receipts)

local M = {}

-- Answers held per session at most; past it the oldest goes (with a warning): a host that loses
-- eight answers of one session in a row without asking again has stopped asking.
M.MAX_PER_SESSION = 8

-- The asker a watch or poll request of conn with params p is (kind "watch" or "poll"). The wire
-- names, as every version sends them: `delivery_key` (the host request's key) and `confirm`
-- (true: the launcher reports the receipt).
function M.asker(kind, conn, p)
  local key = type(p.delivery_key) == "string" and p.delivery_key or nil
  return { kind = kind, key = key, conn = conn, with_receipt = key ~= nil and p.confirm == true }
end

-- The held answer of sid that asker w is to get, or nil: its own (w is the request it answered,
-- sent again), else the oldest lost one of its kind.
function M.due(d, w, sid)
  local list = d.receipts[sid]
  if not list then return nil end
  local lost
  for _, u in ipairs(list) do
    if u.kind == w.kind then
      if w.key ~= nil and u.key == w.key then return u end
      if u.receipt == "lost" and not lost then lost = u end
    end
  end
  return lost
end

-- Holds what asker w answered for sid: given (a held answer it got, from M.due) or a fresh result.
-- A keyed request holds it under its own key until the receipt; one without a key confirmed it by
-- getting it.
function M.hold(d, w, sid, given, fresh)
  local list = d.receipts[sid]
  local receipt = w.with_receipt and "pending" or nil
  if given then
    if w.key then
      given.key, given.orch, given.conn, given.receipt = w.key, w.conn.orch, w.conn, receipt
    else
      for i, u in ipairs(list) do
        if u == given then table.remove(list, i); break end
      end
    end
  elseif w.key then
    list = list or {}
    if not receipt then
      -- no receipt will come for it: only the latest answer of its kind is held, for the re-send
      for i = #list, 1, -1 do
        if not list[i].receipt and list[i].kind == w.kind then table.remove(list, i) end
      end
    end
    list[#list + 1] = { kind = w.kind, key = w.key, orch = w.conn.orch, result = fresh, conn = w.conn, receipt = receipt }
    if #list > M.MAX_PER_SESSION then
      log.warn("session %s: %d answers the host may not have got; the oldest is dropped", sid, #list)
      table.remove(list, 1)
    end
  end
  d.receipts[sid] = list and #list > 0 and list or nil
end

-- The receipt of orchestrator orch's answer to host request key: confirmed, the host has it; it is
-- forgotten.
function M.confirmed(d, orch, key)
  for sid, list in pairs(d.receipts) do
    for i = #list, 1, -1 do
      if list[i].key == key and list[i].orch == orch then table.remove(list, i) end
    end
    if #list == 0 then d.receipts[sid] = nil end
  end
end

-- Marks lost the pending answers for which match(u) holds; returns the ids of their sessions
-- (their waiting watches may take them now: watch.offer).
local function lose(d, match)
  local sids = {}
  for sid, list in pairs(d.receipts) do
    local any = false
    for _, u in ipairs(list) do
      if u.receipt == "pending" and match(u) then
        u.receipt, u.conn = "lost", nil
        any = true
      end
    end
    if any then sids[#sids + 1] = sid end
  end
  return sids
end

-- The receipt of orchestrator orch's answer to host request key: lost (the host cancelled the
-- request before it got the answer). Returns the sessions whose answers became lost.
function M.lost(d, orch, key)
  return lose(d, function(u) return u.key == key and u.orch == orch end)
end

-- Connection conn closed: the answers it carried whose receipt was pending are lost (the launcher
-- died, taking its server along), and those of sessions that are gone are forgotten. Returns the
-- sessions whose answers became lost.
function M.conn_closed(d, conn)
  for sid in pairs(d.receipts) do
    if not d.sessions[sid] then d.receipts[sid] = nil end
  end
  return lose(d, function(u) return u.conn == conn end)
end

-- True when a held answer of sid with a receipt satisfies pred(u).
local function any_with_receipt(d, sid, pred)
  for _, u in ipairs(d.receipts[sid] or {}) do
    if u.receipt and pred(u) then return true end
  end
  return false
end

-- True while the receipt of an answer of sid is pending: it is on its way to the host.
function M.pending(d, sid)
  return any_with_receipt(d, sid, function(u) return u.receipt == "pending" end)
end

-- True while sid has a lost watch answer (a turn's result) that waits for the session's next watch.
-- A lost poll answer is streamed output the transcript keeps, and a host may never poll again.
function M.lost_watch(d, sid)
  return any_with_receipt(d, sid, function(u) return u.receipt == "lost" and u.kind == "watch" end)
end

-- The held answers as a live handover's state: {[sid] = {{kind, key, orch, confirm, result}, ...}}
-- (`confirm`: a receipt comes; the names every version writes). The connections do not survive
-- the exec, so every answer with a receipt arrives lost.
function M.export(d)
  local out = {}
  for sid, list in pairs(d.receipts) do
    local l = {}
    for i, u in ipairs(list) do
      l[i] = { kind = u.kind, key = u.key, orch = u.orch, confirm = u.receipt ~= nil, result = u.result }
    end
    out[sid] = l
  end
  return out
end

-- Takes the held answers of a handover's state (from M.export) for the sessions that exist here.
function M.import(d, state)
  for sid, l in pairs(type(state) == "table" and state or {}) do
    if d.sessions[sid] and type(l) == "table" and #l > 0 then
      local list = {}
      for i, u in ipairs(l) do
        list[i] = { kind = u.kind == "poll" and "poll" or "watch", key = u.key, orch = u.orch,
                    receipt = u.confirm == true and "lost" or nil, result = u.result }
      end
      d.receipts[sid] = list
    end
  end
end

-- Forgets the held answers of sid that report it exited or orphaned: it is being resumed, so the
-- host knows it died, and such an answer given again would have the host resume it and repeat its
-- last message once more. (The turn text one carried stays in the session's journal.)
function M.forget_death_notices(d, sid)
  local list = d.receipts[sid]
  if not list then return end
  for i = #list, 1, -1 do
    local status = type(list[i].result) == "table" and list[i].result.status
    if status == "exited" or status == "orphaned" then table.remove(list, i) end
  end
  if #list == 0 then d.receipts[sid] = nil end
end

return M
