-- The status contract: a short instruction added to the first prompt of a session (exactly once),
-- asking the agent to keep its plan current so orchestrators can see progress.
local M = {}

-- Marker that identifies the contract in a prompt (and in a resumed session's history).
M.marker = "[reasonix-mcp status contract]"

M.text = M.marker .. "\n" ..
  "You are running under an orchestrator that watches your progress. Keep a current plan with the " ..
  "todo_write tool: list the steps, mark exactly one in_progress while you work on it and completed " ..
  "when done, and update it whenever the plan changes. Explicit instructions in the task about which " ..
  "tools to use take precedence over this note."

-- Returns the first prompt of a session: the task followed by the contract.
function M.first_prompt(task)
  return task .. "\n\n" .. M.text
end

return M
