-- reasonix_spawn: start one agent on a task, or many at once (an agents list or a fleet file);
-- returns at once with the session ids and each agent's posture.
local json = require "rmcp.lib.json"
local fleet = require "rmcp.rules.fleet"
local common = require "rmcp.tools.common"

local properties = common.agent_options(true)
properties.task = { type = "string", minLength = 1 }
properties.agents = { type = "array", minItems = 1, items = { type = "object" },
                      description = "[{task, name?, …options}]" }
properties.fleet = { type = "string", description = "Fleet JSON file." }
properties.parallelism = common.parallelism
properties.cwd = { type = "string" }
properties.keep_alive = common.keep_alive
properties.idle_timeout = common.idle_timeout()
properties.isolate = { type = "string", enum = { "none", "worktree" }, default = require("rmcp.config").default("isolate") }
properties.strict = { type = "boolean", description = "Unsupported options fail." }
properties.sandbox = common.sandbox(true)
properties.budget = common.budget(true)
properties.agent = {} -- (reasonix, claude, codex, gemini, opencode or a policy's: agentd names those it knows) -- (with agents or fleet: all of them together; each agent's is its own)

-- The spawn options of args that the agents of the many-agent form take as defaults.
local function options_of(args)
  local o = {}
  for _, k in ipairs(fleet.options) do
    if k ~= "budget" then o[k] = args[k] end -- (the call's budget is the fleet's, not each agent's)
  end
  return o
end

-- Reads and decodes the fleet file at path (relative: to the project dir); returns the decoded
-- document or nil, message.
local function read_fleet_file(path, project_dir)
  if path:sub(1, 1) ~= "/" then
    if not project_dir then return nil, "fleet must be an absolute path (this server has no project dir)" end
    path = project_dir .. "/" .. path
  end
  local f, err = io.open(path, "r")
  if not f then return nil, "cannot read the fleet file: " .. tostring(err) end
  local text = f:read(fleet.max_file_bytes + 1)
  f:close()
  if text == nil then return nil, "cannot read the fleet file " .. path .. " (a directory?)" end
  if #text > fleet.max_file_bytes then return nil, "the fleet file " .. path .. " is over 1 MiB" end
  local ok, doc = pcall(json.decode, text)
  if not ok then return nil, "the fleet file " .. path .. " is not JSON: " .. tostring(doc) end
  return doc, nil, path
end

-- The agentd spawn_fleet params of a many-agent call: the fleet file's or the agents list's
-- assignments over the call's options (the file's own defaults and each agent's options win).
local function fleet_params(args, ctx)
  local doc, path, where
  if args.fleet then
    local err
    doc, err, path = read_fleet_file(args.fleet, ctx.project_dir)
    if not doc then return nil, err end
    where = "the fleet file " .. path
  else
    doc, path, where = { agents = args.agents }, (ctx.project_dir or ".") .. "/agents", "agents"
  end
  if type(doc) == "table" and doc[1] == nil and next(doc) ~= nil then
    local defaults = options_of(args)
    for k, v in pairs(type(doc.defaults) == "table" and doc.defaults or {}) do defaults[k] = v end
    if next(defaults) then doc.defaults = defaults end
    doc.parallelism = doc.parallelism or args.parallelism
    if doc.budget == nil then doc.budget = args.budget end
  elseif next(options_of(args)) or args.parallelism or args.budget then
    doc = { agents = doc, defaults = options_of(args), parallelism = args.parallelism, budget = args.budget }
  end
  local out, errs = fleet.normalize(doc, path)
  if not out then return nil, where .. " was rejected whole, no agent started:\n" .. table.concat(errs, "\n") end
  out.path = args.fleet
  return out
end

return {
  name = "reasonix_spawn",
  title = "Spawn agents",
  description = "Start agents in the background: task, or agents/fleet for many; returns ids and posture.",
  inputSchema = common.object(properties),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = true },
  cli = { positional = { "task" } },
  handler = function(args, ctx)
    local ok, err = common.one_of(args, { "task", "agents", "fleet" })
    if not ok then return nil, err end
    if args.task then
      if args.parallelism then return nil, "parallelism goes with agents or fleet, not task" end
      return ctx.agentd("spawn", args, true)
    end
    local params, perr = fleet_params(args, ctx)
    if not params then return nil, perr end
    return ctx.agentd("spawn_fleet", params, true)
  end,
}
