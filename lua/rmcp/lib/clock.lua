-- The wall clock that schedules read (the routine scheduler), as a seam: tests replace these
-- functions from the file REASONIX_MCP_TEST_SEAMS names (lua/rmcp/main.lua loads it once at start)
-- to move time at will; nothing here looks at the environment or a file.
local M = {}

-- Now, in whole epoch seconds.
function M.now()
  return os.time()
end

-- How long a sleeper waiting for now() to reach a time may sleep before it looks again, in ms:
-- the system clock can jump (a wall-clock change, DST), so within a minute.
function M.recheck_ms()
  return 60000
end

return M
