-- The binary as a Lua host: a Lua C module from package.cpath (what a user policy may require)
-- loads into it, since the binary exports Lua's API (Debian's C modules do not link liblua).

test("a Lua C module on package.cpath loads and works (Debian's cjson.so)", function(t)
  local path = package.searchpath("cjson", package.cpath)
  t.ok(path, "Debian's lua-cjson C module is on package.cpath (" .. package.cpath .. ")")
  local preload, loaded = package.preload.cjson, package.loaded.cjson
  t.defer(function() package.preload.cjson, package.loaded.cjson = preload, loaded end)
  package.preload.cjson, package.loaded.cjson = nil, nil
  local ok, mod = pcall(require, "cjson")
  t.ok(ok, "require of " .. path .. " failed: " .. tostring(mod))
  t.ok(mod ~= loaded, "the module came from the file, not the built-in copy")
  t.eq(mod.encode({ a = { 1, 2 } }), '{"a":[1,2]}')
end)
