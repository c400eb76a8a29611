-- The socket methods about the daemon itself (PROTOCOL.md): ping, models, prune, restart, shutdown.
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local async = require "rmcp.lib.async"
local log = require "rmcp.lib.log"
local lazy = require "rmcp.lib.lazy"
local config = require "rmcp.config"
local session = require "rmcp.agentd.session"
local upgrade = require "rmcp.agentd.upgrade"
local retention = require "rmcp.agentd.retention"
local params = require "rmcp.agentd.methods.params"
-- (loaded by the first request that needs it: an idle daemon stays small)
local models = lazy "rmcp.agentd.models"
local fit = require "rmcp.rules.fit"
local rules_agents = require "rmcp.rules.agents"
local hooks = require "rmcp.policy.hooks"

local M = {}

local RESTART_REFUSED = -32005
local bad = params.bad

-- The answer to ping of each daemon, as JSON: it never changes in a process, so it is encoded once.
local ping_answers = setmetatable({}, { __mode = "k" })

-- ping: which daemon answers (restart_agentd verifies its successor by it).
function M.ping(d, _, _, reply)
  local answer = ping_answers[d]
  if not answer then
    answer = json.raw(assert(json.encode({ agentd_pid = d.pid, version = d.version })))
    ping_answers[d] = answer
  end
  reply(answer)
end

-- models: the selectable models of an agent (p.agent, default the spawn default) with their efforts (cached).
function M.models(d, conn, p, reply)
  local agent, aerr = rules_agents.check(p.agent, hooks.agents())
  if aerr then return reply(nil, params.bad(aerr)) end
  async.run(function()
    local r, err = models.list(d, conn.project_dir or config.user_home(), conn.env, agent)
    if not r then return reply(nil, err) end
    r.agent = agent or config.default("agent", conn.env)
    reply(fit.fit(r))
  end, function(e) reply(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "models failed: " .. tostring(e))) end)
end

-- prune: removes the caller's finished sessions by the retention rule, or by older_than_days /
-- keep given here; force also takes uncollected ones; dry_run only names them (retention.lua).
function M.prune(d, conn, p, reply)
  local rule = retention.rule()
  if p.older_than_days ~= nil then
    if type(p.older_than_days) ~= "number" or p.older_than_days < 0 then return reply(nil, bad("older_than_days must be a number >= 0")) end
    rule.days = p.older_than_days
  end
  if p.keep ~= nil then
    if math.type(p.keep) ~= "integer" or p.keep < 0 then return reply(nil, bad("keep must be an integer >= 0")) end
    rule.keep = p.keep
  end
  rule.force = p.force == true
  local ids = retention.prune(d, conn.orch, rule, p.dry_run == true)
  local kept = json.array()
  for _, s in pairs(d.sessions) do
    if s.owner == conn.orch and not session.is_live(s) and retention.has_worktree(s) then kept[#kept + 1] = s.id end
  end
  table.sort(kept)
  reply({ pruned = json.array(ids), dry_run = p.dry_run == true or nil, keep = rule.keep, older_than_days = rule.days,
          kept_worktrees = #kept > 0 and kept or nil })
end

-- Ids (sorted) of the sessions with a live agent that pred(s) accepts.
local function live_sessions(d, pred)
  local out = {}
  for id, s in pairs(d.sessions) do
    if session.is_live(s) and pred(s) then out[#out + 1] = id end
  end
  table.sort(out)
  return out
end

-- restart: replaces this daemon by a fresh one from the binary, by the rule a binary-upgrade reload
-- follows (upgrade.blocker): agents that are idle with their results delivered are closed
-- (resumable) and block nothing. Anything else of another orchestrator refuses it, counted, never
-- named; the caller's own refuse it unless force, which stops them (their state saved: resumable).
-- Replies once the new binary is verified, with the old pid, the caller's sessions a resume brings
-- back (recoverable_sessions) and those of them cut mid-work (checkpointed_sessions).
function M.restart(d, conn, p, reply)
  if d.upgrade.handing_over then return reply({ restarting = true, old_pid = d.pid }) end
  local mine, others = {}, 0
  for _, b in ipairs(upgrade.blockers(d)) do
    if b.owner == conn.orch then mine[#mine + 1] = b.id .. " (" .. b.why .. ")" else others = others + 1 end
  end
  if others > 0 then
    return reply(nil, jsonrpc.error(RESTART_REFUSED, string.format(
      "restart refused: other orchestrators have %d agent(s) at work or with undelivered results; a restart would "
        .. "end them, so it waits until they are done (force does not override this)", others)))
  end
  if #mine > 0 and p.force ~= true then
    return reply(nil, jsonrpc.error(RESTART_REFUSED, "restart refused: your agents still need the daemon: "
      .. table.concat(mine, ", ") .. ". Let them finish and collect their results, or pass force=true to restart anyway "
      .. "(they are stopped; their transcripts stay resumable with resume)"))
  end
  local recoverable, checkpointed = json.array(), json.array()
  for _, id in ipairs(live_sessions(d, function(s) return s.owner == conn.orch end)) do
    recoverable[#recoverable + 1] = id
    if upgrade.blocker(d, d.sessions[id]) then checkpointed[#checkpointed + 1] = id end
  end
  log.info("restart requested by %s%s; closing %d of its agents", conn.orch, p.force == true and " (force)" or "", #recoverable)
  upgrade.handover(d, {
    reason = "restart requested by " .. conn.orch .. (p.force == true and " (force)" or ""),
    exit_reason = "daemon_restart",
    on_verified = function()
      reply(fit.fit({ restarting = true, old_pid = d.pid, recoverable_sessions = recoverable, checkpointed_sessions = checkpointed }))
    end,
    on_refused = function(why) reply(nil, jsonrpc.error(RESTART_REFUSED, "restart refused: " .. why)) end,
  })
end

-- shutdown: stops the daemon (tests, ctl).
function M.shutdown(d, conn, _, reply)
  reply({})
  d.shutdown("shutdown requested by " .. tostring(conn.orch))
end

return M
