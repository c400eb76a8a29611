-- Work that must not delay a reply: it runs a moment later, once this process has slept. A peer
-- woken by our write is queued on our CPU and gets it only when we block, so whatever we do
-- between writing a reply and waiting for the next event (saving, fanning out notifications,
-- logging them) is added to the peer's latency; a zero timer would not help (the loop runs it
-- before it waits). Jobs run in the order they were queued, each once; flush() runs them at once
-- (shutdown, handover).
local uv = require "luv"
local log = require "rmcp.lib.log"

local M = {}

-- Long enough for a woken peer to take the CPU, short enough to go unnoticed: the loop's clock
-- counts whole milliseconds, so 2 means 1 to 2 ms from now (1 could mean at once).
M.DELAY_MS = 2

local queue = {}
local timer

-- Runs the queued jobs in order (one that they queue waits for the next pass); a job that raises
-- is logged and the rest still run.
function M.flush()
  local jobs = queue
  queue = {}
  for _, job in ipairs(jobs) do
    local ok, err = xpcall(job, debug.traceback)
    if not ok then log.error("a deferred job failed: %s", tostring(err)) end
  end
end

-- Queues fn() to run DELAY_MS from now, after any job queued before it.
function M.queue(fn)
  queue[#queue + 1] = fn
  if not timer then
    timer = uv.new_timer()
    timer:unref() -- the owner's own handles keep the loop running; shutdown flushes
  end
  if not timer:is_active() then
    uv.update_time() -- the loop's clock stands where it woke: count from now
    timer:start(M.DELAY_MS, 0, M.flush)
  end
end

return M
