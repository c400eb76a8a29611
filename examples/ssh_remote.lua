-- Example 7 — agents on another machine, over ssh (a policy file: copy it into
-- $REASONIX_MCP_HOME/policy/). With REASONIX_REMOTE_HOST set — in the environment of the host that
-- asks (each orchestrator's own: two hosts can send their agents to two machines), else agentd's —
-- every agent runs there:
--   ssh [-F $REASONIX_REMOTE_SSH_CONFIG] -T <opts> HOST cd CWD && exec env $REASONIX_REMOTE_ENV sh -c GUARD guard reasonix acp
-- ssh joins its words into one remote command line, so the argv still ends in `acp`: the sandbox
-- probe runs the same way with `doctor --json` on the remote side. The session's cwd must exist
-- there (a shared or mirrored checkout). Everything else is as for a local agent — the reasonix
-- profile, steering, resume (but for agentd's sandbox, which cannot wall in another machine: a
-- spawn asking for one is refused unless it allows the fallback). The agent ends when its ssh session does, whether or not it honours
-- EOF: on the remote side it runs in a process group of its own under a small sh guard that kills
-- that group once the ssh session is gone (stop closes stdin, then ends ssh; kill -9 of agentd kills
-- ssh by the parent-death signal). ServerAliveInterval ends a session whose network is gone.
--   REASONIX_REMOTE_HOST        ssh destination (host, user@host or a Host of the ssh config)
--   REASONIX_REMOTE_SSH_CONFIG  an ssh config file (-F) with its port, key, known hosts …
--   REASONIX_REMOTE_BIN         the agent on the remote machine (default: reasonix on its PATH)
--   REASONIX_REMOTE_ENV         NAME=value words set for the agent there (its REASONIX_HOME, key …)

-- The remote guard (sh -c GUARD guard AGENT ARGS…): the agent in a session and process group of its
-- own, keeping the channel as stdin; a watcher that kills that group within a second of the ssh
-- session process (the guard's parent) going away.
local GUARD = table.concat({
  'exec 3<&0; setsid "$@" <&3 3<&- & a=$!; p=$PPID; exec 3<&-', -- (a background job's own stdin is /dev/null)
  '( while kill -0 $p 2>/dev/null && kill -0 $a 2>/dev/null; do sleep 1; done',
  '  kill -TERM -$a 2>/dev/null; sleep 2; kill -KILL -$a 2>/dev/null ) </dev/null >/dev/null 2>&1 &',
  'wait $a',
}, "\n")

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
    for _, w in ipairs({ "sh", "-c", quoted(GUARD), "guard" }) do cmd[#cmd + 1] = w end
    cmd[#cmd + 1] = quoted(setting("REASONIX_REMOTE_BIN") or "reasonix")
    cmd[#cmd + 1] = "acp"
    -- (remote: agentd's sandbox cannot hold an agent on another machine; a spawn that asks for one is
    -- refused, or runs with its posture saying it is not sandboxed when the caller allows the fallback)
    return { argv = cmd, profile = { base = "reasonix", name = "reasonix-over-ssh", remote = true } }
  end,
}
