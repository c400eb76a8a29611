-- Finds processes by their environment: every test and benchmark process carries a run marker
-- (RMCP_TEST_RUN=…, RMCP_BENCH_RUN=…) that children inherit, so what a run left behind can be named.
local uv = require "luv"

local M = {}

-- Reads a /proc file, or nil when the process is gone.
local function read_proc(pid, file)
  local f = io.open("/proc/" .. pid .. "/" .. file, "rb")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  return text
end

-- True while pid exists and is not a zombie.
function M.alive(pid)
  local stat = read_proc(string.format("%d", math.tointeger(tonumber(pid)) or -1), "stat")
  return stat ~= nil and not stat:match("^%d+ %b() Z")
end

-- Live processes other than this one whose environment contains mark (when given) and whose
-- command line contains needle (when given): a list of {pid, cmd}.
function M.find(mark, needle)
  local found, me = {}, tostring(uv.os_getpid())
  local dir = uv.fs_scandir("/proc")
  while dir do
    local name = uv.fs_scandir_next(dir)
    if not name then break end
    if name:match("^%d+$") and name ~= me then
      local env = read_proc(name, "environ") or ""
      if (not mark or env:find(mark, 1, true)) and M.alive(name) then
        local cmd = (read_proc(name, "cmdline") or "?"):gsub("%z", " ")
        if not needle or cmd:find(needle, 1, true) then found[#found + 1] = { pid = tonumber(name), cmd = cmd } end
      end
    end
  end
  return found
end

-- Resident memory of pid in KiB (0 when it is gone).
function M.rss_kib(pid)
  local text = read_proc(pid, "status") or ""
  return tonumber(text:match("VmRSS:%s*(%d+)")) or 0
end

return M
