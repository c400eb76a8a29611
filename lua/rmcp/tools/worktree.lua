-- reasonix_worktree: an isolated agent's worktree: what it changed (diff), where it is (info), or
-- its removal once the agent stopped.
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
}

-- The arguments each action takes beyond session_id and action.
local takes = { info = {}, diff = { stat = true, paths = true, max_bytes = true }, remove = { delete_branch = true } }

return {
  name = "reasonix_worktree",
  toolset = "worktree",
  title = "Agent worktree",
  description = "An isolated agent's branch: diff, info, or remove once stopped (a branch with commits "
    .. "stays).",
  inputSchema = common.object({
    session_id = common.session_id(),
    action = { type = "string", enum = { "diff", "info", "remove" } },
    stat = { type = "boolean", default = true },
    paths = { type = "array", items = { type = "string" } },
    max_bytes = { type = "integer", minimum = 1000, maximum = 45000, default = 40000 },
    delete_branch = { type = "boolean" },
  }, { "session_id", "action" }),
  annotations = { readOnlyHint = false, destructiveHint = true, idempotentHint = true, openWorldHint = false },
  cli = { positional = { "session_id", "action", "paths..." } },
  handler = function(args, ctx)
    for k in pairs(args) do
      if k ~= "session_id" and k ~= "action" and not takes[args.action][k] then
        return nil, k .. " does not go with action " .. args.action
      end
    end
    local method, params = actions[args.action](args)
    return ctx.agentd(method, params, true)
  end,
}
