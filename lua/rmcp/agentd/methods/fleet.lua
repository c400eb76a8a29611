-- The socket methods on many sessions at once (PROTOCOL.md): spawn_fleet, resume_fleet, broadcast,
-- and their fan-out (at most `parallelism` in flight, each session its own result, in order).
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local async = require "rmcp.lib.async"
local lazy = require "rmcp.lib.lazy"
local config = require "rmcp.config"
local session = require "rmcp.agentd.session"
local ownership = require "rmcp.agentd.ownership"
local params = require "rmcp.agentd.methods.params"
local rules_spawn = require "rmcp.rules.spawn"
local rules_usage = require "rmcp.rules.usage"
local store = require "rmcp.agentd.store"
-- (loaded by the first request that needs them: an idle daemon stays small)
local models = lazy "rmcp.agentd.models"
local rules_fleet = lazy "rmcp.rules.fleet"
local fit = require "rmcp.rules.fit"

local M = {}

local bad, owned_ids, parallelism = params.bad, params.owned_ids, params.parallelism

-- Runs work(id, done) for each of ids with at most par in flight; each calls done(result) once;
-- finish(results in ids order) runs when all did.
local function fan_out(ids, par, work, finish)
  local results, started, finished = {}, 0, 0
  local function launch()
    started = started + 1
    local i = started
    if i > #ids then return end
    work(ids[i], function(r)
      results[i] = r
      finished = finished + 1
      if finished == #ids then return finish(results) end
      launch()
    end)
  end
  for _ = 1, math.min(par, #ids) do launch() end
end

-- The result of a fan-out: results[] in order plus how many succeeded (ok_key) and failed.
local function fan_result(results, ok_key)
  local out, ok = { results = results, failed = 0 }, 0
  for _, r in ipairs(results) do
    if r.error then out.failed = out.failed + 1 else ok = ok + 1 end
  end
  out[ok_key] = ok
  return out
end

-- Checks assignment a's explicit model and effort against its agent's models list; adds what is
-- wrong to errs.
local function check_one(a, list, errs)
  local m
  for _, x in ipairs(list.models) do if x.ref == a.o.model then m = x end end
  if a.o.explicit.model and not m then
    local refs = {}
    for _, x in ipairs(list.models) do refs[#refs + 1] = x.ref end
    errs[#errs + 1] = string.format("%s: model %s is not offered (models: %s)", a.label, a.o.model, table.concat(refs, ", "))
  elseif a.o.explicit.effort and m and #m.supported_efforts > 0 then
    local ok = false
    for _, e in ipairs(m.supported_efforts) do ok = ok or e == a.o.effort end
    if not ok then
      errs[#errs + 1] = string.format("%s: effort %s is not offered by %s (efforts: %s)", a.label, a.o.effort, m.ref,
        table.concat(m.supported_efforts, ", "))
    end
  end
end

-- Checks the explicit models and efforts of fleet assignments against the models each one's agent offers
-- (cached); adds a line per bad one to errs. Skipped when the list cannot be had (each spawn then
-- reports its own).
local function check_fleet_models(d, conn, assignments, errs)
  local lists = {} -- (each agent's models, asked once)
  for _, a in ipairs(assignments) do
    if a.o.explicit.model or a.o.explicit.effort then
      local agent = a.o.agent or "reasonix"
      if lists[agent] == nil then lists[agent] = models.list(d, conn.project_dir or config.user_home(), conn.env, agent) or false end
      local list = lists[agent]
      if list then check_one(a, list, errs) end
    end
  end
end

-- spawn_fleet: spawns every assignment of a fleet (rules/fleet.lua's shape), at most parallelism
-- starting at a time. Every option, cwd and model is checked first: one bad assignment rejects the
-- whole fleet and no agent starts. A failure while starting is that agent's result alone.
function M.spawn_fleet(d, conn, p, reply)
  if type(p.agents) ~= "table" or #p.agents == 0 then return reply(nil, bad("agents must be a non-empty array of assignments")) end
  if #p.agents > rules_fleet.max_agents then
    return reply(nil, bad(string.format("%d agents: at most %d", #p.agents, rules_fleet.max_agents)))
  end
  local par, perr = parallelism(p)
  if not par then return reply(nil, perr) end
  local fleet_budget, fberr = rules_usage.budget_spec(p.fleet_budget, "fleet_budget")
  if fberr then return reply(nil, bad(fberr)) end
  -- every agent of the fleet knows it: its spend is counted together, and a fleet budget holds it
  local fleet = { id = "fl-" .. store.random_hex(4), name = type(p.name) == "string" and p.name or nil, budget = fleet_budget }
  local errs, assignments, by_cwd, cwds = {}, {}, {}, {}
  for i, a in ipairs(p.agents) do
    local label = string.format("agents[%d] (%s)", i, tostring(type(a) == "table" and a.name or "?"))
    if type(a) ~= "table" then
      errs[#errs + 1] = label .. ": must be an object"
    else
      local o, oerr = rules_spawn.options(a, false, conn.env)
      if not o then
        errs[#errs + 1] = label .. ": " .. oerr
      else
        local cwd, cerr = ownership.confine(conn.project_dir, o.cwd, conn.env)
        if not cwd then
          errs[#errs + 1] = label .. ": " .. cerr.message
        else
          local info = { cwd = cwd, project_dir = conn.project_dir, orchestrator_id = conn.orch }
          rules_spawn.adjust(o, info)
          local boxed, berr = params.sandbox(o, conn, info)
          if not boxed then errs[#errs + 1] = label .. ": " .. berr.message end
          o.env, o.fleet = conn.env, fleet
          assignments[#assignments + 1] = { name = a.name, label = label, o = o, cwd = cwd }
          if o.isolate ~= "worktree" then -- an isolated agent has a workspace of its own
            if not by_cwd[cwd] then by_cwd[cwd] = {}; cwds[#cwds + 1] = cwd end
            table.insert(by_cwd[cwd], a.name or i)
          end
        end
      end
    end
  end
  async.run(function()
    if #errs == 0 then check_fleet_models(d, conn, assignments, errs) end
    if #errs > 0 then
      return reply(nil, bad("the fleet was rejected whole, no agent started:\n" .. table.concat(errs, "\n")))
    end
    local indexes = {}
    for i = 1, #assignments do indexes[i] = i end
    fan_out(indexes, par, function(i, done)
      local a = assignments[i]
      session.spawn(d, conn.orch, conn.project_dir, a.o, a.cwd, function(r, e)
        if not r then return done({ name = a.name, cwd = a.cwd, error = e.message }) end
        done({ name = a.name, session_id = r.session_id, status = r.status, cwd = r.cwd, model = r.model,
               warnings = r.warnings and #r.warnings > 0 and r.warnings or nil })
      end)
    end, function(results)
      local out = fan_result(results, "spawned")
      out.name = p.name
      out.fleet_id, out.fleet_budget = fleet.id, fleet.budget
      out.session_ids = json.array()
      for _, r in ipairs(results) do
        if r.session_id then out.session_ids[#out.session_ids + 1] = r.session_id end
      end
      -- agents sharing a real workspace queue behind one another's turns (the agent's workspace lease)
      local shared = json.array()
      for _, cwd in ipairs(cwds) do
        if #by_cwd[cwd] > 1 then shared[#shared + 1] = { cwd = cwd, agents = by_cwd[cwd] } end
      end
      if #shared > 0 then out.shared_workspaces = shared end
      reply(fit.fit(out))
    end)
  end, function(e) reply(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "spawn_fleet failed: " .. tostring(e))) end)
end

-- broadcast: send's forced steer to several sessions at once, at most parallelism in flight; each
-- session gets its own result, and a failure does not undo the deliveries.
function M.broadcast(d, conn, p, reply)
  local ids, err = owned_ids(d, conn, p)
  if not ids then return reply(nil, err) end
  if type(p.message) ~= "string" or p.message:match("^%s*$") then return reply(nil, bad("message must be a non-empty string")) end
  local expect = p.expect ~= json.null and p.expect or nil
  if expect ~= nil and expect ~= "steer" and expect ~= "new_turn" then
    return reply(nil, bad('expect must be "steer" or "new_turn" (omit it to accept either)'))
  end
  local par, perr = parallelism(p)
  if not par then return reply(nil, perr) end
  fan_out(ids, par, function(id, done)
    session.send(d, d.sessions[id], p.message, expect, function(r, e)
      done(r or { session_id = id, status = d.sessions[id].status, error = e.message })
    end)
  end, function(results) reply(fit.fit(fan_result(results, "delivered"))) end)
end

-- The prompt that continues a turn a daemon death cut short.
local CONTINUE = "Your previous turn was interrupted (the agent daemon stopped). Continue the task where you left off."

-- resume_fleet: resume for several sessions, at most parallelism at a time; a session whose turn a
-- daemon death cut short starts a turn that continues it (unless continue_interrupted is false),
-- the others stay idle. Each session gets its own result; a failure undoes nothing.
function M.resume_fleet(d, conn, p, reply)
  local ids, err = owned_ids(d, conn, p)
  if not ids then return reply(nil, err) end
  local changes, cherr = params.resume_changes({ keep_alive = p.keep_alive, idle_timeout = p.idle_timeout,
                                                 model = p.model, effort = p.effort, tool_approval = p.tool_approval,
                                                 work_mode = p.work_mode })
  if not changes then return reply(nil, cherr) end
  if p.continue_interrupted ~= nil and type(p.continue_interrupted) ~= "boolean" then
    return reply(nil, bad("continue_interrupted must be a boolean (default true)"))
  end
  local par, perr = parallelism(p)
  if not par then return reply(nil, perr) end
  fan_out(ids, par, function(id, done)
    local s = d.sessions[id]
    local interrupted = s.interrupted_turn == true and p.continue_interrupted ~= false
    session.resume(d, s, changes, conn.env, function(r, e)
      if not r then return done({ session_id = id, status = s.status, error = e.message }) end
      local out = { session_id = id, status = s.status, already_live = r.already_live }
      if not interrupted or r.already_live then return done(out) end
      session.send(d, s, CONTINUE, "new_turn", function(sent, serr)
        out.status, out.continued, out.error = s.status, sent and true or nil, serr and serr.message or nil
        done(out)
      end)
    end)
  end, function(results)
    local out = fan_result(results, "resumed")
    out.session_ids = ids
    reply(fit.fit(out))
  end)
end

return M
