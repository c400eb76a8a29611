-- Codex as an ACP agent (@zed-industries/codex-acp; its npm launcher runs the native binary of a
-- per-platform optional package). Facts this rests on are proven in tests/e2e/codex_acp.test.mjs:
-- a second session/prompt during a turn is steered into it but never answered (so messages queue);
-- modes read-only / auto / full-access (also the configOption "mode"); the model and the reasoning
-- effort only as configOptions (no session/new `models`, session/set_model is -32601); usage only
-- as usage_update {used, size}; a write asks session/request_permission (a string id, options
-- allow_once "approved" / reject_once "abort"); session/load replays, session/resume does not; it
-- ignores stdin EOF (its process group must be ended). No login is needed when config.toml's
-- model_provider is not "openai" (a provider's own key comes from the variable its env_key names).
return {
  name = "codex",
  package = "@zed-industries/codex-acp",
  version = "0.16.0",
  bin = "codex-acp",
  args = {},
  -- its config dir, the keys of the built-in openai provider, its CA and proxy settings, its log
  -- level (a custom provider's env_key variable is the user's to pass)
  env = { "CODEX_HOME", "OPENAI_API_KEY", "CODEX_API_KEY", "CODEX_CA_CERTIFICATE", "SSL_CERT_FILE",
          "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "RUST_LOG" },
  profile = {
    base = "acp",
    name = "codex",
    steer = "queue",
    approval = { ask = { "read-only" }, auto = { "auto" }, yolo = { "full-access" } },
    plan_tool = "update_plan",
    question_prefix = false,
    -- config.toml copied (setting mode auto or full-access writes the project's trust into it),
    -- the ChatGPT login / stored key and the global AGENTS.md shown read-only; its providers'
    -- base_url are the endpoints a strict sandbox lets it reach
    sandbox = { home_env = "CODEX_HOME", home_dir = ".codex", copy = { "config.toml" },
                read_only = { "auth.json", "AGENTS.md" }, providers_from = "config.toml" },
  },
  about = "Codex (OpenAI Responses or any provider in config.toml): modes read-only/auto/full-access, "
    .. "model and effort as config options, permission requests, load and resume; messages queue for the turn's end",
}
