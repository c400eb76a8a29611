-- Which path names our binary for a process we start from it (agentd, its successor): the path this
-- process was started by when it still leads to the running binary, so an upgrade that repoints a
-- symlink there (npm shims, Homebrew links) is followed; otherwise the binary's real path.
local uv = require "luv"
local config = require "rmcp.config"

local M = {}

-- argv[0] of this process made absolute (or found on PATH) when it resolves to the running binary,
-- else require("rmcp.host").exe.
function M.invoked()
  local exe = require("rmcp.host").exe
  local f = io.open("/proc/self/cmdline", "rb")
  if not f then return exe end
  local argv0 = (f:read("a") or ""):match("^[^%z]+")
  f:close()
  if not argv0 then return exe end
  local path
  if argv0:find("/", 1, true) then
    path = argv0:sub(1, 1) == "/" and argv0 or (uv.cwd() .. "/" .. (argv0:gsub("^%./", "")))
  else
    path = config.which(argv0)
  end
  if path and uv.fs_realpath(path) == exe then return path end
  return exe
end

return M
