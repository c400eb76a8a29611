-- The socket API of agentd (see PROTOCOL.md): connections, the hello handshake, one handler per
-- method, ownership checks, and agent_event notifications to the owning orchestrator's connections.
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local async = require "rmcp.lib.async"
local log = require "rmcp.lib.log"
local after_reply = require "rmcp.lib.after_reply"
local flow = require "rmcp.lib.flow"
local channel = require "rmcp.channel"
local config = require "rmcp.config"
local session = require "rmcp.agentd.session"
local store = require "rmcp.agentd.store"
local watch = require "rmcp.agentd.watch"
local kept = require "rmcp.agentd.kept"
local ownership = require "rmcp.agentd.ownership"
local lazy = require "rmcp.lib.lazy"
-- (loaded by the first request that needs them: an idle daemon stays small)
local transcript = lazy "rmcp.agentd.transcript"
local models = lazy "rmcp.agentd.models"
local health = require "rmcp.agentd.health"
local observe = require "rmcp.agentd.observe"
local upgrade = require "rmcp.agentd.upgrade"
local retention = require "rmcp.agentd.retention"
local rules_spawn = require "rmcp.rules.spawn"
local rules_fleet = lazy "rmcp.rules.fleet"
local rules_poll = require "rmcp.rules.poll"
local rules_list = require "rmcp.rules.list"
local reload = require "rmcp.lib.reload"

local M = {}

M.PROTOCOL = 1
M.HELLO_REQUIRED = -32002
M.RESTART_REFUSED = -32005

-- A bad-params error naming the problem.
local function bad(msg)
  return jsonrpc.error(jsonrpc.INVALID_PARAMS, msg)
end

-- Checks params.session_ids: a non-empty array (or one id string) of the caller's sessions; returns the
-- ids without repeats, or nil, error.
local function owned_ids(d, conn, params)
  local ids = params.session_ids
  if type(ids) == "string" then ids = { ids } end
  if type(ids) ~= "table" or #ids == 0 then return nil, bad("session_ids must be a non-empty array of session ids") end
  local out, seen = {}, {}
  for _, id in ipairs(ids) do
    local s, err = ownership.lookup(d.sessions, conn.orch, id)
    if not s then return nil, err end
    if not seen[id] then seen[id] = true; out[#out + 1] = id end
  end
  return out
end

-- Checks an optional timeout (seconds, >= 0).
local function check_timeout(params)
  if params.timeout ~= nil and params.timeout ~= json.null and (type(params.timeout) ~= "number" or params.timeout < 0) then
    return bad("timeout must be a number of seconds >= 0 (omit it to wait without limit)")
  end
  if params.timeout == json.null then params.timeout = nil end
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

-- True when v is a table of string keys to string values.
local function string_map(v)
  if type(v) ~= "table" then return false end
  for k, x in pairs(v) do
    if type(k) ~= "string" or type(x) ~= "string" then return false end
  end
  return true
end

local methods = {}

-- hello: version handshake; binds the connection to an orchestrator and project dir.
function methods.hello(d, conn, p, reply)
  if p.protocol ~= M.PROTOCOL then
    return reply(nil, jsonrpc.error(M.HELLO_REQUIRED, string.format(
      "protocol mismatch: client speaks %s, this agentd (pid %d) speaks %d; restart agentd (reasonix-mcp ctl restart) or update the client",
      tostring(p.protocol), d.pid, M.PROTOCOL)))
  end
  if type(p.orchestrator_id) ~= "string" or p.orchestrator_id == "" then
    return reply(nil, bad("orchestrator_id must be a non-empty string"))
  end
  if p.project_dir ~= nil and (type(p.project_dir) ~= "string" or p.project_dir:sub(1, 1) ~= "/") then
    return reply(nil, bad("project_dir must be an absolute path"))
  end
  if p.env ~= nil and not string_map(p.env) then
    return reply(nil, bad("env must be an object of strings (the caller's environment)"))
  end
  conn.orch, conn.project_dir, conn.hello = p.orchestrator_id, p.project_dir, true
  conn.client = type(p.client) == "table" and p.client or {}
  conn.env = p.env -- the agents this connection spawns or resumes run with it (nil: agentd's own)
  if p.observer == true then
    conn.observer = true -- the dashboard: sees every orchestrator's sessions (observe_*), consumes nothing
    observe.add(d, conn)
  end
  log.info("conn %d: hello from %s (%s)%s", conn.id, tostring(conn.client.name), conn.orch,
           conn.project_dir and " for " .. conn.project_dir or ", no project dir")
  reply({ protocol = M.PROTOCOL, version = d.version, agentd_pid = d.pid, home = d.paths.home,
          reload = upgrade.status(d, conn.orch) })
end

-- spawn: a new session; returns once the agent is configured and the first prompt sent.
function methods.spawn(d, conn, p, reply)
  local o, err = rules_spawn.options(p, false, conn.env)
  if not o then return reply(nil, bad(err)) end
  local cwd, cerr = ownership.confine(conn.project_dir, o.cwd, conn.env)
  if not cwd then return reply(nil, cerr) end
  rules_spawn.adjust(o, { cwd = cwd, project_dir = conn.project_dir, orchestrator_id = conn.orch })
  o.env = conn.env
  session.spawn(d, conn.orch, conn.project_dir, o, cwd, reply)
end

-- The changes a resume (or each of a fleet's) makes: keep_alive, idle_timeout and the agent options
-- the caller gave (set like a spawn's); nil, error when one is bad.
local function resume_changes(p)
  local o, oerr = rules_spawn.options(p, true)
  if not o then return nil, bad(oerr) end
  local changes = {}
  if p.keep_alive ~= nil then changes.keep_alive = o.keep_alive end
  if p.idle_timeout ~= nil then changes.idle_timeout = o.idle_timeout end
  for _, k in ipairs(rules_spawn.order) do changes[k] = o[k] end
  return changes
end

-- resume: revives a tombstone (exited/orphaned) with session/resume on a fresh agent.
function methods.resume(d, conn, p, reply)
  local s, err = ownership.lookup(d.sessions, conn.orch, p.session_id)
  if not s then return reply(nil, err) end
  local changes, cherr = resume_changes(p)
  if not changes then return reply(nil, cherr) end
  if p.cwd ~= nil and not session.is_live(s) then
    local cwd, cerr = ownership.confine(conn.project_dir, p.cwd, conn.env)
    if not cwd then return reply(nil, cerr) end
    changes.cwd = cwd
  end
  session.resume(d, s, changes, conn.env, reply)
end

-- configure: change a session's model, effort, work_mode or tool_approval (now when idle, before
-- the next turn when busy, at the resume when exited).
function methods.configure(d, conn, p, reply)
  local s, err = ownership.lookup(d.sessions, conn.orch, p.session_id)
  if not s then return reply(nil, err) end
  local o, oerr = rules_spawn.options(p, true)
  if not o then return reply(nil, bad(oerr)) end
  local wanted, any = {}, false
  for _, k in ipairs(rules_spawn.order) do
    if o.explicit[k] then wanted[k], any = o[k], true end
  end
  if not any then return reply(nil, bad("give at least one of model, effort, work_mode, tool_approval")) end
  if s.unreadable then return reply(nil, bad("session " .. s.id .. " is unreadable (" .. s.unreadable .. "); it cannot be configured")) end
  session.configure(d, s, wanted, reply)
end

-- send: forced steer (never dropped); expect narrows it.
function methods.send(d, conn, p, reply)
  local s, err = ownership.lookup(d.sessions, conn.orch, p.session_id)
  if not s then return reply(nil, err) end
  if type(p.message) ~= "string" or p.message:match("^%s*$") then return reply(nil, bad("message must be a non-empty string")) end
  if p.expect ~= nil and p.expect ~= json.null and p.expect ~= "steer" and p.expect ~= "new_turn" then
    return reply(nil, bad('expect must be "steer" or "new_turn"'))
  end
  session.send(d, s, p.message, p.expect ~= json.null and p.expect or nil, reply)
end

-- Checks params.parallelism (1-16, default 8); returns it, or nil, error.
local function parallelism(p)
  local par = p.parallelism
  if par == nil or par == json.null then return 8 end
  if type(par) ~= "number" or par % 1 ~= 0 or par < 1 or par > 16 then
    return nil, bad("parallelism must be an integer from 1 to 16 (default 8)")
  end
  return par
end

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

-- Checks the explicit models and efforts of fleet assignments against the models the agent offers
-- (cached); adds a line per bad one to errs. Skipped when the list cannot be had (each spawn then
-- reports its own).
local function check_fleet_models(d, conn, assignments, errs)
  local any = false
  for _, a in ipairs(assignments) do any = any or a.o.explicit.model or a.o.explicit.effort end
  if not any then return end
  local list = models.list(d, conn.project_dir or config.user_home(), conn.env)
  if not list then return end
  local by_ref = {}
  for _, m in ipairs(list.models) do by_ref[m.ref] = m end
  for _, a in ipairs(assignments) do
    local m = by_ref[a.o.model]
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
end

-- spawn_fleet: spawns every assignment of a fleet (rules/fleet.lua's shape), at most parallelism
-- starting at a time. Every option, cwd and model is checked first: one bad assignment rejects the
-- whole fleet and no agent starts. A failure while starting is that agent's result alone.
function methods.spawn_fleet(d, conn, p, reply)
  if type(p.agents) ~= "table" or #p.agents == 0 then return reply(nil, bad("agents must be a non-empty array of assignments")) end
  if #p.agents > rules_fleet.max_agents then
    return reply(nil, bad(string.format("%d agents: at most %d", #p.agents, rules_fleet.max_agents)))
  end
  local par, perr = parallelism(p)
  if not par then return reply(nil, perr) end
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
          rules_spawn.adjust(o, { cwd = cwd, project_dir = conn.project_dir, orchestrator_id = conn.orch })
          o.env = conn.env
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
      reply(out)
    end)
  end, function(e) reply(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "spawn_fleet failed: " .. tostring(e))) end)
end

-- broadcast: send's forced steer to several sessions at once, at most parallelism in flight; each
-- session gets its own result, and a failure does not undo the deliveries.
function methods.broadcast(d, conn, p, reply)
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
  end, function(results) reply(fan_result(results, "delivered")) end)
end

-- The prompt that continues a turn a daemon death cut short.
local CONTINUE = "Your previous turn was interrupted (the agent daemon stopped). Continue the task where you left off."

-- resume_fleet: resume for several sessions, at most parallelism at a time; a session whose turn a
-- daemon death cut short starts a turn that continues it (unless continue_interrupted is false),
-- the others stay idle. Each session gets its own result; a failure undoes nothing.
function methods.resume_fleet(d, conn, p, reply)
  local ids, err = owned_ids(d, conn, p)
  if not ids then return reply(nil, err) end
  local changes, cherr = resume_changes({ keep_alive = p.keep_alive, idle_timeout = p.idle_timeout, model = p.model,
                                          effort = p.effort, tool_approval = p.tool_approval, work_mode = p.work_mode })
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
    reply(out)
  end)
end

-- poll: what is new since the last poll, lean by default.
function methods.poll(d, conn, p, reply)
  local s, err = ownership.lookup(d.sessions, conn.orch, p.session_id)
  if not s then return reply(nil, err) end
  local o, oerr = rules_poll.options(p)
  if not o then return reply(nil, bad(oerr)) end
  -- kept until the host has it, like a watch's answer (kept.lua); a lost one comes first, as it was
  local asker = kept.asker("poll", conn, p)
  local given = kept.due(d, asker, s.id)
  if given then
    log.info("poll %s: an answer the host may not have got, given again", tostring(asker.key))
    kept.answered(d, asker, s.id, given)
    return reply(given.result)
  end
  local snap = session.drain(d, s, o.detail)
  snap.health = health.anomaly(d, s)
  local result = rules_poll.shape(snap, o)
  kept.answered(d, asker, s.id, nil, result)
  reply(result)
end

-- transcript: what the agent did, from the journal.
function methods.transcript(d, conn, p, reply)
  local s, err = ownership.lookup(d.sessions, conn.orch, p.session_id)
  if not s then return reply(nil, err) end
  if p.max_tool_calls ~= nil and (type(p.max_tool_calls) ~= "number" or p.max_tool_calls < 0) then
    return reply(nil, bad("max_tool_calls must be a number >= 0"))
  end
  reply(transcript.build(s, store.read_journal(s.transcript_path), p.max_tool_calls and math.floor(p.max_tool_calls)))
end

-- watch: blocks until a watched session finishes, needs a decision or dies.
function methods.watch(d, conn, p, reply, req_id)
  local ids, err = owned_ids(d, conn, p)
  if not ids then return reply(nil, err) end
  local terr = check_timeout(p)
  if terr then return reply(nil, terr) end
  local o, oerr = rules_poll.options(p)
  if not o then return reply(nil, bad(oerr)) end
  if req_id == nil then return reply(nil, bad("watch must be a request (with an id)")) end
  watch.watch(d, conn, req_id, ids, p, o, reply)
end

-- delivered (a notification): the launcher wrote the answer to host request key to the host.
function methods.delivered(d, conn, p, reply)
  if type(p.key) ~= "string" then return reply(nil, bad("key must be a string")) end
  kept.confirm(d, conn.orch, p.key)
  reply()
end

-- undelivered (a notification): the answer to host request key did not reach the host.
function methods.undelivered(d, conn, p, reply)
  if type(p.key) ~= "string" then return reply(nil, bad("key must be a string")) end
  watch.unconfirm(d, conn.orch, p.key)
  reply()
end

-- wait: blocks until a session has new output, a turn end or a decision.
function methods.wait(d, conn, p, reply, req_id)
  local ids, err = owned_ids(d, conn, p)
  if not ids then return reply(nil, err) end
  local terr = check_timeout(p)
  if terr then return reply(nil, terr) end
  if req_id == nil then return reply(nil, bad("wait must be a request (with an id)")) end
  watch.wait(d, conn, req_id, ids, p, reply)
end

-- list: the caller's sessions.
function methods.list(d, conn, p, reply)
  local mine = {}
  for _, s in pairs(d.sessions) do
    if s.owner == conn.orch then mine[#mine + 1] = s end
  end
  local limit = p.limit
  if limit ~= nil and (math.type(limit) ~= "integer" or limit < 1 or limit > 500) then
    return reply(nil, bad("limit must be an integer from 1 to 500"))
  end
  local cursor
  if p.cursor ~= nil then
    local cerr
    cursor, cerr = rules_list.parse_cursor(p.cursor)
    if not cursor then return reply(nil, bad(cerr)) end
  end
  local r, err = rules_list.shape(mine, {
    encoded = true, include_task = p.include_task == true, pending_only = p.pending_only == true, all = p.all == true,
    detail = p.detail == true, current_work = session.current_work,
    health = function(s) return health.of(d, s) end,
    now = store.now(), recent_s = config.limit("list_recent_s"),
    limit = limit or math.floor(config.limit("list_limit")), cursor = cursor,
  })
  if not r then return reply(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "result not encodable: " .. tostring(err))) end
  r.reload = upgrade.status(d, conn.orch)
  if r.reload and r.reload.pending then r.reload_pending = true end
  reply(r)
end

-- prune: removes the caller's finished sessions by the retention rule, or by older_than_days /
-- keep given here; force also takes uncollected ones; dry_run only names them (retention.lua).
function methods.prune(d, conn, p, reply)
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
function methods.diff(d, conn, p, reply)
  local s = worktree_of(d, conn, p, reply)
  if not s then return end
  if s.worktree.state ~= "ready" then return reply(nil, bad("session " .. s.id .. "'s worktree was removed")) end
  if p.paths ~= nil and type(p.paths) ~= "table" then return reply(nil, bad("paths must be an array of strings")) end
  for _, x in ipairs(p.paths or {}) do
    if type(x) ~= "string" or x == "" or x:sub(1, 1) == "-" then return reply(nil, bad("paths must be an array of strings")) end
  end
  async.run(function()
    local r, err = require("rmcp.agentd.worktree").diff(d, s.worktree, { stat = p.stat ~= false, paths = p.paths,
      max_bytes = math.tointeger(p.max_bytes) })
    if not r then return reply(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, err)) end
    r.session_id = s.id
    r.changes = require("rmcp.agentd.worktree").changes(s.worktree)
    reply(r)
  end, function(e) reply(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "diff failed: " .. tostring(e))) end)
end

-- worktree: info about, or removal of, an isolated session's worktree (never while it runs).
function methods.worktree(d, conn, p, reply)
  local s = worktree_of(d, conn, p, reply)
  if not s then return end
  local wt = s.worktree
  local wtm = require "rmcp.agentd.worktree"
  if p.action == "info" then
    return async.run(function()
      reply({ session_id = s.id, path = wt.path, branch = wt.branch, base = wt.base, repo = wt.repo, state = wt.state,
              changes = wtm.changes(wt) })
    end, function(e) reply(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "worktree info failed: " .. tostring(e))) end)
  end
  if p.action ~= "remove" then return reply(nil, bad("action must be info or remove")) end
  if session.is_live(s) then return reply(nil, bad("session " .. s.id .. " is " .. s.status .. ": stop it first (reasonix_stop)")) end
  if wt.state ~= "ready" then return reply({ session_id = s.id, removed = json.null, note = "already removed" }) end
  async.run(function()
    local r, err = wtm.remove(wt, p.delete_branch == true)
    if not r then return reply(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, err)) end
    session.worktree_removed(d, s)
    r.session_id = s.id
    reply(r)
  end, function(e) reply(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "worktree remove failed: " .. tostring(e))) end)
end

-- respond_permission: answers a pending permission request or question.
function methods.respond_permission(d, conn, p, reply)
  local s, err = ownership.lookup(d.sessions, conn.orch, p.session_id)
  if not s then return reply(nil, err) end
  reply(session.respond(d, s, p.option_id, p.request_id))
end

-- stop: cancel + close + kill; the session stays as an exited tombstone.
function methods.stop(d, conn, p, reply)
  local s, err = ownership.lookup(d.sessions, conn.orch, p.session_id)
  if not s then return reply(nil, err) end
  session.stop(d, s, "stopped", function()
    reply({ session_id = s.id, status = s.status, exit_reason = s.exit_reason })
  end)
end

-- models: selectable models with their efforts (cached).
function methods.models(d, conn, _, reply)
  async.run(function()
    reply(models.list(d, conn.project_dir or config.user_home(), conn.env))
  end, function(e) reply(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "models failed: " .. tostring(e))) end)
end

-- restart: hands over to a fresh daemon from the current binary (global: every orchestrator
-- reconnects on its next call). Refused while the caller has live agents unless force, which stops
-- them (exited, exit_reason "daemon_restart", resumable); refused even with force while another
-- orchestrator has live agents (said as a count, never which); refused too when the binary does

-- ping: which daemon answers (restart_agentd verifies its successor by it).
function methods.ping(d, _, _, reply)
  reply({ agentd_pid = d.pid, version = d.version })
end

-- restart: replaces this daemon by a fresh one from the binary, by the rule a binary-upgrade reload
-- follows (upgrade.blocker): agents that are idle with their results delivered are closed
-- (resumable) and block nothing. Anything else of another orchestrator refuses it, counted, never
-- named; the caller's own refuse it unless force, which stops them (their state saved: resumable).
-- Replies once the new binary is verified, with the old pid, the caller's sessions a resume brings
-- back (recoverable_sessions) and those of them cut mid-work (checkpointed_sessions).
function methods.restart(d, conn, p, reply)
  if d.upgrade.handing_over then return reply({ restarting = true, old_pid = d.pid }) end
  local mine, others = {}, 0
  for _, b in ipairs(upgrade.blockers(d)) do
    if b.owner == conn.orch then mine[#mine + 1] = b.id .. " (" .. b.why .. ")" else others = others + 1 end
  end
  if others > 0 then
    return reply(nil, jsonrpc.error(M.RESTART_REFUSED, string.format(
      "restart refused: other orchestrators have %d agent(s) at work or with undelivered results; a restart would "
        .. "end them, so it waits until they are done (force does not override this)", others)))
  end
  if #mine > 0 and p.force ~= true then
    return reply(nil, jsonrpc.error(M.RESTART_REFUSED, "restart refused: your agents still need the daemon: "
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
      reply({ restarting = true, old_pid = d.pid, recoverable_sessions = recoverable, checkpointed_sessions = checkpointed })
    end,
    on_refused = function(why) reply(nil, jsonrpc.error(M.RESTART_REFUSED, "restart refused: " .. why)) end,
  })
end

-- Refuses a method to a connection that is not an observer; returns true when it did.
local function not_observer(conn, reply)
  if conn.observer then return false end
  reply(nil, bad("observer connections only (hello with observer = true)"))
  return true
end

-- observe: every orchestrator's sessions, consuming nothing (the dashboard).
function methods.observe(d, conn, _, reply)
  if not_observer(conn, reply) then return end
  reply(observe.fleet(d))
end

-- observe_session: one session's row, decisions, config and timeline, consuming nothing.
function methods.observe_session(d, conn, p, reply)
  if not_observer(conn, reply) then return end
  local s = type(p.session_id) == "string" and d.sessions[p.session_id]
  if not s then return reply(nil, jsonrpc.error(ownership.UNKNOWN_SESSION, "unknown session " .. tostring(p.session_id))) end
  reply(observe.session(d, s, p.since))
end

-- What an observer may do to a session, each run as the session's owner.
local observer_actions = { send = true, stop = true, resume = true, respond_permission = true, configure = true }

-- observe_act: a dashboard action (send, stop, resume, respond_permission, configure) on a
-- session, run as its owner (agentd's record of it: the browser cannot name one).
function methods.observe_act(d, conn, p, reply)
  if not_observer(conn, reply) then return end
  if not observer_actions[p.action] then
    return reply(nil, bad("action must be send, stop, resume, respond_permission or configure"))
  end
  local s = type(p.session_id) == "string" and d.sessions[p.session_id]
  if not s then return reply(nil, jsonrpc.error(ownership.UNKNOWN_SESSION, "unknown session " .. tostring(p.session_id))) end
  local as_owner = { id = conn.id, orch = s.owner, project_dir = s.project_dir, client = conn.client, hello = true,
                     requests = conn.requests, peer = conn.peer }
  local params = type(p.params) == "table" and p.params or {}
  params.session_id = s.id
  log.info("conn %d (observer): %s on %s as %s", conn.id, p.action, s.id, s.owner)
  methods[p.action](d, as_owner, params, reply)
end

-- The routine scheduler (agentd/routines.lua), loaded and started on first use.
local function routines_of(d)
  local routines = require "rmcp.agentd.routines"
  routines.start(d)
  return routines
end

-- The handler of a routine method, or nil. agentd/routines.lua owns them; each is looked up at the
-- call, so the module loads with the first one and a hot reload applies.
local function routine_method(method)
  if not method:match("^routine_") or not require("rmcp.agentd.routines").methods[method] then return nil end
  return function(d, ...) return routines_of(d).methods[method](d, ...) end
end

-- observe_routines: every routine, for the dashboard (consumes nothing).
function methods.observe_routines(d, conn, p, reply)
  if not_observer(conn, reply) then return end
  routines_of(d).methods.routine_list(d, conn, { all = true, include_results = p.include_results == true }, reply)
end

-- What an observer may do to a routine (its owner's rights: the dashboard is the machine owner's).
local routine_actions = { run = "routine_run", stop = "routine_stop", pause = "routine_configure", enable = "routine_configure" }

-- observe_routine_act: run now, stop the current run, pause or enable a routine from the dashboard.
function methods.observe_routine_act(d, conn, p, reply)
  if not_observer(conn, reply) then return end
  local method = routine_actions[p.action]
  if not method then return reply(nil, bad("action must be run, stop, pause or enable")) end
  local params = { routine_id = p.routine_id, all = true }
  if p.action == "pause" or p.action == "enable" then params.enabled = p.action == "enable" end
  log.info("conn %d (observer): routine %s on %s", conn.id, p.action, tostring(p.routine_id))
  routines_of(d).methods[method](d, conn, params, reply)
end

-- shutdown: stops the daemon (tests, ctl).
function methods.shutdown(d, conn, _, reply)
  reply({})
  d.shutdown("shutdown requested by " .. tostring(conn.orch))
end

-- Sends agent_event for s to every connection of its orchestrator: the event says what s is now,
-- and goes out after the replies of this moment (a watch woken by the same change gets its
-- result first), in the order the events happened.
function M.emit(d, s, event, extra)
  local payload = { session_id = s.id, event = event, status = s.status, stop_reason = s.stop_reason,
                    transcript_path = s.transcript_path }
  for k, v in pairs(extra or {}) do payload[k] = v end
  local owner = s.owner
  after_reply.queue(function()
    local n = 0
    for conn in pairs(d.conns) do
      if conn.hello and conn.orch == owner and not conn.peer.closed then
        conn.peer:notify("agent_event", payload)
        n = n + 1
      end
    end
    log.info("agent_event %s %s (%s) → %d connection(s)", payload.session_id, event, payload.status, n)
  end)
end

-- Routes a request or notification of conn to its handler.
local function dispatch(d, conn, method, params, reply)
  if method == "$/cancel" then
    local cancel = conn.requests[params.id]
    if cancel then cancel() end
    return reply()
  end
  local fn = methods[method] or routine_method(method)
  if not fn then return reply(nil, jsonrpc.error(jsonrpc.METHOD_NOT_FOUND, "method not found: " .. method)) end
  if method ~= "hello" and not conn.hello then
    return reply(nil, jsonrpc.error(M.HELLO_REQUIRED, "hello required: send hello {protocol: 1, orchestrator_id, project_dir} first"))
  end
  if type(params) ~= "table" or params[1] ~= nil then return reply(nil, bad("params must be an object")) end
  -- Hot reload: a changed policy or module applies to this very call; a failed reload is reported
  -- (once) to the next MCP server that asked for warnings in hello, ahead of its reply.
  reload.check()
  if conn.hello and conn.client.warnings == true then
    for _, w in ipairs(reload.take_warnings()) do conn.peer:notify("reload_warning", { message = w }) end
  end
  fn(d, conn, params, reply, conn.peer.current_id)
end

---@class AgentdConn                 one client of the socket: an MCP server, ctl, the dashboard
---@field id integer                 its number in the log (d.next_conn)
---@field peer table                 its JSON-RPC peer (lib/jsonrpc.lua)
---@field ch userdata?               the socket's channel (accept; nil for a connection made in process)
---@field peer_pid integer?          the client's pid (SO_PEERCRED)
---@field requests table<any, function> the cancel of each long request in flight, by request id ($/cancel)
---@field hello boolean              hello was answered: the methods are open
---@field orch string?               the orchestrator it speaks for (hello; ownership.lua checks sessions against it)
---@field project_dir string?        that orchestrator's project dir
---@field client table?              what the client said of itself in hello: name, version, warnings
---@field env table<string, string>? the caller's environment: the agents it spawns or resumes run with it
---@field observer boolean?          the dashboard: sees every orchestrator's sessions, consumes nothing

-- A new connection of d whose lines go out through send(line): its JSON-RPC peer dispatches to the
-- API methods (feed it with conn.peer:receive(line)). Registered in d.conns.
---@return AgentdConn
function M.connect(d, send, peer_pid)
  d.next_conn = d.next_conn + 1
  local conn = { id = d.next_conn, requests = {}, hello = false, peer_pid = peer_pid }
  conn.peer = jsonrpc.new({
    name = "agentd-conn",
    send = send,
    on_request = function(method, params, reply) dispatch(d, conn, method, params, reply) end,
    on_notification = function(method, params)
      dispatch(d, conn, method, params, function() end)
    end,
    on_protocol_error = function(message) log.warn("conn %d: %s", conn.id, message) end,
  })
  d.conns[conn] = true
  return conn
end

-- Takes over an accepted socket fd: NDJSON JSON-RPC with the API methods.
function M.accept(d, fd, peer_uid, peer_pid)
  local ch
  local conn = M.connect(d, function(line) if ch and not ch:is_closed() then ch:write(line) end end, peer_pid)
  -- a peer that leaves its replies unread is not read either until they drain
  local gate = flow.gate("conn " .. conn.id, function() return flow.unread(ch) end)
  local err
  ch, err = channel.open(fd, {
    mode = "ndjson",
    max_line = config.limit("max_line"),
    on_line = function(line)
      conn.peer:receive(line)
      gate:check()
    end,
    on_drain = function() gate:released() end,
    on_oversize = function(n)
      log.warn("conn %d: dropped a %d-byte line", conn.id, n)
      conn.peer:respond_error(nil, jsonrpc.INVALID_REQUEST,
        string.format("line too long: %d bytes (max %d); the request was dropped", n, config.limit("max_line")))
    end,
    on_eof = function() M.close(d, conn) end,
  })
  if not ch then
    log.error("cannot open connection from pid %s: %s", tostring(peer_pid), tostring(err))
    d.conns[conn] = nil
    return
  end
  conn.ch = ch
  gate.reader = ch
  log.debug("conn %d: accepted (uid %s pid %s)", conn.id, tostring(peer_uid), tostring(peer_pid))
end

-- Closes a connection and cancels its long requests; flush: let queued replies go out first (the
-- peer then sees EOF), for a daemon that is handing over.
function M.close(d, conn, flush)
  if not d.conns[conn] then return end
  d.conns[conn] = nil
  conn.peer:close("connection closed")
  watch.drop_conn(d, conn)
  observe.remove(d, conn)
  if conn.ch and not conn.ch:is_closed() then
    if flush then conn.ch:pause(); conn.ch:shutdown() else conn.ch:close() end
  end
  log.debug("conn %d: closed", conn.id)
end

return M
