-- Fault points: places where a test may make the process fail on purpose (die between two steps
-- that must survive a crash). A seam: in production point() does nothing; a test replaces it from
-- the file REASONIX_MCP_TEST_SEAMS names (lua/rmcp/main.lua loads it once at start).
local M = {}

-- The process passes the fault point its argument names (e.g. "routine_after_spawn").
function M.point(_) end

return M
