-- Schema pieces several tools share, the shape every tool must have, and the handler that forwards
-- a tool call to agentd.
-- Stateless (reloadable): tools read defaults from rmcp.config when the list is built.
local config = require "rmcp.config"

local M = {}

-- Raises with what is wrong when tool (built-in or from a user policy; where says which file) lacks
-- the shape every MCP tool must have.
function M.check_tool(tool, where)
  local function bad(msg) error(where .. ": " .. msg, 0) end
  if type(tool) ~= "table" then bad("a tool must be a table") end
  if type(tool.name) ~= "string" or not tool.name:match("^[%w_%-%.]+$") or #tool.name > 64 then
    bad("tool name must be 1-64 characters of letters, digits, _ - . (got " .. tostring(tool.name) .. ")")
  end
  if type(tool.description) ~= "string" or tool.description == "" then bad("tool " .. tool.name .. ": description must be a non-empty string") end
  if type(tool.inputSchema) ~= "table" or tool.inputSchema.type ~= "object" then
    bad("tool " .. tool.name .. ": inputSchema must be a table with type = \"object\"")
  end
  if type(tool.handler) ~= "function" then bad("tool " .. tool.name .. ": handler must be a function") end
  local sets = require "rmcp.rules.toolsets"
  if tool.toolset ~= nil and not sets.known(tool.toolset) then
    bad("tool " .. tool.name .. ": toolset must be one of " .. sets.names() .. " (got " .. tostring(tool.toolset) .. ")")
  end
end

-- An object schema: properties, required names; unknown arguments are refused (typos surface).
function M.object(properties, required, extra)
  local s = { type = "object", properties = properties, additionalProperties = false }
  if required and #required > 0 then s.required = required end
  for k, v in pairs(extra or {}) do s[k] = v end
  return s
end

-- No built-in tool has an outputSchema: each result is an object whose fields are documented in
-- the description and in lua/rmcp/agentd/PROTOCOL.md (a bare {type = "object"} would cost every
-- host's context for nothing); structuredContent rides every result all the same.

-- The agent options of spawn (with_defaults: the defaults shown), resume and configure.
function M.agent_options(with_defaults)
  local function default(k) return with_defaults and config.default(k) or nil end
  return {
    model = { type = "string", default = default("model") },
    work_mode = { type = "string", enum = { "economy", "balanced", "delivery" }, default = default("work_mode") },
    tool_approval = { type = "string", enum = { "ask", "auto", "yolo" }, default = default("tool_approval"),
                      description = with_defaults and "ask: gated tool calls become permission requests." or nil },
    effort = { type = "string", enum = { "auto", "disabled", "low", "medium", "high", "xhigh", "max" },
               default = default("effort") },
  }
end

-- The fields of a routine (create, from_template, configure); agentd's rules/routines.lua checks them
-- (with an error naming the allowed values), so the agent options go without their enums here.
-- with_defaults: create's, with its defaults and the two descriptions (a template has its own
-- defaults; configure changes only what is given).
function M.routine_fields(with_defaults)
  local function default(v) return with_defaults and v or nil end
  return {
    name = { type = "string" },
    prompt = { type = "string" },
    cwd = { type = "string", description = with_defaults and "Default: the project dir." or nil },
    schedule = { type = "string", default = default("manual"),
                 description = with_defaults and "manual | every 30m | daily 09:00 [Area/City]" or nil },
    overlap = { type = "string", enum = { "skip", "queue" }, default = default("skip") },
    delegation = { type = "string", enum = { "disabled", "allowed", "encouraged" }, default = default("allowed") },
    enabled = { type = "boolean", default = default(true) },
    model = { type = "string" }, effort = { type = "string" }, work_mode = { type = "string" },
    tool_approval = { type = "string", enum = { "ask", "auto", "yolo" }, default = default("auto") },
  }
end

-- The routine_id argument of the single-routine tools.
function M.routine_id()
  return { type = "string" }
end

-- The session_id argument of the single-session tools.
function M.session_id()
  return { type = "string" }
end

-- The session_ids argument of watch and wait.
function M.session_ids()
  return { type = "array", minItems = 1, items = { type = "string" } }
end

-- The options poll accepts, shared with watch(detail=true) (described once, in poll's schema: described
-- says so). Defaults follow agentd's (and the REASONIX_MCP_INCLUDE_* / MAX_EVENTS overrides).
function M.poll_options(described)
  local function doc(text) return described and text or nil end
  return {
    include_events = { type = "array", items = { type = "string" },
                       description = doc("Only these types; any event selector implies detail.") },
    exclude_events = { type = "array", items = { type = "string" } },
    include_thought = { type = "boolean", default = config.flag("INCLUDE_THOUGHT"), description = doc("Reasoning text.") },
    include_full = { type = "boolean", default = config.flag("INCLUDE_FULL"), description = doc("Whole conversation.") },
    max_events = { type = "integer", minimum = 0, default = config.limit("max_events"),
                   description = doc("Tail kept; over " .. config.limit("max_events_cap") .. " is clamped.") },
  }
end

-- A pending permission request or agent question, as watch/poll/list report it.
M.permission_request = { type = "object" }

M.keep_alive = { type = "boolean", default = false }

-- The expect argument of send and broadcast ("any", the default, accepts a steer or a new turn).
M.expect = { type = "string", enum = { "any", "steer", "new_turn" }, default = "any" }

-- The parallelism argument of the fleet tools (agentd checks the same bounds).
M.parallelism = { type = "integer", minimum = 1, maximum = 16, default = 8 }

-- Params for send and broadcast: the arguments without expect="any", so agentd sees only a real
-- constraint.
function M.without_any_expect(args)
  local params = {}
  for k, v in pairs(args) do params[k] = v end
  if params.expect == "any" then params.expect = nil end
  return params
end

-- The idle_timeout argument of spawn and resume; built per call so its default follows
-- REASONIX_MCP_IDLE_TIMEOUT.
function M.idle_timeout()
  return { type = "number", default = config.idle_timeout(), description = "Idle seconds before stop; -1 never." }
end

-- Params for a blocking call (watch, wait): the arguments, plus a request for agentd's progress
-- lines when the caller sent a progressToken (hosts reset their idle timers on progress).
function M.blocking(args, ctx)
  local params = {}
  for k, v in pairs(args) do params[k] = v end
  if ctx.progress_token ~= nil then
    params.progress = true
    params.progress_interval_ms = ctx.progress_interval_ms
  end
  return params
end

-- Asks agentd to hold the answer of a watch or poll until its receipt says the host got it
-- (server/receipts.lua, agentd/PROTOCOL.md "Receipts"). Returns params. (Such a tool says
-- answer_kept = true: a cancelled call's late answer then reports its receipt lost.)
function M.keep_answer(params, ctx)
  return ctx.ask_receipt(params)
end

-- Makes a handler that sends the arguments to agentd method and returns its result as agentd
-- wrote it (json.raw: the server passes it on without decoding it again).
-- prepare(args, ctx) may adjust the params (returning nil, message refuses the call).
function M.forward(method, prepare)
  return function(args, ctx)
    local params = args
    if prepare then
      local p, err = prepare(args, ctx)
      if not p then return nil, err end
      params = p
    end
    return ctx.agentd(method, params, true)
  end
end

return M
