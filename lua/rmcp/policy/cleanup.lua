-- Cleanup rules: how long a finished agent stays alive before it is stopped into a resumable tombstone.
local config = require "rmcp.config"

local M = {}

-- Seconds of idle grace for session s after a terminal turn, or nil when it is never cleaned up
-- (keep_alive, cleanup off by -1, or waiting on a decision).
function M.grace(s)
  if s.keep_alive then return nil end
  if s.status ~= "idle" then return nil end
  local t = s.idle_timeout
  if t == nil then t = config.idle_timeout() end
  if t == nil or t < 0 then return nil end
  return t
end

return M
