-- Every tool result fits max_result_bytes (a host drops, cuts or moves to a file a result over its
-- output cap, and every byte is in its model's context): the largest parts are cut first, each cut
-- flagged beside it (`<field>_truncated` on a cut text, `<field>_dropped` counting the dropped tail
-- of a list), and `result_truncated: true` on the result. Poll and watch results have their own
-- order of cuts (rules/poll.lua: fit); list pages stop early (rules/list.lua). Stateless.
local json = require "rmcp.lib.json"
local caps = require "rmcp.rules.caps"

local M = {}

-- The bytes v takes as JSON.
function M.size(v)
  return #(json.encode(v) or "")
end

-- True when v is a list (a JSON array); an already-encoded value (json.raw) is none.
local function is_list(v)
  return type(v) == "table" and not json.raw_text(v) and (json.is_array(v) or v[1] ~= nil)
end

-- The texts cut first keep at least this many bytes of their head (a cut text still says what it was).
M.min_text = 256

-- The largest cuttable part of the object o, under it, of the kind wanted: "text" (a string field
-- longer than min_text) or "list" (a list field); ids and paths (keep_key says) are never cut.
-- Returns {parent, key, n (its size)}, or best (the largest found so far) when none is larger.
local function largest(o, kind, keep_key, best)
  for k, v in pairs(o) do
    if type(k) == "string" and not keep_key(k) then
      local n
      if kind == "text" and type(v) == "string" and #v > M.min_text then n = #v
      elseif kind == "list" and is_list(v) and #v > 0 then n = M.size(v) end
      if n and (not best or n > best.n) then best = { parent = o, key = k, n = n } end
      if type(v) == "table" and not json.raw_text(v) then
        if is_list(v) then
          for _, x in ipairs(v) do
            if type(x) == "table" and not is_list(x) then best = largest(x, kind, keep_key, best) end
          end
        else
          best = largest(v, kind, keep_key, best)
        end
      end
    end
  end
  return best
end

-- Keys whose values are never cut: ids, names and paths a caller acts on.
local function keep(k)
  return k == "session_id" or k == "routine_id" or k == "run_id" or k == "request_id" or k == "status"
    or k:match("_id$") ~= nil or k:match("_path$") ~= nil or k == "next_cursor"
end

-- Cuts part p ({parent, key, n}) by at least over bytes, flagged beside it: a text to its head
-- (`<key>_truncated`), a list to its first elements (`<key>_dropped` counts the rest). Returns false
-- when nothing could go.
local function cut(p, over)
  local v = p.parent[p.key]
  if type(v) == "string" then
    local flag = p.key .. "_truncated"
    local keep_n = math.max(M.min_text, #v - over - (p.parent[flag] and 0 or #flag + 8))
    if keep_n >= #v then return false end
    p.parent[p.key] = caps.head(v, keep_n)
    p.parent[flag] = true
    return true
  end
  local count = #v
  local n, gone = count, 0
  while n > 0 and gone < over do
    gone = gone + M.size(v[n]) + 1
    v[n] = nil
    n = n - 1
  end
  local flag = p.key .. "_dropped"
  p.parent[flag] = (p.parent[flag] or 0) + count - n
  return count > n
end

-- Cuts result r (a table) until it encodes in at most budget bytes (default max_result_bytes): the
-- largest text first (to its head, min_text kept), again and again, then the largest list (to its
-- first elements); each cut flagged, result_truncated set. A result that fits is returned as it is.
function M.fit(r, budget)
  budget = budget or caps.limit("max_result_bytes")
  if type(r) ~= "table" or json.raw_text(r) then return r end
  if M.size(r) <= budget then return r end
  r.result_truncated = true
  for _, kind in ipairs({ "text", "list" }) do
    for _ = 1, 10000 do
      local over = M.size(r) - budget
      if over <= 0 then return r end
      local p = largest(r, kind, keep)
      if not p or not cut(p, over) then break end
    end
  end
  return r
end

return M
