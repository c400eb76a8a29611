-- reasonix_toolsets: which tool sets tools/list shows this host (rules/toolsets.lua); enabling or
-- disabling one sends notifications/tools/list_changed so the host fetches the new list.
local common = require "rmcp.server.tools.common"

local rules = require "rmcp.rules.toolsets"

local set_names = { "all" }
for _, set in ipairs(rules.SETS) do set_names[#set_names + 1] = set.name end
local names = { type = "array", items = { type = "string", enum = set_names } }

return {
  name = "reasonix_toolsets",
  title = "Tool sets",
  description = "List or enable more tools: fleet (spawn_fleet, broadcast, configure, dashboard), "
    .. "worktree (diff), routines (scheduled loop agents).",
  inputSchema = common.object({ enable = names, disable = names }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = true, openWorldHint = false },
  handler = function(args, ctx)
    return ctx.toolsets(args.enable, args.disable)
  end,
}
