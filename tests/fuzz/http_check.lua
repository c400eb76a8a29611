-- The checks of fuzz_http.c, one input at a time: feeding never raises (an error is nil and a
-- message); the requests of the input fed at once equal those of the input fed in pieces whose
-- sizes its first byte picks, and each has a method, a url and a body.
local http = require "rmcp.http"

-- The requests of data fed in pieces of step bytes (0: at once), or nil and the error.
local function parse(data, step)
  local p, out = http.parser(64 * 1024), {}
  local n = step > 0 and step or math.max(#data, 1)
  for i = 1, math.max(#data, 1), n do
    local rs, err = p:feed(data:sub(i, i + n - 1))
    if not rs then return nil, err end
    for _, r in ipairs(rs) do out[#out + 1] = r end
  end
  return out
end

-- A request as text, for comparing two parses.
local function show(r)
  local hs = {}
  for k, v in pairs(r.headers) do hs[#hs + 1] = k .. "=" .. v end
  table.sort(hs)
  return table.concat({ r.method, r.url, tostring(r.path), tostring(r.query), r.body, tostring(r.keep_alive), table.concat(hs, "&") }, "|")
end

return function(data)
  local whole, err = parse(data, 0)
  local step = (data:byte(1) or 1) % 17 + 1
  local pieces, perr = parse(data, step)
  if (whole == nil) ~= (pieces == nil) then
    error(string.format("fed whole: %s; fed %d bytes at a time: %s", tostring(err or "ok"), step, tostring(perr or "ok")))
  end
  if not whole then return end
  if #whole ~= #pieces then error(string.format("%d requests whole, %d in pieces", #whole, #pieces)) end
  for i, r in ipairs(whole) do
    assert(type(r.method) == "string" and type(r.url) == "string" and type(r.body) == "string", "a request lacks a field")
    if show(r) ~= show(pieces[i]) then error("request " .. i .. " differs: " .. show(r) .. " vs " .. show(pieces[i])) end
  end
end
