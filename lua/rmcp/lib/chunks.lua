-- Compiled-chunk cache: a module's bytecode (string.dump, debug info kept) is written once under
-- $REASONIX_MCP_HOME/cache/lua and loaded instead of parsing the source while the source file is
-- unchanged (same path, inode, size and mtime). Parsing is most of a cold start; loading bytecode
-- is a fraction of it. The cache dir is ours alone (0700, not a link, checked like the home), so
-- what it holds is as trusted as the Lua tree; any entry that does not match exactly, or that this
-- Lua refuses, is ignored and rewritten from the source.
local uv = require "luv"

local M = {}

local FORMAT = "rmcp-chunk 1 " .. _VERSION
local dir -- the cache dir once set up, or nil: every load goes to the source

-- A 64-bit FNV-1a hash of s as 16 hex digits (a file name per source path; the header holds the path).
local function hash(s)
  local h = -3750763034362895579 -- 14695981039346656037 as a wrapped integer
  for i = 1, #s do
    h = (h ~ s:byte(i)) * 1099511628211
  end
  return string.format("%016x", h)
end

-- The header line that an entry for the source file at path with stat st must start with.
local function header(path, st)
  return string.format("%s %d %d %d.%09d %s\n", FORMAT, st.ino, st.size, st.mtime.sec, st.mtime.nsec, path)
end

-- Writes text to file atomically (temp file, rename), mode 0600; failures are ignored (a cache).
-- (Not lib/files.write_atomic: the modules this cache loads cannot be required while it loads them.)
local function write_entry(file, text)
  local tmp = string.format("%s.tmp%d", file, uv.os_getpid()) -- (luv's pid is a float: "%d", never "1234.0")
  local fd = uv.fs_open(tmp, "w", 384)
  if not fd then return end
  local ok = uv.fs_write(fd, text, -1) == #text
  uv.fs_close(fd)
  if not (ok and uv.fs_rename(tmp, file)) then uv.fs_unlink(tmp) end
end

-- Loads the Lua file at path like loadfile(path): from the cache when it holds this very version
-- of the file, else from the source (and then caches it). Returns the chunk, or nil and an error.
function M.loadfile(path)
  local st = dir and uv.fs_stat(path)
  if not st then return loadfile(path) end
  local want = header(path, st)
  local file = dir .. "/" .. hash(path) .. ".luac"
  local f = io.open(file, "rb")
  if f then
    local data = f:read("a")
    f:close()
    if data and data:sub(1, #want) == want then
      local chunk = load(data:sub(#want + 1), "@" .. path, "b")
      if chunk then return chunk end
    end
  end
  local chunk, err = loadfile(path)
  if chunk then write_entry(file, want .. string.dump(chunk)) end
  return chunk, err
end

-- package.searchers entry: finds name on package.path and loads it through the cache.
local function searcher(name)
  local path, err = package.searchpath(name, package.path)
  if not path then return "\n\t" .. err:gsub("^\n\t", "") end
  local chunk, lerr = M.loadfile(path)
  if not chunk then
    error(string.format("error loading module '%s' from file '%s':\n\t%s", name, path, lerr), 2)
  end
  return chunk, path
end

-- Turns the cache on for this process, in home's cache/lua (each of home, cache and cache/lua
-- created 0700 if missing; the cache stays off when one is not a private dir of ours).
-- secure_dir is sock.secure_dir. Returns true, or nil and why.
function M.enable(home, secure_dir)
  for _, d in ipairs({ home, home .. "/cache", home .. "/cache/lua" }) do
    local ok, err = secure_dir(d)
    if not ok then return nil, err end
  end
  if not dir then table.insert(package.searchers, 2, searcher) end
  dir = home .. "/cache/lua"
  return true
end

return M
