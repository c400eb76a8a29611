-- core/json.c swaps the values cjson cannot write for sentinel strings "\1rmcp<nonce>:<n>\1" and
-- marks empty arrays with "\1rmcp<nonce>E\1" while it works; a string of the caller's that equals
-- one is taken for it (the nonce, 64 random bits per process, is what keeps callers out). libFuzzer
-- learns the nonce from json.c's own comparisons, so the checkers set such inputs aside: they are
-- the known finding of tests/fuzz/README.md, not news.
local M = {}

local LEAD = "\1rmcp"

-- True when a string in v (a key or a value, at any depth) holds the sentinels' lead.
function M.within(v, depth)
  depth = depth or 0
  if type(v) == "string" then return v:find(LEAD, 1, true) ~= nil end
  if type(v) ~= "table" or depth > 1100 then return false end
  for k, x in pairs(v) do
    if M.within(k, depth + 1) or M.within(x, depth + 1) then return true end
  end
  return false
end

return M
