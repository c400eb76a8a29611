-- What every MCP tool must be (built-in or from a user policy): the shape check the tool table, hot
-- reload and the policy loader run before a tool is offered.
local M = {}

-- Raises with what is wrong when tool (where names the file it came from) lacks the shape every MCP
-- tool must have; sets, when given, is a function telling whether a tool set name is known.
function M.check(tool, where, sets)
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
  if sets and tool.toolset ~= nil and not sets(tool.toolset) then
    bad("tool " .. tool.name .. ": toolset " .. tostring(tool.toolset) .. " is not a tool set")
  end
end

return M
