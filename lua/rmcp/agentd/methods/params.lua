-- Argument checks the socket methods share (agentd/methods/*): the error a bad argument gets, the
-- caller's session ids, timeouts, fan-out parallelism and the changes a resume asks for. Not a
-- method module: the dispatcher (agentd/api.lua) does not look here.
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local ownership = require "rmcp.agentd.ownership"
local rules_spawn = require "rmcp.rules.spawn"
local rules_sandbox = require "rmcp.rules.sandbox"
local hooks = require "rmcp.policy.hooks"

local M = {}

-- A bad-params error naming the problem.
function M.bad(msg)
  return jsonrpc.error(jsonrpc.INVALID_PARAMS, msg)
end

-- Checks params.session_ids: a non-empty array (or one id string) of the caller's sessions; returns the
-- ids without repeats, or nil, error.
function M.owned_ids(d, conn, params)
  local ids = params.session_ids
  if type(ids) == "string" then ids = { ids } end
  if type(ids) ~= "table" or #ids == 0 then return nil, M.bad("session_ids must be a non-empty array of session ids") end
  local out, seen = {}, {}
  for _, id in ipairs(ids) do
    local s, err = ownership.lookup(d.sessions, conn.orch, id)
    if not s then return nil, err end
    if not seen[id] then seen[id] = true; out[#out + 1] = id end
  end
  return out
end

-- Checks an optional timeout (seconds, >= 0); returns the error, or nothing when it is fine.
function M.check_timeout(params)
  if params.timeout ~= nil and params.timeout ~= json.null and (type(params.timeout) ~= "number" or params.timeout < 0) then
    return M.bad("timeout must be a number of seconds >= 0 (omit it to wait without limit)")
  end
  if params.timeout == json.null then params.timeout = nil end
end

-- Checks params.parallelism (1-16, default 8); returns it, or nil, error.
function M.parallelism(p)
  local par = p.parallelism
  if par == nil or par == json.null then return 8 end
  if type(par) ~= "number" or par % 1 ~= 0 or par < 1 or par > 16 then
    return nil, M.bad("parallelism must be an integer from 1 to 16 (default 8)")
  end
  return par
end

-- The changes a resume (or each of a fleet's) makes: keep_alive, idle_timeout and the agent options
-- the caller gave (set like a spawn's); nil, error when one is bad.
function M.resume_changes(p)
  local o, oerr = rules_spawn.options(p, true)
  if not o then return nil, M.bad(oerr) end
  local changes = {}
  if p.keep_alive ~= nil then changes.keep_alive = o.keep_alive end
  if p.idle_timeout ~= nil then changes.idle_timeout = o.idle_timeout end
  -- (a higher budget lets a session a budget stopped go on; null removes it)
  if p.budget ~= nil then changes.budget = o.budget or json.null end
  for _, k in ipairs(rules_spawn.order) do changes[k] = o[k] end
  return changes
end

-- Settles the sandbox of spawn options o (rules/spawn: o.sandbox) for caller conn, after the
-- policies' spawn_defaults (info: what they saw): a level they set read as a spec, the paths and
-- hosts their sandbox hook adds, and every read and write path confined as a cwd is. Returns true,
-- or nil and the error.
function M.sandbox(o, conn, info)
  if type(o.sandbox) == "string" then
    local box, err = rules_sandbox.spec(o.sandbox)
    if not box then return nil, M.bad(err) end
    o.sandbox = box
  end
  local box = o.sandbox
  if not box or box.level == "none" then return true end
  hooks.sandbox(box, info)
  for _, k in ipairs({ "read", "write" }) do
    for i, path in ipairs(box[k]) do
      local real, err = ownership.confine(conn.project_dir, path, conn.env, "sandbox." .. k .. " path")
      if not real then return nil, err end
      box[k][i] = real
    end
  end
  return true
end

return M
