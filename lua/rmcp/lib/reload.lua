-- Hot reload without restart (DESIGN.md "Reload without restart"). The stateless built-in modules
-- the caller names (rmcp/reloadable.lua) and the files of registered sources (the user policies,
-- policy/loader.lua) are rebuilt when their file changes, by build-and-swap (lib/swap.lua: a change
-- set swaps in as one unit or not at all); an error keeps the previous versions, is logged with
-- file:line and is reported once to the next caller (take_warnings). Changes are noticed by check()
-- at the start of every call, so the next call sees them; agentd also checks between calls when the
-- change queue has something.
-- This module holds the process's reload state, so it is never reloaded itself; it knows nothing of
-- what it reloads beyond the names and checks it is given.
--
-- Cost of check() (it runs on every agentd request and every MCP call). A full check stats every file
-- that can change what is loaded: the files of the loaded reloadable modules (a list precomputed
-- when that set changes, not per call) and what each source checks (~15 stats, ~20-40 us). So the
-- server and agentd (roles "server", "agentd") skip it when
--   * every dir holding such a file is watched on one inotify queue (rmcp.fswatch; a source's missing
--     dir through the nearest dir on its path that exists, for entries appearing only), and
--   * check() itself found no event for them in the queue (one non-blocking read), and the last
--     full check was less than `window` (1 s) ago.
-- The kernel queues an edit's event before the editor's write returns, so reading the queue at the
-- start of the call sees every edit made before the call was sent: the next call always sees it. In
-- agentd (opts.watch) a uv poll on the queue's fd also runs a check shortly after an edit between
-- calls. The window is a safety net for a watch the kernel dropped. Any other role (tests, scripts)
-- stats on every call. A swap, a tracked module loaded later, a source dir appearing or a watch that
-- could not start all force full checks until the watches cover the new set again.
local uv = require "luv"
local fswatch = require "rmcp.fswatch"
local chunks = require "rmcp.lib.chunks"
local log = require "rmcp.lib.log"
local swap = require("rmcp.lib.lazy")("rmcp.lib.swap") -- (loaded by the first change: an idle process does not carry it)

local M = {}

-- A fresh, empty reload state.
local function new_state()
  return {
    started = false, checking = false, role = "?",
    prefixes = {},      -- module name prefixes that may be reloaded (init's opts)
    modules = {},       -- module names that may be reloaded (init's opts)
    module_check = nil, -- check(name, value, path) a freshly built module must pass (init's opts)
    tracked = {},       -- module name -> {path, stamp}: the file each reloadable module came from
    failed_sig = nil,   -- stamps of the built-in change set whose build last failed (reported once)
    sources = {},       -- registered sources: {name, dirs(), check()} (the user policies)
    generation = 0,     -- bumped by every successful swap (the server rebuilds its tool list on a change)
    warnings = {},      -- pending warnings for the next caller
    on_warning = nil,   -- called when a warning starts waiting (init's opts)
    queue = nil,        -- the rmcp.fswatch queue over every watched dir, drained synchronously by check()
    queue_fd = nil,     -- its fd (quiet_window)
    poll = nil,         -- agentd: a uv poll on the queue's fd, so an edit between calls runs a check
    wds = {},           -- watch key -> its watch descriptor in queue
    wd_dir = {},        -- watch descriptor -> the dir it watches
    wd_only = {},       -- watch descriptor -> the one name that counts (a missing dir's way), or false
    fixed = {},         -- loaded modules that are not reloadable: file -> {name, stamp} (agentd)
    mods = {},          -- precomputed {name, entry} of S.tracked, what check_builtins stats
    layout = true,      -- the tracked set or a source dir's identity changed: rebuild mods + watches
    dirty = true,       -- an event arrived (or nothing is known yet): the next check is a full one
    covered = false,    -- every dir that holds a stamped file is watched
    last_full = 0,      -- uv.hrtime() of the last full check
    window = 0,         -- ns a clean (no event) state may skip the stats; 0: always stat
    dir_ids = {},       -- source dir -> inode it was watched with ("missing": its way is watched)
    parent_of = {},     -- missing source dir -> the existing dir watched for the way to it
  }
end

local S = new_state()

-- True when module name may be reloaded in place.
function M.reloadable(name)
  if S.modules[name] then return true end
  for _, p in ipairs(S.prefixes) do
    if name:sub(1, #p) == p then return true end
  end
  return false
end

-- A file's identity for change detection (mtime with ns, size, inode), or nil when it is missing.
local function stamp(path)
  local st = uv.fs_stat(path)
  if not st then return nil end
  return string.format("%d.%09d:%d:%d", st.mtime.sec, st.mtime.nsec, st.size, st.ino)
end
M.stamp = stamp

-- Queues text for the next caller (once: an identical pending warning is not repeated) and logs it
-- unless the caller already logged the details.
function M.warn(text, logged)
  if not logged then log.warn("%s", text) end
  for _, w in ipairs(S.warnings) do
    if w == text then return end
  end
  S.warnings[#S.warnings + 1] = text
  if S.on_warning then S.on_warning() end
end

-- Returns the pending warnings and forgets them (each is reported to one caller).
function M.take_warnings()
  local w = S.warnings
  if w[1] == nil then return w end -- (none: asked on every call, no new table for it)
  S.warnings = {}
  return w
end

-- Counts successful swaps; a caller that caches something built from reloadable modules compares it.
function M.generation()
  return S.generation
end

-- Builds the changed modules (names, with their stamps) and swaps them in, or restores everything
-- (lib/swap.lua). Returns true, or nil and the error (first line).
local function build(names, stamps)
  local tracked, err = swap.build(names, {
    reloadable = M.reloadable, stamps = stamps, stamp = stamp, check = S.module_check,
    path_of = function(name) return S.tracked[name] and S.tracked[name].path end,
  })
  if not tracked then return nil, err end
  for name, t in pairs(tracked) do
    S.tracked[name] = t
    S.layout = true
  end
  return true
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

local watch_dirs

-- Rebuilds the list check_builtins stats (when the tracked set changed, not per call).
local function list_mods()
  local mods = {}
  for name, e in pairs(S.tracked) do mods[#mods + 1] = { name, e } end
  table.sort(mods, function(a, b) return a[1] < b[1] end)
  S.mods = mods
end

-- The identity of dir for watching it: its inode, or "missing".
local function dir_id(dir)
  local st = uv.fs_stat(dir)
  return st and tostring(st.ino) or "missing"
end

-- True when a source dir was created, removed or replaced since it was watched.
local function source_dirs_moved()
  for _, src in ipairs(S.sources) do
    for _, d in ipairs(src.dirs()) do
      if S.dir_ids[d] ~= dir_id(d) then return true end
    end
  end
  return false
end

-- Runs one full check: built-ins first (sources may use them), then each source. The dirty flag is
-- cleared first, so an event that arrives while the stats run forces the next check.
local function check_all()
  S.dirty = false
  S.last_full = uv.hrtime()
  if S.layout then list_mods() end
  local swapped = check_builtins()
  for _, src in ipairs(S.sources) do
    if src.check() then swapped = true end
  end
  if source_dirs_moved() then S.layout = true end
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

-- Takes the events read from the change queue: marks the state dirty for an event in a watched dir
-- (or for the next step on the way to a missing source dir, which also moves that watch), and in
-- agentd notes edits of modules that only a restart loads.
local function take_events(events)
  for _, ev in ipairs(events) do
    local only = S.wd_only[ev.wd]
    if only == false then
      S.dirty = true
      if S.watch and ev.name ~= "" then note_fixed(S.wd_dir[ev.wd] .. "/" .. ev.name) end
    elseif only and ev.name == only then
      S.dirty, S.layout = true, true
    end -- (nil: the last event of a watch already removed)
  end
end

-- Notices changed files and swaps in their new versions; call it at the start of every call.
-- Returns true when something was swapped in. Skips the stats while the watched dirs saw no event
-- and the last full check is recent (see the top of this file).
function M.check()
  if not S.started or S.checking then return false end
  local queue = S.queue
  local events = queue and queue:read()
  if events then take_events(events) end
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

-- While check() would skip its stats (no event seen, every dir watched, the window open): the fd of
-- the change queue (an event makes it readable) and the uv.hrtime() at which the window closes;
-- else nil. The server lane (server/lane.lua) takes calls without a check only then.
function M.quiet_window()
  if not S.started or S.dirty or not S.covered or S.window <= 0 or not S.queue_fd then return nil end
  return S.queue_fd, S.last_full + S.window
end

-- True when warnings wait for the next caller (take_warnings).
function M.has_warnings()
  return #S.warnings > 0
end

-- agentd: runs a check shortly after the queue becomes readable between calls (editors write in
-- several steps), then listens again.
local function listen()
  if not S.poll then return end
  S.poll:start("r", function()
    S.poll:stop()
    S.debounce:start(S.debounce_ms or 50, 0, function()
      M.check()
      listen()
    end)
  end)
end

-- Stops watching key.
local function unwatch(key)
  local wd = S.wds[key]
  if wd and S.queue then S.queue:remove(wd) end
  if wd then S.wd_only[wd], S.wd_dir[wd] = nil, nil end
  S.wds[key] = nil
end

-- Adds dir to the queue under key (only: the one entry name that counts, watched for entries
-- appearing or going, not for writes); returns success.
local function watch(key, dir, only)
  if S.wds[key] then return true end
  local wd = S.queue and S.queue:add(dir, only ~= nil)
  if not wd then return false end
  S.wds[key], S.wd_only[wd], S.wd_dir[wd] = wd, only or false, dir
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

-- Watches every dir holding a tracked module (in agentd, a fixed one too, so note_fixed hears an
-- edit) and every source dir; a missing source dir through
-- the nearest dir that exists on its path ($REASONIX_MCP_HOME itself may not exist yet), for the next
-- name on the way only, so the log agentd writes there queues nothing. Sets S.covered when all of
-- them are watched.
watch_dirs = function()
  local covered = true
  local dirs = {}
  for _, e in pairs(S.tracked) do dirs[e.path:match("^(.*)/[^/]*$") or "."] = true end
  for file in pairs(S.fixed) do dirs[file:match("^(.*)/[^/]*$") or "."] = true end -- note_fixed hears them
  for dir in pairs(dirs) do
    if not watch(dir, dir) then covered = false end
  end
  for _, src in ipairs(S.sources) do
    for _, d in ipairs(src.dirs()) do
      local id = dir_id(d)
      if S.dir_ids[d] ~= id then -- created, removed or replaced: the old watch sees nothing any more
        if not dirs[d] then unwatch(d) end
        S.dir_ids[d] = id
      end
      if id == "missing" then
        local key = "way:" .. d
        local parent, base = nearest_existing(d)
        if S.parent_of[d] ~= parent then unwatch(key) end
        S.parent_of[d] = parent
        if not parent or not watch(key, parent, base) then covered = false end
      else
        if S.parent_of[d] then unwatch("way:" .. d) end
        S.parent_of[d] = nil
        if not watch(d, d) then covered = false end
      end
    end
  end
  S.covered = covered
end

-- Registers a source of reloadable files besides the built-in modules (the user policies): src =
-- {name, dirs() -> the dirs to watch, check() -> true when what it loaded changed}. Its dirs are
-- watched from now on and check() runs on every full check.
function M.add_source(src)
  S.sources[#S.sources + 1] = src
  S.layout = true
  watch_dirs()
  S.layout = false
end

-- Records the file of a reloadable module when require loads it, so later edits are noticed.
local function searcher(name)
  if not S.started or not M.reloadable(name) then return nil end
  local path = package.searchpath(name, package.path)
  if not path then return nil end
  local st = stamp(path)
  local chunk, err = chunks.loadfile(path)
  if not chunk then
    error(string.format("error loading module '%s' from file '%s':\n\t%s", name, path, err), 2)
  end
  S.tracked[name] = { path = path, stamp = st }
  S.layout, S.dirty = true, true -- stat it from now on, and watch its dir
  return chunk, path
end

-- Starts hot reload for this process. opts: role ("server", "agentd"), prefixes and modules (what may
-- be reloaded), check(name, value, path) (a built module's extra check), watch (agentd: also check
-- between calls), on_swap() (after every successful swap), on_warning() (when a warning starts
-- waiting for a caller), debounce_ms, window_ms. Sources (the user policies) register afterwards
-- with add_source.
function M.init(opts)
  opts = opts or {}
  M.stop()
  S = new_state()
  S.role, S.watch, S.on_swap, S.on_warning = opts.role or "?", opts.watch, opts.on_swap, opts.on_warning
  S.prefixes, S.modules, S.module_check = opts.prefixes or {}, opts.modules or {}, opts.check
  S.debounce_ms = opts.debounce_ms
  local window_ms = opts.window_ms
  if window_ms == nil then window_ms = (S.role == "server" or S.role == "agentd") and 1000 or 0 end
  S.window = math.floor(window_ms * 1e6)
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
  S.queue_fd = S.queue and S.queue:fileno()
  S.started = true
  if S.watch then
    for name in pairs(package.loaded) do
      if type(name) == "string" and name:match("^rmcp%.") and not M.reloadable(name) then
        local file = package.searchpath(name, package.path)
        if file then S.fixed[file] = { name = name, stamp = stamp(file) } end
      end
    end
    if S.queue then
      S.debounce = uv.new_timer()
      S.debounce:unref()
      S.poll = uv.new_poll(S.queue:fileno())
      S.poll:unref()
      listen()
    end
  end
  S.layout = false
  list_mods()
  watch_dirs()
  S.last_full = uv.hrtime()
  S.dirty = false
  log.info("hot reload on (%s): %d module(s) tracked", S.role, #S.mods)
end

-- Stops watching and forgets the state (tests; a process just exits).
function M.stop()
  for _, h in ipairs({ S.poll, S.debounce }) do
    if h and not h:is_closing() then h:close() end
  end
  if S.queue then S.queue:close() end
  S = new_state()
end

return M
