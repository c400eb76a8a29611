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
  -- Doc-only: docs/tools.md is generated from it (scripts/gen-docs.lua); tools/list never sends it.
  doc = {
    args = {
      { "task", "The full prompt, with its acceptance criteria: one agent. Give exactly one of task, agents, fleet." },
      { "agents", "Many agents at once: a list of {task, name?, …options}; the call's options are their defaults. A name → task map works too (`tasks` is an alias)." },
      { "fleet", "A fleet JSON file, absolute or relative to the project dir: {name?, parallelism?, defaults?, budget?, agents: [{name?, task, …options}]}. A root array works for small files; a relative cwd is resolved against the file." },
      { "agent", "Which ACP agent runs: reasonix (the default, or REASONIX_MCP_DEFAULT_AGENT), claude, codex, gemini, opencode, or one a policy adds (docs/agents.md). An unknown name is refused with the list this install knows." },
      { "model", "A model ref the agent offers (reasonix_models lists them); default REASONIX_MCP_DEFAULT_MODEL, else the agent's default when that one is not configured (with a warning)." },
      { "effort", "Reasoning effort; one the model does not support is refused with the valid values." },
      { "work_mode", "How much the agent does per turn." },
      { "tool_approval", "ask: every tool call waits for a decision; auto: the agent decides which to ask; yolo: none asked." },
      { "cwd", "Where the agent works; default the project dir. Must be inside the project dir or an allow_write dir of the agent's config (REASONIX_MCP_ALLOW_ANY_CWD=1 lifts this)." },
      { "keep_alive", "true: never stop the agent after a turn (as idle_timeout = -1); a daemon reload waits for it." },
      { "idle_timeout", "Seconds an idle agent lives before it is stopped (stays resumable); -1 never." },
      { "isolate", "worktree: the agent works in a git worktree of its own on branch reasonix/<session_id> (docs/worktrees.md)." },
      { "sandbox", "none, workspace, strict, or {level, read[], write[], hosts[], fallback}: the agent and all it runs inside bubblewrap (docs/sandbox.md)." },
      { "budget", "Tokens, or {tokens?, cost?, warn_at?, on_exceed?}; with agents or fleet it is the fleet's, shared (docs/budgets.md)." },
      { "strict", "true: an explicit option the agent cannot take fails the spawn instead of a warning." },
      { "parallelism", "With agents or fleet: how many agents start at once." },
    },
    result = {
      { "session_id", "Our id for the agent (rx-…): every other tool takes it. Returned at once; the agent keeps starting in the background." },
      { "status", "starting, running, idle, awaiting_decision, exited or orphaned." },
      { "cwd", "Where it works (inside its worktree when isolated)." },
      { "model, effort, tool_approval, work_mode", "The options in force." },
      { "keep_alive, idle_timeout", "Its lifetime options." },
      { "posture", "What the agent can do: {sandbox, bash, allow_write[], network, workspace_root, config_file, enforced{sandbox, by, writable[], hidden[], network, hosts[]}, warning?}." },
      { "agent_config", "The values the agent itself reports for its options." },
      { "skipped_options[], warnings[]", "Options the agent does not have, and warnings (a default model not configured, uncommitted changes left out of a worktree, …)." },
      { "worktree", "With isolate: {path, branch, base}." },
      { "transcript_path", "The session's journal file." },
      { "results[]", "Many agents: one per agent in list order, {name, session_id, status, cwd, model} or {name, cwd, error} (a failure while starting is that agent's alone)." },
      { "spawned, failed", "Many agents: the counts." },
      { "session_ids", "Many agents: the ids, ready for one reasonix_watch." },
      { "shared_workspaces", "Many agents: agents that share one workspace (they queue behind each other's turns: give each writer its own cwd or isolate)." },
      { "fleet_id, name, fleet_budget", "Many agents: the fleet's id, name and shared budget." },
    },
    notes = "Many agents: at most 64, so every id fits one reasonix_watch. The call is checked whole first (shape, options, each cwd, each explicit model and effort): one bad entry refuses it all, every problem listed, no agent started.",
  },
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
