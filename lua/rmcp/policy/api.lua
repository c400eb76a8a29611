-- The narrow API a user policy file runs with (docs/policies.md): its whole global environment is the
-- safe Lua builtins plus the `rmcp` table (log, json, read-only config, path helpers). No require, io,
-- os.execute, load or debug: a policy decides, the daemon acts. (A convenience boundary, not a
-- security one: policy files are the user's own code and run with the user's rights.)
local uv = require "luv"

local M = {}

-- Builtins a policy may use as they are.
local SAFE = { "assert", "error", "ipairs", "next", "pairs", "pcall", "select", "tonumber", "tostring", "type",
               "xpcall", "rawequal", "rawget", "rawlen", "rawset", "setmetatable", "getmetatable", "_VERSION" }

-- Copies a library table so a policy cannot change it for everyone.
local function copy(t)
  local out = {}
  for k, v in pairs(t) do out[k] = v end
  return out
end

-- Splits an absolute path into its parts with "." and ".." resolved lexically.
local function parts_of(path)
  local parts = {}
  for piece in path:gmatch("[^/]+") do
    if piece == ".." then
      if #parts > 0 then parts[#parts] = nil end
    elseif piece ~= "." then
      parts[#parts + 1] = piece
    end
  end
  return parts
end

-- Resolves path against base (default: the process cwd): lexically, then symlinks of the longest
-- existing prefix (so a link inside the workspace that points out of it is seen for what it is).
function M.resolve(path, base)
  if type(path) ~= "string" or path == "" then return nil end
  if path:sub(1, 1) ~= "/" then path = (base or uv.cwd()) .. "/" .. path end
  local parts = parts_of(path)
  for i = #parts, 0, -1 do
    local prefix = "/" .. table.concat(parts, "/", 1, i)
    local real = uv.fs_realpath(prefix)
    if real then
      local rest = table.concat(parts, "/", i + 1)
      if rest == "" then return real end
      return (real == "/" and "" or real) .. "/" .. rest
    end
  end
  return "/" .. table.concat(parts, "/")
end

-- True when path (resolved against dir) is dir itself or inside it.
function M.inside(path, dir)
  local d = M.resolve(dir)
  local p = M.resolve(path, d)
  if not p or not d then return false end
  if d == "/" then return true end
  return p == d or p:sub(1, #d + 1) == d .. "/"
end

-- A logger whose lines name the policy file.
local function logger(file)
  local log = require "rmcp.lib.log"
  local out = {}
  for _, level in ipairs({ "debug", "info", "warn", "error" }) do
    out[level] = function(fmt, ...)
      local ok, text = pcall(string.format, tostring(fmt), ...)
      log[level]("policy %s: %s", file, ok and text or tostring(fmt))
    end
  end
  return out
end

-- Read-only config access through the live config module (a reload of it is seen at once).
local function config_view()
  local function via(name)
    return function(...) return require("rmcp.config")[name](...) end
  end
  return { default = via("default"), limit = via("limit"), flag = via("flag"), idle_timeout = via("idle_timeout"),
           home = via("home"), env = via("env") }
end

-- The global environment for the policy file at path, loaded by process role ("server", "agentd").
function M.env(path, role)
  local dir, file = path:match("^(.*)/([^/]*)$")
  local json = require "rmcp.lib.json"
  local env = {}
  for _, k in ipairs(SAFE) do env[k] = _G[k] end
  for _, lib in ipairs({ "string", "table", "math", "utf8", "coroutine" }) do env[lib] = copy(_G[lib]) end
  env.os = { time = os.time, clock = os.clock, date = os.date, getenv = os.getenv }
  local plog = logger(file or path)
  env.print = function(...)
    local out = {}
    for i = 1, select("#", ...) do out[#out + 1] = tostring((select(i, ...))) end
    plog.info("%s", table.concat(out, "\t"))
  end
  local ok, host = pcall(require, "rmcp.host")
  env.rmcp = {
    version = ok and type(host) == "table" and host.version or "0",
    role = role,
    policy = { file = file, dir = dir, path = path },
    log = plog,
    json = { encode = json.encode, decode = json.decode, null = json.null, array = json.array },
    config = config_view(),
    path = {
      resolve = M.resolve, inside = M.inside,
      dirname = function(p) return (tostring(p):match("^(.*)/[^/]*$")) end,
      basename = function(p) return (tostring(p):match("([^/]*)$")) end,
    },
  }
  env._G = env
  return env
end

return M
