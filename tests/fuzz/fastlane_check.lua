-- The checks of fuzz_fastlane.c, for a line the scanner (fastlane_scan) lets the lane take: the
-- line decodes (rmcp.json, as the launcher's Lua and the server read it) to an object with
-- "jsonrpc":"2.0", the integer id the scanner read, the method it read (ping, tools/list or
-- tools/call), params an object (or absent), and params.name the string it read (required for
-- tools/call); kind 2 exactly when a tools/call names a tool with a receipt. meta, the kind the
-- scanner gave its _meta (0 none, 1 members the server's Lua ignores, 2 a progressToken too): none
-- means no _meta, and otherwise _meta is an object, with a progressToken exactly when the kind says
-- so (or a repeated _meta had one: the kind is then the more careful). token, the integer progress
-- token the launcher's lane keeps for the line (nil: none kept), is cjson's. thread: a threadId
-- cjson reads is never missed.
local json = require "rmcp.lib.json"

local RECEIPT = require("rmcp.launcher.wire").RECEIPT_TOOLS
local METHODS = { ping = true, ["tools/list"] = true, ["tools/call"] = true }

-- True when v is what cjson makes of a JSON object.
local function is_object(v)
  return type(v) == "table" and not json.is_array(v) and v[1] == nil
end

-- One taken line: nil when every check holds, else what failed.
return function(text, kind, id, method, name, meta, token, thread)
  local q = string.format("%q", text)
  local v, err = json.decode(text)
  if not is_object(v) then
    return "taken but not an object to cjson (" .. tostring(err) .. "): " .. q
  end
  if v.jsonrpc ~= "2.0" then return "taken without jsonrpc 2.0: " .. q end
  if math.type(v.id) ~= "integer" or v.id ~= id then
    return string.format("id %d taken, cjson reads %s %s: %s", id, math.type(v.id) or type(v.id), tostring(v.id), q)
  end
  if not METHODS[method] or v.method ~= method then
    return string.format("method %q taken, cjson reads %q: %s", method, tostring(v.method), q)
  end
  local params = v.params
  if params ~= nil and not is_object(params) then
    return "params taken that is not an object: " .. q
  end
  params = params or {}
  local m = params._meta
  if meta == 0 and m ~= nil then return "taken with params._meta, scanned as none: " .. q end
  if meta ~= 0 then
    if not is_object(m) then return "_meta kind " .. meta .. ", cjson reads no object: " .. q end
    if m.threadId ~= nil and not thread then return "a threadId in _meta not seen: " .. q end
    if meta == 1 and m.progressToken ~= nil then return "a progressToken scanned as an inert _meta: " .. q end
  end
  if token ~= nil and (math.type(m.progressToken) ~= "integer" or m.progressToken ~= token) then
    return string.format("progress token %d kept, cjson reads %s: %s", token, tostring(m.progressToken), q)
  end
  if params.name ~= name then
    return string.format("name %q taken, cjson reads %q: %s", tostring(name), tostring(params.name), q)
  end
  if method == "tools/call" and type(name) ~= "string" then return "tools/call taken without a name: " .. q end
  local receipt = method == "tools/call" and RECEIPT[name] == true
  if (kind == 2) ~= receipt then return "kind " .. kind .. " for " .. q end
  return nil
end
