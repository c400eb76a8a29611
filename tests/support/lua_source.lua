-- Reads Lua source the way a checker needs it, without running it: comments and string contents
-- blanked, tokens with their lines, the field writes of every assignment statement, the fields of a
-- table constructor, and the LuaLS `---@class` declarations. Specs build rules on it
-- (tests/lua/shapes_spec.lua: a field written is a field declared).
local M = {}

-- Keeps only the newlines of text (what a blanked comment or string leaves behind).
local function newlines(text)
  return (text:gsub("[^\n]", ""))
end

-- The end of the long bracket of level eq opened before position from, or the end of src.
local function long_end(src, from, eq)
  local close = "]" .. eq .. "]"
  local j = src:find(close, from, true)
  return j and (j + #close - 1) or #src
end

-- src with every comment removed and every string literal replaced by "" (its newlines kept, so a
-- token keeps its line): nothing in a comment or a string counts as code.
function M.strip(src)
  local out, i, n = {}, 1, #src
  while i <= n do
    local c = src:sub(i, i)
    if c == "-" and src:sub(i + 1, i + 1) == "-" then
      local eq = src:match("^%[(=*)%[", i + 2)
      if eq then
        local stop = long_end(src, i + 4 + #eq, eq)
        out[#out + 1] = newlines(src:sub(i, stop))
        i = stop + 1
      else
        i = src:find("\n", i, true) or n + 1
      end
    elseif c == '"' or c == "'" then
      local j = i + 1
      while j <= n do
        local ch = src:sub(j, j)
        if ch == "\\" then j = j + 2
        elseif ch == c or ch == "\n" then break
        else j = j + 1 end
      end
      out[#out + 1] = '""' .. newlines(src:sub(i, j))
      i = j + 1
    elseif c == "[" and src:match("^%[=*%[", i) then
      local eq = src:match("^%[(=*)%[", i)
      local stop = long_end(src, i + 2 + #eq, eq)
      out[#out + 1] = '""' .. newlines(src:sub(i, stop))
      i = stop + 1
    else
      local j = src:find("[-\"'%[]", i + 1) or n + 1
      out[#out + 1] = src:sub(i, j - 1)
      i = j
    end
  end
  return table.concat(out)
end

local keywords = {}
for w in ("and break do else elseif end false for function goto if in local nil not or repeat return "
  .. "then true until while"):gmatch("%a+") do keywords[w] = true end

local symbols3 = { ["..."] = true }
local symbols2 = { ["=="] = true, ["~="] = true, ["<="] = true, [">="] = true, [".."] = true, ["::"] = true,
                   ["//"] = true, ["<<"] = true, [">>"] = true }

-- The tokens of stripped source text: {v = text, kind = "name" | "keyword" | "number" | "string" |
-- "symbol", line = n}.
function M.tokens(text)
  local toks, line, i, n = {}, 1, 1, #text
  local function add(v, kind) toks[#toks + 1] = { v = v, kind = kind, line = line } end
  while i <= n do
    local c = text:sub(i, i)
    if c == "\n" then
      line, i = line + 1, i + 1
    elseif c:match("%s") then
      i = i + 1
    elseif c:match("[%a_]") then
      local w = text:match("^[%w_]+", i)
      add(w, keywords[w] and "keyword" or "name")
      i = i + #w
    elseif c:match("%d") or (c == "." and text:match("^%.%d", i)) then
      local num = text:match("^[%w%.]+", i)
      add(num, "number")
      i = i + #num
    elseif c == '"' then
      add('""', "string")
      i = i + 2
    else
      local s3, s2 = text:sub(i, i + 2), text:sub(i, i + 1)
      local v = symbols3[s3] and s3 or symbols2[s2] and s2 or c
      add(v, "symbol")
      i = i + #v
    end
  end
  return toks
end

-- Tokens after which an expression goes on: a name list ending at one of them is not the target list
-- of an assignment statement (a table field `{ a = 1 }`, a `local`, a `for`).
local continues = {}
for v in ("= ( { [ , + - * / // % ^ # .. == ~= < > <= >= & | ~ << >> and or not return local in if elseif "
  .. "while until for function goto ::"):gmatch("%S+") do continues[v] = true end

-- The variable that ends at token j, read backwards: its first token's index and its path, names
-- joined by dots and every index written as [] ("s.rt.agent", "t[].x"); nil when the tokens there
-- are no variable (a call, a literal, a table field key).
local function var_back(toks, j)
  local parts = {}
  while true do
    local t = toks[j]
    if not t then return nil end
    if t.v == "]" then
      local depth, k = 0, j
      repeat
        if toks[k].v == "]" then depth = depth + 1 elseif toks[k].v == "[" then depth = depth - 1 end
        k = k - 1
      until depth == 0 or k < 1
      if depth ~= 0 then return nil end
      table.insert(parts, 1, "[]")
      j = k
    elseif t.kind == "name" then
      local dot = toks[j - 1]
      if dot and dot.v == "." then
        table.insert(parts, 1, "." .. t.v)
        j = j - 2
      else
        table.insert(parts, 1, t.v)
        return j, table.concat(parts)
      end
    else
      return nil
    end
  end
end

-- Every variable an assignment statement of stripped text writes: {path = "s.status", line = n}, in
-- order. Only statements count: a table constructor's fields, locals and for loops are not writes.
function M.writes(text)
  local toks, out = M.tokens(text), {}
  for i, t in ipairs(toks) do
    if t.v == "=" then
      local targets, j = {}, i - 1
      while true do
        local first, path = var_back(toks, j)
        if not first then targets = nil; break end
        table.insert(targets, 1, { path = path, line = toks[first].line })
        local before = toks[first - 1]
        if before and before.v == "," then
          j = first - 2
        else
          if before and continues[before.v] then targets = nil end
          break
        end
      end
      for _, w in ipairs(targets or {}) do out[#out + 1] = w end
    end
  end
  return out
end

-- The field names of the first table constructor from token k on: {name = line}, the keys given
-- as `name = value` at its own level (not those of tables inside it).
function M.table_fields(toks, k)
  while toks[k] and toks[k].v ~= "{" do k = k + 1 end
  local fields, depth = {}, 0
  for i = k, #toks do
    local v = toks[i].v
    if v == "{" or v == "(" or v == "[" then depth = depth + 1
    elseif v == "}" or v == ")" or v == "]" then
      depth = depth - 1
      if depth == 0 then break end
    elseif depth == 1 and toks[i].kind == "name" and toks[i + 1] and toks[i + 1].v == "=" then
      local prev = toks[i - 1].v
      if prev == "{" or prev == "," or prev == ";" then fields[toks[i].v] = toks[i].line end
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
    local field = line:match("^%s*%-%-%-@field%s+([%w_]+)%??%s")
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

return M
