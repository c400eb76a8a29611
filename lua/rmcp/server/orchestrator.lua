-- The orchestrator id that scopes sessions in agentd: REASONIX_MCP_ORCHESTRATOR_ID, else derived from
-- the MCP client's name and the workspace, so it is the same after every server restart.
local hash = require "rmcp.lib.hash"

local M = {}

-- Makes a client name safe and short for an id: lower case, [a-z0-9._-], at most 40 chars.
local function slug(name)
  local s = name:lower():gsub("[^%w._-]+", "-"):gsub("^-+", ""):gsub("-+$", "")
  if s == "" then s = "mcp-client" end
  return s:sub(1, 40)
end

-- The orchestrator of one conversation of a host whose id is base: a host that runs several
-- conversations through one server names each in its requests (Codex: _meta.threadId), and each
-- gets its own sessions, the same again when that conversation comes back. base when there is none.
function M.for_conversation(base, conversation)
  if type(conversation) ~= "string" or conversation == "" or #conversation > 200 then return base end
  return base .. "-c" .. hash.fnv1a64(conversation):sub(1, 12)
end

-- Returns the orchestrator id for client_name (may be nil) working in workspace (absolute dir).
function M.id(client_name, workspace, env_value)
  if env_value == nil then env_value = os.getenv("REASONIX_MCP_ORCHESTRATOR_ID") end
  if env_value and env_value ~= "" then return env_value, "env" end
  local name = (type(client_name) == "string" and client_name ~= "") and client_name or "mcp-client"
  return slug(name) .. "-" .. hash.fnv1a64(name .. "\0" .. workspace):sub(1, 12), "derived"
end

return M
