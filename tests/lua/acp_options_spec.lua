-- How our options reach an agent of the "acp" profile kind (rules/acp_options.lua): a configure of a
-- running agent plans the calls a spawn would (set_model / set_mode where the agent lists models and
-- modes, its own config option ids and values where it does not, effort through its thought_level
-- option), what it lacks is skipped with why, an approval set in the environment at start is kept by
-- agentd answering or skipped, and the offer's view follows the calls and updates.
local acp_options = require "rmcp.rules.acp_options"
local agents = require "rmcp.rules.agents"
local profiles = require "rmcp.rules.profiles"

-- The resolved profile of the built-in agent name.
local function profile_of(name)
  return assert(profiles.resolve(agents.builtin(name).profile))
end

-- One select config option.
local function option(id, category, current, values)
  local out = { id = id, category = category, currentValue = current, options = {} }
  for _, v in ipairs(values) do out.options[#out.options + 1] = { value = v } end
  return out
end

-- Codex's session/new answer: modes, and model and effort only as config options.
local codex_res = {
  modes = { currentModeId = "read-only", availableModes = { { id = "read-only" }, { id = "auto" }, { id = "full-access" } } },
  configOptions = {
    option("mode", "mode", "read-only", { "read-only", "auto", "full-access" }),
    option("model", "model", "gpt-5.4", { "gpt-5.4", "gpt-5.4-mini" }),
    option("reasoning_effort", "thought_level", "medium", { "low", "medium", "high" }),
  },
}

test("a configure of codex: set_mode for tool_approval, its config options for model and effort, work_mode skipped", function(t)
  local offer = acp_options.offer(codex_res)
  local plan = acp_options.configure_plan({ model = "gpt-5.4-mini", effort = "high", tool_approval = "yolo", work_mode = "economy" },
    offer, profile_of("codex"), "ask")
  t.eq(#plan.errors, 0)
  local by = {}
  for _, c in ipairs(plan.calls) do by[c.key] = c end
  t.eq(by.model.method, "session/set_config_option")
  t.eq(by.model.params.configId, "model")
  t.eq(by.effort.params.configId, "reasoning_effort")
  t.eq(by.effort.params.value, "high")
  t.eq(by.tool_approval.method, "session/set_mode")
  t.eq(by.tool_approval.params.modeId, "full-access")
  t.match(plan.why.work_mode, "no such option")
  t.eq(plan.answer_gates, nil, "codex has a mode that never asks")
  for _, c in ipairs(plan.calls) do acp_options.record(offer, c, nil) end
  local view = {}
  for _, opt in ipairs(acp_options.view(offer)) do view[opt.id] = opt.currentValue end
  t.eq(view.mode, "full-access")
  t.eq(view.model, "gpt-5.4-mini")
  t.eq(view.reasoning_effort, "high")
  plan = acp_options.configure_plan({ effort = "max" }, offer, profile_of("codex"), "ask")
  t.match(plan.errors[1], "effort \"max\" is not offered by the agent %(valid: low, medium, high%)")
end)

test("a configure of gemini: set_model and set_mode; effort skipped with why; updates move the view", function(t)
  local offer = acp_options.offer({
    models = { currentModelId = "gemini-2.5-flash", availableModels = { { modelId = "gemini-2.5-flash" }, { modelId = "gemini-2.5-pro" } } },
    modes = { currentModeId = "default", availableModes = { { id = "default" }, { id = "autoEdit" }, { id = "yolo" } } },
  })
  local plan = acp_options.configure_plan({ model = "gemini-2.5-pro", effort = "low", tool_approval = "auto" }, offer, profile_of("gemini"), "ask")
  t.eq(plan.calls[1].method, "session/set_model")
  t.eq(plan.calls[1].params.modelId, "gemini-2.5-pro")
  t.eq(plan.calls[2].params.modeId, "autoEdit")
  t.match(plan.why.effort, "effort low not applied: this agent has no such option")
  acp_options.update(offer, "current_mode_update", { currentModeId = "yolo" })
  t.eq(acp_options.view(offer)[2].currentValue, "yolo")
  plan = acp_options.configure_plan({ model = "nope" }, offer, profile_of("gemini"), "ask")
  t.match(plan.errors[1], "gemini%-2.5%-pro")
end)

test("opencode's asking comes from its environment at start: answered by agentd when it no longer should ask, else skipped", function(t)
  local offer = acp_options.offer({ configOptions = {
    option("model", "model", "mock/a", { "mock/a", "mock/b" }), option("mode", "mode", "build", { "build", "plan" }) } })
  local p = profile_of("opencode")
  local plan = acp_options.configure_plan({ tool_approval = "yolo", model = "mock/b" }, offer, p, "ask")
  t.eq(plan.answer_gates, true, "started asking: agentd answers its requests")
  t.eq(plan.why.tool_approval, nil)
  t.eq(#plan.calls, 1, "build is its mode already; the model goes through its config option")
  t.eq(plan.calls[1].params.configId, "model")
  plan = acp_options.configure_plan({ tool_approval = "ask" }, offer, p, "auto")
  t.match(plan.why.tool_approval, "stop it and resume it with tool_approval ask")
  plan = acp_options.configure_plan({ tool_approval = "ask" }, offer, p, "ask")
  t.eq(plan.why.tool_approval, nil, "it asks already")
  t.eq(plan.answer_gates, nil)
end)
