-- Coroutine helpers over the uv loop: write sequential code that waits on callbacks.
local uv = require "luv"

local M = {}

-- Coroutines whose task ended, kept to run the next ones: a task (every MCP tool call) then costs
-- no new coroutine and no stack grown again from its minimum. At most IDLE_MAX are kept.
local idle = {}
local IDLE_MAX = 16

-- The body of a pooled coroutine: runs fn(...), reports its error to on_error (default: logged to
-- stderr), goes back to the pool and waits for its next task (a tail call: the stack stays flat).
local function work(fn, on_error, ...)
  local ok, err = xpcall(fn, debug.traceback, ...)
  if not ok then
    if on_error then on_error(err) else io.stderr:write("reasonix-mcp: async task failed: ", tostring(err), "\n") end
  end
  if #idle >= IDLE_MAX then return end
  idle[#idle + 1] = coroutine.running()
  return work(coroutine.yield())
end

-- Runs fn(...) in a coroutine of its own (a pooled one); an error is passed to on_error (default:
-- logged to stderr).
function M.run(fn, on_error, ...)
  local n = #idle
  local co = idle[n]
  if co then idle[n] = nil else co = coroutine.create(work) end
  local ok, err = coroutine.resume(co, fn, on_error, ...)
  if not ok then error(err, 0) end
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

-- Runs fn(item, i) for each of items inside a coroutine, at most limit at a time (each in a task of
-- its own), and waits until every one ended; returns their first results in items' order. An error
-- in one is raised again, once all ended (the first one; the others ran to their end).
function M.map(items, limit, fn)
  local results, first_err, next_i = {}, nil, 0
  if #items == 0 then return results end
  M.await(function(resume)
    local running = 0
    -- One worker: takes the next item until none is left; the last one to stop resumes the caller.
    local function worker()
      while true do
        next_i = next_i + 1
        local i = next_i
        if i > #items then break end
        local ok, r = pcall(fn, items[i], i)
        if ok then results[i] = r elseif not first_err then first_err = r end
      end
      running = running - 1
      if running == 0 then resume() end
    end
    local n = math.max(1, math.min(limit, #items))
    running = n
    for _ = 1, n do M.run(worker) end
  end)
  if first_err then error(first_err, 0) end
  return results
end

-- Sends a JSON-RPC request on peer and waits for (result, err).
function M.request(peer, method, params)
  return M.await(function(resume) peer:request(method, params, resume) end)
end

return M
