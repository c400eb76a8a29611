-- Example 7 — agents on another machine, over ssh (a policy file: copy it into
-- $REASONIX_MCP_HOME/policy/). With REASONIX_REMOTE_HOST set — in the environment of the host that
-- asks (each orchestrator's own: two hosts can send their agents to two machines), else agentd's —
-- every agent runs there:
--   ssh [-F $REASONIX_REMOTE_SSH_CONFIG] -T <opts> HOST cd CWD && exec env $REASONIX_REMOTE_ENV reasonix acp
-- ssh joins its words into one remote command line, so the argv still ends in `acp`: the sandbox
-- probe runs the same way with `doctor --json` on the remote side. The session's cwd must exist
-- there (a shared or mirrored checkout). Everything else is as for a local agent — the reasonix
-- profile, steering, resume. The agent ends when its ssh session does: stop closes its stdin (the
-- agent exits on EOF) and then ends ssh; kill -9 of agentd kills ssh (the parent-death signal), and
-- the remote side sees the connection close. ServerAliveInterval ends an agent whose network is gone.
--   REASONIX_REMOTE_HOST        ssh destination (host, user@host or a Host of the ssh config)
--   REASONIX_REMOTE_SSH_CONFIG  an ssh config file (-F) with its port, key, known hosts …
--   REASONIX_REMOTE_BIN         the agent on the remote machine (default: reasonix on its PATH)
--   REASONIX_REMOTE_ENV         NAME=value words set for the agent there (its REASONIX_HOME, key …)

-- s as one word for the remote shell.
local function quoted(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

return {
  description = "run agents on another machine over ssh",
  agent_command = function(argv, info)
    local function setting(name) return (info.env or {})[name] or os.getenv(name) end
    local host = setting("REASONIX_REMOTE_HOST")
    if not host or host == "" then return nil end
    local cmd = { "ssh" }
    local config = setting("REASONIX_REMOTE_SSH_CONFIG")
    if config and config ~= "" then cmd[#cmd + 1] = "-F"; cmd[#cmd + 1] = config end
    for _, w in ipairs({ "-T", "-o", "BatchMode=yes", "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=2", host,
                         "cd", quoted(info.cwd), "&&", "exec", "env" }) do
      cmd[#cmd + 1] = w
    end
    for w in (setting("REASONIX_REMOTE_ENV") or ""):gmatch("%S+") do cmd[#cmd + 1] = quoted(w) end
    cmd[#cmd + 1] = quoted(setting("REASONIX_REMOTE_BIN") or "reasonix")
    cmd[#cmd + 1] = "acp"
    return { argv = cmd, profile = "reasonix" }
  end,
}
