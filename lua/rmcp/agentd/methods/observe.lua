-- The socket methods of observer connections (the dashboard; hello with observer = true): every
-- orchestrator's sessions and routines, read without consuming anything (agentd/observe.lua), and
-- the actions a person takes from the page, each run on behalf of the session's or routine's owner.
local jsonrpc = require "rmcp.lib.jsonrpc"
local log = require "rmcp.lib.log"
local observe = require "rmcp.agentd.observe"
local ownership = require "rmcp.agentd.ownership"
local params = require "rmcp.agentd.methods.params"
local sessions = require "rmcp.agentd.methods.sessions"
local routines = require "rmcp.agentd.methods.routines"

local M = {}

local bad = params.bad

-- Refuses a method to a connection that is not an observer; returns true when it did.
local function not_observer(conn, reply)
  if conn.observer then return false end
  reply(nil, bad("observer connections only (hello with observer = true)"))
  return true
end

-- The observer's session p.session_id (any orchestrator's); or nil after replying with the error.
local function any_session(d, p, reply)
  local s = type(p.session_id) == "string" and d.sessions[p.session_id]
  if not s then
    reply(nil, jsonrpc.error(ownership.UNKNOWN_SESSION, "unknown session " .. tostring(p.session_id)))
    return nil
  end
  return s
end

-- observe: every orchestrator's sessions, consuming nothing (the dashboard).
function M.observe(d, conn, _, reply)
  if not_observer(conn, reply) then return end
  reply(observe.fleet(d))
end

-- observe_usage: what the fleet spent lately, today by hour and the last p.days by day (the
-- dashboard's chart; read from the ledger, consuming nothing).
function M.observe_usage(d, conn, p, reply)
  if not_observer(conn, reply) then return end
  reply(observe.usage(d, p.days))
end

-- observe_session: one session's row, decisions, config and timeline, consuming nothing.
function M.observe_session(d, conn, p, reply)
  if not_observer(conn, reply) then return end
  local s = any_session(d, p, reply)
  if not s then return end
  reply(observe.session(d, s, p.since))
end

-- What an observer may do to a session: each action is the session method of that name.
local session_actions = { send = true, stop = true, resume = true, respond_permission = true, configure = true }

---@class Caller
---@field id integer          the connection the request came on (for the log)
---@field orch string         the orchestrator the method acts for: its sessions are the ones it may touch
---@field project_dir string? the root a cwd is confined to
---@field env table?          the environment the agents it spawns or resumes run with (nil: agentd's own)

-- Whom an observer's action on s is run for: the session's owner as agentd's record has it (the
-- browser cannot name one), confined to the session's project dir, its agents run with agentd's
-- environment (the owner's connection may be gone). A connection after hello is a Caller too, and
-- the session methods read nothing else of either.
---@return Caller
local function as_owner(conn, s)
  return { id = conn.id, orch = s.owner, project_dir = s.project_dir, env = nil }
end

-- observe_act: a dashboard action (send, stop, resume, respond_permission, configure) on a
-- session, run as its owner.
function M.observe_act(d, conn, p, reply)
  if not_observer(conn, reply) then return end
  if not session_actions[p.action] then
    return reply(nil, bad("action must be send, stop, resume, respond_permission or configure"))
  end
  local s = any_session(d, p, reply)
  if not s then return end
  local args = type(p.params) == "table" and p.params or {}
  args.session_id = s.id
  log.info("conn %d (observer): %s on %s as %s", conn.id, p.action, s.id, s.owner)
  sessions[p.action](d, as_owner(conn, s), args, reply)
end

-- observe_routines: every routine, for the dashboard (consumes nothing).
function M.observe_routines(d, conn, p, reply)
  if not_observer(conn, reply) then return end
  routines.routine_list(d, conn, { all = true, include_results = p.include_results == true }, reply)
end

-- What an observer may do to a routine (its owner's rights: the dashboard is the machine owner's).
local routine_actions = { run = "routine_run", stop = "routine_stop", pause = "routine_configure", enable = "routine_configure" }

-- observe_routine_act: run now, stop the current run, pause or enable a routine from the dashboard.
function M.observe_routine_act(d, conn, p, reply)
  if not_observer(conn, reply) then return end
  local method = routine_actions[p.action]
  if not method then return reply(nil, bad("action must be run, stop, pause or enable")) end
  local args = { routine_id = p.routine_id, all = true }
  if p.action == "pause" or p.action == "enable" then args.enabled = p.action == "enable" end
  log.info("conn %d (observer): routine %s on %s", conn.id, p.action, tostring(p.routine_id))
  routines[method](d, conn, args, reply)
end

return M
