-- reasonix_toolsets (not listed): which tool sets tools/list shows this host. Every tool is listed
-- by default; REASONIX_MCP_TOOLSETS lists fewer for a host with a tiny context, and this call
-- changes the listing for the rest of the MCP session (notifications/tools/list_changed).
local common = require "rmcp.tools.common"

local rules = require "rmcp.rules.toolsets"

local set_names = { "all" }
for _, set in ipairs(rules.SETS) do set_names[#set_names + 1] = set.name end
local names = { type = "array", items = { type = "string", enum = set_names } }

return {
  name = "reasonix_toolsets",
  hidden = true,
  title = "Tool sets",
  description = "List the tool sets, or change which are listed for this session.",
  inputSchema = common.object({ enable = names, disable = names }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = true, openWorldHint = false },
  cli = { none = "tool sets choose what an MCP host lists; a shell lists every verb" },
  -- Doc-only: docs/tools.md is generated from it (scripts/gen-docs.lua); tools/list never sends it.
  doc = {
    args = {
      { "enable", "Sets to list from now on in this MCP session (all: every set)." },
      { "disable", "Sets to stop listing." },
    },
    result = {
      { "sets[]", "{name, listed, about, tools[]} per set." },
    },
    notes = "Not listed itself. A host is told notifications/tools/list_changed; hosts that never refresh their list (Claude Code, Codex) see the change at their next start, with REASONIX_MCP_TOOLSETS.",
  },
  handler = function(args, ctx)
    if not ctx.toolsets then return nil, "tool sets belong to an MCP session" end
    return ctx.toolsets(args.enable, args.disable)
  end,
}
