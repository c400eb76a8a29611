-- Short stable names derived from strings (an orchestrator id, a runtime dir, a repository path):
-- a non-cryptographic hash, the same in every process and across restarts.
local M = {}

-- 64-bit FNV-1a of s as 16 hex digits (Lua integers wrap, which is what FNV needs).
function M.fnv1a64(s)
  local h = 0xcbf29ce484222325 -- wraps to a negative integer; the bits are what count
  for i = 1, #s do
    h = h ~ s:byte(i)
    h = h * 1099511628211
  end
  return string.format("%016x", h)
end

return M
