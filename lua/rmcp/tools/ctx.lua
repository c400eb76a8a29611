-- The ctx a tool handler(args, ctx) gets, whichever process runs it (the MCP server, ctl): agentd
-- calls that wait inside the handler's coroutine, built over the process's own way of sending one
-- request. docs/policies.md documents the fields.
local uv = require "luv"
local async = require "rmcp.lib.async"
local jsonrpc = require "rmcp.lib.jsonrpc"

local M = {}

-- Waits for send(method, params, raw, cb) inside the coroutine, giving up after ms: nil and an
-- error with timeout = true (a later answer is dropped).
local function within(send, method, params, ms)
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

-- Sends several calls at once through send; returns {result = ..., error = ...} for each, in order.
local function all(send, calls)
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

-- Adds the agentd calls to ctx (fields the process set already: project_dir, orchestrator_id, …)
-- over send(method, params, raw, cb), which sends one request and calls cb(result, err) once; raw
-- asks for the result as agentd's JSON text (json.raw), to pass on undecoded. Returns ctx.
function M.with_agentd(ctx, send)
  -- Calls agentd method (PROTOCOL.md); returns result, or nil and an error object {code, message}.
  function ctx.agentd(method, params, raw)
    return async.await(function(resume) send(method, params or {}, raw, resume) end)
  end
  -- Like ctx.agentd, but gives up after ms.
  function ctx.agentd_within(method, params, ms)
    return within(send, method, params, ms)
  end
  -- Several agentd calls at once.
  function ctx.agentd_all(calls)
    return all(send, calls)
  end
  return ctx
end

return M
