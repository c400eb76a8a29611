-- Gemini CLI in its ACP mode (`gemini --acp`; `--experimental-acp` is the deprecated alias), as
-- measured by tests/e2e/gemini_acp.test.mjs against 0.61.0. A second session/prompt aborts the
-- running turn (Session.prompt aborts its pending prompt first), so a message for a running turn
-- must queue; modes are ACP session modes; models go through session/set_model; usage comes only
-- in each PromptResponse's _meta.quota.token_count (prompt and candidates tokens, no usage_update).
-- Its config dir is <home>/.gemini, the home being $GEMINI_CLI_HOME, else $HOME. Unlike
-- REASONIX_HOME, GEMINI_CLI_HOME names the home that holds .gemini, not .gemini itself: its sandbox
-- says home_env_is_parent (rules/sandbox.lua config_dir), so a sandbox sets it to the private home.
return {
  name = "gemini",
  package = "@google/gemini-cli",
  version = "0.61.0",
  bin = "gemini",
  args = { "--acp" },
  -- auth and endpoint (API key, Vertex AI or Google login), its home, a model by environment
  env = { "GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL",
          "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION",
          "GOOGLE_APPLICATION_CREDENTIALS", "GEMINI_MODEL", "GEMINI_CLI_HOME" },
  profile = {
    base = "acp",
    name = "gemini",
    steer = "queue",
    approval = { ask = { "default" }, auto = { "autoEdit", "default" }, yolo = { "yolo", "autoEdit", "default" } },
    plan_tool = "write_todos",
    question_prefix = false,
    -- settings.json is copied (it holds the auth type, model, and telemetry/usage-statistics/update
    -- switches; Gemini CLI rewrites it on authenticate); credentials are shown read-only
    sandbox = { home_env = "GEMINI_CLI_HOME", home_env_is_parent = true, home_dir = ".gemini", copy = { "settings.json" },
                read_only = { ".env", "oauth_creds.json", "google_accounts.json", "gemini-credentials.json" } },
  },
  about = "Gemini CLI: ACP modes default/autoEdit/yolo/plan, set_model, permission asks, session/load; messages queue; usage per turn in _meta.quota",
}
