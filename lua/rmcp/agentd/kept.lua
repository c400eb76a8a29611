-- Watch and poll answers kept until the host has them. Both consume the session's output, but an
-- answer reaches the host only through the MCP server and its launcher, and either can die with it
-- in hand. So an answer to a watch or poll with a delivery_key (the host request's key) is kept
-- here, per session, until the launcher says it wrote it to the host (`delivered {key}`, for a
-- request sent with confirm = true). A kept answer is given again to a request with the same key
-- (the launcher re-sent it after its server died) and, once lost, to the next request of the same
-- kind for its session, oldest first (a watch never gets a poll's answer: it would wake without a
-- reason): lost means the connection it went out on closed unconfirmed (the launcher died with its
-- server), or `undelivered {key}` (the host cancelled the request first). A launcher that never
-- confirms (one started before confirmations existed: confirm absent) gets its answers kept only
-- for its own re-send, the session's latest one of each kind, never lost. A request whose own
-- answer is kept gets that one before any lost one. A resume of a session forgets its kept death
-- notices (exited, orphaned): the host that resumes it knows. A daemon reload waits while an
-- answer is on its way, and while a watch answer is lost (upgrade.lua); a live handover waits while
-- one is on its way and takes the rest along.
--
-- State: d.unconfirmed[sid] = list, oldest first, of {kind, key, orch, result, conn, confirm}; kind
-- is "watch" or "poll"; conn is nil once the answer is lost (or, for one without confirm, once it
-- came through a handover). An asker is {kind, key, conn, confirm}: a watch (watch.lua) or a poll
-- (api.lua).
local log = require "rmcp.lib.log"

local M = {}

-- Answers kept per session at most; past it the oldest goes (with a warning): a host that loses
-- eight answers of one session in a row without asking again has stopped asking.
M.MAX_PER_SESSION = 8

-- The kind of kept answer u (one kept by code from before polls were kept, across a hot reload,
-- has none: a watch's).
local function kind_of(u)
  return u.kind or "watch"
end

-- The asker a watch or poll request of conn with params p is (kind "watch" or "poll").
function M.asker(kind, conn, p)
  local key = type(p.delivery_key) == "string" and p.delivery_key or nil
  return { kind = kind, key = key, conn = conn, confirm = key ~= nil and p.confirm == true }
end

-- The kept answer of sid that asker w is to get, or nil: its own (w is the request it answered,
-- sent again), else the oldest lost one of its kind.
function M.due(d, w, sid)
  local list = d.unconfirmed[sid]
  if not list then return nil end
  local lost
  for _, u in ipairs(list) do
    if kind_of(u) == w.kind then
      if w.key ~= nil and u.key == w.key then return u end
      if u.confirm and u.conn == nil and not lost then lost = u end
    end
  end
  return lost
end

-- Records what asker w answered for sid: given (a kept answer it got, from M.due) or a fresh
-- result. A keyed request keeps it under its own key until confirmed; one without a key confirmed
-- it by getting it.
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
      -- no word will come for it: only the latest answer of its kind is kept, for the launcher's re-send
      for i = #list, 1, -1 do
        if not list[i].confirm and kind_of(list[i]) == w.kind then table.remove(list, i) end
      end
    end
    list[#list + 1] = { kind = w.kind, key = w.key, orch = w.conn.orch, result = fresh, conn = w.conn, confirm = w.confirm }
    if #list > M.MAX_PER_SESSION then
      log.warn("session %s: %d answers the host may not have got; the oldest is dropped", sid, #list)
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

-- True when a confirmable kept answer of sid satisfies pred(u).
local function any_confirmable(d, sid, pred)
  for _, u in ipairs(d.unconfirmed[sid] or {}) do
    if u.confirm and pred(u) then return true end
  end
  return false
end

-- True while a confirmable answer of sid is on its way: the launcher has not said what became of it.
function M.on_its_way(d, sid)
  return any_confirmable(d, sid, function(u) return u.conn ~= nil end)
end

-- True while sid has a lost watch answer (a turn's result) that waits for the session's next watch.
-- A lost poll answer is streamed output the transcript keeps, and a host may never poll again.
function M.waiting_lost(d, sid)
  return any_confirmable(d, sid, function(u) return u.conn == nil and kind_of(u) == "watch" end)
end

-- The kept answers as a live handover's state: {[sid] = {{kind, key, orch, confirm, result}, ...}}.
-- The connections do not survive the exec, so every confirmable answer arrives lost.
function M.export(d)
  local out = {}
  for sid, list in pairs(d.unconfirmed) do
    local l = {}
    for i, u in ipairs(list) do l[i] = { kind = kind_of(u), key = u.key, orch = u.orch, confirm = u.confirm, result = u.result } end
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
        list[i] = { kind = u.kind == "poll" and "poll" or "watch", key = u.key, orch = u.orch, confirm = u.confirm == true,
                    result = u.result }
      end
      d.unconfirmed[sid] = list
    end
  end
end

-- Forgets the kept answers of sid that report it exited or orphaned: it is being resumed, so the
-- host knows it died, and such an answer given again would have the host resume it and repeat its
-- last message once more. (The turn text one carried stays in the session's journal.)
function M.forget_death_notices(d, sid)
  local list = d.unconfirmed[sid]
  if not list then return end
  for i = #list, 1, -1 do
    local status = type(list[i].result) == "table" and list[i].result.status
    if status == "exited" or status == "orphaned" then table.remove(list, i) end
  end
  if #list == 0 then d.unconfirmed[sid] = nil end
end

-- Forgets the kept answers of sessions that are gone.
function M.prune(d)
  for sid in pairs(d.unconfirmed) do
    if not d.sessions[sid] then d.unconfirmed[sid] = nil end
  end
end

return M
