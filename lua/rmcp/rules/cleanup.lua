-- Cleanup rules: how long a finished agent stays alive before it is stopped into a resumable tombstone.
local config = require "rmcp.config"
local hooks = require "rmcp.policy.hooks"

local M = {}

-- The built-in grace: seconds for session s, or nil when it is never cleaned up (keep_alive, or
-- cleanup off by -1: the session's idle_timeout, else REASONIX_MCP_IDLE_TIMEOUT).
function M.default_grace(s)
  if s.keep_alive then return nil end
  local t = s.idle_timeout
  if t == nil then t = config.idle_timeout() end
  if t < 0 then return nil end
  return t
end

-- Seconds of idle grace for session s after a terminal turn, or nil when it is not cleaned up (not
-- idle, e.g. waiting on a decision; or no rule applies). The policies' cleanup hooks see the built-in
-- grace and may change it; the second result is the note of the policy that set it.
function M.grace(s)
  if s.status ~= "idle" then return nil end
  return hooks.cleanup(s, M.default_grace(s))
end

return M
