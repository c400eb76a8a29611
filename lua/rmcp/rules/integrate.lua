-- Integration rules: the options of a merge queue, and the order it takes branches in. Stateless.
local M = {}

-- The defaults of each option of integrate's `with`, and the values each may take (nil: any text).
M.DEFAULTS = { order = "forecast", update = "rebase", merge = "merge", push = false, remote = "origin", on_conflict = "continue" }
local VALUES = {
  order = { given = true, forecast = true }, update = { rebase = true, merge = true },
  merge = { merge = true, squash = true, ff = true }, push = { [false] = true, target = true, branches = true, both = true },
  on_conflict = { continue = true, wait = true },
}

-- Checks integrate's options with (nil: every default): {order, update, merge, verify?, push, remote,
-- on_conflict}; returns them filled, or nil and what is wrong (naming the field). The verify command
-- may also come from REASONIX_MCP_VERIFY (verify_default).
function M.options(with, verify_default)
  if with ~= nil and type(with) ~= "table" then return nil, "with must be an object {order, update, merge, verify, push, remote, on_conflict}" end
  local out = {}
  for k in pairs(with or {}) do
    if M.DEFAULTS[k] == nil and k ~= "verify" then
      return nil, "with." .. tostring(k) .. " is not an option (order, update, merge, verify, push, remote, on_conflict)"
    end
  end
  for k, default in pairs(M.DEFAULTS) do
    local v = (with or {})[k]
    if v == nil then v = default end
    if VALUES[k] and not VALUES[k][v] then
      local names = {}
      for name in pairs(VALUES[k]) do names[#names + 1] = tostring(name) end
      table.sort(names)
      return nil, "with." .. k .. " must be one of " .. table.concat(names, ", ")
    end
    if k == "remote" and (type(v) ~= "string" or v == "" or v:sub(1, 1) == "-") then return nil, "with.remote must be a remote's name" end
    out[k] = v
  end
  local verify = (with or {}).verify
  if verify == nil then verify = verify_default end
  if verify ~= nil and (type(verify) ~= "string" or verify:match("^%s*$")) then return nil, "with.verify must be a shell command" end
  out.verify = verify
  return out
end

-- sessions (tables with an id) in the order ids gives; those it does not name keep their order after.
function M.reorder(sessions, ids)
  local by, out, seen = {}, {}, {}
  for _, s in ipairs(sessions) do by[s.id] = s end
  for _, id in ipairs(ids or {}) do
    if by[id] and not seen[id] then out[#out + 1], seen[id] = by[id], true end
  end
  for _, s in ipairs(sessions) do
    if not seen[s.id] then out[#out + 1] = s end
  end
  return out
end

return M
