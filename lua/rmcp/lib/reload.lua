-- Hot reload without restart (DESIGN.md "Reload without restart"). Stateless built-in modules under
-- the lua/ tree in use and the user policy files ($REASONIX_MCP_HOME/policy/*.lua, or the dirs in
-- REASONIX_MCP_POLICY_PATH) are rebuilt when their file changes: build-and-swap, like Redis functions.
-- New code loads into fresh tables with a private require that resolves other changed modules to their
-- new versions, passes a self-check, and only then is copied into the live module tables; any syntax,
-- runtime or self-check error restores the previous versions, is logged with file:line and is reported
-- once to the next caller (take_warnings). Changes are noticed by check() at the start of every call,
-- so the next call sees them; agentd also runs check() on fs_event for changes between calls.
-- This module holds the process's reload state, so it is never reloaded itself.
--
-- Cost of check() (it runs on every agentd request and every MCP call). A full check stats every file
-- that can change what is loaded: the files of the loaded reloadable modules (a list precomputed
-- when that set changes, not per call), the policy dirs (for new and removed files) and the policy
-- files: ~15 stats, ~20-40 us. So the server and agentd (roles "server", "agentd") skip it when
--   * every dir holding such a file is watched (a missing policy dir through the nearest dir on its
--     path that exists, for entries appearing only), and
--   * check() itself found no event for them in its rmcp.fswatch queue (one non-blocking read of
--     an inotify fd), and the last full check was less than `window` (1 s) ago.
-- The kernel queues an edit's event before the editor's write returns, so reading the queue at the
-- start of the call sees every edit made before the call was sent: the next call always sees it.
-- (A uv fs_event callback alone could run after that call when both are ready in one loop
-- iteration; agentd still uses fs_event to reload between calls.) The window is a safety net for a
-- watch the kernel dropped. Any other role (tests, scripts) stats on every call. A swap, a tracked
-- module loaded later, a policy dir appearing or a watch that could not start all force full
-- checks until the watches cover the new set again.
local uv = require "luv"
local fswatch = require "rmcp.fswatch"
local log = require "rmcp.lib.log"

local M = {}

-- Built-in modules that hold no state (verified: their state, if any, lives in tables the daemon or
-- server owns). Sessions, connections, the watch registry, the agentd client and the MCP session are
-- not here: their modules keep live state or class tables that instances point at.
M.prefixes = { "rmcp.policy.", "rmcp.server.tools." }
M.modules = {
  ["rmcp.config"] = true, ["rmcp.server.tools"] = true, ["rmcp.server.schema"] = true,
  ["rmcp.server.relay"] = true, ["rmcp.server.elicitation"] = true, ["rmcp.server.orchestrator"] = true,
  ["rmcp.agentd.transcript"] = true, ["rmcp.agentd.posture"] = true, ["rmcp.agentd.ownership"] = true,
  ["rmcp.agentd.models"] = true,
}

-- A fresh, empty reload state.
local function new_state()
  return {
    started = false, checking = false, role = "?",
    tracked = {},       -- module name -> {path, stamp}: the file each reloadable module came from
    failed_sig = nil,   -- stamps of the built-in change set whose build last failed (reported once)
    policy_dirs = {},   -- dirs scanned for *.lua, in order
    dir_stamps = {},    -- dir -> stamp of the listing last read
    policy_files = {},  -- ordered policy paths from the last listing
    by_path = {},       -- policy path -> {stamp = loaded version, failed = stamp of a broken version, policy}
    policies = {},      -- loaded policies in load order
    generation = 0,     -- bumped by every successful swap (the server rebuilds its tool list on a change)
    warnings = {},      -- pending warnings for the next caller
    watchers = {},      -- dir -> fs_event handle (agentd)
    queue = nil,        -- rmcp.fswatch queue over the same dirs, drained synchronously by check()
    wds = {},           -- watcher key -> its watch descriptor in queue
    wd_only = {},       -- watch descriptor -> the one name that counts (a parent dir), or false
    fixed = {},         -- loaded modules that are not reloadable: file -> {name, stamp} (agentd)
    mods = {},          -- precomputed {name, entry} of S.tracked, what check_builtins stats
    layout = true,      -- the tracked set or a policy dir's identity changed: rebuild mods + watches
    dirty = true,       -- an fs_event arrived (or nothing is known yet): the next check is a full one
    covered = false,    -- every dir that holds a stamped file has a live fs_event watch
    last_full = 0,      -- uv.hrtime() of the last full check
    window = 0,         -- ns a clean (no event) state may skip the stats; 0: always stat
    dir_ids = {},       -- policy dir -> inode it was watched with ("missing": its parent is watched)
    parent_of = {},     -- missing policy dir -> the existing dir watched for the way to it
  }
end

local S = new_state()

-- True when module name may be reloaded in place.
function M.reloadable(name)
  if M.modules[name] then return true end
  for _, p in ipairs(M.prefixes) do
    if name:sub(1, #p) == p then return true end
  end
  return S.extra ~= nil and S.extra(name) == true
end

-- A file's identity for change detection (mtime with ns, size, inode), or nil when it is missing.
local function stamp(path)
  local st = uv.fs_stat(path)
  if not st then return nil end
  return string.format("%d.%09d:%d:%d", st.mtime.sec, st.mtime.nsec, st.size, st.ino)
end
M.stamp = stamp

-- The first line of an error (tracebacks go to the log, the first line to the caller).
local function first_line(err)
  return (tostring(err):match("^[^\n]*"))
end

-- Queues text for the next caller (once: an identical pending warning is not repeated) and logs it
-- unless the caller already logged the details.
function M.warn(text, logged)
  if not logged then log.warn("%s", text) end
  for _, w in ipairs(S.warnings) do
    if w == text then return end
  end
  S.warnings[#S.warnings + 1] = text
end

-- Returns the pending warnings and forgets them (each is reported to one caller).
function M.take_warnings()
  local w = S.warnings
  S.warnings = {}
  return w
end

-- The loaded user policies, in load order: {name, file, path, dir, hooks}.
function M.policies()
  return S.policies
end

-- Counts successful swaps; a caller that caches something built from reloadable modules compares it.
function M.generation()
  return S.generation
end

-- The policy dirs: REASONIX_MCP_POLICY_PATH (colon-separated) or $REASONIX_MCP_HOME/policy.
function M.policy_dirs()
  local path = os.getenv("REASONIX_MCP_POLICY_PATH")
  local dirs = {}
  if path and path ~= "" then
    for dir in path:gmatch("[^:]+") do dirs[#dirs + 1] = (dir:gsub("/+$", "")) end
    return dirs
  end
  return { require("rmcp.config").home() .. "/policy" }
end

-- Checks a tool definition (built-in module or policy tool); raises with what is wrong.
function M.check_tool(tool, where)
  local function bad(msg) error(where .. ": " .. msg, 0) end
  if type(tool) ~= "table" then bad("a tool must be a table") end
  if type(tool.name) ~= "string" or not tool.name:match("^[%w_%-%.]+$") or #tool.name > 64 then
    bad("tool name must be 1-64 characters of letters, digits, _ - . (got " .. tostring(tool.name) .. ")")
  end
  if type(tool.description) ~= "string" or tool.description == "" then bad("tool " .. tool.name .. ": description must be a non-empty string") end
  if type(tool.inputSchema) ~= "table" or tool.inputSchema.type ~= "object" then
    bad("tool " .. tool.name .. ": inputSchema must be a table with type = \"object\"")
  end
  if type(tool.handler) ~= "function" then bad("tool " .. tool.name .. ": handler must be a function") end
end

-- Self-check of one freshly built module: it returns a table, a tool module is a valid tool, and its
-- optional selfcheck() passes. Raises with the reason.
local function check_module(name, value, path)
  if type(value) ~= "table" then error(path .. ": module " .. name .. " must return a table, got " .. type(value), 0) end
  local tool_prefix = "rmcp.server.tools."
  if name:sub(1, #tool_prefix) == tool_prefix and name ~= "rmcp.server.tools.common" then
    M.check_tool(value, path)
  end
  if type(value.selfcheck) == "function" then
    local ok, why = value.selfcheck()
    if ok == false then error(path .. ": selfcheck failed: " .. tostring(why or "returned false"), 0) end
  end
end

-- Builds the changed modules (names, with their stamps) and swaps them in, or restores everything.
-- Returns true, or nil and the error (first line) after logging it in full.
local function build(names, stamps)
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
    if M.reloadable(name) and (changed[name] or package.loaded[name] == nil) then return load_one(name) end
    return real_require(name)
  end

  load_one = function(name)
    if built[name] then return built[name] end
    if building[name] then error("circular require of " .. name .. " while reloading", 0) end
    building[name] = true
    local e = S.tracked[name]
    local path = changed[name] and e and e.path or package.searchpath(name, package.path)
    if not path then error("module " .. name .. " not found on package.path", 0) end
    local st = stamps[name] or stamp(path)
    local chunk, err = loadfile(path)
    if not chunk then error(err, 0) end
    local value = chunk(name, path)
    check_module(name, value, path)
    if not changed[name] then tracked[name] = { path = path, stamp = st } end
    built[name] = link(name, value)
    return built[name]
  end

  _G.require = private_require
  local ok, err = xpcall(function()
    for _, name in ipairs(names) do load_one(name) end
  end, debug.traceback)
  _G.require = real_require
  if ok then
    for name, t in pairs(tracked) do
      S.tracked[name] = t
      S.layout = true
    end
    return true
  end
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
  log.error("reload failed, previous version kept: %s", tostring(err))
  return nil, first_line(err)
end

-- Finds changed built-in modules and rebuilds them as one unit; returns true when something swapped.
local function check_builtins()
  local names, stamps
  local mods = S.mods
  for i = 1, #mods do
    local m = mods[i]
    local e = m[2]
    local st = stamp(e.path)
    if st and st ~= e.stamp then
      names = names or {}
      stamps = stamps or {}
      names[#names + 1] = m[1]
      stamps[m[1]] = st
    end
  end
  if not names then
    S.failed_sig = nil
    return false
  end
  table.sort(names)
  local sig = {}
  for _, n in ipairs(names) do sig[#sig + 1] = n .. "=" .. stamps[n] end
  sig = table.concat(sig, ";")
  if sig == S.failed_sig then return false end -- this broken version was reported already
  local t0 = uv.hrtime()
  local ok, err = build(names, stamps)
  if not ok then
    S.failed_sig = sig
    local files = {}
    for _, n in ipairs(names) do files[#files + 1] = S.tracked[n].path end
    M.warn(string.format("reload of %s failed, the previous version keeps running: %s",
      table.concat(files, ", "), err))
    return false
  end
  for _, n in ipairs(names) do S.tracked[n].stamp = stamps[n] end
  S.failed_sig = nil
  log.info("reloaded %s in %.1f ms", table.concat(names, ", "), (uv.hrtime() - t0) / 1e6)
  return true
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
  local cok, cerr = pcall(require("rmcp.policy.hooks").check, value, path)
  if not cok then return nil, first_line(cerr) end
  policy.name = type(value) == "table" and type(value.name) == "string" and value.name or file
  return policy
end

-- Lists the policy files (dirs in order, *.lua by name within each), re-reading a dir only when it changed.
local function policy_files()
  local dirty = false
  for _, dir in ipairs(S.policy_dirs) do
    local st = stamp(dir) or "missing"
    if S.dir_stamps[dir] ~= st then
      S.dir_stamps[dir] = st
      dirty = true
      if S.dir_ids[dir] ~= (st:match("[^:]*$")) then S.layout = true end -- created, removed or replaced
    end
  end
  if not dirty then return S.policy_files end
  local files = {}
  for _, dir in ipairs(S.policy_dirs) do
    local names = {}
    local why = untrusted(dir)
    if why then M.warn("policy dir skipped: " .. why) end
    local h = not why and uv.fs_scandir(dir)
    while h do
      local name, kind = uv.fs_scandir_next(h)
      if not name then break end
      if name:match("%.lua$") and not name:match("^%.") and kind ~= "directory" then names[#names + 1] = name end
    end
    table.sort(names)
    for _, n in ipairs(names) do files[#files + 1] = dir .. "/" .. n end
  end
  S.policy_files = files
  return files
end

-- Loads new and changed policy files, drops removed ones; returns true when the set changed.
local function check_policies()
  local files = policy_files()
  if files == S.checked_files then -- same listing: only a changed stamp needs the full pass below
    local same = true
    for i = 1, #files do
      local e = S.by_path[files[i]]
      local st = stamp(files[i])
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
    local st = stamp(path)
    if st and st ~= e.stamp and st ~= e.failed then
      local p, err = load_policy(path)
      if p then
        e.policy, e.stamp, e.failed = p, st, nil
        changed = true
        log.info("policy %s loaded (%s)", path, S.role)
      else
        e.failed = st
        M.warn(string.format("policy %s not %s: %s", path,
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

local watch_dirs

-- Rebuilds the list check_builtins stats (when the tracked set changed, not per call).
local function list_mods()
  local mods = {}
  for name, e in pairs(S.tracked) do mods[#mods + 1] = { name, e } end
  table.sort(mods, function(a, b) return a[1] < b[1] end)
  S.mods = mods
end

-- Runs one full check: built-ins first (policies may use them), then the policy files. The dirty flag
-- is cleared first, so an event that arrives while the stats run forces the next check.
local function check_all()
  S.dirty = false
  S.last_full = uv.hrtime()
  if S.layout then list_mods() end
  local swapped = check_builtins()
  if check_policies() then swapped = true end
  if swapped then
    S.generation = S.generation + 1
    if S.on_swap then
      local ok, err = xpcall(S.on_swap, debug.traceback)
      if not ok then log.error("reload: on_swap failed: %s", tostring(err)) end
    end
  end
  if S.layout then
    S.layout = false
    list_mods()
    watch_dirs()
  end
  return swapped
end

-- Notices changed files and swaps in their new versions; call it at the start of every call.
-- Returns true when something was swapped in. Skips the stats while the watched dirs saw no event
-- and the last full check is recent (see the top of this file).
function M.check()
  if not S.started or S.checking then return false end
  local events = S.queue and S.queue:read()
  if events then
    for _, ev in ipairs(events) do
      local only = S.wd_only[ev.wd]
      if only == false then
        S.dirty = true
      elseif only and ev.name == only then
        S.dirty, S.layout = true, true -- a step on the way to a missing policy dir: watch from there
      end -- (nil: the last event of a watch already removed)
    end
  end
  if not S.dirty and S.covered and S.window > 0 and uv.hrtime() - S.last_full < S.window then
    return false
  end
  S.checking = true
  local ok, res = xpcall(check_all, debug.traceback)
  S.checking = false
  if not ok then
    S.dirty = true
    log.error("reload check failed: %s", tostring(res))
    return false
  end
  return res
end

-- Runs a check shortly after a burst of file events (editors write in several steps).
local function schedule()
  if not S.debounce then
    S.debounce = uv.new_timer()
    S.debounce:unref()
  end
  S.debounce:stop()
  S.debounce:start(S.debounce_ms or 50, 0, function() M.check() end)
end

-- Says so (once per version) when the file of a loaded module that is not reloadable changed: its
-- new code only runs after a restart, which a person editing it would otherwise not know.
local function note_fixed(path)
  local e = S.fixed[path]
  local st = e and stamp(path)
  if not e or not st or st == e.stamp then return end
  e.stamp = st
  M.warn(string.format("%s changed, but %s holds state and is not hot-reloaded: it takes effect when %s restarts%s",
    path, e.name, S.role, S.role == "agentd" and " (reasonix_restart_agentd)" or ""))
end

-- Stops watching key: its fs_event handle and its descriptor in the synchronous queue.
local function unwatch(key)
  local h = S.watchers[key]
  if h and not h:is_closing() then h:close() end
  S.watchers[key] = nil
  local wd = S.wds[key]
  if wd and S.queue then S.queue:remove(wd) end
  if wd then S.wd_only[wd] = nil end
  S.wds[key] = nil
end

-- Adds dir to the synchronous queue under key (only: the one entry name that counts, watched for
-- entries appearing or going, not for writes); returns success.
local function queue_watch(key, dir, only)
  if S.wds[key] then return true end
  local wd = S.queue and S.queue:add(dir, only ~= nil)
  if not wd then return false end
  S.wds[key], S.wd_only[wd] = wd, only or false
  return true
end

-- The nearest existing dir on the way to the missing dir d, and the name below it that leads to d.
local function nearest_existing(d)
  local parent, base = d:match("^(.*)/([^/]+)$")
  while parent do
    if parent == "" then parent = "/" end
    local st = uv.fs_stat(parent)
    if st and st.type == "directory" then return parent, base end
    if parent == "/" then return nil end
    parent, base = parent:match("^(.*)/([^/]+)$")
  end
  return nil
end

-- Starts an fs_event watch and a queue watch on dir (key: what S.watchers calls it) unless they run;
-- only events for file `only` count when given (a missing policy dir watched through its parent).
-- Returns success.
local function watch(key, dir, only)
  if not queue_watch(key, dir, only) then return false end
  if S.watchers[key] then return true end
  local h = uv.new_fs_event()
  local ok = h and h:start(dir, {}, function(_, name)
    if only and name and name ~= only then return end
    S.dirty = true
    if S.watch then
      schedule()
      if name and not only then note_fixed(dir .. "/" .. name) end
    end
  end)
  if ok then
    h:unref()
    S.watchers[key] = h
    return true
  end
  if h then h:close() end
  return false
end

-- Watches with fs_event every dir holding a tracked module or a policy file, and the parent of a
-- missing policy dir; sets S.covered when all of them are watched. In both processes the events mark
-- the state dirty (check() then stats); in agentd (opts.watch) they also run a check soon.
watch_dirs = function()
  local covered = true
  local dirs = {}
  for _, e in pairs(S.tracked) do dirs[e.path:match("^(.*)/[^/]*$") or "."] = true end
  for dir in pairs(dirs) do
    if not watch(dir, dir) then covered = false end
  end
  for _, d in ipairs(S.policy_dirs) do
    local id = (S.dir_stamps[d] or "missing"):match("[^:]*$")
    if S.dir_ids[d] ~= id then -- created, removed or replaced: the old watch sees nothing any more
      if not dirs[d] then unwatch(d) end
      S.dir_ids[d] = id
    end
    if S.dir_stamps[d] == "missing" then
      -- Watched through the nearest dir that exists ($REASONIX_MCP_HOME itself may not exist yet),
      -- for the next name on the way only, on the queue alone: a uv fs_event there would wake this
      -- process for every line agentd writes to its log in that dir.
      local key = "parent:" .. d
      local parent, base = nearest_existing(d)
      if S.parent_of[d] ~= parent then unwatch(key) end
      S.parent_of[d] = parent
      if not parent or not queue_watch(key, parent, base) then covered = false end
    else
      if S.parent_of[d] then unwatch("parent:" .. d) end
      S.parent_of[d] = nil
      if not watch(d, d) then covered = false end
    end
  end
  S.covered = covered
end

-- Records the file of a reloadable module when require loads it, so later edits are noticed.
local function searcher(name)
  if not S.started or not M.reloadable(name) then return nil end
  local path = package.searchpath(name, package.path)
  if not path then return nil end
  local st = stamp(path)
  local chunk, err = loadfile(path)
  if not chunk then
    error(string.format("error loading module '%s' from file '%s':\n\t%s", name, path, err), 2)
  end
  S.tracked[name] = { path = path, stamp = st }
  S.layout, S.dirty = true, true -- stat it from now on, and watch its dir
  return chunk, path
end

-- Starts hot reload for this process. opts: role ("server", "agentd"), watch (fs_event), on_swap()
-- (after every successful swap), policy_dirs (default M.policy_dirs()), reloadable(name) (extra
-- modules, for tests), debounce_ms. Loads the user policies at once; their errors become warnings.
function M.init(opts)
  opts = opts or {}
  M.stop()
  S = new_state()
  S.role, S.watch, S.on_swap, S.extra = opts.role or "?", opts.watch, opts.on_swap, opts.reloadable
  S.debounce_ms = opts.debounce_ms
  local window_ms = opts.window_ms
  if window_ms == nil then window_ms = (S.role == "server" or S.role == "agentd") and 1000 or 0 end
  S.window = math.floor(window_ms * 1e6)
  S.policy_dirs = opts.policy_dirs or M.policy_dirs()
  if not M.searcher_installed then
    table.insert(package.searchers, 2, searcher)
    M.searcher_installed = true
  end
  for name in pairs(package.loaded) do
    if type(name) == "string" and M.reloadable(name) then
      local path = package.searchpath(name, package.path)
      if path then S.tracked[name] = { path = path, stamp = stamp(path) } end
    end
  end
  S.queue = fswatch.open()
  S.started = true
  for name in pairs(package.loaded) do
    if S.watch and type(name) == "string" and name:match("^rmcp%.") and not M.reloadable(name) then
      local file = package.searchpath(name, package.path)
      if file then S.fixed[file] = { name = name, stamp = stamp(file) } end
    end
  end
  check_policies()
  S.layout = false
  list_mods()
  watch_dirs()
  S.last_full = uv.hrtime()
  S.dirty = false
  local names = {}
  for _, p in ipairs(S.policies) do names[#names + 1] = p.file end
  log.info("hot reload on (%s): %d policy file(s)%s from %s", S.role, #names,
    #names > 0 and (" [" .. table.concat(names, ", ") .. "]") or "", table.concat(S.policy_dirs, ":"))
end

-- Stops watching and forgets the state (tests; a process just exits).
function M.stop()
  for _, h in pairs(S.watchers) do if not h:is_closing() then h:close() end end
  if S.queue then S.queue:close() end
  if S.debounce and not S.debounce:is_closing() then S.debounce:close() end
  S = new_state()
end

return M
