-- reasonix_diff: what an isolated agent changed, against the commit its worktree started from.
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_diff",
  toolset = "worktree",
  title = "Agent diff",
  description = "An isolate=worktree agent's changes vs its base (untracked included): --stat by default, "
    .. "stat=false for the patch (capped, truncated flag); commits; paths filter.",
  inputSchema = common.object({
    session_id = common.session_id(),
    stat = { type = "boolean", default = true },
    paths = { type = "array", items = { type = "string" } },
    max_bytes = { type = "integer", minimum = 1000, maximum = 45000, default = 40000 },
  }, { "session_id" }),
  annotations = { readOnlyHint = true, destructiveHint = false, idempotentHint = true, openWorldHint = false },
  handler = common.forward("diff"),
}
