-- The server's connection to agentd, through rmcp.clients.agentd (which starts the daemon when it is
-- absent and reconnects after it restarts). Made on the first tool call, once the orchestrator id is
-- known from initialize. Failures come back as error objects the tool layer turns into isError text.
local jsonrpc = require "rmcp.lib.jsonrpc"
local config = require "rmcp.config"
local log = require "rmcp.lib.log"

local M = {}

local Link = {}
Link.__index = Link

-- An error object for "agentd could not be reached" with a hint where to look.
local function unavailable(message)
  local e = jsonrpc.error(jsonrpc.INTERNAL_ERROR, message)
  e.unavailable = true
  e.log_hint = config.paths().log
  return e
end

-- Makes the link of orchestrator orch for server (an mcp Server): hello carries the orchestrator id,
-- project dir and client. Connecting (and starting agentd when absent) begins at once; requests
-- queue behind it. flow: read_gate (paused while the host is behind on our stdout) and on_drain
-- (agentd took what we wrote), as clients/agentd.lua takes them.
function M.new(server, orch, flow)
  flow = flow or {}
  local self = setmetatable({ server = server }, Link)
  local ok, client = pcall(require, "rmcp.clients.agentd")
  if not ok then
    self.failure = "the agentd client library is missing (" .. tostring(client):match("^[^\n]*") .. ")"
    log.error("agentd link: %s", self.failure)
    return self
  end
  local info = server.client_info or {}
  self.conn = client.connect({
    home = config.home(),
    orchestrator_id = orch,
    project_dir = server.project_dir,
    client_info = { name = "reasonix-mcp server", version = server.version, warnings = true,
                    mcp_client = { name = info.name, version = info.version },
                    -- the host shows the person a form for each decision (server/elicitation.lua)
                    elicitation = require("rmcp.server.elicitation").supported(server.client_caps) },
    on_notification = function(method, params) server:on_agentd_notification(method, params, orch) end,
    on_connect = function(hello)
      log.info("agentd link: connected to agentd %s (pid %s) as orchestrator %s, project %s",
        tostring(hello.version), tostring(math.tointeger(hello.agentd_pid) or hello.agentd_pid),
        orch, server.project_dir)
      require("rmcp.clients.dashboard").autostart()
      if server.lane then server.lane:sync() end
    end,
    on_disconnect = function(reason) log.info("agentd link: disconnected (%s)", tostring(reason)) end,
    read_gate = flow.read_gate, on_drain = flow.on_drain,
    -- the server lane's calls on it become Lua's before it fails them
    on_drop = function() if server.lane then server.lane:close() end end,
  })
  return self
end

-- Sends a request; cb(result, err) once (with raw, the result is agentd's JSON text as json.raw).
-- Returns the request id (also its id on the wire, which agentd's watch_progress names and cancel
-- takes), or nil when there is no client.
function Link:request(method, params, cb, raw)
  if not self.conn then
    cb(nil, unavailable(self.failure or "no connection to agentd"))
    return nil
  end
  return self.conn:request(method, params, function(result, err)
    if err ~= nil and type(err) ~= "table" then err = unavailable(tostring(err)) end
    cb(result, err)
  end, raw)
end

-- Takes over request aid (method, params) that the server lane wrote on this connection: cb(result,
-- err) once, as for a raw request.
function Link:adopt(aid, method, params, cb)
  self.conn:adopt({ id = aid, method = method, params = params, raw = true, cb = function(result, err)
    if err ~= nil and type(err) ~= "table" then err = unavailable(tostring(err)) end
    cb(result, err)
  end })
end

-- The channel of the live connection, or nil (the server lane writes its requests there).
function Link:channel()
  return self.conn and self.conn:live_channel()
end

-- Why agentd is behind on what we wrote it, or nil.
function Link:unread()
  return self.conn and self.conn:unread()
end

-- Sends a notification to agentd when connected (dropped otherwise).
function Link:notify(method, params)
  if self.conn then self.conn:notify(method, params) end
end

-- Releases a blocked watch/wait in agentd ($/cancel).
function Link:cancel(id)
  if self.conn and id then self.conn:cancel(id) end
end

-- Closes the connection (agentd cancels this connection's watches).
function Link:close()
  if self.conn then self.conn:close() end
  self.conn = nil
end

return M
