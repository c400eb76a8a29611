-- The socket methods on an isolated session's git worktree (PROTOCOL.md): diff, worktree (info,
-- remove) and worktree_forecast (several sessions' branches against a target and each other). The
-- worktree itself is agentd/worktree.lua's, the forecast agentd/integrate/forecast.lua's; each loads
-- with the first call that needs it.
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local async = require "rmcp.lib.async"
local lazy = require "rmcp.lib.lazy"
local session = require "rmcp.agentd.session"
local ownership = require "rmcp.agentd.ownership"
local params = require "rmcp.agentd.methods.params"
local worktrees = lazy "rmcp.agentd.worktree"
local forecasts = lazy "rmcp.agentd.integrate.forecast"
local fit = require "rmcp.rules.fit"

local M = {}

local bad = params.bad

-- The worktree of caller's session p.session_id; or nil after replying with the error.
local function worktree_of(d, conn, p, reply)
  local s, err = ownership.lookup(d.sessions, conn.orch, p.session_id)
  if not s then reply(nil, err); return nil end
  if type(s.worktree) ~= "table" then
    reply(nil, bad("session " .. s.id .. " has no worktree (spawn it with isolate=\"worktree\")"))
    return nil
  end
  return s
end

-- diff: an isolated session's changes against its worktree's base (agentd/worktree.lua).
function M.diff(d, conn, p, reply)
  local s = worktree_of(d, conn, p, reply)
  if not s then return end
  if s.worktree.state ~= "ready" then return reply(nil, bad("session " .. s.id .. "'s worktree was removed")) end
  if p.paths ~= nil and type(p.paths) ~= "table" then return reply(nil, bad("paths must be an array of strings")) end
  for _, x in ipairs(p.paths or {}) do
    if type(x) ~= "string" or x == "" or x:sub(1, 1) == "-" then return reply(nil, bad("paths must be an array of strings")) end
  end
  async.run(function()
    local r, err = worktrees.diff(d, s.worktree, { stat = p.stat ~= false, paths = p.paths,
      max_bytes = math.tointeger(p.max_bytes) })
    if not r then return reply(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, err)) end
    r.session_id = s.id
    r.changes = worktrees.changes(s.worktree)
    reply(fit.fit(r))
  end, function(e) reply(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "diff failed: " .. tostring(e))) end)
end

-- worktree: info about, or removal of, an isolated session's worktree (never while it runs).
function M.worktree(d, conn, p, reply)
  local s = worktree_of(d, conn, p, reply)
  if not s then return end
  local wt = s.worktree
  if p.action == "info" then
    return async.run(function()
      reply({ session_id = s.id, path = wt.path, branch = wt.branch, base = wt.base, repo = wt.repo, state = wt.state,
              changes = worktrees.changes(wt) })
    end, function(e) reply(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "worktree info failed: " .. tostring(e))) end)
  end
  if p.action ~= "remove" then return reply(nil, bad("action must be info or remove")) end
  if session.is_live(s) then return reply(nil, bad("session " .. s.id .. " is " .. s.status .. ": stop it first (reasonix_stop)")) end
  if wt.state ~= "ready" then return reply({ session_id = s.id, removed = json.null, note = "already removed" }) end
  async.run(function()
    local r, err = worktrees.remove(wt, p.delete_branch == true)
    if not r then return reply(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, err)) end
    session.worktree_removed(d, s)
    r.session_id = s.id
    reply(r)
  end, function(e) reply(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "worktree remove failed: " .. tostring(e))) end)
end

-- Keeps forecast r on each of its sessions (list's detail rows and the dashboard show it).
local function remember(d, r)
  local with = {}
  for _, p in ipairs(r.pairs or {}) do
    with[p.a] = with[p.a] or json.array()
    with[p.b] = with[p.b] or json.array()
    table.insert(with[p.a], p.b)
    table.insert(with[p.b], p.a)
  end
  for _, b in ipairs(r.branches or {}) do
    local s = d.sessions[b.session_id]
    if s then
      session.mark_forecast(d, s, { target = r.target, ahead = b.ahead, behind = b.behind, clean = b.clean,
                                    conflicts = b.conflicts, collides_with = with[b.session_id], at = os.time() })
    end
  end
end

-- worktree_forecast: which of the caller's worktree sessions' branches merge cleanly into p.target
-- (default: the branch they started from) and which pairs collide, on which files and hunks.
function M.worktree_forecast(d, conn, p, reply)
  local ids, err = params.owned_ids(d, conn, p)
  if not ids then return reply(nil, err) end
  if p.target ~= nil and p.target ~= json.null and type(p.target) ~= "string" then
    return reply(nil, bad("target must be a branch name"))
  end
  local sessions = {}
  for i, id in ipairs(ids) do sessions[i] = d.sessions[id] end
  async.run(function()
    local r, ferr, code = forecasts.run(sessions, p.target)
    if not r then return reply(nil, code == "GIT" and jsonrpc.error(jsonrpc.INTERNAL_ERROR, ferr) or bad(ferr)) end
    remember(d, r)
    reply(fit.fit(r))
  end, function(e) reply(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "forecast failed: " .. tostring(e))) end)
end

return M
