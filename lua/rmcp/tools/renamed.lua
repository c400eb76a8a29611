-- The tool names an earlier surface listed and this one folds into another tool: each still answers
-- (never listed) with the same arguments and result, so a host that cached the old list and every
-- script written against it keep working. Each is the new tool's handler over mapped arguments,
-- checked first against the old tool's own schema.
local common = require "rmcp.tools.common"

local M = {}

-- name -> {tool (module under rmcp.tools), props (the old arguments: those of the new tool, or
-- defined here), required, set (fixed new arguments), cli?}
M.specs = {
  reasonix_spawn_fleet = { tool = "spawn", props = { path = { type = "string" } }, required = { "path" },
                           rename = { path = "fleet" } },
  reasonix_resume_fleet = { tool = "resume", props = { "session_ids", "model", "effort", "work_mode", "tool_approval",
                            "keep_alive", "idle_timeout", "parallelism", "continue_interrupted" }, required = { "session_ids" } },
  reasonix_broadcast = { tool = "send", props = { "session_ids", "message", "expect", "parallelism" },
                         required = { "session_ids", "message" } },
  reasonix_diff = { tool = "worktree", props = { "session_id", "stat", "paths", "max_bytes" }, required = { "session_id" },
                    set = { action = "diff" },
                    cli = { verb = "diff", positional = { "session_id", "paths..." }, switches = { patch = { stat = false } } } },
  reasonix_routine_create = { tool = "routine", props = "fields", required = { "name", "prompt" }, set = { action = "create" } },
  reasonix_routine_from_template = { tool = "routine", props = "fields", extra = { "template_id" }, required = { "template_id" },
                                     set = { action = "create" } },
  reasonix_routine_templates = { tool = "routine", props = {}, set = { action = "templates" } },
  reasonix_routine_list = { tool = "routine", props = { "include_prompt", "include_results" }, set = { action = "list" } },
  reasonix_routine_configure = { tool = "routine", props = "fields", extra = { "routine_id" }, required = { "routine_id" },
                                 set = { action = "configure" } },
  reasonix_routine_run = { tool = "routine", props = { "routine_id" }, required = { "routine_id" }, set = { action = "run" } },
  reasonix_routine_stop = { tool = "routine", props = { "routine_id" }, required = { "routine_id" }, set = { action = "stop" } },
  reasonix_routine_delete = { tool = "routine", props = { "routine_id" }, required = { "routine_id" }, set = { action = "delete" } },
}

-- The old tool's properties: named ones copied from the new tool's schema, or given whole.
local function old_properties(spec, new)
  local from = new.inputSchema.properties
  local names = spec.props
  if names == "fields" then
    names = {}
    for k in pairs(common.routine_fields()) do names[#names + 1] = k end
  end
  local props = {}
  for k, v in pairs(names) do
    if type(k) == "string" then props[k] = v else props[v] = assert(from[v], v) end
  end
  for _, k in ipairs(spec.extra or {}) do props[k] = assert(from[k], k) end
  return props
end

-- The tool that answers old name (spec) through the new tool new.
local function renamed_tool(name, spec, new)
  return {
    name = name,
    renamed_to = new.name,
    renamed_set = spec.set, -- the new tool's arguments the old name fixes (an action)
    title = new.title,
    description = "Renamed: " .. new.name .. (spec.set and spec.set.action and (" (action " .. spec.set.action .. ")") or "") .. ".",
    inputSchema = common.object(old_properties(spec, new), spec.required),
    annotations = new.annotations,
    long = new.long,
    answer_kept = new.answer_kept,
    cli = spec.cli,
    handler = function(args, ctx)
      local mapped = {}
      for k, v in pairs(args) do mapped[(spec.rename or {})[k] or k] = v end
      for k, v in pairs(spec.set or {}) do mapped[k] = v end
      return new.handler(mapped, ctx)
    end,
  }
end

-- The renamed tools, built over the loaded new ones (by_module: module name -> tool).
function M.tools(by_module)
  local out = {}
  for name, spec in pairs(M.specs) do
    out[#out + 1] = renamed_tool(name, spec, assert(by_module[spec.tool], spec.tool))
  end
  table.sort(out, function(a, b) return a.name < b.name end)
  return out
end

return M
