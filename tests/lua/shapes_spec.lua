-- Declared shapes: every field the code of a class writes is declared in its LuaLS `---@class`, so
-- the declaration is the whole shape a reader (and LuaLS) can rely on. The code is read, not run
-- (tests/support/lua_source.lua: comments and strings do not count): a write is an assignment
-- statement to `<root>.<field>`, and a constructor's fields count as written.
--   * objects are found by the variable names each process keeps for them: in agentd `s` is a
--     Session, `rt` and `s.rt` its SessionRuntime, `wt` its worktree, `conn` a connection, `d` the
--     daemon, `agent` an ACP agent; in the server `server`, in the launcher `proxy`;
--   * and for classes with methods, by their method table: in a file that defines methods on it (or
--     builds an object with it as metatable), `self` is one of them.
-- A write through an index (`s[key] = v`) is not checked: its key is not known from the text.
local src = require "lua_source"

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local ROOT = here .. "../../lua/rmcp/"

-- The classes checked. writers: where their objects are written, under which names; constructors:
-- the token sequences that open the table literal an object starts as; methods: the method table.
local CLASSES = {
  { name = "Session", writers = { { files = "^agentd/", roots = { "s" } } },
    constructors = { { files = "^agentd/session/", seq = "local s = {" } } },
  { name = "SessionRuntime", writers = { { files = "^agentd/", roots = { "rt", "s.rt" } } },
    constructors = { { files = "^agentd/session/", seq = "function M . new_rt ( ) return {" } } },
  { name = "AgentdConn", writers = { { files = "^agentd/", roots = { "conn" } } },
    constructors = { { files = "^agentd/", seq = "local conn = {" } } },
  { name = "Daemon", writers = { { files = "^agentd/", roots = { "d" } } },
    constructors = { { files = "^agentd/daemon%.lua$", seq = "function M . new ( paths , lock ) return {" } } },
  { name = "SessionWorktree", writers = { { files = "^agentd/", roots = { "wt", "s.worktree" } } },
    constructors = { { files = "^agentd/worktree%.lua$", seq = 'return { state = "" , path =' } } },
  { name = "McpServer", methods = "Server", writers = { { files = "^server/", roots = { "server", "self.server" } } } },
  { name = "LauncherProxy", methods = "Proxy", writers = { { files = "^launcher/proxy%.lua$", roots = { "proxy" } } } },
  { name = "LauncherRouter", methods = "Router", writers = { { files = "^launcher/", roots = { "router", "self.router" } } } },
  { name = "LauncherLedger", methods = "Ledger", writers = { { files = "^launcher/", roots = { "ledger", "self.ledger" } } } },
  { name = "LauncherSupervisor", methods = "Supervisor", writers = { { files = "^launcher/", roots = { "supervisor", "self.supervisor" } } } },
  { name = "LauncherChild", methods = "Child", writers = { { files = "^launcher/", roots = { "child" } } } },
  { name = "ServerReceipts", methods = "Receipts", writers = { { files = "^server/", roots = { "receipts", "self.receipts" } } } },
  { name = "AcpAgent", methods = "Agent", writers = { { files = "^agentd/", roots = { "agent", "rt.agent", "s.rt.agent" } } } },
}

-- One file as the checks read it: {path, raw, toks, writes}, writes being its assignment statements.
local function source(path, raw)
  local toks, writes = src.tokens(raw), {}
  for _, w in ipairs(src.writes(toks)) do
    if w.by == "=" then writes[#writes + 1] = w end
  end
  return { path = path, raw = raw, toks = toks, writes = writes }
end

-- The files of tree root, read once.
local function read_tree(root)
  local files = {}
  for _, rel in ipairs(src.files(root)) do files[#files + 1] = source(rel, src.read(root .. rel)) end
  return files
end

-- The method tables a file's methods and metatables name: {Name = true}, or for a table that an
-- object literal gets as its metatable, {open = the literal's first token}.
local function method_tables(toks)
  local out = {}
  for i = 1, #toks - 2 do
    if toks[i].v == "function" and toks[i + 1].kind == "name" and toks[i + 2].v == ":" then out[toks[i + 1].v] = true end
  end
  local i = src.find(toks, "setmetatable ( {")
  while i do
    local close = toks[i + 2].close
    local comma, name = toks[close + 1], toks[close + 2]
    if comma and comma.v == "," and name and name.kind == "name" then out[name.v] = { open = i + 2 } end
    i = src.find(toks, "setmetatable ( {", i + 1)
  end
  return out
end

-- What the code of class c writes, from files: {field = "file:line"} (the first place), and how many
-- writes and constructors were seen (a check that sees none checks nothing).
local function written(c, files)
  local fields, seen, ctors = {}, 0, 0
  local function note(field, where) fields[field] = fields[field] or where; seen = seen + 1 end
  for _, f in ipairs(files) do
    local roots = {}
    for _, w in ipairs(c.writers or {}) do
      if f.path:match(w.files) then for _, r in ipairs(w.roots) do roots[#roots + 1] = r end end
    end
    if c.methods then
      local tables = method_tables(f.toks)
      if tables[c.methods] then
        roots[#roots + 1] = "self"
        if type(tables[c.methods]) == "table" then
          ctors = ctors + 1
          for k, line in pairs(src.table_fields(f.toks, tables[c.methods].open)) do note(k, f.path .. ":" .. line) end
        end
      end
    end
    for _, w in ipairs(f.writes) do
      for _, r in ipairs(roots) do
        local field = w.path:sub(1, #r + 1) == r .. "." and w.path:sub(#r + 2):match("^([%w_]+)$")
        if field then note(field, f.path .. ":" .. w.line) end
      end
    end
    for _, k in ipairs(c.constructors or {}) do
      if f.path:match(k.files) then
        local at = src.find(f.toks, k.seq)
        while at do
          ctors = ctors + 1
          for name, line in pairs(src.table_fields(f.toks, at)) do note(name, f.path .. ":" .. line) end
          at = src.find(f.toks, k.seq, at + 1)
        end
      end
    end
  end
  return fields, seen, ctors
end

-- The declared fields of every class in files: {Name = {field = true}}, and the names of classes
-- declared more than once.
local function declarations(files)
  local out, twice = {}, {}
  for _, f in ipairs(files) do
    for name, decl in pairs(src.classes(f.raw)) do
      if out[name] then twice[#twice + 1] = name end
      out[name] = decl.fields
    end
  end
  return out, twice
end

-- The files whose `self` could be an object of two checked classes (methods of both in one file).
local function ambiguous(files)
  local out = {}
  for _, f in ipairs(files) do
    local tables, n = method_tables(f.toks), 0
    for _, c in ipairs(CLASSES) do
      if c.methods and tables[c.methods] then n = n + 1 end
    end
    if n > 1 then out[#out + 1] = f.path .. ": self is an object of two checked classes" end
  end
  return out
end

-- Every field written but not declared, as "Class.field (file:line)" lines, sorted; and problems
-- that keep the check from being whole (a class not declared or declared twice, no write or
-- constructor found, a file whose self is ambiguous).
local function undeclared(files)
  local decls, twice = declarations(files)
  local missing, problems = {}, ambiguous(files)
  for _, name in ipairs(twice) do problems[#problems + 1] = name .. " is declared twice" end
  for _, c in ipairs(CLASSES) do
    local decl = decls[c.name]
    local fields, seen, ctors = written(c, files)
    if not decl then problems[#problems + 1] = "no ---@class " .. c.name end
    if seen == 0 then problems[#problems + 1] = c.name .. ": no write found (renamed?)" end
    if ctors == 0 then problems[#problems + 1] = c.name .. ": no constructor found (moved?)" end
    for field, where in pairs(fields) do
      if not (decl and decl[field]) then missing[#missing + 1] = string.format("%s.%s (%s)", c.name, field, where) end
    end
  end
  table.sort(missing)
  table.sort(problems)
  return missing, problems
end

test("the reader drops comments and strings and keeps lines", function(t)
  local toks = src.tokens('a = "s.x = 1" -- s.y = 2\n--[[ s.z = 3\n]] b = [==[\ns.w = 4]==] c = \'it\\\'s\'\n')
  t.eq(toks[#toks].line, 4, "every line kept")
  local code = {}
  for _, tok in ipairs(toks) do code[#code + 1] = tok.v end
  t.eq(code, { "a", "=", '""', "b", "=", '""', "c", "=", '""' }, "nothing of a comment or a string is left")
  local writes = src.writes(toks)
  t.eq(#writes, 3)
  t.eq({ writes[3].path, writes[3].line }, { "c", 4 })
end)

test("the reader finds assignment statements only", function(t)
  local sample = table.concat({
    "s.status = 'x'",                        -- 1: a write
    "s.a, rt.b, t[k].c = 1, 2, 3",           -- 2: three
    "local t = { s = 1, ok = s.x == 2 }",    -- 3: table fields and a comparison: none
    "if s.y == 1 then s.z = 2 end",          -- 4: one
    "f(s.p, s.q)",                           -- 5: a call: none
    "local u = { [k] = 1, a.b, c = 2 }",     -- 6: none
    "for i = 1, 2 do s.rt.w = i end",        -- 7: s.rt.w (not the loop variable)
    "s[key] = v; x.y = function() s.fn = 1 end", -- 8: s[], x.y and s.fn
    "return { a = s.r, b = { c = 1 } }",     -- 9: none
  }, "\n")
  local got = {}
  for _, w in ipairs(src.writes(src.tokens(sample))) do got[#got + 1] = w.path .. "@" .. w.line end
  t.eq(got, { "s.status@1", "s.a@2", "rt.b@2", "t[].c@2", "s.z@4", "s.rt.w@7", "s[]@8", "x.y@8", "s.fn@8" })
end)

test("the reader finds a constructor's own fields and the declared classes", function(t)
  local toks = src.tokens("local s = { a = 1, b = { c = 2 }, ['d'] = 3, e = f(g = 1), h }")
  local fields = src.table_fields(toks, src.find(toks, "local s = {"))
  t.eq(fields, { a = 1, b = 1, e = 1 })
  local decls = src.classes("---@class Thing  what it is\n---@field a string\n--- a note\n---@field b? integer\nlocal x\n---@field c\n")
  t.eq(decls.Thing.fields, { a = true, b = true }, "a class ends at the first line of code")
end)

test("a method table makes self one of its objects, in the files that use it", function(t)
  local files = {
    source("a.lua", "---@class Box\n---@field n integer\nlocal Box = {}\nlocal function new() return setmetatable({ n = 0, m = 1 }, Box) end\n"
      .. "function Box:grow() self.n = self.n + 1; self.k = true; table.insert(self.q, 1) end"),
    source("b.lua", "local Other = {}\nfunction Other:f() self.z = 1 end"),
  }
  local fields, seen, ctors = written({ name = "Box", methods = "Box" }, files)
  t.eq(ctors, 1)
  t.eq(seen, 4)
  t.eq(fields, { n = "a.lua:4", m = "a.lua:4", k = "a.lua:5" }, "b.lua's self is not a Box; table.insert writes no field")
end)

test("every field a class's code writes is declared in its ---@class", function(t)
  local missing, problems = undeclared(read_tree(ROOT))
  local report = {}
  if #problems > 0 then report[#report + 1] = "the check is not whole:\n  " .. table.concat(problems, "\n  ") end
  if #missing > 0 then
    report[#report + 1] = #missing .. " field(s) written but not declared (add a ---@field to the class):\n  "
      .. table.concat(missing, "\n  ")
  end
  if #report > 0 then t.fail(table.concat(report, "\n")) end
end)
