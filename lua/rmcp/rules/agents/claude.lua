-- Claude Code through its ACP agent (@agentclientprotocol/claude-agent-acp, the maintained successor of
-- @zed-industries/claude-code-acp, which reports no usage): the Anthropic Messages API (or
-- ANTHROPIC_BASE_URL), its own native CLI from npm beside it. Its turns take no message midway (the
-- next turn takes it); it plans with TodoWrite; each turn's tokens ride its prompt answer and the
-- session's cost its usage_update.
return {
  name = "claude",
  package = "@agentclientprotocol/claude-agent-acp",
  version = "0.101.0",
  bin = "claude-agent-acp",
  args = {},
  agent_info = "@agentclientprotocol/claude-agent-acp", -- its initialize answer's agentInfo.name
  env = { "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL", "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_EXECUTABLE" },
  profile = { base = "acp", name = "claude", plan_tool = "TodoWrite" },
  about = "Claude Code: Anthropic API; permission modes; plan; usage and cost; a message waits for the turn's end",
}
