#!/bin/sh
# Used by examples/agent_wrapper.lua: logs each agent start, then becomes the real agent (exec keeps
# the pid, the stdio pipes and the process group agentd gave it).
log="${REASONIX_MCP_HOME:-$HOME/.reasonix-mcp}/agent-wrapper.log"
printf '%s pid=%s cwd=%s argv=%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$$" "$PWD" "$*" >> "$log"
exec "$@"
