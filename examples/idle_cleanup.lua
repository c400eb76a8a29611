-- Example 3 — a cleanup rule (a policy file: copy it into $REASONIX_MCP_HOME/policy/).
-- Shows the `cleanup` hook, which agentd asks when an agent's turn ends: stop agents that stay idle for
-- N minutes (REASONIX_MCP_CLEANUP_MINUTES in agentd's environment, default 10) unless they were
-- spawned with keep_alive or with their own idle_timeout. A cleanup is reported: agentd logs it,
-- sends the orchestrator an agent_event (status, note "cleanup: …") and then the usual process_exited
-- (exit_reason "cleaned_up"); the session stays resumable with reasonix_resume.
-- Editing the rule re-arms the timers of agents that are idle right now.

local minutes = tonumber(os.getenv("REASONIX_MCP_CLEANUP_MINUTES") or "") or 10

return {
  cleanup = function(session, grace)
    if session.keep_alive then return false end         -- never: the orchestrator asked to keep it
    if session.idle_timeout ~= nil then return grace end -- the spawn call chose its own idle_timeout
    return minutes * 60, string.format("idle for %g min without keep_alive (%s)", minutes, rmcp.policy.file)
  end,
}
