-- The JSON Schema subset our tool schemas use: checks tool arguments (messages name the field) and
-- marks empty tables as arrays where a schema says array (cjson decodes [] and {} alike).
local json = require "rmcp.lib.json"

local M = {}

-- Names the JSON type of a decoded value; an empty table is "empty" (array or object).
local function json_type(v)
  local t = type(v)
  if t == "string" or t == "boolean" then return t end
  if t == "number" then
    if math.type(v) == "integer" or (v == math.floor(v) and v > -2^53 and v < 2^53) then return "integer" end
    return "number"
  end
  if v == nil or v == json.null then return "null" end
  if t == "table" then
    if json.is_array(v) then return "array" end
    if next(v) == nil then return "empty" end
    local n = #v
    if n > 0 then
      local count = 0
      for _ in pairs(v) do count = count + 1 end
      if count == n then return "array" end
    end
    return "object"
  end
  return t
end
M.json_type = json_type

-- True when a value of JSON type got satisfies a schema type want.
local function type_ok(want, got)
  if want == got then return true end
  if want == "number" and got == "integer" then return true end
  if got == "empty" and (want == "array" or want == "object") then return true end
  return false
end

-- The one-type lists types_of returns for a type name, made once each.
local single = setmetatable({}, { __index = function(cache, name)
  local list = { name }
  cache[name] = list
  return list
end })

-- Reads a schema's type as a list (shared: never change it).
local function types_of(schema)
  local t = schema.type
  if t == nil then return nil end
  if type(t) == "string" then return single[t] end
  return t
end

-- Describes a value briefly for an error message.
local function show(v)
  local t = json_type(v)
  if t == "string" then
    local s = #v > 40 and (v:sub(1, 40) .. "…") or v
    return string.format("%q", s)
  end
  if t == "integer" then return string.format("%d", math.tointeger(v)) end
  if t == "number" or t == "boolean" then return tostring(v) end
  if t == "empty" then return "an empty object" end
  return "a" .. ((t == "array" or t == "object") and "n " or " ") .. t
end

-- Lists the keys of a table, sorted.
local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = tostring(k) end
  table.sort(keys)
  return keys
end

local check

-- Checks member key of object value against schema's properties; returns true or nil, message.
local function check_member(schema, value, key, path)
  local sub = schema.properties[key]
  local where = path == "arguments" and key or (path .. "." .. key)
  if sub then
    if value[key] ~= json.null or sub.type == "null" then return check(sub, value[key], where) end
  elseif schema.additionalProperties == false then
    return nil, string.format("unknown argument %s (expected one of: %s)", where,
      table.concat(sorted_keys(schema.properties), ", "))
  end
  return true
end

-- Checks the members of object value; a failure is reported for the first failing member in
-- sorted order (whichever one failed first here), so the message does not depend on table order.
local function check_members(schema, value, path)
  for key in pairs(value) do
    if not check_member(schema, value, key, path) then
      for _, k in ipairs(sorted_keys(value)) do
        local ok, err = check_member(schema, value, k, path)
        if not ok then return nil, err end
      end
    end
  end
  return true
end

-- Checks value against schema; returns true or nil, message (path names the field).
function check(schema, value, path)
  local got = json_type(value)
  local types = types_of(schema)
  if types then
    local ok = false
    for _, want in ipairs(types) do
      if type_ok(want, got) then ok = true break end
    end
    if not ok then
      return nil, string.format("%s must be %s, got %s", path, table.concat(types, " or "), show(value))
    end
  end
  if schema.enum then
    local found = false
    for _, e in ipairs(schema.enum) do
      if e == value then found = true break end
    end
    if not found then
      local names = {}
      for i, e in ipairs(schema.enum) do names[i] = tostring(e) end
      return nil, string.format("%s must be one of %s, got %s", path, table.concat(names, ", "), show(value))
    end
  end
  if got == "string" then
    if schema.minLength and utf8.len(value) and utf8.len(value) < schema.minLength then
      return nil, string.format("%s must not be empty", path)
    end
  elseif got == "integer" or got == "number" then
    if schema.minimum and value < schema.minimum then
      return nil, string.format("%s must be at least %s, got %s", path, tostring(schema.minimum), tostring(value))
    end
    if schema.maximum and value > schema.maximum then
      return nil, string.format("%s must be at most %s, got %s", path, tostring(schema.maximum), tostring(value))
    end
  elseif got == "array" or (got == "empty" and types and types[1] == "array") then
    if schema.minItems and #value < schema.minItems then
      return nil, string.format("%s needs at least %d item(s)", path, schema.minItems)
    end
    if schema.items then
      for i, item in ipairs(value) do
        local ok, err = check(schema.items, item, string.format("%s[%d]", path, i - 1))
        if not ok then return nil, err end
      end
    end
  end
  if (got == "object" or got == "empty") and schema.properties then
    for _, name in ipairs(schema.required or {}) do
      if value[name] == nil then
        return nil, string.format("missing required argument %s%s", path == "arguments" and "" or (path .. "."), name)
      end
    end
    return check_members(schema, value, path)
  end
  return true
end

-- Validates tool arguments against an inputSchema; returns true or nil, message.
function M.validate(schema, value)
  -- no arguments where none is required: nothing to check (most calls of list, models, …)
  if schema.type == "object" and not schema.required and type(value) == "table" and next(value) == nil
     and not json.is_array(value) then
    return true
  end
  return check(schema, value, "arguments")
end

-- Whether a schema says array anywhere in it, by schema (shared schemas never change).
local says_array = setmetatable({}, { __mode = "k" })

-- True when schema (a table) or any schema inside it has the type array.
local function has_array(schema)
  local known = says_array[schema]
  if known ~= nil then return known end
  local found = false
  for _, t in ipairs(types_of(schema) or {}) do
    if t == "array" then found = true end
  end
  for _, sub in pairs(schema.properties or {}) do
    if type(sub) == "table" and has_array(sub) then found = true end
  end
  local items, extra = schema.items, schema.additionalProperties
  if type(items) == "table" and has_array(items) then found = true end
  if type(extra) == "table" and has_array(extra) then found = true end
  says_array[schema] = found
  return found
end

-- Marks empty tables as JSON arrays wherever schema says array, in place; returns value.
local function conform(schema, value)
  if type(value) ~= "table" or value == json.null or type(schema) ~= "table" or not has_array(schema) then
    return value
  end
  local types = types_of(schema)
  local want_array = false
  if types then
    for _, t in ipairs(types) do if t == "array" then want_array = true end end
  end
  if want_array and (next(value) == nil or json_type(value) == "array") then
    json.array(value)
    if schema.items then
      for i = 1, #value do conform(schema.items, value[i]) end
    end
    return value
  end
  local props, extra = schema.properties, schema.additionalProperties
  if type(extra) ~= "table" then extra = nil end
  if props or extra then
    for k, v in pairs(value) do
      local sub = props and props[k] or extra
      if sub then conform(sub, v) end
    end
  end
  return value
end
M.conform = conform

-- Drops nulls from a decoded arguments table (a JSON null argument means "use the default").
function M.drop_nulls(args)
  for k, v in pairs(args) do
    if v == json.null then args[k] = nil end
  end
  return args
end

return M
