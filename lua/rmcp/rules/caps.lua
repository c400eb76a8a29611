-- Text caps shared by poll and watch shaping: cuts are reported by the caller, never silent.
local config = require "rmcp.config"
local hooks = require "rmcp.policy.hooks"

local M = {}

-- The poll/watch cap name (max_events, max_events_cap, max_delta_text, max_watch_message, max_result_bytes,
-- max_full_text): the configured value (REASONIX_MCP_<NAME> or the default), then the policies' caps.
function M.limit(name)
  return hooks.limit(name, config.limit(name))
end

-- Keeps the last max bytes of s (on a UTF-8 boundary); returns text, truncated.
function M.tail(s, max)
  if s == nil then return nil, false end
  if #s <= max then return s, false end
  local i = #s - max + 1
  while i <= #s and (s:byte(i) or 0) & 0xC0 == 0x80 do i = i + 1 end
  return s:sub(i), true
end

-- The first max bytes of s, cut back to a UTF-8 boundary (no truncation flag: callers check #s).
function M.head(s, max)
  local j = max
  while j > 0 and (s:byte(j + 1) or 0) & 0xC0 == 0x80 do j = j - 1 end
  return s:sub(1, j)
end

-- Keeps the first and last max/2 bytes of s with a marker between; returns text, truncated.
function M.head_tail(s, max)
  if s == nil then return nil, false end
  if #s <= max then return s, false end
  local half = max // 2
  local head = M.head(s, half)
  local tail = M.tail(s, half)
  return head .. "\n[… " .. (#s - #head - #tail) .. " bytes cut …]\n" .. tail, true
end

-- The one capped message of a poll or watch result: text's first and last half of max_watch_message;
-- returns message, true when cut (nil, never false, so the field is left out), or nil for no text.
function M.message(text)
  if text == nil or text == "" then return nil end
  local message, truncated = M.head_tail(text, M.limit("max_watch_message"))
  return message, truncated or nil
end

return M
