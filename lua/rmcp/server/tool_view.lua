-- What a host sees of the tools: their definitions as tools/list shows them under a protocol
-- version, and each call's result or error as a CallToolResult. Stateless (reloadable).
local json = require "rmcp.lib.json"
local log = require "rmcp.lib.log"
local schema = require "rmcp.lib.schema"
local fit = require "rmcp.rules.fit"
local toolsets = require "rmcp.rules.toolsets"

local M = {}

-- The values MCP assumes for a tool annotation that is absent.
local ANNOTATION_DEFAULTS = { readOnlyHint = false, destructiveHint = true, idempotentHint = false, openWorldHint = true }

-- The keywords the server enforces itself and tools/list leaves out: an unknown argument, a value
-- out of range or an empty list is refused with a message naming the field, so listing them would
-- only cost every host's context.
local ENFORCED_ONLY = { additionalProperties = true, minItems = true, minLength = true, minimum = true, maximum = true }

-- True when schema s lists only strings in its enum and says type "string": the enum says the type.
local function enum_says_type(s)
  if s.type ~= "string" or type(s.enum) ~= "table" then return false end
  for _, e in ipairs(s.enum) do
    if type(e) ~= "string" then return false end
  end
  return true
end

-- The schema s as tools/list shows it: without the keywords the server enforces itself, nor the
-- type of a string enum (its values say it).
local function listed_schema(s)
  local out = {}
  local drop_type = enum_says_type(s)
  for k, v in pairs(s) do
    if k == "type" and drop_type then -- (the server still checks it)
    elseif k == "properties" then
      out.properties = {}
      for name, p in pairs(v) do out.properties[name] = listed_schema(p) end
    elseif k == "items" then
      out.items = listed_schema(v)
    elseif not ENFORCED_ONLY[k] then
      out[k] = v
    end
  end
  return out
end

-- The tool definition as tools/list shows it under protocol version.
function M.describe(tool, version)
  local d = { name = tool.name, description = tool.description, inputSchema = listed_schema(tool.inputSchema) }
  -- no title: hosts show the name, and every byte here is in the host's context
  if version >= "2025-06-18" then d.outputSchema = tool.outputSchema end
  if version >= "2025-03-26" then
    -- only the hints that differ from the spec's defaults (every byte here is in the host's context)
    local hints = {}
    for k, v in pairs(tool.annotations or {}) do
      if ANNOTATION_DEFAULTS[k] ~= v then hints[k] = v end
    end
    if next(hints) then d.annotations = hints end
  end
  return d
end

-- The tools/list array of tool_list as JSON text: the listed tools of the enabled sets (on).
function M.list_json(tool_list, on, version)
  local list = json.array()
  for _, tool in ipairs(tool_list) do
    if not tool.hidden and on[toolsets.of(tool)] then list[#list + 1] = M.describe(tool, version) end
  end
  return assert(json.encode(list))
end

-- The tool sets as reasonix_toolsets shows them: each with whether it is listed (on) and its tools.
function M.sets(tool_list, on)
  local sets = json.array()
  for _, set in ipairs(toolsets.SETS) do
    local names = json.array()
    for _, tool in ipairs(tool_list) do
      if not tool.hidden and toolsets.of(tool) == set.name then names[#names + 1] = tool.name end
    end
    sets[#sets + 1] = { name = set.name, listed = on[set.name] == true, about = set.about, tools = names }
  end
  return sets
end

-- Turns an agentd error (or a message) into an actionable isError tool result.
function M.error(tool_name, err)
  local text
  if type(err) == "table" then
    text = tostring(err.message or "error")
    if err.code == -32001 then
      text = text .. " Call reasonix_list to see this orchestrator's sessions."
    elseif err.code == -32602 and not text:find("reasonix_", 1, true) then
      text = "Invalid arguments: " .. text
    elseif err.unavailable then
      text = text .. " (agentd could not be reached: check " .. tostring(err.log_hint or "$REASONIX_MCP_HOME/agentd.log")
        .. " or run `reasonix-mcp doctor`.)"
    end
  else
    text = tostring(err)
  end
  log.info("tool %s failed: %s", tool_name, text)
  return { content = json.array({ { type = "text", text = tool_name .. ": " .. text } }), isError = true }
end

-- Wraps a structured tool result as a CallToolResult for protocol version. A json.raw result
-- (agentd's answer, passed through undecoded, fitted to the budget there) is its own text block and
-- structuredContent: encoded once, in agentd. Any other (the server's own tools, a policy's) is
-- fitted to max_result_bytes here (rules/fit.lua).
function M.result(tool, result, version)
  local raw = json.raw_text(result)
  if raw then
    local out = { content = json.array({ { type = "text", text = raw } }) }
    if version >= "2025-06-18" then out.structuredContent = result end
    return out
  end
  if type(result) ~= "table" or result == json.null or schema.json_type(result) == "array" then
    result = { value = result }
  end
  schema.conform(tool.outputSchema, result)
  result = fit.fit(result)
  local text = json.encode(result) or "{}"
  local out = { content = json.array({ { type = "text", text = text } }) }
  if version >= "2025-06-18" then out.structuredContent = result end
  return out
end

return M
