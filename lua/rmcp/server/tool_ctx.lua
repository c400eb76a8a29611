-- The ctx a tool handler gets in the MCP server (tools/ctx.lua adds the agentd calls): the
-- project dir, the call's orchestrator and progress token, and what asks agentd to hold a watch or
-- poll answer until its receipt (ask_receipt, server/receipts.lua). agentd's long requests made for
-- the call are cancelled with it and carry its progress.
local tools_ctx = require "rmcp.tools.ctx"

local M = {}

-- A sender of agentd requests for call on server: each request is recorded on the call while it is
-- unanswered (a cancel reaches it; with a progress token, its progress lines are routed to it).
local function sender(server, call)
  return function(method, params, raw, cb)
    local settled, aid = false, nil
    aid = server:link(call.orchestrator):request(method, params, function(result, err)
      settled = true
      if aid then server.calls:track(call, aid, true) end
      cb(result, err)
    end, raw)
    if aid and not settled then server.calls:track(call, aid, false) end
  end
end
M.sender = sender

-- Takes over agentd request aid (method, params) that the server lane sent for call on server, as
-- sender would have made it: cb(result, err) once.
function M.adopt(server, call, aid, method, params, cb)
  server.calls:track(call, aid, false)
  server:link(call.orchestrator):adopt(aid, method, params, function(result, err)
    server.calls:track(call, aid, true)
    cb(result, err)
  end)
end

-- The ctx of tools/call call on server.
function M.new(server, call)
  local ctx = {
    project_dir = server.project_dir, orchestrator_id = call.orchestrator,
    progress_token = call.progress_token, progress_interval_ms = tonumber(os.getenv("REASONIX_MCP_PROGRESS_INTERVAL_MS") or ""),
  }
  tools_ctx.with_agentd(ctx, sender(server, call))
  -- What agentd said of itself at the link's last hello (agentd_pid, version), or nil.
  function ctx.agentd_info()
    local link = server.links[call.orchestrator]
    return link and link.conn and link.conn.info
  end
  -- Adds to agentd params what asks agentd to hold this call's answer until its receipt (the
  -- launcher may send this host request again to the server that replaces us: agentd then gives
  -- the same answer again). Returns params.
  function ctx.ask_receipt(params)
    return server.receipts:ask(params, call.id)
  end
  -- Lists the tool sets after enabling/disabling some (reasonix_toolsets).
  function ctx.toolsets(enable, disable)
    return server:change_toolsets(enable, disable)
  end
  -- Asks the supervising launcher for a fresh server; false when there is none.
  function ctx.restart_server(reason)
    if not server.supervised then return false end
    server:notify("$/rmcp/restart", { reason = reason })
    return true
  end
  return ctx
end

return M
