-- reasonix_models: the models an agent can be spawned with.
local common = require "rmcp.tools.common"

return {
  name = "reasonix_models",
  title = "List models",
  description = "Model refs, the default, each one's supported_efforts.",
  inputSchema = common.object({ agent = {} }), -- (whose models: an agent spawn's agent names; default the default)
  annotations = { readOnlyHint = true, openWorldHint = false },
  cli = {},
  handler = common.forward("models"),
}
