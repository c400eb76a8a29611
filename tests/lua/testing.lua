-- Assertions and per-case plumbing for Lua specs (see run.lua): t.eq, t.ok, t.match, t.await,
-- t.wait_for, t.defer, t.tmpdir. A spec that needs the real agent says so in a `-- needs:` line
-- (tests/support/needs.sh checks it before the spec runs).
local uv = require "luv"
local async = require "rmcp.lib.async"
local json = require "rmcp.lib.json"

local M = {}

local failure_mt = { __tostring = function(f) return f.message end }

-- Raises a test failure carrying message and where it happened.
local function fail(message, level)
  local info = debug.getinfo((level or 2) + 1, "Sl")
  local where = info and string.format("%s:%d: ", info.short_src, info.currentline) or ""
  error(setmetatable({ message = where .. message }, failure_mt), 0)
end

-- Compares two values structurally.
local function deep_equal(a, b)
  if a == b then return true end
  if type(a) ~= "table" or type(b) ~= "table" then return false end
  for k, v in pairs(a) do if not deep_equal(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

-- Shows a value readably in a failure message.
local function show(v)
  if type(v) == "table" then return json.encode(v) or tostring(v) end
  if type(v) == "string" then return string.format("%q", v) end
  return tostring(v)
end
M.show = show

-- Builds the t object handed to one case.
local function new_t(case)
  local t = { deferred = {}, name = case.name }
  function t.ok(v, msg) if not v then fail(msg or "expected a true value", 2) end return v end
  function t.eq(got, want, msg)
    if not deep_equal(got, want) then
      fail(string.format("%s\n   got: %s\n  want: %s", msg or "values differ", show(got), show(want)), 2)
    end
  end
  function t.ne(got, other, msg)
    if deep_equal(got, other) then fail((msg or "values should differ") .. ": " .. show(got), 2) end
  end
  function t.match(s, pattern, msg)
    if type(s) ~= "string" or not s:find(pattern) then
      fail(string.format("%s\n  %s does not match %q", msg or "no match", show(s), pattern), 2)
    end
  end
  function t.fail(msg) fail(msg, 2) end
  -- Registers cleanup to run after the case, newest first, even when it fails.
  function t.defer(fn) t.deferred[#t.deferred + 1] = fn end
  -- Waits for start(done) to call done(...), failing after timeout_ms (default 30 s).
  function t.await(start, timeout_ms, what)
    local timer = uv.new_timer()
    local results = table.pack(async.await(function(resume)
      timer:start(timeout_ms or 30000, 0, function() resume("__timeout__") end)
      start(function(...) resume(...) end)
    end))
    if not timer:is_closing() then timer:close() end
    if results[1] == "__timeout__" then fail("timed out waiting for " .. (what or "a callback"), 2) end
    return table.unpack(results, 1, results.n)
  end
  -- Polls pred every interval until it returns a true value (for states with no event, e.g. a pid gone);
  -- what (a string, or a function giving one) names it in the failure.
  function t.wait_for(pred, timeout_ms, what, interval_ms)
    local deadline = uv.now() + (timeout_ms or 10000)
    while true do
      local v = pred()
      if v then return v end
      if uv.now() >= deadline then
        fail("timed out waiting for " .. (type(what) == "function" and what() or what or "a condition"), 2)
      end
      async.sleep(interval_ms or 20)
      uv.update_time()
    end
  end
  -- Makes a private temp dir removed after the case.
  function t.tmpdir(prefix)
    local dir = assert(uv.fs_mkdtemp((os.getenv("TMPDIR") or "/tmp") .. "/" .. (prefix or "rmcp-test") .. "-XXXXXX"))
    t.defer(function() os.execute("rm -rf '" .. dir .. "'") end)
    return dir
  end
  t.sleep = async.sleep
  return t
end

-- Runs fn with environment variables set (false unsets one), restoring them afterwards.
function M.with_env(vars, fn)
  local saved = {}
  for k, v in pairs(vars) do
    saved[k] = os.getenv(k) or false
    if v then uv.os_setenv(k, v) else uv.os_unsetenv(k) end
  end
  local ok, err = pcall(fn)
  for k, v in pairs(saved) do
    if v then uv.os_setenv(k, v) else uv.os_unsetenv(k) end
  end
  if not ok then error(err, 0) end
end

-- Runs one case to completion with its timeout; returns true, or false and a message.
function M.run_case(case)
  local t = new_t(case)
  local timeout = case.opts.timeout or 120000
  local outcome = table.pack(async.await(function(resume)
    local timer = uv.new_timer()
    timer:start(timeout, 0, function()
      timer:close()
      resume(false, string.format("case timed out after %d ms", timeout))
    end)
    async.run(function()
      local ok, err = xpcall(case.fn, function(e)
        if getmetatable(e) == failure_mt then return e end
        return debug.traceback(tostring(e), 2)
      end, t)
      if not timer:is_closing() then timer:close() end
      resume(ok, err)
    end)
  end))
  local ok, err = outcome[1], outcome[2]
  for i = #t.deferred, 1, -1 do
    local dok, derr = xpcall(t.deferred[i], debug.traceback)
    if not dok and ok then ok, err = false, "cleanup failed: " .. tostring(derr) end
  end
  if not ok then return false, tostring(err) end
  return true
end

return M
