-- opencode's ACP mode (npm opencode-ai, `opencode acp`), as measured by tests/e2e/opencode_acp.test.mjs.
-- A prompt sent during a turn is accepted and folded into it at the next model step, but both prompts
-- are answered only at the turn's end: agentd queues instead of steering. Model and mode come only as
-- configOptions (model, mode = build | plan; no `modes`), so there is no ask/auto/yolo mode: asking is
-- its config's `permission` (OPENCODE_PERMISSION='{"edit":"ask","bash":"ask"}', which tool_approval=ask
-- sets through approval_env), and agentd answers; set at its start only, so a configure away from ask
-- is kept by agentd answering its requests (rules/acp_options.lua). Usage: each prompt result carries
-- the turn's last model step's tokens only; usage_update's cost is the session's, every step in it.
return {
  name = "opencode",
  package = "opencode-ai",
  version = "1.18.33",
  bin = "opencode",
  args = { "acp" },
  env = { "OPENCODE_CONFIG", "OPENCODE_CONFIG_DIR", "OPENCODE_CONFIG_CONTENT", "OPENCODE_AUTH_CONTENT", "OPENCODE_PERMISSION",
          "OPENCODE_DISABLE_MODELS_FETCH", "OPENCODE_DISABLE_AUTOUPDATE", "OPENCODE_DISABLE_DEFAULT_PLUGINS",
          "OPENCODE_DISABLE_LSP_DOWNLOAD", "OPENCODE_DISABLE_SHARE", "OPENCODE_MODELS_PATH",
          "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME",
          "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY" },
  profile = {
    base = "acp",
    name = "opencode",
    steer = "queue",
    -- ask is build mode with its permission config asking for edits and commands (set in the
    -- agent's environment at start, over the caller's; its own default asks for neither)
    approval = { ask = { "build" }, auto = { "build" }, yolo = { "build" } },
    approval_env = { ask = { OPENCODE_PERMISSION = '{"edit":"ask","bash":"ask"}' } },
    plan_tool = "todowrite",
    question_prefix = false,
    -- its config dir (opencode.json, {env:VAR} keys); sessions live in $XDG_DATA_HOME/opencode/opencode.db
    -- under the private HOME, so each sandboxed session has its own; `opencode auth login` keys
    -- (data dir auth.json) are not seen: pass them as OPENCODE_AUTH_CONTENT or env keys
    sandbox = { home_env = "OPENCODE_CONFIG_DIR", home_dir = ".config/opencode", copy = { "opencode.json" }, read_only = {} },
  },
  about = "opencode acp: turns, session/load with history, permission requests (once/always/reject), model and "
    .. "build/plan mode as configOptions, the last model step's tokens in prompt results and the session's cost in usage_update; "
    .. "mid-turn messages queued",
}
