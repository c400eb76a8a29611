-- Test seams: the file a test names in REASONIX_MCP_TEST_SEAMS; lua/rmcp/main.lua runs it once when
-- a reasonix-mcp process starts. It replaces rmcp.lib.clock and rmcp.lib.fault as the environment
-- the test gave asks (read here, once):
--   RMCP_TEST_CLOCK=FILE  the clock reads now (epoch seconds) from FILE, which the test writes whole
--                         (by rename), and a sleeper looks at it again every 50 ms
--   RMCP_TEST_FAULT=NAME  fault point NAME kills the process (SIGKILL), as a crash there would
--   RMCP_TEST_HEAP=FILE   on SIGUSR2 the process runs a full garbage collection and writes its Lua
--                         heap in bytes to FILE (whole, by rename): what it holds, for a memory test
local clock_file = os.getenv("RMCP_TEST_CLOCK")
local fault_name = os.getenv("RMCP_TEST_FAULT")
local heap_file = os.getenv("RMCP_TEST_HEAP")

if clock_file and clock_file ~= "" then
  local clock = require "rmcp.lib.clock"
  local system_now = clock.now
  -- Now from the test's file; the system clock while the file holds no time yet.
  clock.now = function()
    local f = io.open(clock_file, "r")
    local text = f and f:read("a") or ""
    if f then f:close() end
    local t = tonumber(text:match("[%d%.]+") or "")
    return t and math.floor(t) or system_now()
  end
  -- The test moves time by writing the file, which wakes no one: look often.
  clock.recheck_ms = function() return 50 end
end

if fault_name and fault_name ~= "" then
  local fault = require "rmcp.lib.fault"
  -- Dies at the named point, as a crash there would.
  fault.point = function(name)
    if name ~= fault_name then return end
    require("rmcp.lib.log").warn("fault point %s: the process kills itself (RMCP_TEST_FAULT)", name)
    local uv = require "luv"
    uv.kill(uv.os_getpid(), "sigkill")
  end
end

if heap_file and heap_file ~= "" then
  local uv = require "luv"
  local sig = uv.new_signal()
  -- Writes the heap after a full collection (twice: finalizers run in the first free objects for the second).
  sig:start("sigusr2", function()
    collectgarbage("collect")
    collectgarbage("collect")
    local tmp = heap_file .. ".tmp"
    local f = io.open(tmp, "w")
    if not f then return end
    f:write(string.format("%d\n", math.floor(collectgarbage("count") * 1024)))
    f:close()
    os.rename(tmp, heap_file)
  end)
  sig:unref() -- it must not keep a process that is done from exiting
end
