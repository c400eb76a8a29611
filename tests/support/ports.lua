-- Ports for the tests and the benchmark: one nothing listens on, for a server they start.
local uv = require "luv"

local M = {}

-- A free TCP port on 127.0.0.1 (bound, read back, let go).
function M.free()
  local tcp = uv.new_tcp()
  assert(tcp:bind("127.0.0.1", 0))
  local port = tcp:getsockname().port
  tcp:close()
  return port
end

return M
