-- reasonix_models: the models an agent can be spawned with.
local common = require "rmcp.tools.common"

return {
  name = "reasonix_models",
  title = "List models",
  description = "Model refs, the default, each one's supported_efforts.",
  inputSchema = common.object({ agent = {} }), -- (whose models: an agent spawn's agent names; default the default)
  annotations = { readOnlyHint = true, openWorldHint = false },
  cli = {},
  -- Doc-only: docs/tools.md is generated from it (scripts/gen-docs.lua); tools/list never sends it.
  doc = {
    args = {
      { "agent", "Whose models: an agent spawn names; default the default agent." },
    },
    result = {
      { "agent", "The agent asked." },
      { "default", "The spawn default model." },
      { "agent_default", "The agent's own default." },
      { "models[]", "{ref, supported_efforts[], default_effort?, price?}." },
      { "warnings[]", "For example: the default model is not configured." },
    },
  },
  handler = common.forward("models"),
}
