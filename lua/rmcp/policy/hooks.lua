-- User-policy hooks (docs/policies.md): the places where the server and agentd make a decision ask the
-- loaded policy files here, in load order, passing the built-in default. Each hook call is protected:
-- an error is logged, reported once to the next caller, and counts as "no answer" (the default stands).
-- Stateless: the loaded policies live in policy/loader.lua.
local log = require "rmcp.lib.log"
local reload = require "rmcp.lib.reload"
local loader = require "rmcp.policy.loader"
local check = require "rmcp.policy.check"

local M = {}

-- Reports a policy mistake once per loaded version of that policy.
local function complain(p, msg, logged)
  if p.reported[msg] then return end
  p.reported[msg] = true
  reload.warn(msg, logged)
end

-- Calls hook fn of policy p, protected; returns its results, or nothing after an error.
local function call(p, hook, fn, ...)
  local res = table.pack(xpcall(fn, debug.traceback, ...))
  if res[1] then return table.unpack(res, 2, res.n) end
  local err = tostring(res[2])
  log.error("policy %s: hook %s failed: %s", p.path, hook, err)
  complain(p, string.format("policy %s: hook %s failed, the built-in default was used: %s", p.path, hook,
    err:match("^[^\n]*")), true)
end

-- The iterator over no policy.
local function none() return nil end

-- Iterates the loaded policies that define hook (with none loaded, the hooks asked on every call
-- make no iterator).
local function with(hook)
  local list, i = loader.policies(), 0
  if list[1] == nil then return none end
  return function()
    while true do
      i = i + 1
      local p = list[i]
      if not p then return nil end
      if p.hooks[hook] ~= nil then return p, p.hooks[hook] end
    end
  end
end

-- True when some loaded policy defines hook (callers skip building arguments otherwise).
function M.defined(hook)
  return with(hook)() ~= nil
end

-- A copy of v (tables deep, up to a depth) so a policy cannot change daemon state through arguments.
local function copy(v, depth)
  if type(v) ~= "table" or (depth or 0) > 6 then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = copy(x, (depth or 0) + 1) end
  return setmetatable(out, getmetatable(v))
end

-- What a policy sees of a session.
function M.session_view(s)
  return {
    id = s.id, owner = s.owner, cwd = s.cwd, project_dir = s.project_dir, task = s.task, status = s.status,
    model = s.model, effort = s.effort, tool_approval = s.tool_approval, work_mode = s.work_mode,
    keep_alive = s.keep_alive == true, idle_timeout = s.idle_timeout, stop_reason = s.stop_reason,
    turns_total = s.turns_total, created_at = s.created_at, updated_at = s.updated_at,
    routine_id = type(s.routine) == "table" and s.routine.id or nil, fleet = type(s.fleet) == "table" and s.fleet.name or nil,
  }
end

-- The absolute paths a tool call touches: its reported locations, else path-like arguments.
local function paths_of(tc, cwd)
  local resolve = require("rmcp.policy.api").resolve
  local out = {}
  for _, loc in ipairs(type(tc.locations) == "table" and tc.locations or {}) do
    if type(loc) == "table" and type(loc.path) == "string" then out[#out + 1] = resolve(loc.path, cwd) end
  end
  if #out == 0 and type(tc.rawInput) == "table" then
    for _, k in ipairs({ "path", "file_path", "filePath" }) do
      local v = tc.rawInput[k]
      if type(v) == "string" and v ~= "" then out[#out + 1] = resolve(v, cwd) end
    end
  end
  return out
end

-- The first option of a kind in preference order; returns its optionId.
local function option_of(options, kinds)
  for _, kind in ipairs(kinds) do
    for _, o in ipairs(options) do
      if o.kind == kind then return o.optionId end
    end
  end
end

-- Asks the policies about a permission request or question of session s (agentd). dec is the
-- recorded decision, tc the ACP toolCall. Returns nil (pass it on to the orchestrator) or
-- {verdict = "approve"|"deny"|"select", option_id (nil: cancel the request), reason, policy}.
function M.permission(s, dec, tc)
  reload.check()
  if not M.defined("permission") then return nil end
  local meta = type(tc._meta) == "table" and type(tc._meta["reasonix.io"]) == "table" and tc._meta["reasonix.io"] or {}
  local req = {
    request_id = dec.request_id, kind = dec.kind, title = tc.title, tool_kind = tc.kind,
    tool = type(meta.tool) == "string" and meta.tool or (type(tc.title) == "string" and tc.title:match("^(%S+)")) or tc.kind,
    input = copy(tc.rawInput), paths = paths_of(tc, s.cwd), options = copy(dec.options),
  }
  local view = M.session_view(s)
  for p, fn in with("permission") do
    local verdict, reason = call(p, "permission", fn, req, view)
    if verdict ~= nil then
      local d = { verdict = verdict, reason = type(reason) == "string" and reason or nil, policy = p.name }
      if verdict == "approve" then
        d.option_id = option_of(dec.options, { "allow_once", "allow_always" })
        if not d.option_id then
          complain(p, "policy " .. p.path .. ": permission returned approve for a request with no allow option; passed on")
          d = nil
        end
      elseif verdict == "deny" then
        d.option_id = option_of(dec.options, { "reject_once", "reject_always" })
      elseif type(verdict) == "table" and type(verdict.option_id) == "string" then
        d.verdict, d.option_id = "select", verdict.option_id
        local known = false
        for _, o in ipairs(dec.options) do known = known or o.optionId == verdict.option_id end
        if not known then
          complain(p, "policy " .. p.path .. ": permission chose option " .. verdict.option_id .. ", which the request does not offer; passed on")
          d = nil
        end
      else
        complain(p, "policy " .. p.path .. ": permission must return \"approve\", \"deny\", {option_id = ...} or nil; got " .. tostring(verdict))
        d = nil
      end
      if d then return d end
    end
  end
  return nil
end

-- Lets the policies adjust spawn options o (from rules/spawn.options) for info {cwd, project_dir,
-- orchestrator_id}; values the caller gave explicitly are never changed. Returns o.
function M.spawn_defaults(o, info)
  for p, fn in with("spawn_defaults") do
    local view = { task = o.task }
    for k in pairs(check.spawn_fields) do view[k] = o[k] end
    view.sandbox = type(o.sandbox) == "table" and o.sandbox.level or o.sandbox -- (a level: the hook sees the name)
    info.explicit = copy(o.explicit)
    local changes = call(p, "spawn_defaults", fn, view, info)
    if type(changes) == "table" then
      for k, v in pairs(changes) do
        local want = check.spawn_fields[k]
        if not want then
          complain(p, "policy " .. p.path .. ": spawn_defaults cannot set " .. tostring(k) .. " (fields: " .. check.names(check.spawn_fields) .. ")")
        elseif type(v) ~= want then
          complain(p, "policy " .. p.path .. ": spawn_defaults: " .. k .. " must be a " .. want)
        elseif not o.explicit[k] then
          o[k] = v
        end
      end
    elseif changes ~= nil then
      complain(p, "policy " .. p.path .. ": spawn_defaults must return a table of options or nil")
    end
  end
  return o
end

-- Lets the policies widen the sandbox spec box of a new agent (rules/sandbox.lua; info: cwd,
-- project_dir, orchestrator_id): each sandbox hook sees {level, read, write, hosts} and may return
-- {read = [paths], write = [paths], hosts = ["host:port"]} to add (agentd confines the paths as it does
-- a cwd). Returns box.
function M.sandbox(box, info)
  for p, fn in with("sandbox") do
    local add = call(p, "sandbox", fn, copy({ level = box.level, read = box.read, write = box.write, hosts = box.hosts }), info)
    if type(add) == "table" then
      for _, k in ipairs({ "read", "write", "hosts" }) do
        for _, v in ipairs(type(add[k]) == "table" and add[k] or {}) do
          if type(v) == "string" and v ~= "" then box[k][#box[k] + 1] = v
          else complain(p, "policy " .. p.path .. ": sandbox: " .. k .. " must be a list of strings") end
        end
      end
    elseif add ~= nil then
      complain(p, "policy " .. p.path .. ": sandbox must return {read, write, hosts} to add, or nil")
    end
  end
  return box
end

-- The idle grace of session s (seconds, or nil: never cleaned up) after the policies saw the
-- built-in grace; also returns the note of the policy that set it (reported when it fires).
function M.cleanup(s, grace)
  reload.check()
  local note, view
  for p, fn in with("cleanup") do
    view = view or M.session_view(s)
    local g, n = call(p, "cleanup", fn, view, grace)
    if g == false then
      grace, note = nil, nil
    elseif type(g) == "number" and g >= 0 then
      grace, note = g, type(n) == "string" and n or ("idle grace set by policy " .. p.name)
    elseif g ~= nil then
      complain(p, "policy " .. p.path .. ": cleanup must return seconds, false (never) or nil; got " .. tostring(g))
    end
  end
  return grace, note
end

-- Whether finished session s is kept by retention after the policies saw the built-in answer keep
-- (a boolean; agentd/retention.lua). A policy returns true (keep), false (may go) or nil.
function M.retain(s, keep)
  if not M.defined("retain") then return keep end
  local view
  for p, fn in with("retain") do
    view = view or M.session_view(s)
    local k = call(p, "retain", fn, view, keep)
    if type(k) == "boolean" then
      keep = k
    elseif k ~= nil then
      complain(p, "policy " .. p.path .. ": retain must return true, false or nil; got " .. tostring(k))
    end
  end
  return keep
end

-- The price of model (per million tokens: {input, output, cache_read?, cache_write?, reasoning?,
-- currency}; rules/usage.lua) from the policies' price hook — a table by model, or a function of the
-- model — or nil: unknown (a cost then stays unknown, never 0). check(price) returns it or nil, why.
function M.price(model, check)
  local price
  for p, h in with("price") do
    local v
    if type(h) == "table" then v = h[model] else v = call(p, "price", h, model) end
    if v ~= nil then
      local ok, why = check(v)
      if ok then price = v else complain(p, "policy " .. p.path .. ": price(" .. model .. "): " .. why) end
    end
  end
  return price
end

-- The policies' say on the budgets of session s after an increment: each budget hook sees the
-- session (with its own budget: {tokens?, cost?, currency?, warn_at?, on_exceed?} or nil), its
-- usage {tokens, cost?, currency?} and the built-in verdict ({action, scope, note, limit} or nil: no
-- budget covers it; limit is the budget of its scope) and may return an action (go, warn, finish,
-- stop) and a note. Returns the verdict that stands. actions: the names an answer may take.
function M.budget(s, usage, verdict, actions)
  if not M.defined("budget") then return verdict end
  local view, u = M.session_view(s), { tokens = usage.total, cost = usage.cost, currency = usage.currency }
  view.budget = copy(s.budget)
  for p, fn in with("budget") do
    local action, note = call(p, "budget", fn, view, copy(u), verdict and copy({ action = verdict.action, scope = verdict.scope,
      note = verdict.note, limit = verdict.limit }) or nil)
    if type(action) == "string" and actions[action] then
      verdict = { action = action, scope = "policy " .. p.name, note = type(note) == "string" and note
        or ("policy " .. p.name .. ": " .. action) }
    elseif action ~= nil then
      complain(p, "policy " .. p.path .. ": budget must return go, warn, finish, stop or nil; got " .. tostring(action))
    end
  end
  return verdict
end

-- The verify command an integration runs in each branch's worktree before it merges it (a shell
-- line), after the policies' verify hooks saw info {repo, target, session_ids, orchestrator_id} and
-- the command so far (the call's or REASONIX_MCP_VERIFY; nil: none). A hook returns a command, false
-- (none) or nil (no say).
function M.verify(info, command)
  for p, fn in with("verify") do
    local v = call(p, "verify", fn, copy(info), command)
    if v == false then
      command = nil
    elseif type(v) == "string" and v:match("%S") then
      command = v
    elseif v ~= nil then
      complain(p, "policy " .. p.path .. ": verify must return a shell command, false or nil")
    end
  end
  return command
end

-- True when no loaded policy answers caps with a function (a table's answer only changes with the
-- policy; a function may answer each call differently).
local function caps_fixed()
  for _, p in ipairs(loader.policies()) do
    if type(p.hooks.caps) == "function" then return false end
  end
  return true
end

-- The value of poll/watch cap name after asking each loaded policy's caps (value is the configured one).
local function asked_limit(name, value)
  for p, c in with("caps") do
    local v
    if type(c) == "table" then v = c[name] else v = call(p, "caps", c, name, value) end
    if type(v) == "number" and v >= 0 then
      value = math.floor(v)
    elseif v ~= nil then
      complain(p, "policy " .. p.path .. ": caps(" .. name .. ") must return a number >= 0 or nil")
    end
  end
  return value
end

-- The value of poll/watch cap name after the policies' caps (value is the configured one). A poll
-- asks a few on every call: with no policy loaded it is value; the answer of policies whose caps
-- are tables is kept with them (loader.derived: a policy edit loads new ones) for the configured
-- value and the reload generation (a swapped check or hooks) it was made for.
function M.limit(name, value)
  if loader.policies()[1] == nil or not check.caps[name] then return value end
  local memo = loader.derived()
  if memo.caps_fixed == nil then memo.caps_fixed, memo.caps = caps_fixed(), {} end
  if not memo.caps_fixed then return asked_limit(name, value) end
  local c, generation = memo.caps[name], reload.generation()
  if c and c.value == value and c.generation == generation then return c.answer end
  local answer = asked_limit(name, value)
  memo.caps[name] = { value = value, generation = generation, answer = answer }
  return answer
end

-- The command that runs an agent (default argv {bin, "acp"}; bin may be nil when no reasonix is
-- installed) after the policies' agent_command. info: {purpose = "session"|"models", session_id?,
-- cwd, model?, orchestrator_id?}. A policy returns an argv (a list of strings), or {argv, env? (a
-- map of strings added to the agent's environment), profile? (rules/profiles.lua: a name or a
-- table)}, or nil. Returns argv (or nil when there is none) and {env, profile} of the last policy
-- that gave them.
function M.agent_command(argv, info)
  local extra = {}
  for p, fn in with("agent_command") do
    local r = call(p, "agent_command", fn, copy(argv), info)
    if r ~= nil then
      local list, env, profile = r, nil, nil
      if type(r) == "table" and r.argv ~= nil then list, env, profile = r.argv, r.env, r.profile end
      local ok = type(list) == "table" and #list >= 1
      for i = 1, ok and #list or 0 do ok = ok and type(list[i]) == "string" and list[i] ~= "" end
      if env ~= nil then
        ok = ok and type(env) == "table"
        for k, v in pairs(ok and env or {}) do ok = ok and type(k) == "string" and type(v) == "string" end
      end
      if ok then
        argv = list
        extra = { env = env, profile = copy(profile) }
      else
        complain(p, "policy " .. p.path .. ": agent_command must return an argv (a list of strings), "
          .. "{argv = …, env = {NAME = \"value\"}?, profile = …?} or nil")
      end
    end
  end
  return argv, extra
end

-- The agents the policies add (their `agents` tables: name → {argv, profile?, about?}), later
-- policies over earlier ones.
function M.agents()
  local out
  for p, a in with("agents") do
    for name, spec in pairs(type(a) == "table" and a or {}) do
      if type(name) == "string" and type(spec) == "table" and type(spec.argv) == "table" and type(spec.argv[1]) == "string" then
        out = out or {}
        out[name] = copy(spec)
      else
        complain(p, "policy " .. p.path .. ": agents." .. tostring(name) .. " must be {argv = {…}, profile = …?, about = …?}")
      end
    end
  end
  return out
end

-- The tools the policies add: {tool, policy} in load order.
function M.tools()
  local out = {}
  for p, list in with("tools") do
    for _, t in ipairs(list) do out[#out + 1] = { tool = t, policy = p } end
  end
  return out
end

return M
