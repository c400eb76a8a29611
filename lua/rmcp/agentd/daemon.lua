-- The daemon's one table, d, passed to every agentd module: its shape is declared here, once, and
-- built by new(). Each field names the module that owns it (the only one that writes it).
local uv = require "luv"

local M = {}

---@class Daemon
---@field paths table                  config.paths(): home, sock, lock, log, sessions (main.lua)
---@field pid integer                  this process (main.lua)
---@field version string               the binary's version (main.lua)
---@field lock integer?                fd of agentd.lock, held for the daemon's life (main.lua; upgrade.finish releases it)
---@field sessions table<string, Session> every session by id (agentd/session: create, restore, discard)
---@field sessions_gen integer         bumped whenever a session comes or goes (agentd/session: create, restore, discard)
---@field session_order table?         {gen, by_owner}: each orchestrator's sessions newest first as of sessions_gen (agentd/session: newest_first)
---@field parked_gen integer          bumped whenever a session is parked or unparked (agentd/session: park)
---@field parked_tally table?         {sessions_gen, parked_gen, swaps, by_owner}: each orchestrator's parked sessions counted and summed as of those and the hot reloads, and all its sessions' as of the list generation (agentd/session: tally, revision)
---@field conns table<AgentdConn, boolean> open socket connections (api.lua: accept, close)
---@field next_conn integer            the last connection number given (api.lua)
---@field server userdata?             the listening socket (main.lua; shutdown and handover close it)
---@field signals userdata[]           signal handles (main.lua)
---@field shutting_down boolean        shutdown or a reload's last step began (main.lua, upgrade.lua)
---@field watch_by_session table<string, table> the watch waiting on each session (watch.lua)
---@field waits table<table, boolean>  pending waits (watch.lua)
---@field receipts table<string, HeldAnswer[]> per session, the watch and poll answers held until their receipt (receipts.lua)
---@field upgrade table?               the daemon-reload state: exe, watcher, pending, grace, … (upgrade.lua)
---@field idle_exit table?             the idle-exit timer state (idle_exit.lua)
---@field models_cache table?          the last models answer (models.lua)
---@field retention_timer userdata?    the hourly prune (retention.lua)
---@field health table?                the health sampler's timer, shared /proc snapshot and bookkeeping per agent (health.lua)
---@field observers table?             observer connections and the sessions with a nudge pending (observe.lua)
---@field usage_day table?             the ledger's open day: {day, fd, by_owner = {owner → spent}, hours (its hourly sums), past (the days before, summed once)} (usage_ledger.lua)
---@field integrations table?         the merge queues: {by_id} (integrate/queue.lua); nil until one starts or is taken up
---@field routines RoutineState?       the routine scheduler's definitions, runs and timer (routines/scheduler.lua); nil until it starts
---@field on_change fun(s: Session, event: string?, extra: table?) a session changed: wake watches, emit agent_event (main.lua)
---@field on_output fun(s: Session)    a session has new output: wake waits (main.lua)
---@field shutdown fun(reason: string) stops the daemon (main.lua)
---@field close_connections fun(flush: boolean) closes every connection, flush: after its queued replies (main.lua: api.close)

-- A daemon table for paths (config.paths()) holding lock fd lock.
---@return Daemon
function M.new(paths, lock)
  return {
    -- (luv gives the pid as a float: an integer encodes without the JSON encoder's number fix)
    paths = paths, pid = math.tointeger(uv.os_getpid()), version = require("rmcp.host").version, lock = lock,
    sessions = {}, sessions_gen = 0, session_order = nil, parked_gen = 0, parked_tally = nil, conns = {}, next_conn = 0, server = nil, signals = {}, shutting_down = false,
    watch_by_session = {}, waits = {}, receipts = {},
    upgrade = nil, idle_exit = nil, models_cache = nil, retention_timer = nil, health = nil, observers = nil,
    routines = nil, usage_day = nil, integrations = nil,
    on_change = nil, on_output = nil, shutdown = nil, close_connections = nil,
  }
end

return M
