-- What the launcher needs to know about a JSON-RPC line without re-encoding it: id keys, which
-- requests are safe to send twice, and in-place surgery on the top-level "id". Lines pass through
-- verbatim because re-encoding decoded JSON would turn [] into {} (lua-cjson 2.1.0) and reorder keys.
local json = require "rmcp.lib.json"
local json_text = require "rmcp.lib.json_text"

local string_end, value_end = json_text.string_end, json_text.value_end

local M = {}

-- Methods whose repetition on a fresh server changes nothing (an unanswered initialize included:
-- the server that got it is gone).
M.REPEATABLE_METHODS = {
  ["initialize"] = true, ["ping"] = true, ["server/discover"] = true, ["logging/setLevel"] = true,
  ["tools/list"] = true, ["resources/list"] = true, ["resources/templates/list"] = true,
  ["resources/read"] = true, ["prompts/list"] = true, ["prompts/get"] = true,
  ["completion/complete"] = true,
}

-- Tools a new server may run again: they read state or wait for it (watch/wait results stay
-- pending in agentd until delivered), never start, steer, answer or stop anything.
M.REPEATABLE_TOOLS = {
  reasonix_watch = true, reasonix_wait = true, reasonix_poll = true, reasonix_list = true,
  reasonix_models = true, reasonix_transcript = true,
}

-- Tools whose answers have a receipt: agentd holds each until the launcher reports whether the host
-- got it (ledger.lua; agentd/PROTOCOL.md "Receipts").
M.RECEIPT_TOOLS = { reasonix_watch = true, reasonix_poll = true }

-- Takes a decoded id back to what the peer sent: lua-cjson 2.1.0 decodes 1 as 1.0.
function M.normalize_id(id)
  if id == json.null then return nil end
  if math.type(id) == "float" and math.tointeger(id) then return math.tointeger(id) end
  return id
end

-- True when a request (method, decoded params) can be sent again to a new server.
function M.repeatable(method, params)
  if method == "tools/call" then
    return type(params) == "table" and M.REPEATABLE_TOOLS[params.name] == true
  end
  return M.REPEATABLE_METHODS[method] == true
end

-- A short name for logs and error messages: the tool name for tools/call, else the method.
function M.label(method, params)
  if method == "tools/call" and type(params) == "table" and type(params.name) == "string" then
    return params.name
  end
  return tostring(method)
end

-- Start and end index of the value of a top-level member of a JSON object text, or nil.
function M.find_member(text, key)
  local s = text:find("%S")
  if not s or text:byte(s) ~= 123 then return nil end
  local pos = s + 1
  while true do
    local k = text:find("%S", pos)
    if not k then return nil end
    local b = text:byte(k)
    if b == 44 then
      pos = k + 1
    elseif b ~= 34 then
      return nil -- "}" (no such member) or not JSON
    else
      local ke = string_end(text, k)
      if not ke then return nil end
      local colon = text:find("%S", ke + 1)
      if not colon or text:byte(colon) ~= 58 then return nil end
      local vs = text:find("%S", colon + 1)
      if not vs then return nil end
      local ve = value_end(text, vs)
      if not ve then return nil end
      if text:sub(k + 1, ke - 1) == key then return vs, ve end
      pos = ve + 1
    end
  end
end

-- The raw JSON text of the top-level "id" of line, or nil.
function M.raw_id(line)
  local vs, ve = M.find_member(line, "id")
  if not vs then return nil end
  return line:sub(vs, ve)
end

-- line with its top-level "id" replaced by the JSON text id_json; nil when line has no id.
function M.replace_id(line, id_json)
  local vs, ve = M.find_member(line, "id")
  if not vs then return nil end
  return line:sub(1, vs - 1) .. id_json .. line:sub(ve + 1)
end

-- A JSON-RPC error response line for id (a decoded id; nil writes null).
function M.error_response(id, code, message, data)
  return json.encode({ jsonrpc = "2.0", id = id == nil and json.null or M.normalize_id(id),
                       error = { code = code, message = message, data = data } })
end

-- A notifications/cancelled line for the request id (decoded).
function M.cancel_line(id, reason)
  return json.encode({ jsonrpc = "2.0", method = "notifications/cancelled",
                       params = { requestId = M.normalize_id(id), reason = reason } })
end

-- True when a decoded response is a watch that returned superseded=true (a newer watch took over).
function M.superseded(msg)
  local r = type(msg) == "table" and msg.result
  if type(r) ~= "table" then return false end
  if type(r.structuredContent) == "table" then return r.structuredContent.superseded == true end
  local c = type(r.content) == "table" and r.content[1]
  if type(c) == "table" and type(c.text) == "string" then
    local data = json.decode(c.text)
    return type(data) == "table" and data.superseded == true
  end
  return false
end

return M
