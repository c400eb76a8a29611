-- Coroutine helpers over the uv loop: write sequential code that waits on callbacks.
local uv = require "luv"

local M = {}

-- Runs fn(...) in a new coroutine; an error is passed to on_error (default: logged to stderr).
function M.run(fn, on_error, ...)
  local co = coroutine.create(function(...)
    local ok, err = xpcall(fn, debug.traceback, ...)
    if not ok then
      if on_error then on_error(err) else io.stderr:write("reasonix-mcp: async task failed: ", tostring(err), "\n") end
    end
  end)
  local ok, err = coroutine.resume(co, ...)
  if not ok then error(err, 0) end
  return co
end

-- Waits inside a coroutine until start(resume) calls resume(...); returns those values.
-- Works whether resume is called later from a callback or at once inside start.
function M.await(start)
  local co, main = coroutine.running()
  assert(co and not main, "async.await must be called inside async.run")
  local done, results, waiting = false, nil, false
  start(function(...)
    if done then return end
    done = true
    results = table.pack(...)
    if waiting then
      local ok, err = coroutine.resume(co)
      if not ok then error(err, 0) end
    end
  end)
  if not done then
    waiting = true
    coroutine.yield()
  end
  return table.unpack(results, 1, results.n)
end

-- Sleeps ms milliseconds inside a coroutine.
function M.sleep(ms)
  return M.await(function(resume)
    local timer = uv.new_timer()
    timer:start(ms, 0, function() timer:close(); resume() end)
  end)
end

-- Sends a JSON-RPC request on peer and waits for (result, err).
function M.request(peer, method, params)
  return M.await(function(resume) peer:request(method, params, resume) end)
end

return M
