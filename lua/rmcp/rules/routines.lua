-- Routines as policy (hot-reloadable): what a definition may hold and its defaults, what a trigger
-- does given what runs, the owner routine runs belong to, and the execution contract each run's
-- fresh session gets once. The scheduler that applies these is agentd/routines/scheduler.lua.
local config = require "rmcp.config"
local schedule = require "rmcp.rules.schedule"
local usage = require "rmcp.rules.usage"

local M = {}

M.queue_max = 10          -- triggers a routine with overlap=queue keeps waiting
M.runs_kept = 100         -- run records kept per routine (the oldest go first)
M.runs_listed = 20        -- the newest runs routine_list shows
M.result_max = 4000       -- bytes of a run's final message kept in its record

-- The fields a definition has, each with its check (value -> ok, why) and default.
local enums = {
  overlap = { skip = true, queue = true },
  delegation = { disabled = true, allowed = true, encouraged = true },
  tool_approval = { ask = true, auto = true, yolo = true },
  work_mode = { economy = true, balanced = true, delivery = true },
  effort = { auto = true, disabled = true, low = true, medium = true, high = true, xhigh = true, max = true },
}
M.defaults = { schedule = "manual", overlap = "skip", delegation = "allowed", tool_approval = "auto", enabled = true }
M.fields = { "name", "prompt", "cwd", "schedule", "overlap", "delegation", "enabled", "model", "effort", "work_mode",
             "tool_approval", "sandbox", "budget", "agent" }

-- Machine-wide routine runs at once: config.lua's limit routine_concurrency (one that is not a
-- whole number of at least 1 counts as unset).
function M.concurrency()
  local n = math.tointeger(config.limit("routine_concurrency"))
  if n and n >= 1 then return n end
  return config.limits.routine_concurrency
end

-- The internal owner of routine id's runs: not an orchestrator, so its sessions are in no host's fleet.
function M.owner(id)
  return "routine:" .. id
end

-- Checks one field's value; returns the value to store (a schedule in its canonical text) or nil, why.
local function check(k, v)
  if k == "name" then
    if type(v) ~= "string" or v:match("^%s*$") or #v > 100 then return nil, "name must be a non-empty string (≤ 100 bytes)" end
    return v
  elseif k == "prompt" then
    if type(v) ~= "string" or v:match("^%s*$") or #v > 20000 then return nil, "prompt must be a non-empty string (≤ 20000 bytes)" end
    return v
  elseif k == "cwd" then
    if type(v) ~= "string" or v == "" then return nil, "cwd must be a path (relative: to the project dir)" end
    return v
  elseif k == "schedule" then
    local p, why = schedule.parse(v)
    if not p then return nil, why end
    return schedule.text(p)
  elseif k == "enabled" then
    if type(v) ~= "boolean" then return nil, "enabled must be true or false" end
    return v
  elseif k == "model" then
    if type(v) ~= "string" or v == "" then return nil, "model must be a non-empty string" end
    return v
  elseif k == "sandbox" then
    local box, why = require("rmcp.rules.sandbox").spec(v)
    if not box then return nil, why end
    return v -- (kept as given: each run's spawn reads it, its paths confined then)
  elseif k == "agent" then
    return require("rmcp.rules.agents").check(v, require("rmcp.policy.hooks").agents())
  elseif k == "budget" then
    if type(v) == "userdata" then return false end -- (null: the routine has none from now on)
    local b, why = usage.budget_spec(v)
    if not b then return nil, why end
    return b
  end
  if type(v) ~= "string" or not enums[k][v] then
    local names = {}
    for name in pairs(enums[k]) do names[#names + 1] = name end
    table.sort(names)
    return nil, k .. " must be one of " .. table.concat(names, ", ")
  end
  return v
end

-- The definition fields of params p, checked: for a new routine (base nil) with defaults filled and
-- name and prompt required; for a change (base: the routine) only the fields p gives. Returns the
-- fields, or nil and every problem at once (cwd may be left out: agentd uses the project dir).
function M.normalize(p, base)
  local out, errs = {}, {}
  for _, k in ipairs(M.fields) do
    local v = p[k]
    if v ~= nil then
      local ok, why = check(k, v)
      if ok == nil then errs[#errs + 1] = why else out[k] = ok end
    elseif not base then
      out[k] = M.defaults[k]
      if out[k] ~= nil and k == "schedule" then out[k] = schedule.text(assert(schedule.parse(out[k]))) end
    end
  end
  if not base then
    for _, k in ipairs({ "name", "prompt" }) do
      if p[k] == nil then errs[#errs + 1] = k .. " is required" end
    end
  end
  if #errs > 0 then return nil, table.concat(errs, "; ") end
  return out
end

-- The budget of a run's session from routine budget b (nil: none): a run is one turn, so unless b
-- says otherwise its budget stops the run at once when reached ("finish the turn" would never cut it).
function M.run_budget(b)
  if type(b) ~= "table" then return nil end
  local out = {}
  for k, v in pairs(b) do out[k] = v end
  out.on_exceed = out.on_exceed or "stop"
  return out
end

-- What a trigger does for a routine: "start" now, "queue" it behind the active run (or behind the
-- machine-wide limit), or "skip" it (recorded as skipped). busy: a run of this routine is active;
-- waiting: its triggers already waiting; slot: the machine-wide limit has room.
function M.on_trigger(routine, busy, waiting, slot)
  if routine.overlap == "queue" then
    if waiting >= M.queue_max then return "skip", "the queue is full (" .. M.queue_max .. " waiting)" end
    if busy or waiting > 0 or not slot then return "queue" end
    return "start"
  end
  if busy then return "skip", "the previous run is still active (overlap=skip)" end
  if waiting > 0 then return "skip", "a run is already waiting for a free slot (overlap=skip)" end
  if not slot then return "queue" end
  return "start"
end

local delegation_text = {
  disabled = "Do not delegate: do the work yourself, without subagents or parallel tasks.",
  allowed = "You may delegate independent investigation to Reasonix subagents (task, parallel_tasks, fleet) when it "
    .. "clearly helps; review every child's result yourself before acting on it.",
  encouraged = "Delegate independent investigation to Reasonix subagents (task, parallel_tasks, fleet) wherever "
    .. "it parallelises well; review every child's result yourself before acting on it.",
}

-- The task of a run's fresh session: the routine's instructions and, once, its execution contract.
function M.task(routine, run)
  return table.concat({
    routine.prompt, "",
    "[reasonix-mcp routine contract]",
    string.format("This is run %d of the routine %q (%s), triggered by %s. You start with no memory of earlier runs "
      .. "and nothing of them is resumed.", run.n, routine.name, routine.id, run.trigger),
    "Inspect the current state first (the files, branches, issues and pull requests there are now) and act "
      .. "idempotently: never open a duplicate issue, branch, pull request or fix for something that already "
      .. "exists or is already done; when there is nothing to do, say so and stop.",
    delegation_text[routine.delegation] or delegation_text.allowed,
    "Take no external action (pushing, opening or merging pull requests, closing issues) that these instructions "
      .. "do not authorise. End with a short report: what you inspected, what you changed (paths, links), what you "
      .. "left and why.",
    "Run marker: " .. run.marker,
  }, "\n")
end

-- The message that goes on with a run whose session the daemon lost mid-turn (it is resumed, not
-- spawned again: the work may be half done).
function M.continue_text(run)
  return string.format("[reasonix-mcp routine] The daemon running this routine restarted during run %d (marker %s). "
    .. "Inspect what is already done, then finish the run's work without repeating any of it, and end with the report.",
    run.n, run.marker)
end

return M
