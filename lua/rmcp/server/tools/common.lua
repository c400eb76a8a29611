-- Schema pieces several tools share, and the handler that forwards a tool call to agentd.
-- Stateless (reloadable): tools read defaults from rmcp.config when the list is built.
local config = require "rmcp.config"

local M = {}

-- An object schema: properties, required names; unknown arguments are refused (typos surface).
function M.object(properties, required, extra)
  local s = { type = "object", properties = properties, additionalProperties = false }
  if required and #required > 0 then s.required = required end
  for k, v in pairs(extra or {}) do s[k] = v end
  return s
end

-- An output schema: documented fields, other fields allowed (agentd may add some).
function M.result(properties, required)
  local s = { type = "object", properties = properties }
  if required and #required > 0 then s.required = required end
  return s
end

-- The session_id argument of the single-session tools.
function M.session_id()
  return { type = "string", minLength = 1,
           description = "The session_id returned by reasonix_spawn (see reasonix_list)." }
end

-- The session_ids argument of watch and wait.
function M.session_ids()
  return { type = "array", minItems = 1, items = { type = "string", minLength = 1 },
           description = "Session ids to watch (from reasonix_spawn / reasonix_list). Drop an id once you are done with it." }
end

-- True when the boolean env flag REASONIX_MCP_<name> is on; the schema default mirrors agentd's.
local function flag_default(name)
  return config.flag(name)
end

-- The sessionUpdate types a filter may name (others pass through as plain strings too).
M.event_types_doc = "tool_call, tool_call_update, plan, permission_request, agent_message_chunk, "
  .. "agent_thought_chunk, user_message_chunk, available_commands_update, config_option_update, "
  .. "current_mode_update, status_update"

-- The options poll accepts, shared with watch(detail=true).
function M.poll_options()
  return {
    include_events = {
      type = "array", items = { type = "string", minLength = 1 },
      description = "Only these event types in events (permission requests are always kept). "
        .. "Naming a static setup type (available_commands_update, config_option_update) opts it back in. "
        .. "Types: " .. M.event_types_doc .. ".",
    },
    exclude_events = {
      type = "array", items = { type = "string", minLength = 1 },
      description = "Event types to drop in addition to the static setup types filtered by default.",
    },
    include_thought = {
      type = "boolean", default = flag_default("INCLUDE_THOUGHT"),
      description = "Add thought (reasoning delta) and full_thought. Large; use to diagnose a derailed agent.",
    },
    include_full = {
      type = "boolean", default = flag_default("INCLUDE_FULL"),
      description = "Add full_text (the whole conversation, tail capped). Usually turns is enough.",
    },
    max_events = {
      type = "integer", minimum = 0, maximum = config.limit("max_events_cap"),
      default = config.limit("max_events"),
      description = "Size of the recent event tail (events_dropped counts what was cut).",
    },
  }
end

local option = {
  type = "object",
  properties = { optionId = { type = "string" }, name = { type = "string" }, kind = { type = "string" } },
}

-- A pending permission request or agent question, as watch/poll/list report it.
M.permission_request = {
  type = "object",
  description = "A pending decision: answer with reasonix_respond_permission(session_id, option_id).",
  properties = {
    request_id = { type = { "integer", "string" } },
    kind = { type = "string", enum = { "permission", "question" } },
    tool_call = {
      type = "object",
      properties = {
        title = { type = "string" }, kind = { type = "string" }, toolCallId = { type = "string" },
        rawInput = {},
      },
    },
    options = { type = "array", items = option },
  },
}

M.plan = {
  type = "array",
  items = { type = "object", properties = { content = { type = "string" }, status = { type = "string" } } },
}

M.turns = {
  type = "array",
  items = { type = "object", properties = { text = { type = "string" }, stop_reason = { type = "string" } } },
}

-- The poll-shaped result (lean by default; detail/include_* add fields).
function M.poll_result_properties()
  return {
    session_id = { type = "string" },
    status = { type = "string" },
    message = { type = "string" },
    message_truncated = { type = "boolean" },
    stop_reason = { type = "string" },
    plan = M.plan,
    current_work = {},
    permission_request = M.permission_request,
    error_text = { type = "string" },
    text = { type = "string" },
    text_truncated = { type = "boolean" },
    turns = M.turns,
    events = { type = "array" },
    events_filtered = { type = "integer" },
    events_dropped = { type = "integer" },
    counters = { type = "object" },
    transcript_path = { type = "string" },
    config = { type = "object" },
    thought = { type = "string" },
    full_thought = { type = "string" },
    thought_truncated = { type = "boolean" },
    full_thought_truncated = { type = "boolean" },
    full_text = { type = "string" },
    full_text_truncated = { type = "boolean" },
  }
end

-- The sandbox posture spawn/resume report.
M.posture = {
  type = "object",
  properties = {
    sandbox = { type = "string" }, bash = { type = "string" },
    allow_write = { type = "array", items = { type = "string" } },
    network = {}, workspace_root = { type = "string" }, config_file = { type = "string" },
    warning = { type = "string" },
  },
}

-- The result of spawn and resume.
function M.spawn_result()
  return M.result({
    session_id = { type = "string" }, status = { type = "string" }, cwd = { type = "string" },
    model = { type = "string" }, effort = { type = "string" }, tool_approval = { type = "string" },
    work_mode = { type = "string" }, keep_alive = { type = "boolean" }, idle_timeout = { type = "number" },
    posture = M.posture,
    skipped_options = { type = "array" },
    warnings = { type = "array", items = { type = "string" } },
    transcript_path = { type = "string" },
  }, { "session_id" })
end

M.keep_alive = {
  type = "boolean", default = false,
  description = "Keep the agent for interactive follow-up turns: never cleaned up after a turn; reasonix_stop it when done.",
}

-- The idle_timeout argument of spawn and resume; built per call so its default follows
-- REASONIX_MCP_IDLE_TIMEOUT.
function M.idle_timeout()
  return {
    type = "number", default = config.idle_timeout(),
    description = "Seconds to keep the agent after a terminal turn before it is stopped (it stays resumable): "
      .. "-1 never (default unless REASONIX_MCP_IDLE_TIMEOUT is set), 0 at once.",
  }
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

-- Makes a handler that sends the arguments to agentd method and returns its result as agentd
-- wrote it (json.raw: the server passes it on without decoding it again).
-- prepare(args, ctx) may adjust the params (returning nil, message refuses the call).
function M.forward(method, prepare)
  return function(ctx, args, done)
    local params = args
    if prepare then
      local p, err = prepare(args, ctx)
      if not p then return done(nil, err) end
      params = p
    end
    ctx:agentd(method, params, done, true)
  end
end

return M
