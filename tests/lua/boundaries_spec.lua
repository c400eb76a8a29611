-- The boundaries of lua/rmcp, checked the way a compiler checks includes: every require (also
-- pcall(require, …), lazy "…", and requires inside functions) goes down the layer table of
-- lua/rmcp/README.md ("Layers") or stays in its own package; no circle between modules; only
-- agentd/session/ writes a Session or SessionRuntime field; no file over 450 lines, no function over
-- 80. Sources are read by tests/support/lua_source.lua, so nothing in a comment or a string counts as
-- code. The first cases feed each detector small samples, so a detector that finds nothing cannot
-- pass unnoticed.
local src = require "lua_source"

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local ROOT = here .. "../../lua/rmcp/"
local README = ROOT .. "README.md"
local SESSION_CLASSES = "agentd/session/init.lua"
local SESSION_PACKAGE = "agentd/session/"
local MAX_FILE_LINES, MAX_FUNCTION_LINES = 450, 80

-- Files whose require takes a name computed at run time, and why that is their job.
local DYNAMIC_REQUIRE = {
  ["main.lua"] = "dispatches a subcommand to the main module its commands table names",
  ["lib/lazy.lua"] = "the stand-in requires the module it was made for",
  ["lib/swap.lua"] = "a build replaces require with its private one while new code loads",
}

-- What one Lua source holds: {edges, dynamic (lines), writes, aliases, functions, lines}, as
-- lua_source reads them; writes are those with a field (a.b = …, a[i].c = …, each target of a
-- multiple assignment, the table of table.insert/remove).
local function scan(text)
  local toks = src.tokens(text)
  local edges, dynamic = src.requires(toks)
  local writes = {}
  for _, w in ipairs(src.writes(toks)) do
    if #w.parts > 1 then writes[#writes + 1] = w end
  end
  local lines = select(2, text:gsub("\n", "")) + ((text ~= "" and text:sub(-1) ~= "\n") and 1 or 0)
  return { edges = edges, dynamic = dynamic, writes = writes, aliases = src.aliases(toks),
           functions = src.functions(toks), lines = lines }
end

-- Scans a sample given as its list of lines.
local function scan_lines(lines) return scan(table.concat(lines, "\n")) end

-- What a write target changes of a session, as "s.status (a Session field)", or nil: a declared
-- Session field through s, sess, session or sessions[…]; any field of a runtime table (rt, x.rt).
-- A target through a local alias of a field (aliases, from scan) counts as written through it.
local function session_write(parts, fields, aliases)
  local session_names = { s = true, sess = true, session = true }
  local name = table.concat(parts, "."):gsub("%.%[%]", "[…]")
  local alias = aliases and parts[1] ~= "rt" and aliases[parts[1]]
  if alias then
    local whole = { table.unpack(alias) }
    for i = 2, #parts do whole[#whole + 1] = parts[i] end
    parts = whole
    name = name .. ", that is " .. table.concat(parts, "."):gsub("%.%[%]", "[…]")
  end
  for i = 1, #parts - 1 do
    local p, nxt = parts[i], parts[i + 1]
    if p == "rt" then return name .. " (a SessionRuntime field)" end
    local at_session = (i == 1 and session_names[p]) or (p == "[]" and parts[i - 1] == "sessions")
    if at_session and fields.Session[nxt] and not (nxt == "rt" and parts[i + 2]) then
      return name .. " (a Session field)"
    end
  end
  return nil
end

-- The layer table of README text (its "## Layers" section): {external = {name = true}, package_rank
-- = {path = rank}} where a package is a dir ("lib/") or a file ("config.lua") under lua/rmcp.
local function layers(text)
  local section = text:match("\n## Layers\n(.-)\n## ") or text:match("\n## Layers\n(.*)$")
  assert(section, "lua/rmcp/README.md has no '## Layers' section with the layer table")
  local out, rows = { external = {}, package_rank = {} }, 0
  for row in ("\n" .. section):gmatch("\n|([^\n]*)") do
    local rank, cell = row:match("^%s*(%d+)%s*|([^|]*)|")
    for name in (cell or ""):gmatch("`([^`]+)`") do
      local package = name:match("/$") or name:match("%.lua$")
      if package then out.package_rank[name] = tonumber(rank) else out.external[name] = true end
    end
    rows = rows + (rank and 1 or 0)
  end
  assert(rows > 0, "the '## Layers' section of lua/rmcp/README.md has no rows `| rank | packages | … |`")
  return out
end

-- The package (a path of the layer table) that file (a path under lua/rmcp) belongs to, or nil:
-- the file itself, or the longest dir that holds it.
local function package_of(table_, file)
  if table_.package_rank[file] then return file end
  local best
  for p in pairs(table_.package_rank) do
    if p:sub(-1) == "/" and file:sub(1, #p) == p and (not best or #p > #best) then best = p end
  end
  return best
end

-- The file under lua/rmcp of module name among files (a set), or nil (a C module, or none).
local function file_of(files, name)
  local rel = name:match("^rmcp%.(.+)$")
  if not rel then return nil end
  rel = rel:gsub("%.", "/")
  if files[rel .. ".lua"] then return rel .. ".lua" end
  if files[rel .. "/init.lua"] then return rel .. "/init.lua" end
  return nil
end

-- The module name of file (a path under lua/rmcp).
local function module_of(file)
  return "rmcp." .. file:gsub("/init%.lua$", ""):gsub("%.lua$", ""):gsub("/", ".")
end

-- The edges between files: {from, to (files), line, module} for each require of a module under
-- lua/rmcp (a prefix edge fans out to every module under it), and the requires of unknown modules.
local function file_edges(scans, files, table_)
  local edges, unknown = {}, {}
  for file, sc in pairs(scans) do
    for _, e in ipairs(sc.edges) do
      local to = file_of(files, e.module)
      local targets = {}
      if to then targets[1] = to end
      if e.prefix then
        local dir = e.module:match("^rmcp%.(.+)$")
        dir = dir and dir:gsub("%.", "/") .. "/"
        for f in pairs(files) do
          if dir and f:sub(1, #dir) == dir and f ~= file then targets[#targets + 1] = f end
        end
      end
      for _, f in ipairs(targets) do
        edges[#edges + 1] = { from = file, to = f, line = e.line, module = e.module }
      end
      if #targets == 0 and not table_.external[e.module] then
        unknown[#unknown + 1] = { file = file, line = e.line, module = e.module }
      end
    end
  end
  return edges, unknown
end

-- The edges that go up or sideways between packages: messages "file:line: …".
local function layer_offences(edges, table_)
  local out = {}
  for _, e in ipairs(edges) do
    local pa, pb = package_of(table_, e.from), package_of(table_, e.to)
    if pa and pb and pa ~= pb then
      local ra, rb = table_.package_rank[pa], table_.package_rank[pb]
      if rb > ra then
        out[#out + 1] = string.format("%s:%d: %s (%s, rank %d) requires %s (%s, rank %d), a higher layer: move what it "
          .. "needs down to a lower layer, or have the caller pass it in", e.from, e.line, module_of(e.from), pa, ra,
          e.module, pb, rb)
      elseif rb == ra then
        out[#out + 1] = string.format("%s:%d: %s (%s) requires %s (%s), another package of the same rank %d: "
          .. "move what both need down to a lower layer", e.from, e.line, module_of(e.from), pa, e.module, pb, ra)
      end
    end
  end
  table.sort(out)
  return out
end

-- Breadth first from file v along next_of ({from = {to = edge}}), successors in name order and only
-- those in the set within when given: {file = the file it is first reached from}. v is in it only
-- when a circle leads back to it.
local function breadth_first(next_of, v, within)
  local prev, queue, head = {}, { v }, 1
  while queue[head] do
    local from, succ = queue[head], {}
    for w in pairs(next_of[from] or {}) do succ[#succ + 1] = w end
    table.sort(succ)
    for _, w in ipairs(succ) do
      if not prev[w] and (not within or within[w]) then prev[w], queue[#queue + 1] = from, w end
    end
    head = head + 1
  end
  return prev
end

-- The circles among the edges: one message per strongly connected set of files, naming a shortest
-- circle through it with the line of each require.
local function circle_offences(edges)
  local next_of, nodes, reach, placed, out = {}, {}, {}, {}, {}
  for _, e in ipairs(edges) do
    if e.from ~= e.to then
      next_of[e.from] = next_of[e.from] or {}
      if not next_of[e.from][e.to] then next_of[e.from][e.to] = e end
    end
  end
  for v in pairs(next_of) do nodes[#nodes + 1] = v end
  table.sort(nodes)
  for _, v in ipairs(nodes) do reach[v] = breadth_first(next_of, v) end
  for _, start in ipairs(nodes) do
    if reach[start][start] and not placed[start] then
      local comp, member = {}, {} -- the files that each reach the other, start first
      for _, w in ipairs(nodes) do
        if reach[start][w] and reach[w][start] then comp[#comp + 1], member[w], placed[w] = w, true, true end
      end
      local prev, way = breadth_first(next_of, start, member), { start } -- a shortest way back to start
      local v = prev[start]
      while v ~= start do table.insert(way, 2, v); v = prev[v] end
      local steps = {}
      for i, a in ipairs(way) do
        local b = way[i + 1] or start
        steps[#steps + 1] = string.format("%s requires %s (%s:%d)", module_of(a), module_of(b), a, next_of[a][b].line)
      end
      out[#out + 1] = string.format("circle of %d module(s) [%s]: %s; break it: move what they share into a module "
        .. "below both, or pass it in as an argument", #comp, table.concat(comp, ", "), table.concat(steps, ", "))
    end
  end
  table.sort(out)
  return out
end

-- The scanned tree, read once for every case: {list (its files, sorted), files (as a set), scans,
-- table, fields, edges, unknown}.
local tree
local function the_tree()
  if tree then return tree end
  local list, files, scans, fields = src.files(ROOT), {}, {}, {}
  for _, f in ipairs(list) do files[f], scans[f] = true, scan(src.read(ROOT .. f)) end
  local table_ = layers(src.read(README))
  for name, class in pairs(src.classes(src.read(ROOT .. SESSION_CLASSES))) do fields[name] = class.fields end
  local edges, unknown = file_edges(scans, files, table_)
  tree = { list = list, files = files, scans = scans, table = table_, fields = fields, edges = edges,
           unknown = unknown }
  return tree
end

-- What check(file, scan, add) reports of each file of the tree, in file order: the offences it adds.
local function per_file(check)
  local tr, out = the_tree(), {}
  for _, f in ipairs(tr.list) do check(f, tr.scans[f], function(offence) out[#out + 1] = offence end) end
  return out
end

-- Fails listing the offences, one per line, under a heading.
local function none(t, offences, heading)
  if #offences > 0 then
    t.fail(string.format("%s (%d):\n  %s", heading, #offences, table.concat(offences, "\n  ")))
  end
end

-- The detectors, on samples ----------------------------------------------------------------------

test("the reader drops comments and strings: nothing in them counts as a require or a write", function(t)
  local sc = scan_lines({
    '-- require "rmcp.a"',
    '--[[ require "rmcp.b"',
    '     s.status = 1 ]]',
    'local x = "require \\"rmcp.c\\"; s.status = 2"',
    'local y = [==[ require "rmcp.d" ]] s.status = 3 ]==]',
    "local z = 'it''s' -- s.status = 4",
    'local w = "a\\z',
    '          b"',
    'return require "rmcp.real"',
  })
  t.eq(#sc.edges, 1)
  t.eq(sc.edges[1], { module = "rmcp.real", line = 9 }, "the one require, on its own line")
  t.eq(#sc.writes, 0)
  t.eq(sc.lines, 9)
end)

test("every form of require is an edge, also inside functions; a computed name is dynamic", function(t)
  local sc = scan_lines({
    'local a = require "rmcp.a"',
    'local b = require("rmcp.b")',
    'local ok, c = pcall(require, "rmcp.c")',
    'local lazy = require "rmcp.lib.lazy"',
    'local d = lazy "rmcp.d"',
    'local e = lazy("rmcp.e")',
    'local function f() return require("rmcp.f").x end',
    'for _, m in ipairs(list) do require("rmcp.g." .. m) end',
    'local h = require(name)',
    'local real = require',
    'local r = schema.required; t.require("rmcp.no")',
  })
  local got = {}
  for _, e in ipairs(sc.edges) do got[#got + 1] = e.module .. "@" .. e.line .. (e.prefix and "/prefix" or "") end
  t.eq(got, { "rmcp.a@1", "rmcp.b@2", "rmcp.c@3", "rmcp.lib.lazy@4", "rmcp.d@5", "rmcp.e@6", "rmcp.f@7",
              "rmcp.g@8/prefix" })
  t.eq(sc.dynamic, { 9, 10 })
end)

test("writes: fields through any chain, each target of a multiple assignment, not table keys", function(t)
  local sc = scan_lines({
    's.status, s.exit_reason = "exited", "x"',
    'local o = { status = s.status, f = function() s.rt.stalled = true end }',
    'rt.cpu_total = 1; d.sessions[id].error_text = "e"',
    'x = 1; local y = 2; for i = 1, 3 do end',
    'table.insert(s.warnings, "w")',
    'if a == b then c.d = 1 end',
  })
  local got = {}
  for _, w in ipairs(sc.writes) do got[#got + 1] = table.concat(w.parts, ".") .. "@" .. w.line end
  t.eq(got, { "s.status@1", "s.exit_reason@1", "s.rt.stalled@2", "rt.cpu_total@3", "d.sessions.[].error_text@3",
              "s.warnings@5", "c.d@6" })
  local fields = { Session = { status = true, exit_reason = true, error_text = true, warnings = true } }
  local which = {}
  for _, w in ipairs(sc.writes) do which[#which + 1] = session_write(w.parts, fields) or "-" end
  t.eq(which, { "s.status (a Session field)", "s.exit_reason (a Session field)", "s.rt.stalled (a SessionRuntime field)",
                "rt.cpu_total (a SessionRuntime field)", "d.sessions[…].error_text (a Session field)",
                "s.warnings (a Session field)", "-" })
  t.eq(session_write({ "s", "required" }, fields), nil, "a field no class declares, on a table named s, is not one")
  local aliased = scan("local o, wt = 1, s.warnings\nlocal rt, a = s.rt, s.rt.agent\nwt.last = 1\na.x = 2")
  t.eq(aliased.aliases, { wt = { "s", "warnings" }, rt = { "s", "rt" }, a = { "s", "rt", "agent" } })
  t.eq(session_write(aliased.writes[1].parts, fields, aliased.aliases),
    "wt.last, that is s.warnings.last (a Session field)")
  t.eq(session_write(aliased.writes[2].parts, fields, aliased.aliases),
    "a.x, that is s.rt.agent.x (a SessionRuntime field)")
end)

test("function lengths: named, local, assigned and anonymous ones, nested, with every block kind", function(t)
  local sc = scan_lines({
    "local function a()",          -- 1
    "  if x then y() elseif z then w() else v() end",
    "  for i = 1, 2 do end",
    "  while c do break end",
    "  repeat n = n + 1 until n > 3",
    "  local g = function() return { f = function() end } end",
    "end",                         -- 7
    "function M.b(x) do end end",  -- 8
    "function Obj:c() end",        -- 9
    "M.d = function()",            -- 10
    "end",                         -- 11
    "call(function() end)",        -- 12
  })
  local got = {}
  for _, f in ipairs(sc.functions) do got[#got + 1] = f.name .. "@" .. f.line .. "=" .. f.lines end
  table.sort(got)
  t.eq(got, { "(anonymous)@12=1", "M.b@8=1", "M.d@10=2", "Obj:c@9=1", "a@1=7", "f@6=1", "g@6=1" })
end)

test("layers: a require up or sideways is an offence; down or within a package is not", function(t)
  local table_ = layers(table.concat({
    "# x", "", "## Layers", "| rank | packages | note |", "|---|---|---|",
    "| 0 | `luv` | external |", "| 1 | `lib/` | |", "| 2 | `config.lua` | |",
    "| 9 | `server/`, `agentd/` | processes |", "", "## Next", "",
  }, "\n"))
  t.eq(table_.package_rank, { ["lib/"] = 1, ["config.lua"] = 2, ["server/"] = 9, ["agentd/"] = 9 })
  t.eq(package_of(table_, "agentd/session/state.lua"), "agentd/")
  local edges = {
    { from = "lib/a.lua", to = "config.lua", line = 3, module = "rmcp.config" },
    { from = "agentd/x.lua", to = "server/y.lua", line = 4, module = "rmcp.server.y" },
    { from = "agentd/x.lua", to = "agentd/session/z.lua", line = 5, module = "rmcp.agentd.session.z" },
    { from = "server/y.lua", to = "lib/a.lua", line = 6, module = "rmcp.lib.a" },
  }
  local out = layer_offences(edges, table_)
  t.eq(#out, 2, table.concat(out, "\n"))
  t.match(out[1], "^agentd/x%.lua:4: .*another package of the same rank 9")
  t.match(out[2], "^lib/a%.lua:3: .*a higher layer")
end)

test("circles: found through any number of modules and named with each require's line", function(t)
  local edges = {
    { from = "a.lua", to = "b.lua", line = 1 }, { from = "b.lua", to = "c.lua", line = 2 },
    { from = "c.lua", to = "a.lua", line = 3 }, { from = "c.lua", to = "d.lua", line = 4 },
    { from = "d.lua", to = "d.lua", line = 5 }, { from = "e.lua", to = "f.lua", line = 6 },
  }
  local out = circle_offences(edges)
  t.eq(#out, 1, table.concat(out, "\n"))
  t.match(out[1], "circle of 3 module%(s%) %[a%.lua, b%.lua, c%.lua%]: rmcp%.a requires rmcp%.b %(a%.lua:1%), "
    .. "rmcp%.b requires rmcp%.c %(b%.lua:2%), rmcp%.c requires rmcp%.a %(c%.lua:3%)")
end)

-- The tree ---------------------------------------------------------------------------------------

test("the layer table of lua/rmcp/README.md covers every file, and every package it names exists", function(t)
  local tr = the_tree()
  local out = {}
  for _, f in ipairs(tr.list) do
    if not package_of(tr.table, f) then
      out[#out + 1] = f .. ": in no package of the layer table: move it into one, or add its package to the "
        .. "'## Layers' table of lua/rmcp/README.md at the rank it belongs to"
    end
  end
  for p in pairs(tr.table.package_rank) do
    local present = false
    for f in pairs(tr.files) do present = present or f == p or f:sub(1, #p) == p end
    if not present then out[#out + 1] = p .. ": named by the layer table but not in lua/rmcp: fix the table" end
  end
  for _, u in ipairs(tr.unknown) do
    out[#out + 1] = string.format("%s:%d: requires %s, which is neither a file under lua/rmcp nor an external "
      .. "module of rank 0: fix the name, or add the C module to rank 0 of the layer table", u.file, u.line, u.module)
  end
  table.sort(out)
  none(t, out, "files and packages out of the layer table")
end)

test("no require goes up or sideways between the layers of lua/rmcp/README.md", function(t)
  local tr = the_tree()
  none(t, layer_offences(tr.edges, tr.table), "requires that break the layers")
end)

test("no circle between modules (requires inside functions and lazy ones count)", function(t)
  none(t, circle_offences(the_tree().edges), "circles")
end)

test("a require names its module in the code (only the modules whose job it is compute one)", function(t)
  none(t, per_file(function(f, sc, add)
    for _, line in ipairs(DYNAMIC_REQUIRE[f] and {} or sc.dynamic) do
      add(string.format("%s:%d: require of a computed name (or require handed around): write the module name as "
        .. "a string, so the layers and circles can be checked", f, line))
    end
  end), "requires the check cannot see")
end)

test("only agentd/session/ writes a Session or SessionRuntime field", function(t)
  local tr = the_tree()
  t.ok(tr.fields.Session and tr.fields.Session.status and tr.fields.SessionRuntime,
    "---@class Session and SessionRuntime are declared in " .. SESSION_CLASSES)
  none(t, per_file(function(f, sc, add)
    for _, w in ipairs(f:sub(1, #SESSION_PACKAGE) ~= SESSION_PACKAGE and sc.writes or {}) do
      local what = session_write(w.parts, tr.fields, sc.aliases)
      if what then
        add(string.format("%s:%d: writes %s outside %s: add a verb to rmcp.agentd.session (%s) that makes this "
          .. "change, and call it", f, w.line, what, SESSION_PACKAGE, SESSION_CLASSES))
      end
    end
  end), "session state written outside " .. SESSION_PACKAGE)
end)

test("no Lua file in lua/rmcp is over " .. MAX_FILE_LINES .. " lines", function(t)
  none(t, per_file(function(f, sc, add)
    if sc.lines > MAX_FILE_LINES then
      add(string.format("%s: %d lines: split it by concern into files of one job each", f, sc.lines))
    end
  end), "files over " .. MAX_FILE_LINES .. " lines")
end)

test("no function in lua/rmcp is over " .. MAX_FUNCTION_LINES .. " lines", function(t)
  none(t, per_file(function(f, sc, add)
    for _, fn in ipairs(sc.functions) do
      if fn.lines > MAX_FUNCTION_LINES then
        add(string.format("%s:%d: function %s is %d lines: split it into named steps", f, fn.line, fn.name, fn.lines))
      end
    end
  end), "functions over " .. MAX_FUNCTION_LINES .. " lines")
end)
