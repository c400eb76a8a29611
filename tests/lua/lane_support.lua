-- The host's side of a lane spec (fastlane_spec, serverlane_spec): two pipes, the lane's input and
-- output channels on one end of each and the spec's on the other.
local uv = require "luv"
local channel = require "rmcp.channel"

local M = {}

-- Opens the host pipes for rig r: lines the lane leaves to Lua land in r.lua_host, lines it writes
-- the host in r.to_host; r.host(line) writes a host line. Returns the lane's input and output
-- channels; t closes all four at its end.
function M.host_pipes(t, r)
  local host_in, host_out = uv.pipe({ nonblock = true }, { nonblock = true }), uv.pipe({ nonblock = true }, { nonblock = true })
  local writer = assert(channel.open(host_in.write, { read = false, write = true }))
  local input = assert(channel.open(host_in.read, { read = true, write = false,
    on_line = function(line) r.lua_host[#r.lua_host + 1] = line end }))
  local out = assert(channel.open(host_out.write, { read = false, write = true }))
  local reader = assert(channel.open(host_out.read, { read = true, write = false,
    on_line = function(line) r.to_host[#r.to_host + 1] = line end }))
  t.defer(function()
    for _, c in ipairs({ writer, input, out, reader }) do c:close() end
  end)
  function r.host(line) assert(writer:write(line)) end
  return input, out
end

return M
