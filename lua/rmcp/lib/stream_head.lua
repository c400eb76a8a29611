-- The head of a luv stream read before its bytes are relayed (a request line, an HTTP request
-- head): the bytes up to a terminator, at most max of them, within a deadline. What came after the
-- terminator in the same read is handed back as well, for the relay to pass on first.
local uv = require "luv"

local M = {}

-- Reads stream until terminator (a plain string); calls cb(head, rest) once, head without the
-- terminator, or cb(nil, nil, why) when the stream ended, failed, sent more than max bytes without
-- it, or timeout_ms passed. Reading is stopped either way (the stream stays open: the caller's).
-- Returns a function that stops it early, with no callback; cb may run before read returns when the
-- stream cannot be read at all.
function M.read(stream, terminator, max, timeout_ms, cb)
  local buf, done = "", false
  local timer = uv.new_timer()
  local function stop()
    if done then return false end
    done = true
    if not stream:is_closing() then stream:read_stop() end
    if not timer:is_closing() then timer:close() end
    return true
  end
  local function finish(head, rest, why)
    if stop() then cb(head, rest, why) end
  end
  timer:start(timeout_ms, 0, function() finish(nil, nil, "nothing complete within " .. timeout_ms .. " ms") end)
  local ok, err = stream:read_start(function(rerr, data)
    if done then return end
    if rerr then return finish(nil, nil, tostring(rerr)) end
    if not data then return finish(nil, nil, "closed before the end of its head") end
    local from = math.max(1, #buf - #terminator + 2)
    buf = buf .. data
    local s, e = buf:find(terminator, from, true)
    if s and s - 1 <= max then return finish(buf:sub(1, s - 1), buf:sub(e + 1)) end
    if #buf > max then finish(nil, nil, "no end of its head within " .. max .. " bytes") end
  end)
  if not ok then finish(nil, nil, tostring(err)) end
  return function() stop() end
end

return M
