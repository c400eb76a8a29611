-- Assigned fleets: the shapes a fleet file may take, made into one ordered list of assignments.
-- Stateless: reasonix_spawn reads the file (tools/spawn.lua), agentd checks every option and
-- cwd before any agent starts (agentd/methods/fleet.lua: spawn_fleet).
local M = {}

M.max_agents = 64 -- every returned id fits one reasonix_watch
M.max_file_bytes = 1024 * 1024

-- The options an assignment (or the defaults) may give; name and task are the assignment's own.
M.options = { "cwd", "model", "effort", "work_mode", "tool_approval", "keep_alive", "idle_timeout", "isolate", "strict",
              "sandbox", "budget", "agent" }

local option_set = {}
for _, k in ipairs(M.options) do option_set[k] = true end

local top_keys = { name = true, parallelism = true, defaults = true, agents = true, tasks = true, budget = true }

-- True when t is a decoded JSON array (an empty table counts as one).
local function is_array(t)
  return type(t) == "table" and (t[1] ~= nil or next(t) == nil)
end

-- Directory part of path.
local function dirname(path)
  return path:match("^(.*)/[^/]*$") or "."
end

-- The fields of one assignment (entry: a task string or an object) over the defaults; adds what is
-- wrong with it (label names it) to errs.
local function assignment(entry, name, defaults, label, errs)
  if type(entry) == "string" then entry = { task = entry } end
  if type(entry) ~= "table" or is_array(entry) and next(entry) ~= nil then
    errs[#errs + 1] = label .. ": must be a task string or an object with task"
    return nil
  end
  local a = {}
  for k, v in pairs(defaults) do a[k] = v end
  for k, v in pairs(entry) do
    if k == "name" or k == "task" or option_set[k] then
      a[k] = v
    else
      errs[#errs + 1] = string.format("%s: unknown field %s (expected name, task, %s)", label, tostring(k), table.concat(M.options, ", "))
    end
  end
  a.name = a.name or name
  if type(a.name) ~= "string" or a.name == "" then errs[#errs + 1] = label .. ": name must be a non-empty string" end
  if type(a.task) ~= "string" or a.task:match("^%s*$") then errs[#errs + 1] = label .. ": task must be a non-empty string" end
  return a
end

-- Makes decoded fleet file doc (read from path) into {name?, parallelism?, fleet_budget?, agents = {assignment…}}
-- in file order (a name → assignment map in name order), relative cwds resolved against the file's
-- directory. Returns it, or nil and every problem found, one per line.
function M.normalize(doc, path)
  local errs = {}
  local entries, defaults, out = nil, {}, {}
  if is_array(doc) then
    entries = doc
  elseif type(doc) == "table" then
    for k in pairs(doc) do
      if not top_keys[k] then
        errs[#errs + 1] = string.format("unknown key %s (expected name, parallelism, defaults, agents, tasks or budget)", tostring(k))
      end
    end
    if doc.agents ~= nil and doc.tasks ~= nil then errs[#errs + 1] = "give agents or tasks (an alias), not both" end
    entries = doc.agents ~= nil and doc.agents or doc.tasks
    if entries == nil then errs[#errs + 1] = "no agents: give an agents array, a name → task map, or a root array" end
    if doc.name ~= nil and type(doc.name) ~= "string" then errs[#errs + 1] = "name must be a string" end
    out.name = type(doc.name) == "string" and doc.name or nil
    out.parallelism = doc.parallelism
    out.fleet_budget = doc.budget -- (the whole fleet's, each agent's in defaults or its own: agentd checks it)
    if doc.defaults ~= nil then
      if type(doc.defaults) ~= "table" or is_array(doc.defaults) and next(doc.defaults) ~= nil then
        errs[#errs + 1] = "defaults must be an object of spawn options"
      else
        for k, v in pairs(doc.defaults) do
          if option_set[k] then defaults[k] = v
          else errs[#errs + 1] = string.format("defaults: unknown option %s (expected %s)", tostring(k), table.concat(M.options, ", ")) end
        end
      end
    end
  else
    errs[#errs + 1] = "the file must hold a JSON object or array"
  end
  local agents = {}
  if is_array(entries) then
    for i, entry in ipairs(entries) do
      agents[#agents + 1] = assignment(entry, "agent-" .. i, defaults, "agents[" .. i .. "]", errs) or false
    end
  elseif type(entries) == "table" then
    local names = {}
    for k in pairs(entries) do names[#names + 1] = k end
    table.sort(names, function(x, y) return tostring(x) < tostring(y) end)
    for _, n in ipairs(names) do
      agents[#agents + 1] = assignment(entries[n], tostring(n), defaults, "agents." .. tostring(n), errs) or false
    end
  elseif entries ~= nil then
    errs[#errs + 1] = "agents must be an array or an object mapping names to tasks"
  end
  if #agents == 0 and entries ~= nil then errs[#errs + 1] = "the fleet has no agents" end
  if #agents > M.max_agents then
    errs[#errs + 1] = string.format("%d agents: at most %d (so every id fits one reasonix_watch)", #agents, M.max_agents)
  end
  local seen, base = {}, dirname(path)
  for i, a in ipairs(agents) do
    if a then
      if type(a.name) == "string" then
        if seen[a.name] then errs[#errs + 1] = string.format("agents[%d]: name %s is used twice", i, a.name) end
        seen[a.name] = true
      end
      if type(a.cwd) == "string" and a.cwd ~= "" and a.cwd:sub(1, 1) ~= "/" then a.cwd = base .. "/" .. a.cwd end
    end
  end
  if #errs > 0 then return nil, errs end
  out.agents = agents
  return out
end

return M
