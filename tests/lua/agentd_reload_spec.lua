-- agentd reload: C-level stderr follows the rotated log.
local uv = require "luv"
local support = require "agentd_support"

test("after a log rotation the daemon's stdout and stderr point at the fresh agentd.log", function(t)
  local ctx = support.setup(t, { env = { REASONIX_MCP_LOG_MAX_BYTES = "600" } })
  local log = ctx.mcp_home .. "/agentd.log"
  local c = ctx.client()
  t.ok(c:wait_connected())
  local pid = c.info.agentd_pid
  -- every hello is a log line: connect until the log has rotated at least once
  for i = 1, 12 do
    local x = ctx.client("orch-" .. i)
    t.ok(x:wait_connected())
    x:close()
  end
  t.ok(uv.fs_stat(log .. ".1"), "the log rotated")
  for _, fd in ipairs({ 1, 2 }) do
    t.eq(uv.fs_readlink(string.format("/proc/%d/fd/%d", pid, fd)), log, "fd " .. fd .. " follows the rotation")
  end
end)
