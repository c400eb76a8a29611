-- The server's part in an answer's receipt (agentd/PROTOCOL.md "Receipts"): under a launcher, a
-- watch or poll asks agentd to hold its answer under the host request's key until the receipt, and
-- the launcher's word on what became of the answer goes on to agentd, on the link of the request's
-- orchestrator. The names on the wire are those every version speaks: `$/rmcp/launcher
-- {answer_fates}` and `$/rmcp/answered {id, delivered, thread_id?}` from the launcher;
-- `delivery_key` and `confirm` in agentd's params, `delivered`/`undelivered {key}` to agentd.
local jsonrpc = require "rmcp.lib.jsonrpc"

local M = {}

---@class ServerReceipts
---@field supervised boolean   a launcher runs this server (server/main.lua: REASONIX_MCP_LAUNCHER_PID is our parent)
---@field reported boolean     the launcher said it reports receipts ($/rmcp/launcher)
local Receipts = {}
Receipts.__index = Receipts

-- The receipts of one MCP session; supervised: a launcher runs us.
---@return ServerReceipts
function M.new(supervised)
  return setmetatable({ supervised = supervised, reported = false }, Receipts)
end

-- The key of host request id under our launcher, the same when the launcher sends the request again
-- to the server that replaces us (an integer id is written "n:<id>", as every earlier version wrote
-- it); nil without a launcher.
function Receipts:key(id)
  local key = jsonrpc.id_key(id)
  if not self.supervised or key == nil then return nil end
  return os.getenv("REASONIX_MCP_LAUNCHER_PID") .. "/" .. (math.type(key) == "integer" and "n:" .. key or key)
end

-- The launcher's first word ($/rmcp/launcher, before any host line): whether it reports receipts.
function Receipts:launcher_hello(params)
  self.reported = params.answer_fates == true
end

-- Adds to the agentd params of a watch or poll for host request id what asks agentd to hold the
-- answer until its receipt: the key, and whether the launcher will report it. Returns params.
function Receipts:ask(params, id)
  params.delivery_key = self:key(id)
  params.confirm = self.supervised and self.reported or nil
  return params
end

-- Tells agentd the receipt of our answer to host request id, a call of orchestrator orch: confirmed
-- (the launcher wrote it to the host) or lost (it never reached the host). server:link(orch) carries it.
function Receipts:report(server, orch, id, confirmed)
  local key = self:key(id)
  if not key then return end
  server:link(orch):notify(confirmed and "delivered" or "undelivered", { key = key })
end

return M
