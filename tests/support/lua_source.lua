-- Reads Lua source the way a checker needs it, without running it: tokens with their lines (comments
-- dropped, a string one token, so nothing in either counts as code) and what each sits in; the
-- variables assignment statements and table.insert/remove write; the locals that hold a field; the
-- modules a file requires; its functions and their lengths; the fields of a table constructor; the
-- LuaLS `---@class` declarations. Specs build rules on it: tests/lua/shapes_spec.lua (a field written
-- is a field declared) and tests/lua/boundaries_spec.lua (layers, circles, session writes, sizes).
local uv = require "luv"

local M = {}

local KEYWORDS = {}
for w in ([[and break do else elseif end false for function goto if in local nil not or repeat return
            then true until while]]):gmatch("%a+") do KEYWORDS[w] = true end
local SYMBOLS = { ["..."] = true, [".."] = true, ["=="] = true, ["~="] = true, ["<="] = true, [">="] = true,
                  ["//"] = true, ["::"] = true, ["<<"] = true, [">>"] = true }
-- What nests: brackets, and the blocks that `end` or `until` closes.
local OPENS = { ["{"] = true, ["("] = true, ["["] = true, ["function"] = true, ["if"] = true, ["do"] = true,
                ["repeat"] = true }
local CLOSES = { ["}"] = true, [")"] = true, ["]"] = true, ["end"] = true, ["until"] = true }
local BRACKETS = { ["{"] = true, ["("] = true, ["["] = true }

-- True when token t is there and is the symbol or keyword v (token texts of different kinds never meet).
local function is(t, v) return t ~= nil and t.v == v end

-- The number of newlines in text.
local function newlines(text) return select(2, text:gsub("\n", "")) end

-- The contents of the long bracket of level eq ("==") opening at index at of src, and the index after it.
local function long_bracket(src, at, eq, line)
  local close = "]" .. eq .. "]"
  local first = at + #eq + 2
  local e = src:find(close, first, true)
  if not e then error("unfinished long bracket at line " .. line, 0) end
  return src:sub(first, e - 1), e + #close
end

-- The quoted string opening at index i of src: its contents (escapes kept as written, `\z` and the
-- blanks after it dropped), the index after it and how many lines it spans.
local function quoted(src, i, line)
  local q, j, buf, lines = src:sub(i, i), i + 1, {}, 0
  while true do
    local ch = src:sub(j, j)
    if ch == "" or ch == "\n" then error("unfinished string at line " .. line, 0) end
    if ch == "\\" then
      local esc = src:sub(j + 1, j + 1)
      if esc == "z" then
        local gap = src:match("^%s*", j + 2)
        lines, j = lines + newlines(gap), j + 2 + #gap
      else
        if esc == "\n" then lines = lines + 1 end
        buf[#buf + 1] = "\\" .. esc
        j = j + 2
      end
    elseif ch == q then
      return table.concat(buf), j + 1, lines
    else
      buf[#buf + 1] = ch
      j = j + 1
    end
  end
end

-- Marks what each token sits in: t.inside = the index of the token that opened the innermost bracket
-- or block around it (nil at the top), and on each opener t.close = the index of the token closing it.
local function nest(toks)
  local open = {}
  for k, t in ipairs(toks) do
    if CLOSES[t.v] then
      local o = table.remove(open)
      if o then toks[o].close = k end
    end
    t.inside = open[#open]
    if OPENS[t.v] then open[#open + 1] = k end
  end
  if #open > 0 then
    error("the reader lost track of blocks and brackets (a reader bug): " .. #open .. " left open", 0)
  end
end

-- The tokens of Lua source src: {v = text, kind = "name" | "keyword" | "number" | "string" | "symbol",
-- line = n, inside, close (see nest)}. A string's v is `""` and its contents are its text; comments
-- and a first line starting with # are dropped.
function M.tokens(src)
  local toks, i, line, n = {}, 1, 1, #src
  local function push(kind, v, at, text) toks[#toks + 1] = { kind = kind, v = v, line = at or line, text = text } end
  if src:sub(1, 1) == "#" then i = src:find("\n", 1, true) or n + 1 end
  while i <= n do
    local c = src:sub(i, i)
    if c == "\n" then
      line, i = line + 1, i + 1
    elseif c:match("%s") then
      i = i + 1
    elseif src:sub(i, i + 1) == "--" then
      local eq = src:match("^%[(=*)%[", i + 2)
      if eq then
        local body, after = long_bracket(src, i + 2, eq, line)
        line, i = line + newlines(body), after
      else
        i = src:find("\n", i, true) or n + 1
      end
    elseif c == '"' or c == "'" then
      local text, after, lines = quoted(src, i, line)
      push("string", '""', line, text)
      line, i = line + lines, after
    elseif src:match("^%[=*%[", i) then
      local body, after = long_bracket(src, i, src:match("^%[(=*)%[", i), line)
      push("string", '""', line, body)
      line, i = line + newlines(body), after
    elseif c:match("[%a_]") then
      local word = src:match("^[%a_][%w_]*", i)
      push(KEYWORDS[word] and "keyword" or "name", word)
      i = i + #word
    elseif c:match("%d") or (c == "." and src:sub(i + 1, i + 1):match("%d")) then
      local num = src:match("^0[xX][%x%.]*[pP][+-]?%d+", i) or src:match("^0[xX][%x%.]*", i)
        or src:match("^%d*%.?%d*[eE][+-]?%d+", i) or src:match("^%d*%.?%d*", i)
      push("number", num)
      i = i + #num
    else
      local s3, s2 = src:sub(i, i + 2), src:sub(i, i + 1)
      local v = SYMBOLS[s3] and s3 or SYMBOLS[s2] and s2 or c
      push("symbol", v)
      i = i + #v
    end
  end
  nest(toks)
  return toks
end

-- The variable ending at token k read backwards: its parts ({"s", "rt", "x"}; an index as "[]", a
-- call or parenthesis as "()") and the index of its first token; nil when none ends there.
local function target_before(toks, k)
  local parts, j = {}, k
  while true do
    local t = toks[j]
    if t and t.kind == "name" then
      table.insert(parts, 1, t.v)
      if not is(toks[j - 1], ".") then return parts, j end
      j = j - 2
    elseif is(t, "]") or is(t, ")") then
      local open, close, depth = t.v == "]" and "[" or "(", t.v, 0
      repeat
        if is(toks[j], close) then depth = depth + 1 elseif is(toks[j], open) then depth = depth - 1 end
        j = j - 1
      until depth == 0 or j < 1
      table.insert(parts, 1, open == "[" and "[]" or "()")
      local prev = toks[j]
      if not (prev and (prev.kind == "name" or is(prev, "]") or is(prev, ")"))) then
        if open == "(" then return parts, j + 1 end -- (expr).x
        return nil -- [k] = … of a table constructor
      end
    else
      return nil
    end
  end
end

-- A write record: {parts, path = the parts as written ("s.rt.agent", "t[].x", "f().y"), line, by}.
local function write(parts, line, by)
  local path = {}
  for i, p in ipairs(parts) do path[i] = (i > 1 and p ~= "[]" and p ~= "()") and "." .. p or p end
  return { parts = parts, path = table.concat(path), line = line, by = by }
end

-- The targets of the assignment whose `=` is token k, in order; none for a `local` or a `for`, or
-- when the list before it does not read as variables.
local function assignment(toks, k)
  local out, j = {}, k - 1
  while true do
    local parts, first = target_before(toks, j)
    if not parts then return {} end
    table.insert(out, 1, write(parts, toks[first].line, "="))
    local before = toks[first - 1]
    if not is(before, ",") then
      return (is(before, "local") or is(before, "for")) and {} or out
    end
    j = first - 2
  end
end

-- The table that the table.insert or table.remove call at token k (the `table`) changes: its write
-- record, or nil when that call is not there or its first argument is no variable.
local function table_arg(toks, k)
  local fn, open = toks[k + 2], toks[k + 3]
  if not (is(toks[k + 1], ".") and fn and (fn.v == "insert" or fn.v == "remove") and is(open, "(")) then return nil end
  local j = k + 4
  while j < open.close and not (is(toks[j], ",") and toks[j].inside == k + 3) do j = j + 1 end
  local parts = target_before(toks, j - 1)
  return parts and write(parts, toks[k].line, "table." .. fn.v)
end

-- Every variable the code of toks writes, in order: each target of an assignment statement (by "=";
-- not the fields of a table constructor, nor locals or for loops), and the table a table.insert or
-- table.remove call changes (by "table.insert" / "table.remove"). Records as write makes them.
function M.writes(toks)
  local out = {}
  for k, t in ipairs(toks) do
    if t.v == "=" and not (t.inside and BRACKETS[toks[t.inside].v]) then
      for _, w in ipairs(assignment(toks, k)) do out[#out + 1] = w end
    elseif t.kind == "name" and t.v == "table" then
      out[#out + 1] = table_arg(toks, k)
    end
  end
  return out
end

-- The plain field chain (a.b.c) starting at token j when it is a whole expression: its parts and
-- the index after it, or nil.
local function plain_chain(toks, j)
  if not (toks[j] and toks[j].kind == "name") then return nil end
  local parts = { toks[j].v }
  j = j + 1
  while is(toks[j], ".") and toks[j + 1] and toks[j + 1].kind == "name" do
    parts[#parts + 1] = toks[j + 1].v
    j = j + 2
  end
  local nx = toks[j]
  if nx == nil or is(nx, ",") or is(nx, ";") or nx.kind == "name"
      or (nx.kind == "keyword" and nx.v ~= "and" and nx.v ~= "or") then
    return parts, j
  end
  return nil
end

-- The locals that `local x, y = a.b, c.d.e` (at token k, the `local`) makes aliases of a field:
-- calls add(name, parts) for each.
local function local_aliases(toks, k, add)
  local names, j = {}, k + 1
  while toks[j] and toks[j].kind == "name" do
    names[#names + 1] = toks[j].v
    if not is(toks[j + 1], ",") then break end
    j = j + 2
  end
  if not is(toks[j + 1], "=") then return end
  j = j + 2
  for _, name in ipairs(names) do
    local parts, after = plain_chain(toks, j)
    if not parts and toks[j] and toks[j].kind ~= "symbol" and is(toks[j + 1], ",") then
      parts, after = {}, j + 1 -- a literal: no alias, on to the next
    end
    if not parts then return end
    if #parts > 1 then add(name, parts) end
    if not is(toks[after], ",") then return end
    j = after + 1
  end
end

-- The locals of toks that hold a field (`local wt = s.worktree`): {name = parts}, per file, not per scope.
function M.aliases(toks)
  local out = {}
  for k, t in ipairs(toks) do
    if t.kind == "keyword" and t.v == "local" then
      local_aliases(toks, k, function(name, parts) out[name] = parts end)
    end
  end
  return out
end

-- The require at token k (a `require` or `lazy` name): {module, line, prefix = true for
-- `require("a.b." .. x)`}, or "dynamic" when the name is computed, or nil when k is no require.
local function require_at(toks, k)
  local t, before = toks[k], toks[k - 1]
  if t.kind ~= "name" or (t.v ~= "require" and t.v ~= "lazy") then return nil end
  if is(before, ".") or is(before, ":") or is(before, "function") then return nil end
  local arg
  if t.v == "require" and is(toks[k + 1], ",") and is(before, "(") and toks[k - 2]
      and toks[k - 2].kind == "name" and toks[k - 2].v:match("^x?pcall$") then
    arg = k + 2 -- pcall(require, "x")
  elseif toks[k + 1] and toks[k + 1].kind == "string" then
    return { module = toks[k + 1].text, line = t.line }
  elseif is(toks[k + 1], "(") then
    arg = k + 2
  elseif t.v == "lazy" then
    return nil -- lazy as a value (local lazy = require …) is no require
  else
    return "dynamic" -- require handed around as a value
  end
  local name, after = toks[arg], toks[arg + 1]
  if not name or name.kind ~= "string" then return "dynamic" end
  if is(after, "..") and name.text:sub(-1) == "." then
    return { module = name.text:sub(1, -2), line = t.line, prefix = true }
  end
  if is(after, ")") or is(after, ",") then return { module = name.text, line = t.line } end
  return "dynamic"
end

-- The modules toks require (also pcall(require, …), rmcp.lib.lazy's lazy "…", and requires inside
-- functions): a list of {module, line[, prefix]}, and the lines of requires whose name is computed.
function M.requires(toks)
  local out, dynamic = {}, {}
  for k, t in ipairs(toks) do
    local r = require_at(toks, k)
    if r == "dynamic" then dynamic[#dynamic + 1] = t.line elseif r then out[#out + 1] = r end
  end
  return out, dynamic
end

-- The name a function defined at token k (the `function` keyword) is known by.
local function function_name(toks, k)
  local parts, j = {}, k + 1
  while toks[j] and toks[j].kind == "name" do
    parts[#parts + 1] = toks[j].v
    if is(toks[j + 1], ".") or is(toks[j + 1], ":") then
      parts[#parts + 1] = toks[j + 1].v
      j = j + 2
    else
      break
    end
  end
  if #parts > 0 then return table.concat(parts) end
  if is(toks[k - 1], "=") and toks[k - 2] and toks[k - 2].kind == "name" then
    local chain, m = { toks[k - 2].v }, k - 3
    while is(toks[m], ".") and toks[m - 1] and toks[m - 1].kind == "name" do
      table.insert(chain, 1, toks[m - 1].v .. ".")
      m = m - 2
    end
    return table.concat(chain)
  end
  return "(anonymous)"
end

-- The functions of toks, nested ones too: {{name ("M.f", "Obj:m", "(anonymous)"), line, lines}}.
function M.functions(toks)
  local out = {}
  for k, t in ipairs(toks) do
    if t.kind == "keyword" and t.v == "function" then
      out[#out + 1] = { name = function_name(toks, k), line = t.line, lines = toks[t.close].line - t.line + 1 }
    end
  end
  return out
end

-- The field names of the first table constructor from token k on: {name = line}, the keys given
-- as `name = value` at its own level (not those of tables inside it).
function M.table_fields(toks, k)
  while toks[k] and toks[k].v ~= "{" do k = k + 1 end
  local fields = {}
  for i = k + 1, (toks[k] and toks[k].close or 0) - 1 do
    local t, prev = toks[i], toks[i - 1].v
    if t.inside == k and t.kind == "name" and is(toks[i + 1], "=") and (prev == "{" or prev == "," or prev == ";") then
      fields[t.v] = t.line
    end
  end
  return fields
end

-- Where the token sequence seq (tokens separated by spaces, e.g. "local s = {") first occurs in
-- toks from index from on: the index of its first token, or nil.
function M.find(toks, seq, from)
  local want = {}
  for v in seq:gmatch("%S+") do want[#want + 1] = v end
  for i = from or 1, #toks - #want + 1 do
    local ok = true
    for k = 1, #want do
      if toks[i + k - 1].v ~= want[k] then ok = false; break end
    end
    if ok then return i end
  end
  return nil
end

-- The `---@class` declarations of raw source src: {Name = {fields = {name = true}, line = n}}. A
-- class's fields are the `---@field` lines right after it (an optional field's `?` dropped).
function M.classes(src)
  local out, current, n = {}, nil, 0
  for line in (src .. "\n"):gmatch("(.-)\n") do
    n = n + 1
    local name = line:match("^%s*%-%-%-@class%s+([%w_.]+)")
    local field = (line .. " "):match("^%s*%-%-%-@field%s+([%w_]+)%??%s")
    if name then
      current = { fields = {}, line = n }
      out[name] = current
    elseif field and current then
      current.fields[field] = true
    elseif not line:match("^%s*%-%-%-") then
      current = nil
    end
  end
  return out
end

-- Every .lua file under dir (a path ending in /), as paths relative to it, sorted.
function M.files(dir)
  local out = {}
  local function walk(rel)
    local h = assert(uv.fs_scandir(dir .. rel))
    while true do
      local name, kind = uv.fs_scandir_next(h)
      if not name then break end
      if kind == "directory" then walk(rel .. name .. "/")
      elseif name:match("%.lua$") then out[#out + 1] = rel .. name end
    end
  end
  walk("")
  table.sort(out)
  return out
end

-- The whole text of the file at path.
function M.read(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("a")
  f:close()
  return text
end

return M
