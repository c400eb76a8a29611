-- core/json.c swaps the values cjson cannot write for sentinel strings "\1rmcp<nonce>:<n>\1" and
-- marks empty arrays with "\1rmcp<nonce>E\1" while it works. libFuzzer learns the per-process nonce
-- from json.c's own comparisons and spells it; json.c now refuses such strings (encode) and such a
-- marker (decode) with an error, which the checkers accept only for inputs that hold the lead.
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
