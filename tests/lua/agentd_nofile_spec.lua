-- agentd's open-file limit: it raises its soft limit to the hard one (a fleet holds thousands of
-- pipes), and every agent it starts gets the soft limit agentd started with back, also after a live
-- handover (exec keeps the raised limit, so the new image learns the old one from the handover).
-- agentd starts through a wrapper that lowers the soft limit, from a private copy of the binary
-- the test replaces (cp to a temp name + mv, as an install does).
-- needs: agent python3
local uv = require "luv"
local support = require "agentd_support"

local BIN = os.getenv("RMCP_BIN") or require("rmcp.host").exe
local SOFT = 512 -- the soft limit agentd starts with here

-- The soft and hard RLIMIT_NOFILE of process pid ("self" for ours), from /proc/<pid>/limits.
local function nofile(pid)
  local f = assert(io.open(string.format("/proc/%s/limits", pid), "r"))
  local text = f:read("a")
  f:close()
  local soft, hard = text:match("Max open files%s+(%S+)%s+(%S+)")
  return tonumber(soft), tonumber(hard)
end

-- Writes an executable shell script at path running body.
local function script(path, body)
  local f = assert(io.open(path, "w"))
  f:write("#!/bin/sh\n", body)
  f:close()
  uv.fs_chmod(path, 493)
end

-- A private copy of the binary, a wrapper that starts it with soft limit SOFT, and an agent wrapper
-- that notes the soft limit it was started with (the agent may raise its own) in the file limits.
local function install(t)
  local dir = t.tmpdir("rmcp-bin")
  local o = { exe = dir .. "/reasonix-mcp", start = dir .. "/start-low", agent = dir .. "/agent", limits = dir .. "/limits" }
  assert(os.execute(string.format("cp '%s' '%s'", BIN, o.exe)))
  script(o.start, string.format("ulimit -Sn %d || exit 1\nexec '%s' \"$@\"\n", SOFT, o.exe))
  script(o.agent, string.format("ulimit -Sn >> '%s'\nexec '%s' \"$@\"\n", o.limits, support.bin))
  return o
end

-- How many agent processes (and posture probes) started so far, and the soft limits they were given
-- that differ from SOFT.
local function agent_limits(o)
  local n, other = 0, {}
  for line in io.lines(o.limits) do
    n = n + 1
    if tonumber(line) ~= SOFT then other[#other + 1] = line end
  end
  return n, other
end

-- Starts a keep_alive agent and waits until it is idle; returns its session id.
local function idle_agent(ctx, c, task)
  local sid = ctx.call(c, "spawn", { task = task, keep_alive = true }).session_id
  ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  return sid
end

test("agents start with agentd's own soft open-file limit, before and after a live handover", function(t)
  local _, hard = nofile("self")
  if not hard or hard <= SOFT then
    return t.fail(string.format("this test needs a finite hard RLIMIT_NOFILE above %d (have %s)", SOFT, tostring(hard)))
  end
  local o = install(t)
  local ctx = support.setup(t, { scenario = { rules = { { last_role = "user", text = "ok" } } }, env = {
    REASONIX_BIN = o.agent, REASONIX_MCP_LIVE_HANDOVER = "1", REASONIX_MCP_RELOAD_GRACE_MS = "100",
    REASONIX_MCP_RELOAD_SETTLE_MS = "50", REASONIX_MCP_RELOAD_CHECK_MS = "20" } })
  local c = ctx.client("orch-a", nil, { exe = o.start })
  local first = idle_agent(ctx, c, "first")
  local daemon = c.info.agentd_pid
  t.eq(nofile(daemon), hard, "agentd raised its own soft limit to the hard one")
  local before, other = agent_limits(o)
  t.ok(before > 0, "the agent started through the wrapper")
  t.eq(other, {}, "the agent got the limit agentd started with")

  assert(os.execute(string.format("cp '%s' '%s.new' && mv '%s.new' '%s'", BIN, o.exe, o.exe, o.exe)))
  local ino = uv.fs_stat(o.exe).ino
  t.wait_for(function()
    local st = uv.fs_stat(string.format("/proc/%d/exe", daemon))
    return st and st.ino == ino
  end, 10000, "agentd to re-execute the new binary")
  ctx.call(c, "list", {}) -- (retry-safe: reconnects past the connection the exec closed)
  local second = idle_agent(ctx, c, "second")
  t.eq(c.info.agentd_pid, daemon, "the same daemon: exec")
  t.eq(nofile(daemon), hard, "the new image keeps the raised limit")
  local after
  after, other = agent_limits(o)
  t.ok(after > before, "the second agent started through the wrapper")
  t.eq(other, {}, "an agent the new image started got the limit agentd first started with")
  ctx.call(c, "stop", { session_id = first })
  ctx.call(c, "stop", { session_id = second })
end)
