-- reasonix_worktree: an isolated agent's worktree: what it changed (diff), where it is (info), or
-- its removal once the agent stopped; and for several (session_ids) the conflict forecast against a
-- target branch and each other (forecast), or their integration into it (integrate).
local common = require "rmcp.tools.common"

-- The agentd method and params of each action.
local actions = {
  info = function(args) return "worktree", { session_id = args.session_id, action = "info" } end,
  diff = function(args)
    return "diff", { session_id = args.session_id, stat = args.stat, paths = args.paths, max_bytes = args.max_bytes }
  end,
  remove = function(args)
    return "worktree", { session_id = args.session_id, action = "remove", delete_branch = args.delete_branch }
  end,
  forecast = function(args) return "worktree_forecast", { session_ids = args.session_ids, target = args.target } end,
  integrate = function(args)
    return "worktree_integrate", { session_ids = args.session_ids, target = args.target, with = args.with }
  end,
}

-- The arguments each action takes beyond action (true: required).
local takes = {
  info = { session_id = true }, diff = { session_id = true, stat = false, paths = false, max_bytes = false },
  remove = { session_id = true, delete_branch = false },
  forecast = { session_ids = true, target = false }, integrate = { session_ids = true, target = false, with = false },
}

return {
  name = "reasonix_worktree",
  toolset = "worktree",
  title = "Agent worktree",
  description = "Isolated agents' branches: diff, info, remove once stopped (commits stay); session_ids: forecast "
    .. "conflicts, integrate into target.",
  inputSchema = common.object({
    session_id = common.session_id(),
    action = { type = "string", enum = { "diff", "info", "remove", "forecast", "integrate" } },
    stat = { type = "boolean", default = true },
    paths = { type = "array", items = { type = "string" } },
    max_bytes = { type = "integer", minimum = 1000, maximum = 45000, default = 40000 },
    delete_branch = { type = "boolean" },
    -- untyped, like spawn's budget: agentd checks them and names what is wrong (every byte of the
    -- listing is in the host's context)
    session_ids = {},
    target = {},
    with = { description = "{order,update,merge,verify,push,remote,on_conflict}" },
  }, { "action" }),
  annotations = { readOnlyHint = false, destructiveHint = true, idempotentHint = false, openWorldHint = false },
  cli = {
    positional = { "session_id", "action", "paths..." },
    sub = {
      forecast = { set = { action = "forecast" }, positional = { "session_ids..." } },
      integrate = { set = { action = "integrate" }, positional = { "session_ids..." } },
    },
  },
  -- Doc-only: docs/tools.md is generated from it (scripts/gen-docs.lua); tools/list never sends it.
  doc = {
    args = {
      { "action", "diff, info, remove (one session_id); forecast, integrate (session_ids)." },
      { "session_id", "The isolated session (diff, info, remove)." },
      { "stat", "diff: --stat against the commit it started from; false: the patch." },
      { "paths", "diff: only these paths." },
      { "max_bytes", "diff: the patch's size cap (truncated beyond)." },
      { "delete_branch", "remove: delete its branch even when it has commits." },
      { "session_ids", "forecast, integrate: the worktree sessions, of one repository." },
      { "target", "forecast, integrate: the branch; default the branch the repository was on when they were spawned." },
      { "with", "integrate: {order (forecast|given), update (rebase|merge), merge (merge|squash|ff), verify (a shell line), push (false|target|branches|both), remote (origin), on_conflict (continue|wait)}." },
    },
    result = {
      { "diff", "{session_id, base, branch, worktree, stat or diff, truncated?, commits[{sha, subject}], changes}." },
      { "info", "{path, branch, base, repo, state, changes}." },
      { "remove", "{removed, branch, branch_kept, commits, merge?, patch?}: a kept branch comes with the commands to take its work." },
      { "forecast", "{target, target_commit, branches[{session_id, branch, ahead, behind, clean, conflicts?, notes?}], pairs[{a, b, files, hunks?, notes?}], order[], ms}." },
      { "integrate", "At once {integration_id, target, repo, order[], with, status}; then each step wakes reasonix_watch with the session's integration {id, state, target, note?, files?, commit?, pushed?}." },
    },
  },
  handler = function(args, ctx)
    local wants = takes[args.action]
    for k in pairs(args) do
      if k ~= "action" and wants[k] == nil then return nil, k .. " does not go with action " .. args.action end
    end
    for k, required in pairs(wants) do
      if required and args[k] == nil then return nil, "action " .. args.action .. " needs " .. k end
    end
    local method, params = actions[args.action](args)
    return ctx.agentd(method, params, true)
  end,
}
