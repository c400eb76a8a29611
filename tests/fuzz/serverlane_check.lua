-- The checks of fuzz_serverlane.c, for an arguments text the server lane's check
-- (serverlane_args_ok) lets it take: the server's Lua would have made the same call of agentd, so
-- the text decodes (rmcp.json) to an object without nulls (Lua drops them) that the tool's
-- inputSchema accepts (lib/schema.lua validate), and so does the narrower schema of a tool that
-- forwards only some calls (tools/common.lua forward_when: send), each value of the JSON type its
-- property says (an array's items strings).
-- Called without a text, it returns the lane entries of the four tools the target checks.
local json = require "rmcp.lib.json"
local schema = require "rmcp.lib.schema"
local lane = require "rmcp.server.lane"

local TOOLS = { require "rmcp.tools.list", require "rmcp.tools.poll", require "rmcp.tools.watch", require "rmcp.tools.send" }

-- One taken arguments text of tool which: nil when every check holds, else what failed.
return function(text, which)
  if text == nil then
    local entries = {}
    for i, tool in ipairs(TOOLS) do entries[i] = lane.entry(tool.name, tool) end
    return table.unpack(entries)
  end
  local tool = TOOLS[which]
  local q = string.format("%q", text)
  local v, err = json.decode(text)
  if type(v) ~= "table" or v == json.null or json.is_array(v) or v[1] ~= nil then
    return tool.name .. ": taken but not an object to cjson (" .. tostring(err) .. "): " .. q
  end
  for k, x in pairs(v) do
    if x == json.null then return tool.name .. ": taken with a null " .. tostring(k) .. ": " .. q end
    local want = tool.inputSchema.properties[k].type
    local got = schema.json_type(x)
    if want == "number" and got == "integer" then want = "integer" end -- (the lane takes integers only)
    if want == "array" then
      for _, item in ipairs(x) do
        if type(item) ~= "string" then return tool.name .. ": taken with a non-string item in " .. k .. ": " .. q end
      end
    end
    if got ~= want or (want == "integer" and math.type(x) ~= "integer") then
      return string.format("%s: %s taken as %s, cjson reads %s: %s", tool.name, k, want, got, q)
    end
  end
  local ok, why = schema.validate(tool.inputSchema, v)
  if not ok then return tool.name .. ": taken, Lua refuses it (" .. why .. "): " .. q end
  local when = require("rmcp.tools.common").forwarded(tool.handler).when
  ok, why = when == nil or schema.validate(when, v)
  if not ok then return tool.name .. ": taken, but not a plain forward (" .. why .. "): " .. q end
  return nil
end
