-- Watch answers kept until the host has them. A watch answer consumes the session's results, but it
-- reaches the host only through the MCP server and its launcher, and either can die with it in
-- hand. So an answer to a watch with a delivery_key (the host request's key) is kept here, per
-- session, until the launcher says it wrote it to the host (`delivered {key}`, for a watch sent
-- with confirm = true). A kept answer is given again to a watch with the same key (the launcher
-- re-sent the request after its server died) and, once lost, to any other watch of its session,
-- oldest first: lost means the connection it went out on closed unconfirmed (the launcher died
-- with its server), or `undelivered {key}` (the host cancelled the request first). A launcher
-- that never confirms (one started before confirmations existed: confirm absent) gets its answers
-- kept only for its own re-send, the session's latest one, never lost. A watch whose own answer is
-- kept gets that one before any lost one. A daemon reload waits while a confirmable answer is kept
-- (upgrade.lua); a live handover waits while one is on its way and takes the rest along.
--
-- State: d.unconfirmed[sid] = list, oldest first, of {key, orch, result, conn, confirm}; conn is
-- nil once the answer is lost (or, for one without confirm, once it came through a handover). The
-- watch registry (watch.lua) asks and tells this module.
local log = require "rmcp.lib.log"

local M = {}

-- Answers kept per session at most; past it the oldest goes (with a warning): a host that loses
-- eight answers of one session in a row without watching it again has stopped watching.
M.MAX_PER_SESSION = 8

-- The kept answer of sid that watch w is to get, or nil: its own (w is the request it answered, sent
-- again), else the oldest lost one.
function M.due(d, w, sid)
  local list = d.unconfirmed[sid]
  if not list then return nil end
  local lost
  for _, u in ipairs(list) do
    if w.key ~= nil and u.key == w.key then return u end
    if u.confirm and u.conn == nil and not lost then lost = u end
  end
  return lost
end

-- Records what watch w answered for sid: given (a kept answer it got, from M.due) or a fresh
-- result. A keyed watch keeps it under its own key until confirmed; a watch without a key
-- confirmed it by getting it.
function M.answered(d, w, sid, given, fresh)
  local list = d.unconfirmed[sid]
  if given then
    if w.key then
      given.key, given.orch, given.conn, given.confirm = w.key, w.conn.orch, w.conn, w.confirm
    else
      for i, u in ipairs(list) do
        if u == given then table.remove(list, i); break end
      end
    end
  elseif w.key then
    list = list or {}
    if not w.confirm then
      -- no word will come for it: only the latest answer is kept, for the launcher's re-send
      for i = #list, 1, -1 do
        if not list[i].confirm then table.remove(list, i) end
      end
    end
    list[#list + 1] = { key = w.key, orch = w.conn.orch, result = fresh, conn = w.conn, confirm = w.confirm }
    if #list > M.MAX_PER_SESSION then
      log.warn("session %s: %d watch answers the host may not have got; the oldest is dropped", sid, #list)
      table.remove(list, 1)
    end
  end
  d.unconfirmed[sid] = list and #list > 0 and list or nil
end

-- Forgets the kept answers of orchestrator orch to host request key: the launcher wrote it to the host.
function M.confirm(d, orch, key)
  for sid, list in pairs(d.unconfirmed) do
    for i = #list, 1, -1 do
      if list[i].key == key and list[i].orch == orch then table.remove(list, i) end
    end
    if #list == 0 then d.unconfirmed[sid] = nil end
  end
end

-- Marks lost the confirmable answers on their way for which match(u) holds; returns the ids of
-- their sessions (their waiting watches may take them now).
function M.lose(d, match)
  local sids = {}
  for sid, list in pairs(d.unconfirmed) do
    local any = false
    for _, u in ipairs(list) do
      if u.conn and u.confirm and match(u) then
        u.conn = nil
        any = true
      end
    end
    if any then sids[#sids + 1] = sid end
  end
  return sids
end

-- True while a confirmable answer of sid is on its way: the launcher has not said what became of it.
function M.on_its_way(d, sid)
  for _, u in ipairs(d.unconfirmed[sid] or {}) do
    if u.confirm and u.conn then return true end
  end
  return false
end

-- True while sid has a lost answer that waits for the session's next watch.
function M.waiting_lost(d, sid)
  for _, u in ipairs(d.unconfirmed[sid] or {}) do
    if u.confirm and not u.conn then return true end
  end
  return false
end

-- The kept answers as a live handover's state: {[sid] = {{key, orch, confirm, result}, ...}}. The
-- connections do not survive the exec, so every confirmable answer arrives lost.
function M.export(d)
  local out = {}
  for sid, list in pairs(d.unconfirmed) do
    local l = {}
    for i, u in ipairs(list) do l[i] = { key = u.key, orch = u.orch, confirm = u.confirm, result = u.result } end
    out[sid] = l
  end
  return out
end

-- Takes the kept answers of a handover's state (from M.export) for the sessions that exist here.
function M.import(d, state)
  for sid, l in pairs(type(state) == "table" and state or {}) do
    if d.sessions[sid] and type(l) == "table" and #l > 0 then
      local list = {}
      for i, u in ipairs(l) do
        list[i] = { key = u.key, orch = u.orch, confirm = u.confirm == true, result = u.result }
      end
      d.unconfirmed[sid] = list
    end
  end
end

-- Forgets the kept answers of sessions that are gone.
function M.prune(d)
  for sid in pairs(d.unconfirmed) do
    if not d.sessions[sid] then d.unconfirmed[sid] = nil end
  end
end

return M
