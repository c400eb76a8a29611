-- Shell lines the Lua specs run for their own setup (repositories, files): one that must succeed,
-- and one whose output a case reads.
local M = {}

-- Runs a shell command (the test's own setup), failing case t when it fails.
function M.sh(t, cmd)
  local ok = os.execute("(" .. cmd .. ") >/dev/null 2>&1")
  t.ok(ok, "ran: " .. cmd)
end

-- Output of a shell command (stderr dropped).
function M.out(cmd)
  local f = io.popen(cmd .. " 2>/dev/null")
  local text = f:read("a")
  f:close()
  return text
end

return M
