-- Lua test runner, run by ctest as: reasonix-mcp script tests/lua/run.lua tests/lua/<name>_spec.lua
-- A spec calls test(name, fn(t)) for each case; every case runs in a coroutine with a timeout, its
-- t.defer cleanups run even when it fails, and at the end no process started by the run may be left.
local uv = require "luv"
local async = require "rmcp.lib.async"
local sys = require "rmcp.sys"

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. here .. "../support/?.lua;" .. package.path
local testing = require "testing"
local procs = require "procs"

local spec = arg[1]
if not spec then
  io.stderr:write("usage: run.lua SPEC.lua [name-filter]\n")
  return sys.stop(2)
end
local filter = arg[2]

-- Marks every process this run starts (children inherit the environment) so leftovers can be found.
local run_id = string.format("%d-%d", uv.os_getpid(), math.floor(uv.hrtime() % 1e9))
uv.os_setenv("RMCP_TEST_RUN", run_id)

local cases = {}
_G.test = function(name, fn, opts) cases[#cases + 1] = { name = name, fn = fn, opts = opts or {} } end
local chunk = assert(loadfile(spec))
chunk()

async.run(function()
  local passed, failed, filtered = 0, 0, 0
  print(string.format("# %s: %d case(s)", spec, #cases))
  for i, case in ipairs(cases) do
    if filter and not case.name:find(filter, 1, true) then
      filtered = filtered + 1
    else
      local t0 = uv.hrtime()
      local ok, err = testing.run_case(case)
      local ms = (uv.hrtime() - t0) / 1e6
      if ok then
        passed = passed + 1
        print(string.format("ok %d - %s (%.0f ms)", i, case.name, ms))
      else
        failed = failed + 1
        print(string.format("not ok %d - %s (%.0f ms)\n%s", i, case.name, ms, tostring(err):gsub("\n", "\n#   ")))
      end
    end
  end
  -- Give reaped-but-closing processes a moment, then insist nothing is left.
  local left
  for _ = 1, 50 do
    left = procs.find("RMCP_TEST_RUN=" .. run_id)
    if #left == 0 then break end
    async.sleep(100)
  end
  if #left > 0 then
    failed = failed + 1
    for _, p in ipairs(left) do
      print(string.format("not ok - process left behind: pid %d: %s", p.pid, p.cmd))
      uv.kill(p.pid, "sigkill")
    end
  end
  print(string.format("%d passed, %d failed, %d filtered out", passed, failed, filtered))
  io.stdout:flush()
  sys.stop(failed > 0 and 1 or 0)
end, function(err)
  io.stderr:write("runner crashed: ", tostring(err), "\n")
  sys.stop(1)
end)
