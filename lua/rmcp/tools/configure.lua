-- reasonix_configure: change a session's model, effort, work mode or tool approval after spawn.
local common = require "rmcp.tools.common"

local properties = common.agent_options()
properties.session_id = common.session_id()
properties.budget = common.budget()

return {
  name = "reasonix_configure",
  toolset = "fleet",
  title = "Configure agent",
  description = "Change an agent's options: idle now, busy before its next turn, exited at resume.",
  inputSchema = common.object(properties, { "session_id" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = true, openWorldHint = false },
  cli = { positional = { "session_id" } },
  -- Doc-only: docs/tools.md is generated from it (scripts/gen-docs.lua); tools/list never sends it.
  doc = {
    args = {
      { "session_id", "The session." },
      { "model", "As spawn's." },
      { "effort", "As spawn's." },
      { "work_mode", "As spawn's." },
      { "tool_approval", "As spawn's; switching to yolo answers a pending tool gate allow_once (never an agent's question)." },
      { "budget", "A new budget, at once; null removes it (docs/budgets.md)." },
    },
    result = {
      { "session_id, status", "The session." },
      { "applies", "now (idle: set at once), next_turn (in a turn or starting: before its next prompt), at_resume (exited or orphaned)." },
      { "applied, queued, skipped", "What was set, what waits, and options the agent does not have (with why)." },
      { "agent_config", "What the agent reports, apart from what is queued." },
      { "gates_allowed", "Pending tool gates a switch to yolo answered allow_once." },
      { "budget, usage", "With budget: the budget now in force and the spend so far." },
    },
  },
  handler = common.forward("configure"),
}
