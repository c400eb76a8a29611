-- Ownership and cwd confinement: a session belongs to one orchestrator, and an agent may only be rooted
-- (after resolving symlinks) inside the orchestrator's project dir or a configured [sandbox] allow_write dir.
local uv = require "luv"
local config = require "rmcp.config"
local jsonrpc = require "rmcp.lib.jsonrpc"
local files = require "rmcp.lib.files"

local M = {}

M.UNKNOWN_SESSION = -32001
M.CWD_REFUSED = -32003

-- The error for a session id the caller may not see (unknown and foreign look the same).
function M.unknown(id)
  return jsonrpc.error(M.UNKNOWN_SESSION, "unknown session " .. tostring(id) .. " (not one of this orchestrator's sessions)")
end

-- Looks up session id for orchestrator owner in sessions; returns s or nil, error. A routine run's
-- session is also its routine creator's to look at, answer and stop (on_behalf_of), though it is
-- in no orchestrator's list.
function M.lookup(sessions, owner, id)
  if type(id) ~= "string" or id == "" then
    return nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, "session_id must be a non-empty string")
  end
  local s = sessions[id]
  if not s or (s.owner ~= owner and s.on_behalf_of ~= owner) then return nil, M.unknown(id) end
  return s
end

-- Extracts the [sandbox] allow_write entries from TOML text (a small reader for this one key).
function M.allow_write_from_toml(text)
  local out, in_sandbox, collecting, buf = {}, false, false, {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    local bare = line:gsub("^%s+", "")
    if collecting then
      buf[#buf + 1] = line
      if line:find("]", 1, true) then collecting = false end
    elseif bare:match("^%[") then
      in_sandbox = bare:match("^%[%s*sandbox%s*%]") ~= nil
    elseif in_sandbox and bare:match("^allow_write%s*=") then
      local rest = bare:match("^allow_write%s*=%s*(.*)$")
      buf[#buf + 1] = rest
      if not rest:find("]", 1, true) then collecting = true end
    end
  end
  local joined = table.concat(buf, "\n"):gsub("#[^\n]*", "")
  for q, v in joined:gmatch("([\"'])(.-)%1") do
    if q then out[#out + 1] = v end
  end
  return out
end

-- The allow_write dirs (realpaths) of the user's own Reasonix config (config.toml in the Reasonix
-- home of environment map e, default ours). A reasonix.toml inside the workspace is not read: a
-- repository must not widen the confinement of the agents run in it.
function M.allow_write_dirs(e)
  local dirs = {}
  local configs = { config.reasonix_home(e) .. "/config.toml" }
  for _, file in ipairs(configs) do
    local text = files.read(file)
    if text then
      for _, d in ipairs(M.allow_write_from_toml(text)) do
        if d:sub(1, 2) == "~/" then d = config.user_home() .. d:sub(2) end
        if d:sub(1, 1) == "/" then
          local real = uv.fs_realpath(d)
          if real then dirs[#dirs + 1] = real end
        end
      end
    end
  end
  return dirs
end

-- True when path is dir or below it (both realpaths).
function M.inside(path, dir)
  if dir == "/" then return true end
  return path == dir or path:sub(1, #dir + 1) == dir .. "/"
end

-- Resolves and checks a spawn cwd for an orchestrator rooted at project_dir whose environment map
-- is e (its REASONIX_MCP_ALLOW_ANY_CWD and Reasonix home count; default ours); what names another
-- path confined the same way (a sandbox's extra path: a file or a dir, required).
-- Returns the realpath or nil, error (bad params or -32003 refused).
function M.confine(project_dir, cwd, e, what)
  local label = what or "cwd"
  if (cwd ~= nil or what) and (type(cwd) ~= "string" or cwd == "" or cwd:find("%z")) then
    return nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, label .. " must be a non-empty path")
  end
  local want = cwd or project_dir
  if not want then
    return nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, "cwd is required (this connection declared no project_dir)")
  end
  if want:sub(1, 1) ~= "/" then
    if not project_dir then return nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, label .. " must be absolute") end
    want = project_dir .. "/" .. want
  end
  local real, err = uv.fs_realpath(want)
  if not real then
    return nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, label .. " " .. want .. " does not exist: " .. tostring(err))
  end
  local st = uv.fs_stat(real)
  if not what and (not st or st.type ~= "directory") then
    return nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, "cwd " .. want .. " is not a directory")
  end
  if config.flag("ALLOW_ANY_CWD", e) then return real end
  local project_real = project_dir and uv.fs_realpath(project_dir)
  if project_real and M.inside(real, project_real) then return real end
  local allowed = M.allow_write_dirs(e)
  for _, d in ipairs(allowed) do
    if M.inside(real, d) then return real end
  end
  local msg = string.format(
    "%s %s%s is outside the project dir %s%s; spawn inside the project, add the dir to [sandbox] allow_write in %s, or set REASONIX_MCP_ALLOW_ANY_CWD=1",
    label, want, real ~= want and (" (resolves to " .. real .. ")") or "", tostring(project_real or project_dir),
    #allowed > 0 and (" and the allow_write dirs " .. table.concat(allowed, ", ")) or "",
    config.reasonix_home(e) .. "/config.toml")
  return nil, jsonrpc.error(M.CWD_REFUSED, msg)
end

return M
