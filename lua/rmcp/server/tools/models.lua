-- reasonix_models: the models an agent can be spawned with.
local common = require "rmcp.server.tools.common"

return {
  name = "reasonix_models",
  title = "List models",
  description = "List the selectable models: provider/model refs for reasonix_spawn(model=...), the default, "
    .. "each model's supported_efforts (effort is per model; an unsupported value fails at spawn) and price "
    .. "hints where configured.",
  inputSchema = common.object({}),
  outputSchema = common.result({
    default = { type = "string" },
    models = {
      type = "array",
      items = {
        type = "object",
        properties = {
          ref = { type = "string" },
          supported_efforts = { type = "array", items = { type = "string" } },
          default_effort = { type = "string" },
          price = {},
        },
      },
    },
  }),
  annotations = { readOnlyHint = true, openWorldHint = false },
  handler = common.forward("models"),
}
