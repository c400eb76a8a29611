-- reasonix_models: the models an agent can be spawned with.
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_models",
  title = "List models",
  description = "Model refs reasonix_spawn accepts, the default, and each one's supported_efforts.",
  inputSchema = common.object({}),
  annotations = { readOnlyHint = true, openWorldHint = false },
  handler = common.forward("models"),
}
