-- reasonix_worktree: look at or remove an isolated agent's worktree.
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_worktree",
  toolset = "worktree",
  title = "Agent worktree",
  description = "info, or remove a stopped agent's worktree: its branch is kept when it has commits (delete_branch "
    .. "to drop it); answers the merge and patch commands. Nothing is merged for you.",
  inputSchema = common.object({
    session_id = common.session_id(),
    action = { type = "string", enum = { "info", "remove" } },
    delete_branch = { type = "boolean", default = false },
  }, { "session_id", "action" }),
  annotations = { readOnlyHint = false, destructiveHint = true, idempotentHint = true, openWorldHint = false },
  handler = common.forward("worktree"),
}
