-- Loads the user policies: the *.lua files in $REASONIX_MCP_HOME/policy/ (or the dirs in
-- REASONIX_MCP_POLICY_PATH), in order, each into its own narrow environment (policy/api.lua) and
-- checked (policy/check.lua). It is a source of lib/reload: the same watches and the same check at
-- the start of every call notice new, changed and removed files; a broken file is refused with a
-- warning to the next caller and its previous version keeps running. Holds the loaded policies, so
-- it is never reloaded itself.
local uv = require "luv"
local log = require "rmcp.lib.log"
local reload = require "rmcp.lib.reload"
local policy_check = require "rmcp.policy.check"

local M = {}

-- A fresh, empty loader state.
local function new_state()
  return {
    role = "?",
    dirs = {},          -- dirs scanned for *.lua, in order
    dir_stamps = {},    -- dir -> stamp of the listing last read ("missing" when it does not exist)
    files = {},         -- ordered policy paths from the last listing
    checked_files = nil, -- the listing the last full pass ran on
    by_path = {},       -- policy path -> {stamp = loaded version, failed = stamp of a broken version, policy}
    policies = {},      -- loaded policies in load order
  }
end

local S = new_state()

-- The policy dirs: REASONIX_MCP_POLICY_PATH (colon-separated) or $REASONIX_MCP_HOME/policy.
function M.dirs()
  local path = os.getenv("REASONIX_MCP_POLICY_PATH")
  local dirs = {}
  if path and path ~= "" then
    for dir in path:gmatch("[^:]+") do dirs[#dirs + 1] = (dir:gsub("/+$", "")) end
    return dirs
  end
  return { require("rmcp.config").home() .. "/policy" }
end

-- The loaded user policies, in load order: {name, file, path, dir, hooks}.
function M.policies()
  return S.policies
end

-- What callers derive from the loaded policies, per loaded list (a change of the policies loads a
-- new list: what was derived from the old one goes with it).
local derived = setmetatable({}, { __mode = "k" })

-- A table for what callers derive from the loaded policies (reloadable modules keep no state of
-- their own): the same one while the loaded policies are.
function M.derived()
  local list = S.policies
  local t = derived[list]
  if not t then
    t = {}
    derived[list] = t
  end
  return t
end

-- The first line of an error (tracebacks go to the log, the first line to the caller).
local function first_line(err)
  return (tostring(err):match("^[^\n]*"))
end

-- Why path (a policy file or dir) must not be trusted, or nil: policies run as us inside agentd,
-- so (like tmux's socket dir) they must be ours and not writable by others. (Group-writable is
-- accepted: with a umask of 002 every file is, and the group is usually the user's own.)
local function untrusted(path)
  local st = uv.fs_stat(path)
  if not st then return nil end
  local ok, sys = pcall(require, "rmcp.sys")
  local euid = ok and sys.geteuid and sys.geteuid() or st.uid
  if st.uid ~= euid then return string.format("%s is owned by uid %d, not by us (uid %d)", path, st.uid, euid) end
  if st.mode & 2 ~= 0 then return string.format("%s is writable by others (mode %o)", path, st.mode & 511) end
  return nil
end

-- Loads one policy file into its own environment and checks it; returns the policy or nil, error.
local function load_policy(path)
  local why = untrusted(path)
  if why then return nil, "refused: " .. why end
  local dir, file = path:match("^(.*)/([^/]*)$")
  local env = require("rmcp.policy.api").env(path, S.role)
  local chunk, err = loadfile(path, "t", env)
  if not chunk then return nil, err end
  local ok, value = xpcall(chunk, debug.traceback)
  if not ok then
    log.error("policy %s raised while loading: %s", path, tostring(value))
    return nil, first_line(value)
  end
  local policy = { file = file, dir = dir, path = path, hooks = value, env = env, reported = {} }
  local cok, cerr = pcall(policy_check.policy, value, path)
  if not cok then return nil, first_line(cerr) end
  policy.name = type(value) == "table" and type(value.name) == "string" and value.name or file
  return policy
end

-- Lists the policy files (dirs in order, *.lua by name within each), re-reading a dir only when it changed.
local function list_files()
  local dirty = false
  for _, dir in ipairs(S.dirs) do
    local st = reload.stamp(dir) or "missing"
    if S.dir_stamps[dir] ~= st then
      S.dir_stamps[dir] = st
      dirty = true
    end
  end
  if not dirty then return S.files end
  local files = {}
  for _, dir in ipairs(S.dirs) do
    local names = {}
    local why = untrusted(dir)
    if why then reload.warn("policy dir skipped: " .. why) end
    local h = not why and uv.fs_scandir(dir)
    while h do
      local name, kind = uv.fs_scandir_next(h)
      if not name then break end
      if name:match("%.lua$") and not name:match("^%.") and kind ~= "directory" then names[#names + 1] = name end
    end
    table.sort(names)
    for _, n in ipairs(names) do files[#files + 1] = dir .. "/" .. n end
  end
  S.files = files
  return files
end

-- Loads new and changed policy files, drops removed ones; returns true when the set changed. This is
-- the source's check: lib/reload runs it on every full check.
local function check()
  local files = list_files()
  if files == S.checked_files then -- same listing: only a changed stamp needs the full pass below
    local same = true
    for i = 1, #files do
      local e = S.by_path[files[i]]
      local st = reload.stamp(files[i])
      if not e or (st and st ~= e.stamp and st ~= e.failed) then
        same = false
        break
      end
    end
    if same then return false end
  end
  S.checked_files = files
  local changed, seen, list = false, {}, {}
  for _, path in ipairs(files) do
    seen[path] = true
    local e = S.by_path[path]
    if not e then
      e = {}
      S.by_path[path] = e
    end
    local st = reload.stamp(path)
    if st and st ~= e.stamp and st ~= e.failed then
      local p, err = load_policy(path)
      if p then
        e.policy, e.stamp, e.failed = p, st, nil
        changed = true
        log.info("policy %s loaded (%s)", path, S.role)
      else
        e.failed = st
        reload.warn(string.format("policy %s not %s: %s", path,
          e.policy and "reloaded, the previous version keeps running" or "loaded", err))
      end
    end
    if e.policy then list[#list + 1] = e.policy end
  end
  for path, e in pairs(S.by_path) do
    if not seen[path] then
      S.by_path[path] = nil
      if e.policy then
        changed = true
        log.info("policy %s removed", path)
      end
    end
  end
  if changed or #list ~= #S.policies then S.policies = list end
  return changed
end

-- Loads the user policies now and keeps them current through lib/reload (call after reload.init).
-- opts: role ("server", "agentd"), dirs (default M.dirs()).
function M.init(opts)
  opts = opts or {}
  S = new_state()
  S.role = opts.role or "?"
  S.dirs = opts.dirs or M.dirs()
  check()
  reload.add_source({ name = "policies", dirs = function() return S.dirs end, check = check })
  local names = {}
  for _, p in ipairs(S.policies) do names[#names + 1] = p.file end
  log.info("user policies (%s): %d file(s)%s from %s", S.role, #names,
    #names > 0 and (" [" .. table.concat(names, ", ") .. "]") or "", table.concat(S.dirs, ":"))
end

return M
