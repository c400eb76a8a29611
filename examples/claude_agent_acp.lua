-- Example 6b — Claude Code as the agent through @agentclientprotocol/claude-agent-acp (npm), the
-- maintained successor of the adapter in claude_code_acp.lua, and the one that reports what a
-- session spends: after each turn a usage_update (context `used`/`size`, and `cost` = {amount,
-- currency}, the session's running total in USD, kept across session/load), and the turn's own
-- tokens as `usage` {inputTokens, outputTokens, cachedReadTokens, cachedWriteTokens, totalTokens}
-- in each session/prompt result. A policy file: copy it into $REASONIX_MCP_HOME/policy/ (instead of
-- claude_code_acp.lua). Every session then runs `claude-agent-acp` ($CLAUDE_AGENT_ACP, else from
-- PATH) with the `acp` profile. It runs the native Claude CLI that npm installs beside it
-- (@anthropic-ai/claude-agent-sdk-linux-x64, …) or $CLAUDE_CODE_EXECUTABLE, and finds its API as
-- Claude Code does (ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL, or `claude /login`).
-- Unlike the older adapter it offers its model only as an ACP session config option (category
-- "model"), not in session/new's `models`, so a requested model is reported as not applied.
return {
  description = "run every agent as Claude Code through @agentclientprotocol/claude-agent-acp",
  agent_command = function(argv, info)
    return {
      argv = { os.getenv("CLAUDE_AGENT_ACP") or "claude-agent-acp" },
      profile = { base = "acp", name = "claude-code", plan_tool = "TodoWrite" },
    }
  end,
}
