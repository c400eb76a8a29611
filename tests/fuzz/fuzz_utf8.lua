-- UTF-8 as core/json.c judges it (shortest form, no surrogates, up to U+10FFFF), for the fuzz
-- checkers: M.fix(s) -> s with each byte that starts no valid sequence as U+FFFD, and whether s was valid.
local M = {}

local REPLACEMENT = "\u{FFFD}"

-- Length of the valid UTF-8 sequence at byte i of s (shortest form, no surrogates, up to
-- U+10FFFF), or nil.
local function utf8_seq(s, i)
  local c = s:byte(i)
  if c < 0x80 then return 1 end
  local len, min
  if c >= 0xc2 and c <= 0xdf then len, min = 2, 0x80
  elseif c >= 0xe0 and c <= 0xef then len, min = 3, 0x800
  elseif c >= 0xf0 and c <= 0xf4 then len, min = 4, 0x10000
  else return nil end
  if i + len - 1 > #s then return nil end
  local cp = c & (0x3f >> (len - 1))
  for k = i + 1, i + len - 1 do
    local b = s:byte(k)
    if b & 0xc0 ~= 0x80 then return nil end
    cp = (cp << 6) | (b & 0x3f)
  end
  if cp < min or cp > 0x10ffff or (cp >= 0xd800 and cp <= 0xdfff) then return nil end
  return len
end

-- s with each byte that does not start a valid sequence replaced by U+FFFD, and whether it was valid.
function M.fix(s)
  local out, i, valid = {}, 1, true
  while i <= #s do
    local len = utf8_seq(s, i)
    if len then
      out[#out + 1] = s:sub(i, i + len - 1)
      i = i + len
    else
      out[#out + 1] = REPLACEMENT
      valid = false
      i = i + 1
    end
  end
  return table.concat(out), valid
end

return M
