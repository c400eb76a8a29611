-- rmcp.lib.chunks: a module's bytecode is cached under the home and used only while the source file
-- is the very same (path, inode, size, mtime); a stale, foreign or broken entry falls back to the
-- source, and an insecure cache dir turns the cache off.
local uv = require "luv"
local chunks = require "rmcp.lib.chunks"
local sock = require "rmcp.sock"

-- Writes text to path.
local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

-- Reads the whole file at path.
local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- The cache entries under home, by path, with their mtimes.
local function entries(home)
  local out, h = {}, uv.fs_scandir(home .. "/cache/lua")
  while h do
    local name = uv.fs_scandir_next(h)
    if not name then break end
    local path = home .. "/cache/lua/" .. name
    out[#out + 1] = path
    out[path] = uv.fs_stat(path).mtime
  end
  return out
end

test("an insecure home turns the cache off; loading still works from the source", function(t)
  local root = t.tmpdir()
  local home = root .. "/open"
  uv.fs_mkdir(home, 493) -- 0755
  uv.fs_chmod(home, 493)
  local ok, err = chunks.enable(home, sock.secure_dir)
  t.eq(ok, nil)
  t.match(err, "mode 0755")
  write(root .. "/m.lua", "return 41 + 1")
  t.eq(chunks.loadfile(root .. "/m.lua")(), 42)
  t.eq(uv.fs_stat(home .. "/cache"), nil, "nothing was written")
end)

test("the first load caches; later loads run the cached bytecode while the file is unchanged", function(t)
  local root = t.tmpdir()
  local home = root .. "/h"
  t.ok(chunks.enable(home, sock.secure_dir))
  t.eq(uv.fs_stat(home .. "/cache/lua").mode & 511, 448, "cache dir is 0700")
  local src = root .. "/m.lua"
  write(src, "local x = ...\nreturn 'source', x")
  t.eq(select(1, chunks.loadfile(src)()), "source")
  local list = entries(home)
  t.eq(#list, 1)
  t.eq(uv.fs_stat(list[1]).mode & 511, 384, "entry is 0600")
  local entry = read(list[1])
  local header = entry:match("^[^\n]*\n")
  t.ok(header:find(src, 1, true), "the header names the source path")
  -- Swap the cached body for other bytecode: if it is what runs, the cache was used.
  write(list[1], header .. string.dump(load("return 'cache'")))
  t.eq(chunks.loadfile(src)(), "cache")
end)

test("an edited source, a broken entry or a syntax error go to the source", function(t)
  local root = t.tmpdir()
  t.ok(chunks.enable(root .. "/h", sock.secure_dir))
  local src = root .. "/m.lua"
  write(src, "return 1")
  t.eq(chunks.loadfile(src)(), 1)
  write(src, "return 22") -- another size and mtime
  t.eq(chunks.loadfile(src)(), 22, "the edit is seen")
  t.eq(chunks.loadfile(src)(), 22, "and cached")
  local entry = entries(root .. "/h")[1]
  write(entry, read(entry):match("^[^\n]*\n") .. "not bytecode at all")
  t.eq(chunks.loadfile(src)(), 22, "a broken entry is ignored")
  t.eq(chunks.loadfile(src)(), 22, "and rewritten")
  write(src, "return (")
  local chunk, err = chunks.loadfile(src)
  t.eq(chunk, nil)
  t.match(err, "m.lua:1:")
end)

test("a cached chunk reports errors with the source's file and line", function(t)
  local root = t.tmpdir()
  t.ok(chunks.enable(root .. "/h", sock.secure_dir))
  local src = root .. "/boom.lua"
  write(src, "local a = 1\n\nerror('boom at three')\n")
  chunks.loadfile(src)
  local ok, err = pcall(chunks.loadfile(src))
  t.eq(ok, false)
  t.match(err, "boom%.lua:3: boom at three")
end)

test("a server start caches its modules and the next start reads them without rewriting", function(t)
  local root = t.tmpdir()
  local home = root .. "/h"
  local input = root .. "/init.json"
  write(input, '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    .. '"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n')
  local command = string.format("REASONIX_MCP_HOME='%s' '%s' server < '%s' 2>/dev/null", home,
    require("rmcp.host").exe, input)
  local function start()
    local p = assert(io.popen(command))
    local out = p:read("a")
    p:close()
    t.match(out, '"protocolVersion"')
  end
  start()
  local first = entries(home)
  t.ok(#first >= 20, "the server's modules are cached (" .. #first .. ")")
  start()
  local second = entries(home)
  t.eq(#second, #first)
  for _, path in ipairs(first) do
    t.eq(second[path], first[path], "not rewritten: " .. path)
  end
end)
