-- Schema pieces several tools share and the handlers that forward a tool call to agentd.
-- Stateless (reloadable): tools read defaults from rmcp.config when the table is built.
local config = require "rmcp.config"

local M = {}

-- The handlers M.forward made that send their arguments as they are (no prepare, or only
-- keep_answer, blocking or both): {method, keep, blocking} (weak keys: a reload makes new ones).
local plain = setmetatable({}, { __mode = "k" })

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

-- The agent options: spawn's (full: their values and the defaults shown), or those of the tools that
-- change them later (resume, configure: "as spawn's", checked by agentd with the values named).
function M.agent_options(full)
  local function default(k) return full and config.default(k) or nil end
  local function enum(values) return full and values or nil end
  return {
    model = { type = "string" }, -- (its default is reasonix_models's to say: a model ref is long)
    work_mode = { type = "string", enum = enum({ "economy", "balanced", "delivery" }), default = default("work_mode") },
    tool_approval = { type = "string", enum = enum({ "ask", "auto", "yolo" }), default = default("tool_approval") },
    effort = { type = "string", enum = enum({ "auto", "disabled", "low", "medium", "high", "xhigh", "max" }),
               default = default("effort") },
  }
end

-- The budget argument of spawn (described), configure (null removes one) and routines: tokens, or
-- the object form. Untyped: agentd's rules/usage.lua checks it, naming what is wrong (the schema
-- stays a few bytes in every host's context).
function M.budget(described)
  return { description = described and "tokens|{tokens,cost,warn_at,on_exceed}" or nil } -- (kept whole: a host asks no README)
end

-- The fields of a routine (create and configure); agentd's rules/routines.lua checks them (with an
-- error naming the allowed values), so the agent options go without their enums here.
function M.routine_fields()
  return {
    name = { type = "string" },
    prompt = { type = "string" },
    cwd = { type = "string" },
    schedule = { type = "string", description = "manual|every 30m|daily 09:00 [Area/City]" },
    overlap = { type = "string", description = "skip|queue" },
    delegation = { type = "string" },
    enabled = { type = "boolean" },
    model = { type = "string" }, effort = { type = "string" }, work_mode = { type = "string" },
    tool_approval = { type = "string" },
    sandbox = M.sandbox(),
    budget = M.budget(), -- (each run's)
    agent = {}, -- (as spawn's)
  }
end

-- The sandbox argument of spawn (described) and routines: a level, or the object form
-- (rules/sandbox.lua checks it, naming what is wrong).
function M.sandbox(described)
  return { type = { "string", "object" },
           description = described and "none|workspace|strict|{level,read,write,hosts,fallback}" or nil }
end

-- The session_id argument of the single-session tools.
function M.session_id()
  return { type = "string" }
end

-- The session_ids argument of watch, wait and the many-session forms.
function M.session_ids()
  return { type = "array", minItems = 1, items = { type = "string" } }
end

-- The options poll accepts, shared with watch(detail=true). Defaults follow agentd's (and the
-- REASONIX_MCP_INCLUDE_* / MAX_EVENTS overrides).
function M.poll_options()
  return {
    include_events = { type = "array", items = { type = "string" } },
    exclude_events = { type = "array", items = { type = "string" } },
    include_thought = { type = "boolean", default = config.flag("INCLUDE_THOUGHT") or nil },
    include_full = { type = "boolean", default = config.flag("INCLUDE_FULL") or nil },
    max_events = { type = "integer", minimum = 0, default = config.limit("max_events") },
  }
end

M.keep_alive = { type = "boolean" }

-- The expect argument of send ("any", the default, accepts a steer or a new turn).
M.expect = { type = "string", enum = { "any", "steer", "new_turn" }, default = "any" }

-- The parallelism argument of the many-agent forms (agentd checks the same bounds).
M.parallelism = { type = "integer", minimum = 1, maximum = 16, default = 8 }

-- A copy of args without the keys of drop (a list).
function M.without(args, drop)
  local out = {}
  for k, v in pairs(args) do out[k] = v end
  for _, k in ipairs(drop) do out[k] = nil end
  return out
end

-- Params for send: the arguments without expect="any", so agentd sees only a real constraint.
function M.without_any_expect(args)
  local params = M.without(args, {})
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
  local params = M.without(args, {})
  if ctx.progress_token ~= nil then
    params.progress = true
    params.progress_interval_ms = ctx.progress_interval_ms
  end
  return params
end

-- Params for a watch: blocking's, held by agentd until the receipt (keep_answer).
function M.blocking_kept(args, ctx)
  return M.keep_answer(M.blocking(args, ctx), ctx)
end

-- Asks agentd to hold the answer of a watch or poll until its receipt says the host got it
-- (server/receipts.lua, agentd/PROTOCOL.md "Receipts"): the server's ctx adds what the receipt
-- needs; a process with no launcher (ctl) asks for none. Returns params. (Such a tool says
-- answer_kept = true: a cancelled call's late answer then reports its receipt lost.)
function M.keep_answer(params, ctx)
  if ctx.ask_receipt then return ctx.ask_receipt(params) end
  return params
end

-- Makes a handler that sends the arguments to agentd method and returns its result as agentd
-- wrote it (json.raw: the server passes it on without decoding it again).
-- prepare(args, ctx) may adjust the params (returning nil, message refuses the call).
function M.forward(method, prepare)
  local handler = function(args, ctx)
    local params = args
    if prepare then
      local p, err = prepare(args, ctx)
      if not p then return nil, err end
      params = p
    end
    return ctx.agentd(method, params, true)
  end
  if not prepare or prepare == M.keep_answer or prepare == M.blocking or prepare == M.blocking_kept then
    plain[handler] = { method = method, keep = prepare == M.keep_answer or prepare == M.blocking_kept,
                       blocking = prepare == M.blocking or prepare == M.blocking_kept }
  end
  return handler
end

-- Marks handler as a plain forward of its arguments to agentd's method for the calls whose
-- arguments schema (narrower than the tool's inputSchema) accepts: a caller that checks them may
-- send those itself without running it (the server lane does). Returns handler.
function M.forward_when(handler, method, schema)
  plain[handler] = { method = method, keep = false, blocking = false, when = schema }
  return handler
end

-- What a handler of M.forward (or M.forward_when) sends, when a caller may send it itself without
-- running the handler: {method (agentd's), keep (the answer is kept until its receipt:
-- keep_answer), blocking (a call with a progress token asks for agentd's progress: blocking), when
-- (only for arguments this schema accepts; nil: any the tool's inputSchema accepts)}; else nil.
function M.forwarded(handler)
  return plain[handler]
end

-- True when exactly one of the keys of names is set in args; else nil and a message naming them.
function M.one_of(args, names)
  local given = {}
  for _, k in ipairs(names) do
    if args[k] ~= nil then given[#given + 1] = k end
  end
  if #given == 1 then return true end
  return nil, "give exactly one of " .. table.concat(names, ", ")
    .. (#given > 1 and " (got " .. table.concat(given, " and ") .. ")" or "")
end

return M
