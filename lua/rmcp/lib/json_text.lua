-- JSON read as text, for code that must keep every byte it does not change: the launcher's surgery
-- on the id of a line it relays verbatim, setup's edit of a host's config file. Where a string or a
-- value that starts at an index ends; indices are 1-based, an end is the value's last byte.
local M = {}

-- Index of the closing quote of the JSON string whose opening quote is at s, or nil.
function M.string_end(text, s)
  local pos = s + 1
  while true do
    local q = text:find('["\\]', pos)
    if not q then return nil end
    if text:byte(q) == 92 then pos = q + 2 else return q end
  end
end

-- Index of the last byte of the JSON value that starts at s, or nil when it does not end.
function M.value_end(text, s)
  local c = text:byte(s)
  if c == 34 then return M.string_end(text, s) end
  if c == 123 or c == 91 then
    local depth, pos = 0, s
    while true do
      local p = text:find('[][{}"]', pos)
      if not p then return nil end
      local b = text:byte(p)
      if b == 34 then
        p = M.string_end(text, p)
        if not p then return nil end
      elseif b == 123 or b == 91 then
        depth = depth + 1
      else
        depth = depth - 1
        if depth == 0 then return p end
      end
      pos = p + 1
    end
  end
  local e = text:find("[%s,}%]]", s)
  if not e or e == s then return nil end
  return e - 1
end

return M
