-- JSON for the whole product: cjson.safe decoding, and an encoder that keeps empty arrays as arrays
-- (Debian's lua-cjson 2.1.0 has no array metatable, so `[]` would come out as `{}`).
local cjson = require "cjson.safe"

local M = {}

-- The value JSON null decodes to; encode it to write null.
M.null = cjson.null

local array_mt = { __name = "json.array" }

-- Marks t (default a new table) as a JSON array, so it encodes as [] even when empty.
function M.array(t)
  return setmetatable(t or {}, array_mt)
end

-- True when t was marked with json.array.
function M.is_array(t)
  return getmetatable(t) == array_mt
end

-- Turns integral floats back into integers, in place (cjson 2.1.0 decodes every number as a float,
-- so ids, counts and pids would otherwise print as "3.0").
local function integers(v)
  if type(v) == "table" then
    for k, x in pairs(v) do
      if math.type(x) == "float" then
        local i = math.tointeger(x)
        if i then v[k] = i end
      elseif type(x) == "table" then
        integers(x)
      end
    end
    return v
  end
  return math.type(v) == "float" and math.tointeger(v) or v
end

-- Decodes text; returns value or nil, message (never raises). Empty arrays decode as empty tables.
function M.decode(text)
  if type(text) ~= "string" then return nil, "expected a JSON string, got " .. type(text) end
  local value, err = cjson.decode(text)
  if value == nil and err then return nil, err end
  return integers(value)
end

local escapes = {
  ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f",
  ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t",
}

-- Escapes a Lua string as a JSON string literal (bytes >= 0x80 pass through as UTF-8).
local function encode_string(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return escapes[c] or string.format("\\u%04x", c:byte())
  end) .. '"'
end

-- Decides whether a table is written as an array: marked, or keys exactly 1..n with n > 0.
local function is_sequence(t)
  if getmetatable(t) == array_mt then return true end
  local n = #t
  if n == 0 then return false end
  local count = 0
  for k in pairs(t) do
    if math.type(k) ~= "integer" or k < 1 or k > n then return false end
    count = count + 1
  end
  return count == n
end

local encode_value

-- Appends the encoding of a table to out, refusing cycles and non-string object keys.
local function encode_table(t, out, seen)
  if seen[t] then error("json: cannot encode a cyclic table", 0) end
  seen[t] = true
  if is_sequence(t) then
    out[#out + 1] = "["
    for i = 1, #t do
      if i > 1 then out[#out + 1] = "," end
      encode_value(t[i], out, seen)
    end
    out[#out + 1] = "]"
  else
    local keys = {}
    for k in pairs(t) do
      local kt = type(k)
      if kt == "number" then k = tostring(k) elseif kt ~= "string" then
        error("json: cannot encode a table key of type " .. kt, 0)
      end
      keys[#keys + 1] = k
    end
    table.sort(keys)
    out[#out + 1] = "{"
    for i, k in ipairs(keys) do
      local v = t[k]
      if v == nil then v = t[tonumber(k)] end
      if i > 1 then out[#out + 1] = "," end
      out[#out + 1] = encode_string(k)
      out[#out + 1] = ":"
      encode_value(v, out, seen)
    end
    out[#out + 1] = "}"
  end
  seen[t] = nil
end

-- Appends the encoding of any JSON-able Lua value to out.
function encode_value(v, out, seen)
  local vt = type(v)
  if vt == "string" then
    out[#out + 1] = encode_string(v)
  elseif vt == "number" then
    if math.type(v) == "integer" then
      out[#out + 1] = string.format("%d", v)
    elseif v ~= v or v == math.huge or v == -math.huge then
      out[#out + 1] = "null"
    elseif v == math.floor(v) and math.abs(v) < 2^53 then
      out[#out + 1] = string.format("%d", math.tointeger(v))
    else
      out[#out + 1] = string.format("%.17g", v)
    end
  elseif vt == "boolean" then
    out[#out + 1] = v and "true" or "false"
  elseif vt == "nil" or v == M.null then
    out[#out + 1] = "null"
  elseif vt == "table" then
    encode_table(v, out, seen)
  else
    error("json: cannot encode a value of type " .. vt, 0)
  end
end

-- Encodes a value as compact JSON on one line; returns text or nil, message.
function M.encode(value)
  local out = {}
  local ok, err = pcall(encode_value, value, out, {})
  if not ok then return nil, err end
  return table.concat(out)
end

return M
