-- Example 6 — Claude Code as the agent, through its ACP adapter (npm: @zed-industries/claude-code-acp).
-- A policy file: copy it into $REASONIX_MCP_HOME/policy/. Every session then runs `claude-code-acp`
-- ($CLAUDE_CODE_ACP, else from PATH) with the `acp` profile (rules/profiles.lua) adjusted for it:
--   * options: tool_approval as Claude Code's permission modes (ask → default, auto → acceptEdits,
--     yolo → bypassPermissions, which Claude Code withholds from root: then acceptEdits, and agentd
--     answers its permission requests); model through ACP set_model (default, opus, haiku, …);
--     effort and work_mode have no form there and are reported as not applied;
--   * steering: Claude Code has no mid-turn steer over ACP, so a message sent during a turn waits
--     for its end and starts the next turn (send answers delivered = "queued");
--   * the status contract names its TodoWrite tool; there is no sandbox probe.
-- The adapter finds its API through Claude Code's own settings (ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL
-- in the orchestrator's environment, or `claude /login`).
return {
  description = "run every agent as Claude Code through its ACP adapter",
  agent_command = function(argv, info)
    return {
      argv = { os.getenv("CLAUDE_CODE_ACP") or "claude-code-acp" },
      profile = { base = "acp", name = "claude-code", plan_tool = "TodoWrite" },
    }
  end,
}
