-- Small whole-file reads shared by agentd's modules (config files, /proc entries).
local M = {}

-- The whole text of the file at path (or its first max bytes), or nil when it cannot be read.
function M.read(path, max)
  local f = io.open(path, "r")
  if not f then return nil end
  local text = f:read(max or "a")
  f:close()
  return text
end

return M
