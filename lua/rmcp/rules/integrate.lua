-- Taking worktree branches into a target branch (issue 36), the stateless part: what `git merge-tree
-- --write-tree --name-only --messages -z` printed, the colliding hunks of a conflicted tree (read
-- back with `git grep` on its markers), the forecast's best order, and the options of an
-- integration checked with their defaults. agentd/integrate/ runs git; this module only reads it.
local json = require "rmcp.lib.json"

local M = {}

-- Splits s at each NUL; a NUL at the very end ends the last field, it does not open one more.
local function nul_fields(s)
  local out = {}
  for field in s:gmatch("([^%z]*)%z") do out[#out + 1] = field end
  local tail = s:match("([^%z]+)$")
  if tail then out[#out + 1] = tail end
  return out
end

-- The result of one merge-tree run (its stdout and exit code: 0 clean, 1 conflicts; git 2.39 finds
-- the merge base itself): {clean, tree, files = [path], messages = [{kind, paths, text}]}, or nil
-- and why. files are the conflicted paths, each once; messages git's informational lines, CONFLICT
-- lines and the rest ("Auto-merging …") alike.
function M.parse_merge_tree(out, code)
  if code ~= 0 and code ~= 1 then return nil, "git merge-tree exited " .. tostring(code) end
  local f = nul_fields(out or "")
  local tree = f[1]
  if not tree or not tree:match("^%x+$") or (#tree ~= 40 and #tree ~= 64) then
    return nil, "git merge-tree printed no tree: " .. (out or ""):sub(1, 200):gsub("%z", " ")
  end
  local r = { clean = code == 0, tree = tree, files = json.array(), messages = {} }
  local i, seen = 2, {}
  while f[i] and f[i] ~= "" do
    if not seen[f[i]] then seen[f[i]] = true; r.files[#r.files + 1] = f[i] end
    i = i + 1
  end
  i = i + 1 -- the empty field between the conflicted files and the messages
  while f[i] do
    local n = tonumber(f[i])
    if not n then break end
    local paths = {}
    for k = 1, n do paths[k] = f[i + k] end
    local kind, text = f[i + n + 1], f[i + n + 2]
    if not kind then break end
    r.messages[#r.messages + 1] = { kind = kind, paths = paths, text = (text or ""):gsub("%s+$", "") }
    i = i + n + 3
  end
  return r
end

-- The CONFLICT messages of a parsed merge other than plain content conflicts (those the hunks show):
-- modify/delete, rename/rename, file/directory, …; their text names the sides. A list, or nil.
function M.conflict_notes(merge)
  local out = nil
  for _, m in ipairs(merge.messages) do
    if m.kind:match("^CONFLICT") and not m.kind:match("%(contents%)") then
      out = out or json.array()
      out[#out + 1] = m.text
    end
  end
  return out
end

-- The git grep pattern of conflict markers (the default style and diff3's base line).
M.MARKERS = "^(<{7} |\\|{7}( |$)|={7}$|>{7} )"

-- The colliding hunks of a conflicted tree from `git grep -z -n -E M.MARKERS <tree> -- <files>`:
-- [{file, a = [start, count], b = [start, count]}] in the file order of the output, each side's
-- lines in that branch's own version of the file (as a diff's hunk header counts them). Markers
-- out of order (a file whose own text looks like one) end that file's reading, never the whole.
function M.hunks(grep_out)
  local hunks, state = json.array(), {}
  for record in (grep_out or ""):gmatch("[^\n]+") do
    local path, line, text = record:match("^%x+:([^%z]*)%z(%d+)%z(.*)$")
    if path then
      local s = state[path] or { offA = 0, offB = 0 }
      state[path] = s
      local n, mark = tonumber(line), text:sub(1, 7)
      if s.broken then -- skip
      elseif mark == "<<<<<<<" and not s.open then s.open, s.base, s.sep = n, nil, nil
      elseif mark == "|||||||" and s.open and not s.sep then s.base = n
      elseif mark == "=======" and s.open and not s.sep then s.sep = n
      elseif mark == ">>>>>>>" and s.sep then
        local ours = (s.base or s.sep) - s.open - 1
        local theirs = n - s.sep - 1
        hunks[#hunks + 1] = { file = path, a = { s.open - s.offA, ours }, b = { s.open - s.offB, theirs } }
        local span = n - s.open + 1
        s.offA, s.offB = s.offA + span - ours, s.offB + span - theirs
        s.open, s.base, s.sep = nil, nil, nil
      elseif mark ~= "=======" then s.broken = true
      end
    end
  end
  return hunks
end

-- The forecast's best order of branches: [{id, clean (against the target), conflicts (files against
-- the target)}] and the colliding pairs [{a, b, files}] (by id). Branches clean against the target
-- come first, then the rest; within each, those with the fewest conflicting files (against the
-- target and against other branches, summed) first; ties keep the given order. Returns the ids.
function M.best_order(branches, pairs)
  local weight = {}
  for i, b in ipairs(branches) do weight[b.id] = { i = i, clean = b.clean and 0 or 1, n = #(b.conflicts or {}) } end
  for _, p in ipairs(pairs) do
    for _, id in ipairs({ p.a, p.b }) do
      if weight[id] then weight[id].n = weight[id].n + #p.files end
    end
  end
  local ids = {}
  for i, b in ipairs(branches) do ids[i] = b.id end
  table.sort(ids, function(x, y)
    local wx, wy = weight[x], weight[y]
    if wx.clean ~= wy.clean then return wx.clean < wy.clean end
    if wx.n ~= wy.n then return wx.n < wy.n end
    return wx.i < wy.i
  end)
  return ids
end

-- The options of an integration (the tool's `with`), each with its allowed values; the first is the
-- default. verify and remote are strings (verify: none by default, remote: "origin").
M.CHOICES = {
  order = { "forecast", "given" },
  update = { "rebase", "merge" },
  merge = { "merge", "squash", "ff" },
  push = { false, "target", "branches", "both" },
  on_conflict = { "continue", "wait" },
}
M.DEFAULT_REMOTE = "origin"

-- Shows an allowed value in a message.
local function show(v)
  return type(v) == "string" and string.format("%q", v) or tostring(v)
end

-- Checks one field of with against M.CHOICES or as a string; returns the value or nil, message.
local function field(k, v)
  local choices = M.CHOICES[k]
  if choices then
    if v == nil then return choices[1] end
    for _, c in ipairs(choices) do
      if v == c then return v end
    end
    local names = {}
    for i, c in ipairs(choices) do names[i] = show(c) end
    return nil, string.format("with.%s must be one of %s (default %s), got %s", k, table.concat(names, ", "),
      names[1], show(v))
  end
  if v == nil then return k == "remote" and M.DEFAULT_REMOTE or nil end
  if type(v) ~= "string" or v:match("^%s*$") then return nil, "with." .. k .. " must be a non-empty string" end
  if k == "remote" and (v:sub(1, 1) == "-" or v:find("%s")) then
    return nil, "with.remote must name a remote (no leading '-', no spaces), got " .. show(v)
  end
  return v
end

-- Checks the options of an integration: with (nil, JSON null or an object of M.CHOICES' fields,
-- verify and remote). Returns the table with every default filled in, or nil and a message naming
-- the field.
function M.check_options(with)
  if with == nil or with == json.null then with = {} end
  if type(with) ~= "table" or (json.is_array(with) and next(with) ~= nil) or #with > 0 then
    return nil, "with must be an object: {order, update, merge, verify, push, remote, on_conflict}"
  end
  for k in pairs(with) do
    if not M.CHOICES[k] and k ~= "verify" and k ~= "remote" then
      return nil, "with." .. tostring(k) .. " is not an option (order, update, merge, verify, push, remote, on_conflict)"
    end
  end
  local out = {}
  for _, k in ipairs({ "order", "update", "merge", "verify", "push", "remote", "on_conflict" }) do
    local v = with[k]
    if v == json.null then v = nil end
    local checked, err = field(k, v)
    if err then return nil, err end
    out[k] = checked
  end
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
