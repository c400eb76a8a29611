-- Build-and-swap of a set of changed modules, like Redis functions: the new code loads into fresh
-- tables with a private require that hands the modules of the set each other's new versions, each
-- built module passes a self-check, and only then are the new contents copied into the live module
-- tables (whose identity other modules hold in locals). Any syntax, runtime or self-check error
-- puts every table of the set back as it was. lib/reload.lua decides when and what to build.
local chunks = require "rmcp.lib.chunks"
local log = require "rmcp.lib.log"

local M = {}

-- The first line of an error (tracebacks go to the log, the first line to the caller).
local function first_line(err)
  return (tostring(err):match("^[^\n]*"))
end

-- Self-check of one freshly built module: it returns a table, passes the caller's check (a tool
-- module is a valid tool), and its optional selfcheck() passes. Raises with the reason.
local function check_module(name, value, path, check)
  if type(value) ~= "table" then error(path .. ": module " .. name .. " must return a table, got " .. type(value), 0) end
  if check then check(name, value, path) end
  if type(value.selfcheck) == "function" then
    local ok, why = value.selfcheck()
    if ok == false then error(path .. ": selfcheck failed: " .. tostring(why or "returned false"), 0) end
  end
end

-- Puts back the live tables a failed build changed, newest first (the undo log of link).
local function restore(linked)
  for i = #linked, 1, -1 do
    local l = linked[i]
    if l.absent then
      package.loaded[l.name] = l.prev
    else
      for k in pairs(l.live) do l.live[k] = nil end
      for k, v in pairs(l.snap) do l.live[k] = v end
      setmetatable(l.live, l.mt)
    end
  end
end

-- Builds the changed modules names and swaps them in as one unit, or restores everything. opts:
-- reloadable(name) (whether a module may be loaded anew by the build), path_of(name) (the file a
-- changed module came from; else package.path finds it), stamps (name -> the stamp its file was
-- built at), stamp(path), check(name, value, path) (raises when a built module is not fit).
-- Returns the modules loaded for the first time by the build ({name = {path, stamp}}), or nil and
-- the error (first line) after logging it in full.
function M.build(names, opts)
  local changed = {}
  for _, n in ipairs(names) do changed[n] = true end
  local built = {}     -- name -> live table holding the new version
  local building = {}
  local linked = {}    -- undo log: {name, live, snapshot, mt} or {name, absent = true}
  local tracked = {}   -- modules first loaded by this build: name -> {path, stamp}
  local real_require = require

  -- Copies the new version into the live module table (keeping its identity, which other modules
  -- hold in locals), remembering the old contents so a later failure can put them back.
  local function link(name, new)
    local live = package.loaded[name]
    if type(live) ~= "table" then
      linked[#linked + 1] = { name = name, absent = true, prev = live }
      package.loaded[name] = new
      return new
    end
    local snap = {}
    for k, v in pairs(live) do snap[k] = v end
    linked[#linked + 1] = { name = name, live = live, snap = snap, mt = getmetatable(live) }
    for k in pairs(snap) do live[k] = nil end
    for k, v in pairs(new) do live[k] = v end
    setmetatable(live, getmetatable(new))
    return live
  end

  local load_one
  -- require for code being built: changed (or not yet loaded) reloadable modules get their new version.
  local function private_require(name)
    if built[name] then return built[name] end
    if opts.reloadable(name) and (changed[name] or package.loaded[name] == nil) then return load_one(name) end
    return real_require(name)
  end

  load_one = function(name)
    if built[name] then return built[name] end
    if building[name] then error("circular require of " .. name .. " while reloading", 0) end
    building[name] = true
    local path = changed[name] and opts.path_of(name) or package.searchpath(name, package.path)
    if not path then error("module " .. name .. " not found on package.path", 0) end
    local st = opts.stamps[name] or opts.stamp(path)
    local chunk, err = chunks.loadfile(path)
    if not chunk then error(err, 0) end
    local value = chunk(name, path)
    check_module(name, value, path, opts.check)
    if not changed[name] then tracked[name] = { path = path, stamp = st } end
    built[name] = link(name, value)
    return built[name]
  end

  _G.require = private_require
  local ok, err = xpcall(function()
    for _, name in ipairs(names) do load_one(name) end
  end, debug.traceback)
  _G.require = real_require
  if ok then return tracked end
  restore(linked)
  log.error("reload failed, previous version kept: %s", tostring(err))
  return nil, first_line(err)
end

return M
