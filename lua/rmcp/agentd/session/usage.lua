-- What a session's agent spends: every increment read from its stream (reasonix's usage status
-- updates, an ACP agent's prompt results and usage_update costs), journaled the moment it arrives
-- and written to the day's ledger, added to the session's figures (s.usage: rules/usage.lua's
-- figure, plus unreported = turns that ended with no usage), and held against the budgets that
-- cover the session: its own, its fleet's, its orchestrator's for the day, and a policy's say.
-- A daemon death loses nothing journaled and counts nothing twice: the restore sums the journal.
local log = require "rmcp.lib.log"
local config = require "rmcp.config"
local hooks = require "rmcp.policy.hooks"
local rules = require "rmcp.rules.usage"
local ledger = require "rmcp.agentd.usage_ledger"
local state = require "rmcp.agentd.session.state"
local revision = require "rmcp.agentd.session.revision"

local M = {}

-- Error code of a spawn, resume or send a budget refuses.
M.REFUSED = -32022

-- The price of model (per million tokens: rules.price_spec) the policies give, or nil.
function M.price(model)
  return model and hooks.price(model, rules.price_spec) or nil
end

-- A new agent process for s: its cumulative token counters start afresh (an ACP agent's cumulative
-- cost is the session's: it goes on across a resume).
function M.agent_started(s)
  local seen = s.usage_seen
  s.usage_seen = seen and seen.acp_cost and { acp_cost = seen.acp_cost } or nil
end

-- A turn of s starts: its figure from nothing.
function M.turn_started(s)
  s.rt.turn_usage = rules.zero()
  s.rt.turn_reported = false
end

-- The owner whose day a session's spend counts in: a routine run's is its routine's creator.
local function day_owner(s)
  return s.on_behalf_of or s.owner
end

-- What s's fleet has spent: the sum over the sessions of its fleet.
local function fleet_spent(d, fleet)
  local sum = rules.zero()
  for _, o in pairs(d.sessions) do
    if type(o.fleet) == "table" and o.fleet.id == fleet.id and o.usage then rules.add(sum, o.usage) end
  end
  return { tokens = sum.total, cost = sum.cost, cost_unknown = sum.cost_unknown }
end

-- The daily budget of an orchestrator (REASONIX_MCP_DAILY_TOKENS / _COST of environment e), or nil.
function M.daily_budget(e)
  local b = rules.budget_from_env(config.env_of(e, "REASONIX_MCP_DAILY_TOKENS"), config.env_of(e, "REASONIX_MCP_DAILY_COST"),
    "REASONIX_MCP_DAILY_TOKENS/_COST")
  return b
end

-- The verdict of every budget covering s (nil: none covers it), after the policies' budget hook.
function M.verdict(d, s)
  local v
  local u = s.usage or rules.zero()
  if s.budget then
    v = rules.harsher(v, rules.verdict(s.budget, { tokens = u.total, cost = u.cost, cost_unknown = u.cost_unknown }, "session budget"))
  end
  if type(s.fleet) == "table" and s.fleet.budget then
    v = rules.harsher(v, rules.verdict(s.fleet.budget, fleet_spent(d, s.fleet), "fleet budget of " .. (s.fleet.name or s.fleet.id)))
  end
  local owner = day_owner(s)
  local daily = s.daily_budget
  if daily then
    v = rules.harsher(v, rules.verdict(daily, ledger.spent_today(d, owner), "daily budget of " .. owner))
  end
  return hooks.budget(s, u, v, rules.ACTIONS)
end

-- Acts on verdict v for s: a warning rides the next result; finish stops the agent when its turn
-- ends (at once when none runs: must_stop), stop now (must_stop). A stopped session stays resumable.
local function enforce(d, s, v)
  local rt = s.rt
  if not v or v.action == "go" then
    if rt then rt.budget_warning = nil end
    return
  end
  if v.action == "warn" then
    rt.budget_warning = v.note
    return
  end
  if rt.budget_stop or rt.stopping or not state.is_live(s) then return end
  rt.budget_stop = v.action
  s.budget_note = v.note
  log.info("session %s: %s (%s)", s.id, v.note, v.action == "stop" and "stopping now" or "stopping at the turn's end")
end

-- True when a budget wants s's agent stopped now (the caller stops it): "stop", or "finish" with
-- no turn running.
function M.must_stop(s)
  local rt = s.rt
  return rt ~= nil and rt.budget_stop ~= nil and not rt.stopping and (rt.budget_stop == "stop" or not rt.prompt_active)
end

-- Holds the other live sessions that share s's fleet or orchestrator day to their budgets now that
-- s's verdict v says stop: a fleet's or a day's budget stops all of its agents, the idle ones too,
-- not only the one whose spend crossed it. Returns those to stop now (the caller stops them).
local function sweep(d, s, v)
  if not v or (v.action ~= "finish" and v.action ~= "stop") then return nil end
  local fleet = type(s.fleet) == "table" and s.fleet.budget and s.fleet.id
  local day = s.daily_budget and day_owner(s)
  if not fleet and not day then return nil end
  local out
  for _, o in pairs(d.sessions) do
    local shares = (fleet and type(o.fleet) == "table" and o.fleet.id == fleet) or (day and o.daily_budget and day_owner(o) == day)
    if o ~= s and shares and o.rt and not o.rt.budget_stop and state.is_live(o) then
      enforce(d, o, M.verdict(d, o))
      if M.must_stop(o) then
        out = out or {}
        out[#out + 1] = o
      end
    end
  end
  return out
end

-- Counts increment inc of s: priced when the agent gave no cost and a price is known, journaled,
-- written to the ledger, added to the session's and the running turn's figures; then the budgets.
-- Returns the other sessions a fleet's or a day's budget stops now (sweep), or nil.
local function count(d, s, inc)
  if rules.empty(inc) then return end
  if not inc.cost and inc.total > 0 then
    local p = M.price(s.model)
    if p then inc.cost, inc.currency = rules.cost_at(inc, p) end
  end
  revision.set(s, "usage", rules.add(s.usage or rules.zero(), inc))
  local rt = s.rt
  if rt then
    rt.turn_usage = rules.add(rt.turn_usage or rules.zero(), inc)
    rt.turn_reported = true
  end
  state.journal(d, s, { type = "usage", u = inc, seen = s.usage_seen })
  ledger.append(d, s, inc)
  local v = M.verdict(d, s)
  enforce(d, s, v)
  return sweep(d, s, v)
end

-- A reasonix usage status update (params of `_reasonix.io/session/status_update`, event "usage").
-- Returns the other sessions a budget stops now (count), or nil.
function M.on_reasonix(d, s, params)
  local u = type(params.status) == "table" and params.status.usage
  if type(u) ~= "table" then return end
  local now, turn = rules.from_reasonix(u.cumulative), rules.from_reasonix(u.turn)
  if not now then return end
  local inc = rules.increment(now, s.usage_seen and s.usage_seen.total and s.usage_seen or nil, turn)
  s.usage_seen = now
  return count(d, s, inc)
end

-- An ACP usage_update: its cumulative cost (Claude Code's includes its side requests), held until
-- the turn's tokens come with the prompt's answer: one increment, tokens and what they cost.
function M.on_acp_update(s, update)
  local amount, currency = rules.acp_cost(update)
  if amount then s.rt.pending_cost, s.rt.pending_currency = amount, currency end
end

-- An ACP prompt's answer: its usage (else its _meta.quota's token count) is the turn's tokens; the cost is what the cumulative cost
-- grew by since the last one counted. ACP's cost is the session's, across its processes: one a
-- resumed agent reports a little lower (Claude Code drops a side request its old process never
-- saved) counts on from there, never as a fresh start. Returns the
-- other sessions a budget stops now (count), or nil.
function M.on_prompt_result(d, s, result)
  local f = type(result) == "table" and (rules.from_acp(result.usage) or rules.from_acp_quota(result._meta))
  local rt = s.rt
  local amount = rt.pending_cost
  if not f and not amount then return end
  f = f or rules.zero()
  if amount then
    local seen = s.usage_seen and s.usage_seen.acp_cost
    f.cost, f.currency = math.max(0, amount - (seen or 0)), rt.pending_currency
    s.usage_seen = { acp_cost = amount }
  end
  rt.pending_cost, rt.pending_currency = nil, nil
  return count(d, s, f)
end

-- A turn of s ended: its figure (a turn with no usage is counted unreported: its figures are
-- estimated, never invented), kept for the turn's end record and result. Returns the fields its
-- journal record takes.
function M.turn_ended(s)
  local rt = s.rt
  local turn = rt.turn_usage or rules.zero()
  rt.last_turn_usage = turn
  if not rt.turn_reported then
    if not s.usage then revision.set(s, "usage", rules.zero()) end
    revision.set_in(s, "usage", "unreported", (s.usage.unreported or 0) + 1)
    return { unreported = true }
  end
  return { u = turn.total }
end

-- True when s stops at this turn's end for its budget.
function M.stops_at_turn_end(s)
  return s.rt.budget_stop ~= nil
end

-- The compact usage of s's result (rules.line): the last turn, the session, a budget's warning or
-- the note of the budget that stopped it. Every poll and watch result shows it: the line is kept in
-- s's runtime while what it is made of is the same (s.usage and s.exit_reason bump s.list_rev:
-- revision.lua); no result changes the line it shows.
function M.line(s)
  if not s.usage then return nil end
  local rt = s.rt
  if not rt then return rules.line(nil, s.usage, nil, s.exit_reason == "budget" and s.budget_note or nil) end
  local turn, kept = rt.last_turn_usage, rt.usage_line
  local turn_total = turn and turn.total
  if kept and kept.rev == s.list_rev and kept.turn == turn_total and kept.warning == rt.budget_warning
    and kept.stop == rt.budget_stop and kept.note == s.budget_note then
    return kept.line
  end
  -- (also while it stops: the turn's result that comes before the exit says why it is the last)
  local note = (s.exit_reason == "budget" or rt.budget_stop) and s.budget_note or nil
  local r = rules.line(turn, s.usage, rt.budget_warning, note)
  rt.usage_line = { rev = s.list_rev, turn = turn_total, warning = rt.budget_warning, stop = rt.budget_stop,
    note = s.budget_note, line = r }
  return r
end

-- Why orchestrator owner may not spawn under its daily budget (rules.budget_spec's, nil: none),
-- or nil.
function M.spent_today_refusal(d, owner, daily)
  if not daily then return nil end
  local v = rules.verdict(daily, ledger.spent_today(d, owner), "daily budget of " .. owner)
  if v.action == "finish" or v.action == "stop" then
    return v.note .. " (REASONIX_MCP_DAILY_TOKENS / REASONIX_MCP_DAILY_COST; today's spend: reasonix_list's usage.today, `reasonix-mcp ctl usage`)"
  end
  return nil
end

-- Why s may not start a turn for its budgets (a resume or a message), or nil.
function M.refusal(d, s)
  local v = M.verdict(d, s)
  if v and (v.action == "finish" or v.action == "stop") then
    return v.note .. "; raise it (reasonix_configure budget, or the daily REASONIX_MCP_DAILY_* variables) to go on"
  end
  return nil
end

-- Sets s's budget (rules.budget_spec's; nil: none) and says at once what it now decides (a lower
-- one may stop a running agent, a higher one lifts a warning).
function M.set_budget(d, s, budget)
  s.budget = budget
  state.persist(d, s)
  if not (s.rt and state.is_live(s)) then return end
  local v = M.verdict(d, s)
  local rt = s.rt
  if rt.budget_stop and not rt.stopping and (not v or v.action == "go" or v.action == "warn") then
    -- raised before the turn it was to end has ended: that turn's end no longer stops it
    rt.budget_stop, s.budget_note = nil, nil
    log.info("session %s: its budget was raised; it goes on", s.id)
  end
  enforce(d, s, v)
end

-- Brings s's figures back from its journal's records (a session live when the daemon died): the
-- increments summed, the last cumulative seen, the turns that reported none.
function M.replay(s, records)
  local total, seen, any, unreported = rules.zero(), nil, false, 0
  for _, rec in ipairs(records) do
    if rec.type == "usage" and type(rec.u) == "table" then
      local inc = rules.zero()
      for _, k in ipairs(rules.TOKEN_KEYS) do inc[k] = math.type(rec.u[k]) == "integer" and rec.u[k] or 0 end
      if type(rec.u.cost) == "number" then inc.cost, inc.currency = rec.u.cost, rec.u.currency end
      rules.add(total, inc)
      seen, any = type(rec.seen) == "table" and rec.seen or nil, true
    elseif rec.type == "turn_end" and rec.unreported then
      unreported = unreported + 1
    end
  end
  if not any and unreported == 0 then return end
  if unreported > 0 then total.unreported = unreported end
  revision.set(s, "usage", total)
  s.usage_seen = seen
end

return M
