-- reasonix_restart_agentd: replace the shared daemon (global: affects every orchestrator), and
-- answer only once a distinct daemon from the current binary answers.
local uv = require "luv"
local async = require "rmcp.lib.async"
local json = require "rmcp.lib.json"
local common = require "rmcp.tools.common"

local PING_MS, RESTART_MS, SUCCESSOR_MS = 3000, 20000, 30000

-- Waits ms inside the handler's coroutine.
local function pause(ms)
  async.await(function(resume)
    local t = uv.new_timer()
    t:start(ms, 0, function() t:close(); resume() end)
  end)
end

-- True while process pid exists.
local function alive(pid)
  return uv.kill(pid, 0) == 0
end

-- Ends daemon pid that does not answer: TERM, then KILL 3 s later; returns the signal that ended it,
-- or nil when even KILL did not within 3 s.
local function escalate(pid)
  for _, sig in ipairs({ "TERM", "KILL" }) do
    uv.kill(pid, "sig" .. sig:lower())
    for _ = 1, 30 do
      if not alive(pid) then return sig end
      pause(100)
    end
  end
  return nil
end

-- Waits until a daemon other than old_pid answers ping (the link reconnects and starts one when
-- none runs); returns its ping, or nil and why not.
local function successor(ctx, old_pid)
  local deadline, last = uv.now() + SUCCESSOR_MS, nil
  while uv.now() < deadline do
    local r, err = ctx.agentd_within("ping", {}, PING_MS)
    if r and r.agentd_pid ~= old_pid then return r end
    last = err
    pause(100)
  end
  return nil, string.format("no new agentd answered within %d s%s", SUCCESSOR_MS // 1000, last and (": " .. last.message) or "")
end

-- The caller's sessions a daemon killed mid-work left orphaned (resume or resume_fleet brings them back).
local function orphaned(ctx)
  local out = json.array()
  local list = ctx.agentd("list", { all = true, limit = 500 })
  for _, row in ipairs(list and list.sessions or {}) do
    if row.status == "orphaned" then out[#out + 1] = row.session_id end
  end
  return out
end

return {
  name = "reasonix_restart_agentd",
  title = "Restart agentd",
  description = "Replace the agent daemon; refused while agents work or hold undelivered results (force "
    .. "stops yours).",
  inputSchema = common.object({ force = { type = "boolean" } }),
  annotations = { readOnlyHint = false, destructiveHint = true, idempotentHint = false, openWorldHint = false },
  cli = { verb = "restart-agentd", aliases = { "restart" } },
  -- Doc-only: docs/tools.md is generated from it (scripts/gen-docs.lua); tools/list never sends it.
  doc = {
    args = {
      { "force", "Stop your agents at work (checkpointed), and end a daemon that does not answer (TERM, then KILL)." },
    },
    result = {
      { "restarted", "true." },
      { "old_pid, agentd_pid", "The old and the new daemon." },
      { "version, current_binary", "The new daemon's version, and whether it is this binary's." },
      { "recoverable_sessions[]", "Your agents it closed: resume them." },
      { "checkpointed_sessions[]", "With force: those of them stopped mid-work." },
      { "escalated", "TERM or KILL: how an unanswering daemon was ended." },
    },
    notes = "Refused while your agents work or hold undelivered results (force stops them); other orchestrators' agents at work refuse it too, as a count, and force does not override them.",
  },
  handler = function(args, ctx)
    local before = ctx.agentd_within("ping", {}, PING_MS)
    local info = before or ctx.agentd_info()
    local old_pid = info and info.agentd_pid
    local r, err, escalated
    if before then
      r, err = ctx.agentd_within("restart", { force = args.force }, RESTART_MS)
      -- a refusal stays one; only a daemon that does not answer is forced out
      if not r and not (err.timeout and args.force) then return nil, err end
    elseif not args.force then
      return nil, "agentd does not answer; pass force=true to end it (TERM, then KILL) and start a new one"
    end
    if not r then
      if not old_pid then return nil, "agentd does not answer and its pid is unknown" end
      escalated = escalate(old_pid)
      if not escalated then return nil, "agentd pid " .. old_pid .. " survived TERM and KILL" end
    end
    local new, nerr = successor(ctx, old_pid)
    if not new then return nil, nerr end
    -- the old daemon exits right after starting its successor: answer once it is gone
    for _ = 1, 50 do
      if not old_pid or not alive(old_pid) then break end
      pause(100)
    end
    return {
      restarted = true, old_pid = old_pid, agentd_pid = new.agentd_pid, version = new.version,
      current_binary = new.version == require("rmcp.host").version, escalated = escalated,
      recoverable_sessions = r and r.recoverable_sessions or orphaned(ctx),
      checkpointed_sessions = r and r.checkpointed_sessions or nil,
    }
  end,
}
