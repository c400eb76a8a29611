-- Example 1 — decide permission requests automatically (a policy file: copy it into
-- $REASONIX_MCP_HOME/policy/; it applies from the next call, no restart).
-- Shows the `permission` hook, which agentd runs for every permission request of an agent:
--   * reads and writes whose paths all lie inside the session's cwd are approved (allow_once),
--   * destructive shell commands (rm -rf, git push --force, git reset --hard, mkfs, dd to a device,
--     a fork bomb, …) are denied (reject_once: the agent is told and carries on without them),
--   * everything else — other commands, paths outside the cwd, agent questions — is passed on to the
--     orchestrator exactly as without a policy (watch/poll report a permission_request).
-- Each automatic decision is logged in agentd.log, journaled (reasonix_transcript: policy_decisions)
-- and shown by reasonix_poll(detail=true) as a `permission_auto` event.
-- Permission requests exist when agents run with tool_approval = "ask" (or "auto" for commands).

-- Lua patterns of commands that are never run without a person looking at them.
local DESTRUCTIVE = {
  "%f[%w]rm%s+%-%a*[rR]%a*f", "%f[%w]rm%s+%-%a*f%a*[rR]", "%f[%w]rm%s+%-%-recursive", -- rm -rf, rm -fr, rm --recursive
  "git%s+push%s.*%-%-force", "git%s+push%s.*%s%-f%f[%s\0]", "git%s+push%s+%-f%f[%s\0]",  -- force pushes
  "git%s+reset%s+%-%-hard", "git%s+clean%s+%-%a*f",
  "%f[%w]mkfs", "%f[%w]dd%s.*of=/dev/", ":%(%)%s*{%s*:|:&%s*};:",                       -- disks, fork bomb
  "%f[%w]chmod%s+%-R%s+777%s+/", "%f[%w]shutdown%f[%W]", "%f[%w]reboot%f[%W]",
}

-- Tool kinds (ACP) that only read or write files.
local FILE_KINDS = { read = true, edit = true, search = true }

return {
  description = "approve file reads/writes inside the session cwd, deny destructive commands, pass the rest on",

  permission = function(req, session)
    if req.kind ~= "permission" then return nil end -- agent questions always go to the orchestrator
    if req.tool_kind == "execute" then
      local command = type(req.input) == "table" and req.input.command or req.title or ""
      for _, pattern in ipairs(DESTRUCTIVE) do
        if command:find(pattern) then return "deny", "destructive command: " .. command end
      end
      return nil
    end
    if FILE_KINDS[req.tool_kind] and #req.paths > 0 then
      for _, path in ipairs(req.paths) do
        if not rmcp.path.inside(path, session.cwd) then return nil end
      end
      return "approve", tostring(req.tool) .. " inside " .. session.cwd
    end
    return nil
  end,

  -- Runs on every (re)load: a broken pattern list is caught before it replaces a working one.
  selfcheck = function()
    for _, pattern in ipairs(DESTRUCTIVE) do assert(pcall(string.find, "", pattern), "bad pattern " .. pattern) end
    return ("rm -rf build"):find(DESTRUCTIVE[1]) ~= nil and ("echo hi"):find(DESTRUCTIVE[1]) == nil
  end,
}
