-- Small whole files: reads shared by agentd's modules (config files, /proc entries), and atomic
-- 0600 writes (session records, routines, the server's tool-set choice).
local uv = require "luv"

local M = {}

-- The whole text of the file at path (or its first max bytes), or nil when it cannot be read.
function M.read(path, max)
  local f = io.open(path, "r")
  if not f then return nil end
  local text = f:read(max or "a")
  f:close()
  return text
end

-- Writes text to path atomically (temp file in the same dir, fsync unless fsync is false, rename);
-- returns true or nil, err.
function M.write_atomic(path, text, fsync)
  local tmp = string.format("%s.tmp%d", path, uv.os_getpid()) -- (luv's pid is a float: "%d", never "1234.0")
  local fd, err = uv.fs_open(tmp, "w", 384) -- 0600
  if not fd then return nil, err end
  local ok, werr, off = true, nil, 0
  while off < #text do -- a short write (a disk or file-size limit reached) goes on until its errno
    ok, werr = uv.fs_write(fd, off == 0 and text or text:sub(off + 1), -1)
    if not ok or ok == 0 then ok, werr = nil, werr or "EIO: nothing written"; break end
    off = off + ok
  end
  if ok and fsync ~= false then ok, werr = uv.fs_fsync(fd) end
  uv.fs_close(fd)
  if not ok then uv.fs_unlink(tmp); return nil, werr end
  local rok, rerr = uv.fs_rename(tmp, path)
  if not rok then uv.fs_unlink(tmp); return nil, rerr end
  return true
end

-- Makes dir and the parents it lacks (mode, default 0700, for those it makes); returns true or
-- nil, err.
function M.mkdir_p(dir, mode)
  mode = mode or 448 -- 0700
  local path = ""
  for part in dir:gmatch("[^/]+") do
    path = path .. "/" .. part
    if not uv.fs_stat(path) then
      local ok, err, code = uv.fs_mkdir(path, mode)
      if not ok and code ~= "EEXIST" then return nil, err end
    end
  end
  return true
end

return M
