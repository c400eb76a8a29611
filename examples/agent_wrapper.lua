-- Example 5 — run the agent through another command (a policy file: copy it, together with
-- agent-wrapper.sh, into $REASONIX_MCP_HOME/policy/). Shows the `agent_command` hook, which agentd
-- asks for the argv of every agent it starts (argv is {"/path/to/reasonix", "acp"}). Here every agent
-- starts through agent-wrapper.sh, which logs the start to $REASONIX_MCP_HOME/agent-wrapper.log and
-- execs the real agent. The same hook can name any ACP agent binary, or run agents on another
-- machine:  return { "ssh", "-T", "build-box", "reasonix", "acp" }  (the cwd must exist there too).
-- An argv that ends in "acp" is also used for the sandbox probe (`… doctor --json`).

return {
  agent_command = function(argv, info)
    return { rmcp.policy.dir .. "/agent-wrapper.sh", table.unpack(argv) }
  end,
}
