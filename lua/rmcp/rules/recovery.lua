-- Background-bash recovery: the agent ends a turn with "background bash failed: needs attention"
-- (reasonix 1.38.11 puts a "[warning] background bash failed: needs attention" line in its message
-- and ends the turn end_turn) when a job it left running failed. Instead of reporting that turn,
-- agentd starts a fresh turn on the same session telling the agent to deal with the job, at most
-- REASONIX_MCP_BACKGROUND_RECOVERY_ATTEMPTS times in a row (0: off). No other error is retried.
local config = require "rmcp.config"

local M = {}

M.marker = "background bash failed: needs attention"

-- The attempts allowed in a row (REASONIX_MCP_BACKGROUND_RECOVERY_ATTEMPTS, default 3; 0 is off).
function M.cap()
  local n = math.tointeger(config.limit("background_recovery_attempts"))
  return n and n >= 0 and n or 0
end

-- True when a turn that ended with stop_reason and text needs a recovery turn, attempts having been
-- made in a row before it.
function M.wanted(text, stop_reason, attempts)
  return stop_reason == "end_turn" and type(text) == "string" and text:find(M.marker, 1, true) ~= nil
    and attempts < M.cap()
end

-- The prompt of recovery attempt n.
function M.prompt(n)
  return string.format("[reasonix-mcp background recovery %d/%d] Your last turn ended with \"%s\": a "
    .. "background job you started failed. Inspect that job's output once (job_output), then stop polling "
    .. "its job id: it has ended. Correct the command that failed, run it again if it is still needed, and "
    .. "continue with the rest of the task.", n, M.cap(), M.marker)
end

return M
