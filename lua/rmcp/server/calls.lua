-- The tool calls in flight of one MCP session: running a call's handler in a coroutine with its ctx,
-- answering with its result or error, its cancel (agentd's long requests made for it are released,
-- no reply is sent) and its progress (agentd's watch_progress lines, as notifications/progress).
local jsonrpc = require "rmcp.lib.jsonrpc"
local log = require "rmcp.lib.log"
local async = require "rmcp.lib.async"
local lazy = require "rmcp.lib.lazy"
-- (what a call needs, not a server's start: loaded with the first call)
local tool_ctx = lazy "rmcp.server.tool_ctx"
local view = lazy "rmcp.server.tool_view"

local M = {}

---@class ServerCall                   one tools/call in flight
---@field id any                        the host's request id
---@field tool table                    the tool called
---@field orchestrator string           whose call it is (server:call_orchestrator)
---@field agentd_ids table<any, boolean> the agentd requests made for it and not yet answered
---@field progress_token any            the host's progressToken, or nil
---@field progress_n integer            progress notifications sent
---@field cancelled boolean?            the host cancelled it: its result is dropped

---@class ServerCalls
---@field by_key table<any, ServerCall>   by the host request's id key
---@field by_agentd table<string, ServerCall> "<orchestrator>/<agentd request id>" -> a call with a progress token
local Calls = {}
Calls.__index = Calls

-- No call in flight yet.
---@return ServerCalls
function M.new()
  return setmetatable({ by_key = {}, by_agentd = {} }, Calls)
end

-- Records that call made agentd request aid (answered: it settled), for the call's cancel and progress.
function Calls:track(call, aid, answered)
  local slot = call.orchestrator .. "/" .. tostring(aid)
  if answered then
    call.agentd_ids[aid] = nil
    self.by_agentd[slot] = nil
  else
    call.agentd_ids[aid] = true
    if call.progress_token ~= nil then self.by_agentd[slot] = call end
  end
end

-- Registers the call of tool for host request id (params._meta meta) on server; returns it and the
-- function that ends it with (result, err): reply answers with the tool's result or an isError
-- result, unless the host cancelled it first.
local function start(self, server, tool, id, meta, reply)
  local token = meta.progressToken
  if token ~= nil and type(token) ~= "string" and type(token) ~= "number" then token = nil end
  local call = { id = id, tool = tool, agentd_ids = {}, progress_token = token, progress_n = 0,
                 orchestrator = server:call_orchestrator(meta) }
  local key = jsonrpc.id_key(id)
  if key then self.by_key[key] = call end
  local finished = false
  local function done(result, err)
    if finished then return end
    finished = true
    if key and self.by_key[key] == call then self.by_key[key] = nil end
    if call.cancelled then
      log.info("tool %s: result dropped, the client cancelled request %s", tool.name, tostring(id))
      if tool.answer_kept and err == nil then server.receipts:report(server, call.orchestrator, id, false) end
      return reply(jsonrpc.NO_ANSWER) -- settled: no longer in flight
    end
    if err ~= nil then reply(server:with_warnings(view.error(tool.name, err)))
    else reply(server:with_warnings(view.result(tool, result, server.protocol_version))) end
  end
  return call, done
end

-- What ends a forwarded call with agentd's answer (result, err).
local function forwarded_done(tool, done)
  return function(result, err)
    if result == nil and err == nil then err = "tool " .. tool.name .. " returned no result" end
    done(result, err)
  end
end

-- The agentd params of a call of forwarding direct (tools/common.lua forwarded) for host request
-- id: args, with the receipt asked for when its answer is kept.
local function forward_params(server, direct, args, id)
  return direct.keep and server.receipts:ask(args, id) or args
end

-- Runs the checked call of tool with args (request id, params._meta meta) on server; reply answers
-- it with the tool's result or an isError result, unless the host cancelled it first.
function Calls:run(server, tool, args, id, meta, reply)
  local call, done = start(self, server, tool, id, meta, reply)
  local function raised(e)
    log.error("tool %s%s raised: %s", tool.name, tool.policy and (" (policy " .. tool.policy .. ")") or "", tostring(e))
    done(nil, (tool.policy and "policy tool failed: " or "internal error in the MCP server: ") .. tostring(e):match("^[^\n]*"))
  end
  -- a tool that only passes its arguments to agentd needs no coroutine nor ctx: the call sends them
  local direct = require("rmcp.tools.common").forwarded(tool.handler)
  -- (progress: the handler asks; a forward only for some arguments: the handler tells which)
  if direct and not direct.when and not (direct.blocking and call.progress_token ~= nil) then
    local ok, e = pcall(tool_ctx.sender(server, call), direct.method, forward_params(server, direct, args, id), true,
      forwarded_done(tool, done))
    if not ok then raised(e) end
    return
  end
  async.run(function()
    local result, err = tool.handler(args, tool_ctx.new(server, call))
    if result == nil and err == nil then err = "tool " .. tool.name .. " returned no result" end
    done(result, err)
  end, raised)
end

-- Takes over a call of forwarding tool whose agentd request (agentd id aid) the server lane
-- (server/lane.lua) sent with args, as its lane entry direct ({method, keep}) says: from now on it
-- ends as one Calls:run made.
function Calls:adopt(server, tool, direct, args, id, aid)
  local call, done = start(self, server, tool, id, {}, server.peer:reply_to(id))
  tool_ctx.adopt(server, call, aid, direct.method, forward_params(server, direct, args, id), forwarded_done(tool, done))
end

-- Cancels the call of host request id (a long one releases its agentd requests); no reply is sent.
function Calls:cancel(server, id, reason)
  if server.lane and server.lane:has(id) then server.lane:close() end -- its call is ours now
  local call = self.by_key[jsonrpc.id_key(id)]
  if not call then
    log.debug("mcp: cancel for unknown or finished request %s", tostring(id))
    return
  end
  call.cancelled = true
  self.by_key[jsonrpc.id_key(id)] = nil
  log.info("mcp: client cancelled %s (request %s)%s", call.tool.name, tostring(id), reason and (": " .. tostring(reason)) or "")
  local link = server.links[call.orchestrator]
  if call.tool.long and link then
    for aid in pairs(call.agentd_ids) do link:cancel(aid) end
  end
end

-- Passes agentd's progress line (watch_progress params, on the link of orchestrator orch) to the
-- host as notifications/progress of the call it belongs to.
function Calls:progress(server, orch, params)
  local call = params.request_id ~= nil and self.by_agentd[tostring(orch) .. "/" .. tostring(params.request_id)] or nil
  if not call or call.cancelled or call.progress_token == nil then return end
  call.progress_n = call.progress_n + 1
  server:notify("notifications/progress", {
    progressToken = call.progress_token, progress = call.progress_n,
    message = type(params.message) == "string" and params.message or nil,
  })
end

return M
