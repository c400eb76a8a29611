-- Claude Code's user-scope registration of us: mcpServers.reasonix in ~/.claude.json (or
-- $CLAUDE_CONFIG_DIR/.claude.json), found and edited as text so that every other byte stays as it
-- is: a small scanner finds the top object's members, the mcpServers object's and ours; each edit is
-- one splice (setup/splice.lua) written as Claude Code writes the file (JSON.stringify, 2 spaces).
-- Stateless.
local json = require "rmcp.lib.json"
local json_text = require "rmcp.lib.json_text"
local splice = require "rmcp.setup.splice"

local M = {}

-- The index of the first non-space byte of t at or after i (#t + 1 when none).
local function skip_ws(t, i)
  return t:find("[^ \t\r\n]", i) or #t + 1
end

-- The index after the string literal that opens at i, or nil.
local function string_end(t, i)
  local q = json_text.string_end(t, i)
  return q and q + 1
end

-- The members of the object whose { is at open: a list of {key (raw, quotes dropped), kstart,
-- vstart, vend (after the value)} and the index of its }; nil when it is not an object we can read.
local function members(t, open)
  local out, i = {}, skip_ws(t, open + 1)
  if t:sub(i, i) == "}" then return out, i end
  while t:sub(i, i) == '"' do
    local kend = string_end(t, i)
    local colon = kend and skip_ws(t, kend)
    if not colon or t:sub(colon, colon) ~= ":" then return nil end
    local vstart = skip_ws(t, colon + 1)
    local last = json_text.value_end(t, vstart)
    if not last then return nil end
    local vend = last + 1
    out[#out + 1] = { key = t:sub(i + 1, kend - 2), kstart = i, vstart = vstart, vend = vend }
    local n = skip_ws(t, vend)
    if t:sub(n, n) == "}" then return out, n end
    if t:sub(n, n) ~= "," then return nil end
    i = skip_ws(t, n + 1)
  end
  return nil
end

-- The member named key of list, and its index.
local function member(list, key)
  for i, m in ipairs(list) do
    if m.key == key then return m, i end
  end
end

-- Where things are in text: {top = {open, close, list}, servers = same or nil, ours = member or
-- nil, index = ours's index, unit = the file's indent}; nil, why when text is not a JSON object.
function M.locate(text)
  local open = skip_ws(text, 1)
  if text:sub(open, open) ~= "{" then return nil, "not a JSON object" end
  local list, close = members(text, open)
  if not list then return nil, "not JSON this can edit" end
  local at = { top = { open = open, close = close, list = list } }
  at.unit = list[1] and text:sub(open + 1, list[1].kstart - 1):match("\n([ \t]*)$") or "  "
  if at.unit == "" then at.unit = "  " end
  local s = member(list, "mcpServers")
  if s and text:sub(s.vstart, s.vstart) == "{" then
    local slist, sclose = members(text, s.vstart)
    if not slist then return nil, "mcpServers is not JSON this can edit" end
    at.servers = { open = s.vstart, close = sclose, list = slist }
    at.ours, at.index = member(slist, "reasonix")
  elseif s then
    return nil, "mcpServers is not an object"
  end
  return at
end

-- s as a JSON string literal (slashes left as they are, as JSON.stringify writes them).
function M.quote(s)
  return '"' .. s:gsub('[%c\\"]', function(c)
    if c == "\\" or c == '"' then return "\\" .. c end
    return string.format("\\u%04x", c:byte())
  end) .. '"'
end

-- Our entry's value for exe, its key at depth (indent unit `unit`). alwaysLoad: Claude Code
-- connects the server before the session's first turn (without it, `claude -p` and a first prompt
-- typed at once may go to the model before our tools are listed: a fleet's first call is lost).
function M.render(exe, unit, depth)
  local pad, inner = unit:rep(depth), unit:rep(depth + 1)
  return "{\n" .. inner .. '"type": "stdio",\n' .. inner .. '"command": ' .. M.quote(exe) .. ",\n"
    .. inner .. '"args": [],\n' .. inner .. '"env": {},\n' .. inner .. '"alwaysLoad": true\n' .. pad .. "}"
end

-- Our entry for exe as one line of JSON, for `claude mcp add-json` (the same members as render).
function M.entry_json(exe)
  return '{"type":"stdio","command":' .. M.quote(exe) .. ',"args":[],"env":{},"alwaysLoad":true}'
end

-- The splice that adds member (`"key": value` text) to obj, at depth (its members' indent).
local function add_member(text, obj, member_text, unit, depth)
  local last = obj.list[#obj.list]
  if last then return splice.make(text, last.vend, 0, ",\n" .. unit:rep(depth) .. member_text) end
  return splice.make(text, obj.open + 1, obj.close - obj.open - 1,
    "\n" .. unit:rep(depth) .. member_text .. "\n" .. unit:rep(depth - 1))
end

-- The splice that registers exe in text ("" for no file): edit, new_text; or nil, why.
function M.register(text, exe)
  if text:match("^%s*$") then
    return splice.make(text, 1, #text, '{\n  "mcpServers": {\n    "reasonix": ' .. M.render(exe, "  ", 2) .. "\n  }\n}\n")
  end
  local at, err = M.locate(text)
  if not at then return nil, err end
  local u = at.unit
  if at.ours then return splice.make(text, at.ours.vstart, at.ours.vend - at.ours.vstart, M.render(exe, u, 2)) end
  if at.servers then return add_member(text, at.servers, '"reasonix": ' .. M.render(exe, u, 2), u, 2) end
  return add_member(text, at.top, '"mcpServers": {\n' .. u:rep(2) .. '"reasonix": ' .. M.render(exe, u, 2) .. "\n" .. u .. "}", u, 1)
end

-- The registration in text as Claude Code reads it ({type, command, args, env, …}), its exact
-- text, or nil when there is none.
function M.entry(text)
  local at = M.locate(text)
  if not at or not at.ours then return nil end
  local raw = text:sub(at.ours.vstart, at.ours.vend - 1)
  local value = json.decode(raw)
  return type(value) == "table" and value or {}, raw
end

-- Whether entry (M.entry's) runs exe over stdio with no arguments.
function M.is_ours(entry, exe)
  return entry ~= nil and entry.command == exe and (entry.type == nil or entry.type == "stdio")
    and (type(entry.args) ~= "table" or #entry.args == 0)
end

-- Whether entry runs exe as this version registers it: ours, and loaded before the first turn (an
-- older setup's entry lacks alwaysLoad, and is registered again).
function M.is_current(entry, exe)
  return M.is_ours(entry, exe) and entry.alwaysLoad == true
end

-- text without our member, or with previous (the value it replaced) as its value.
function M.unregister(text, previous)
  local at = M.locate(text)
  if not at or not at.ours then return text end
  local o, list = at.ours, at.servers.list
  if previous then return text:sub(1, o.vstart - 1) .. previous .. text:sub(o.vend) end
  if #list == 1 then return text:sub(1, at.servers.open) .. text:sub(at.servers.close) end
  if at.index == #list then return text:sub(1, list[at.index - 1].vend - 1) .. text:sub(o.vend) end
  return text:sub(1, o.kstart - 1) .. text:sub(list[at.index + 1].kstart)
end

return M
