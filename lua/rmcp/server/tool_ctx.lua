-- The ctx a tool handler(args, ctx) gets (lua/POLICY.md): agentd access for the call's orchestrator
-- that waits inside the handler's coroutine, the project dir, the orchestrator id, the call's
-- progress token, and what asks agentd to hold a watch or poll answer until its receipt
-- (ask_receipt, server/receipts.lua). agentd's long requests made for the call are cancelled with
-- it and carry its progress.
local jsonrpc = require "rmcp.lib.jsonrpc"
local async = require "rmcp.lib.async"
local uv = require "luv"

local M = {}

-- The agentd sender of a call: send(method, params, raw, cb) calls cb(result, err) (raw: the result
-- as agentd's JSON text) and records the request on the call, for its cancel and its progress.
local function sender(server, call)
  return function(method, params, raw, cb)
    local settled, aid = false, nil
    aid = server:link(call.orchestrator):request(method, params, function(result, err)
      settled = true
      if aid then
        call.agentd_ids[aid] = nil
        server.progress_calls[call.orchestrator .. "/" .. aid] = nil
      end
      cb(result, err)
    end, raw)
    if aid and not settled then
      call.agentd_ids[aid] = true
      if call.progress_token ~= nil then server.progress_calls[call.orchestrator .. "/" .. aid] = call end
    end
  end
end

-- Adds ctx.agentd, ctx.agentd_within and ctx.agentd_all, which wait through send (sender above).
local function add_agentd_calls(ctx, send)
  -- Calls agentd method (PROTOCOL.md); returns result, or nil and an error object {code, message}.
  -- With raw, the result is agentd's JSON text (json.raw), passed on to the host undecoded.
  function ctx.agentd(method, params, raw)
    return async.await(function(resume) send(method, params or {}, raw, resume) end)
  end
  -- Like ctx.agentd, but gives up after ms: nil and an error with timeout = true (a later answer is
  -- dropped).
  function ctx.agentd_within(method, params, ms)
    return async.await(function(resume)
      local done = false
      local timer = uv.new_timer()
      timer:start(ms, 0, function()
        timer:close()
        if done then return end
        done = true
        local e = jsonrpc.error(jsonrpc.INTERNAL_ERROR, string.format("agentd did not answer %s within %d ms", method, ms))
        e.timeout = true
        resume(nil, e)
      end)
      send(method, params or {}, false, function(result, err)
        if done then return end
        done = true
        timer:close()
        resume(result, err)
      end)
    end)
  end
  -- Sends several agentd calls at once; returns {result = ..., error = ...} for each, in order.
  function ctx.agentd_all(calls)
    local out, left = {}, #calls
    if left == 0 then return out end
    return async.await(function(resume)
      for i, c in ipairs(calls) do
        send(c[1] or c.method, c[2] or c.params or {}, false, function(result, err)
          out[i] = { result = result, error = err }
          left = left - 1
          if left == 0 then resume(out) end
        end)
      end
    end)
  end
end

-- The ctx of tools/call call (its id, orchestrator, progress token, agentd ids) on server.
function M.new(server, call)
  local ctx = {
    project_dir = server.project_dir, orchestrator_id = call.orchestrator,
    progress_token = call.progress_token, progress_interval_ms = tonumber(os.getenv("REASONIX_MCP_PROGRESS_INTERVAL_MS") or ""),
  }
  add_agentd_calls(ctx, sender(server, call))
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
