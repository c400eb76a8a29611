-- Notices that the executable the launcher runs servers from was replaced (renamed over: a new
-- inode) or rewritten (size/mtime/mode). inotify on its directory sees a rename at once; a slow
-- stat poll covers filesystems without inotify. Reports once per new identity, after it settled.
local uv = require "luv"
local log = require "rmcp.lib.log"

local M = {}

-- The file's identity as one comparable string, or nil while it is missing or not executable.
function M.identity(path)
  local st = uv.fs_stat(path)
  if not st or st.type ~= "file" or not uv.fs_access(path, "x") then return nil end
  return string.format("%d:%d:%d:%d.%09d:%o", st.dev, st.ino, st.size, st.mtime.sec, st.mtime.nsec, st.mode)
end

-- Watches path (a symlink is followed: repointing it is a change too); on_change() runs when its
-- identity differs from the last one seen, once no event came for opts.settle_ms (default 250; a
-- copy in progress keeps postponing it). Returns {close()}.
function M.watch(path, on_change, opts)
  opts = opts or {}
  local settle_ms = opts.settle_ms or 250
  local last = M.identity(path)
  local closed = false
  local settle = uv.new_timer()
  local events, poll = {}, nil

  -- Compares the identity now with the last one seen.
  local function check()
    if closed then return end
    local id = M.identity(path)
    if id and id ~= last then
      log.debug("binary %s changed: %s -> %s", path, tostring(last), id)
      last = id
      on_change()
    end
  end

  -- (Re)arms the settle timer: the check runs settle_ms after the last event.
  local function touched()
    if closed then return end
    settle:stop()
    settle:start(settle_ms, 0, check)
  end

  -- inotify on the directory of the path and, behind a symlink, of its target
  local names = { path }
  local real = uv.fs_realpath(path)
  if real and real ~= path then names[2] = real end
  for _, name in ipairs(names) do
    local dir, base = name:match("^(.*)/([^/]+)$")
    if dir then
      if dir == "" then dir = "/" end
      local event = uv.new_fs_event()
      local ok, err = event:start(dir, {}, function(werr, filename)
        if werr then
          log.warn("watching %s: %s; the slow poll still notices a new binary", dir, tostring(werr))
          return
        end
        if filename == nil or filename == base then touched() end
      end)
      if ok then
        events[#events + 1] = event
      else
        log.warn("cannot watch %s (%s); polling %s every %d ms instead", dir, tostring(err), path, opts.poll_ms or 2000)
        event:close()
      end
    end
  end
  -- the slow poll: a timer and a stat here (an fs_poll would start libuv's thread pool, four
  -- threads and their memory in every process, for one stat every two seconds)
  poll = uv.new_timer()
  poll:start(opts.poll_ms or 2000, opts.poll_ms or 2000, function()
    if M.identity(path) ~= last then touched() end
  end)

  return {
    close = function()
      if closed then return end
      closed = true
      for _, event in ipairs(events) do event:close() end
      poll:close()
      settle:close()
    end,
  }
end

return M
