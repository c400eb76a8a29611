-- Small whole-file reads shared by agentd's modules (config files, /proc entries).
local M = {}

-- The whole text of the file at path, or nil when it cannot be read.
function M.read(path)
  local f = io.open(path, "r")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  return text
end

return M
