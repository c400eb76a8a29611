-- Agent profiles: what is particular to one kind of ACP agent, so that nothing else in agentd is —
-- how a message reaches a running turn, how spawn options reach the agent, the tool the status
-- contract names, the sandbox posture, which tool calls are questions. A policy's agent_command may
-- return {argv = …, env = …, profile = NAME | {base = NAME, field = …}}; with none, the agent is
-- reasonix and its profile the built-in one below (one profile among others, not special code).
-- Policy: hot-reloadable.
local M = {}

M.builtin = {
  -- reasonix acp: steering by its extension method, options as configOptions, a doctor probe
  reasonix = {
    name = "reasonix",
    steer = { method = "_reasonix.io/session/steer" },
    options = "config_options",
    approval = { ask = { "read-only" }, auto = { "workspace-write" }, yolo = { "danger-full-access" } },
    plan_tool = "todo_write",
    posture = "doctor",
    question_prefix = "ask-",
    -- in a sandbox: its config dir ($REASONIX_HOME, else ~/.reasonix) is the session's own, config.toml
    -- copied in (reasonix rewrites it), the .env of keys shown read-only; its providers' base_url are
    -- the endpoints a strict sandbox lets it reach
    sandbox = { home_env = "REASONIX_HOME", home_dir = ".reasonix", copy = { "config.toml" }, read_only = { ".env" },
                providers_from = "config.toml" },
  },
  -- any ACP agent: ACP session modes for tool_approval (the first one the agent offers), the set-model
  -- call for model, no steering method (a message for a running turn waits for its end, then starts
  -- the next turn); a yolo the agent cannot honour is kept by agentd answering its permission
  -- requests. Claude Code's ACP adapter (@zed-industries/claude-code-acp) runs on it as it is.
  acp = {
    name = "acp",
    steer = "queue",
    options = "acp",
    approval = { ask = { "default" }, auto = { "acceptEdits", "default" }, yolo = { "bypassPermissions", "acceptEdits", "default" } },
    plan_tool = false,
    posture = false,
    question_prefix = false,
    sandbox = {}, -- (its config and credentials are its profile's to name: none by default)
  },
}

local fields = { steer = true, options = true, approval = true, plan_tool = true, posture = true, question_prefix = true,
                 contract = true, name = true, sandbox = true, remote = true, approval_env = true }

-- Checks a resolved profile; returns nil or what is wrong.
local function problem(p)
  local st = p.steer
  if not (st == "queue" or st == "none" or (type(st) == "table" and type(st.method) == "string")) then
    return "steer must be \"queue\", \"none\" or {method = \"…\"}"
  end
  if p.options ~= "config_options" and p.options ~= "acp" and p.options ~= "none" then
    return "options must be \"config_options\", \"acp\" or \"none\""
  end
  if type(p.approval) ~= "table" then return "approval must map ask/auto/yolo to lists of the agent's values" end
  for k, v in pairs(p.approval) do
    if (k ~= "ask" and k ~= "auto" and k ~= "yolo") or type(v) ~= "table" then
      return "approval must map ask/auto/yolo to lists of the agent's values"
    end
  end
  for k, v in pairs(p.approval_env or {}) do
    if not p.approval[k] or type(v) ~= "table" then return "approval_env must map ask/auto/yolo to {VAR = value}" end
  end
  if p.plan_tool ~= false and type(p.plan_tool) ~= "string" then return "plan_tool must be a tool name or false" end
  if p.contract ~= nil and p.contract ~= false and type(p.contract) ~= "string" then return "contract must be a text or false" end
  if not (p.posture == false or p.posture == "doctor" or type(p.posture) == "table") then
    return "posture must be \"doctor\", a table or false"
  end
  if p.question_prefix ~= false and type(p.question_prefix) ~= "string" then return "question_prefix must be a string or false" end
  if p.sandbox ~= nil and type(p.sandbox) ~= "table" then
    return "sandbox must be {home_env?, home_env_is_parent?, home_dir?, copy?, read_only?, providers_from?}"
  end
  if p.remote ~= nil and type(p.remote) ~= "boolean" then return "remote must be true or false (the agent runs on another machine)" end
  return nil
end

-- The profile spec names or describes (nil: reasonix); returns the profile or nil, why.
function M.resolve(spec)
  if spec == nil then return M.builtin.reasonix end
  if type(spec) == "string" then
    return M.builtin[spec] or nil, "unknown agent profile " .. spec .. " (built in: reasonix, acp)"
  end
  if type(spec) ~= "table" then return nil, "profile must be a name or a table" end
  local base = M.builtin[spec.base or "acp"]
  if not base then return nil, "unknown base profile " .. tostring(spec.base) .. " (built in: reasonix, acp)" end
  local p = {}
  for k, v in pairs(base) do p[k] = v end
  for k, v in pairs(spec) do
    if k ~= "base" then
      if not fields[k] then return nil, "profile: unknown field " .. tostring(k) end
      p[k] = v
    end
  end
  p.name = type(spec.name) == "string" and spec.name or (base.name .. "+policy")
  local why = problem(p)
  if why then return nil, "profile " .. p.name .. ": " .. why end
  return p
end

-- The agent's values a tool_approval may take under profile p, best first.
function M.approval_values(p, approval)
  return p.approval[approval] or {}
end

-- True when tool call tc (of a permission request) is the agent asking the person a question.
function M.is_question(p, tc)
  return p.question_prefix and tc.kind == "other" and type(tc.toolCallId) == "string"
    and tc.toolCallId:sub(1, #p.question_prefix) == p.question_prefix or false
end

return M
