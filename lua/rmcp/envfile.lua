-- Settings of our own for hosts that pass their MCP servers almost no environment (Codex passes only
-- HOME, PATH and a few more): `NAME=value` lines in ~/.config/reasonix-mcp/env become environment
-- variables of every reasonix-mcp process, agentd and agents included, unless the environment
-- already sets them. Found from HOME alone (not XDG_CONFIG_HOME, which Codex does not pass), so the
-- shell and every host read the same file.
local uv = require "luv"

local M = {}

-- The names the file set in this process (doctor tells them apart from the environment's).
M.applied = {}

-- Every name the file has, set here or not (the environment had it): name → true. A host that
-- passes no environment gets them all.
M.names = {}

-- The env file's path.
function M.path()
  return require("rmcp.config").user_home() .. "/.config/reasonix-mcp/env"
end

-- Applies the env file; returns the names it set (a missing file sets none), or nil, message for
-- a line that is not `NAME=value`, a blank line or a # comment.
function M.apply()
  local file = M.path()
  local f = io.open(file, "r")
  if not f then return {} end
  local set, names, n = {}, {}, 0
  for line in f:lines() do
    n = n + 1
    if not line:match("^%s*$") and not line:match("^%s*#") then
      local name, value = line:match("^%s*([%a_][%w_]*)=(.*)$")
      if not name then
        f:close()
        return nil, string.format("%s:%d: expected NAME=value", file, n)
      end
      names[name] = true
      local cur = os.getenv(name)
      if cur == nil or cur == "" then
        uv.os_setenv(name, value)
        set[#set + 1] = name
      end
    end
  end
  f:close()
  M.applied, M.names = set, names
  return set
end

return M
