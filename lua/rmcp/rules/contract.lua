-- The status contract: a short instruction added to the first prompt of a session (exactly once),
-- asking the agent to keep its plan current so orchestrators can see progress.
local M = {}

-- Marker that identifies the contract in a prompt (and in a resumed session's history).
M.marker = "[reasonix-mcp status contract]"

-- The contract's text for an agent whose plan tool is named tool (false: the agent's own, unnamed).
function M.text_for(tool)
  return M.marker .. "\n" ..
    "You are running under an orchestrator that watches your progress. Keep a current plan with " ..
    (tool and ("the " .. tool .. " tool") or "your todo or plan tool") .. ": list the steps, mark exactly one in_progress " ..
    "while you work on it and completed when done, and update it whenever the plan changes. Explicit " ..
    "instructions in the task about which tools to use take precedence over this note."
end

M.text = M.text_for("todo_write")

-- Returns the first prompt of a session: the task followed by the contract its agent's profile
-- gives (rules/profiles.lua: contract = a text, or false for none; default the plan-tool wording).
function M.first_prompt(task, profile)
  profile = profile or require("rmcp.rules.profiles").builtin.reasonix
  if profile.contract == false then return task end
  return task .. "\n\n" .. (type(profile.contract) == "string" and profile.contract or M.text_for(profile.plan_tool))
end

return M
