-- The checks of fuzz_json.c, one input at a time: json.request reads a request line as json.decode
-- does, or leaves it; json.encode writes any bytes as a JSON string
-- that decodes back to them (made valid UTF-8), the same alone and in a table; json.decode never
-- raises; a value it returns
-- encodes without raising (an error string is allowed only for nesting past cjson's limit), as valid
-- UTF-8, and decodes back to the same value, as the contract of core/json.c says it is written:
-- invalid UTF-8 as U+FFFD (one per bad byte), NaN and infinities as null, empty arrays as [].
local json = require "rmcp.lib.json"

local utf8_fix = require("fuzz_utf8").fix
local sentinel = require "fuzz_sentinel"

-- nil when b is what decoding the encoding of a must give, else where they differ.
local function same(a, b, path)
  if type(a) == "number" then
    if a ~= a or a == math.huge or a == -math.huge then
      if b ~= json.null then return path .. ": non-finite number came back as " .. tostring(b) end
      return nil
    end
    if type(b) ~= "number" or math.type(a) ~= math.type(b) or a ~= b then
      return string.format("%s: %s %s came back as %s %s", path, math.type(a), a, math.type(b) or type(b), b)
    end
    return nil
  end
  if type(a) == "string" then
    if b ~= utf8_fix(a) then return path .. ": string " .. string.format("%q", a) .. " came back as " .. string.format("%q", tostring(b)) end
    return nil
  end
  if type(a) ~= "table" then
    if a ~= b then return path .. ": " .. tostring(a) .. " came back as " .. tostring(b) end
    return nil
  end
  if type(b) ~= "table" then return path .. ": table came back as " .. type(b) end
  if json.is_array(a) ~= json.is_array(b) then return path .. ": array mark lost" end
  -- keys are written as UTF-8 too; two keys that become the same cannot be compared
  local fixed = {}
  for k, v in pairs(a) do
    local fk = type(k) == "string" and utf8_fix(k) or k
    if fixed[fk] ~= nil then return nil end
    fixed[fk] = v
  end
  for k, v in pairs(fixed) do
    local err = same(v, b[k], path .. "." .. tostring(k))
    if err then return err end
  end
  for k in pairs(b) do
    if fixed[k] == nil then return path .. ": extra key " .. tostring(k) end
  end
  return nil
end

-- True when a and b are the same decoded value (tables member by member, arrays marked alike).
local function equal(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then return a == b or (a ~= a and b ~= b) end
  if json.is_array(a) ~= json.is_array(b) then return false end
  for k, v in pairs(a) do if not equal(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

-- nil when json.request reads text as json.decode reads it (or not at all), else what differs.
local function request_check(text)
  local id, method, params = json.request(text)
  if id == nil then return nil end
  local whole, err = json.decode(text)
  if whole == nil and tostring(err):find("nested", 1, true) then return nil end -- params one level less deep
  if type(whole) ~= "table" or whole.jsonrpc ~= "2.0" or math.type(whole.id) ~= "integer" or whole.id ~= id
    or whole.method ~= method or type(params) ~= "table" or not equal(whole.params, params) then
    return "json.request read another request than json.decode: " .. string.format("%q", text)
  end
  return nil
end

-- One input: nil when every check holds, else what failed.
return function(text)
  -- any bytes encode as a JSON string of valid UTF-8 that decodes to them, made valid, alone and
  -- in a table (where a short one is cjson's, a long one core/json.c's)
  local quoted = json.encode(text)
  local _, quoted_valid = utf8_fix(quoted)
  if not quoted_valid then return "a string encoded as invalid UTF-8: " .. string.format("%q", quoted) end
  if json.decode(quoted) ~= utf8_fix(text) then return "an encoded string does not decode back: " .. string.format("%q", quoted) end
  local listed, lerr = json.encode({ text })
  if listed ~= "[" .. quoted .. "]" and not (listed == nil and tostring(lerr):find("internal marker", 1, true)) then
    return "a string is written differently in a table: " .. string.format("%q", text)
  end
  local rerr = request_check(text)
  if rerr then return rerr end
  local v, err = json.decode(text)
  if v == nil then
    if type(err) ~= "string" then return "decode failed without a message" end
    return nil
  end
  local out, eerr = json.encode(v)
  if out == nil then
    if type(eerr) ~= "string" then return "encode failed without a message" end
    if eerr:find("nest") then return nil end
    if eerr:find("internal marker", 1, true) and sentinel.within(v) then return nil end -- refused, as it must be
    return "encode of a decoded value failed: " .. eerr
  end
  if type(out) ~= "string" then return "encode returned a " .. type(out) end
  local _, valid = utf8_fix(out)
  if not valid then return "encode wrote invalid UTF-8: " .. string.format("%q", out) end
  local back, berr = json.decode(out)
  if back == nil then return "encoded text does not decode: " .. tostring(berr) .. " in " .. string.format("%q", out) end
  return same(v, back, "$")
end
