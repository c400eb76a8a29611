-- rmcp.json (core/json.c) through lib/json.lua: what lua-cjson 2.1.0 gets wrong for us and the pass
-- fixes — empty arrays, big integers, shortest floats, raw splices, "\/", invalid UTF-8, colliding
-- keys — and that the caller's tables come back untouched, also after an error.
local json = require "rmcp.lib.json"

test("empty arrays stay arrays both ways; empty objects stay objects", function(t)
  t.eq(json.encode(json.array()), "[]")
  t.eq(json.encode({}), "{}")
  t.eq(json.encode({ a = json.array() }), '{"a":[]}')
  t.eq(json.encode({ json.array(), json.array({ json.array() }) }), "[[],[[]]]")
  local d = json.decode('{"a":[],"b":[ \n],"c":"[]","d":{"e":[[]]},"f":{}}')
  t.ok(json.is_array(d.a) and json.is_array(d.b) and json.is_array(d.d.e[1]), "decoded [] is marked")
  t.eq(d.c, "[]", "a string that looks like [] is left alone")
  t.ok(not json.is_array(d.f), "{} is not an array")
  t.eq(json.decode(json.encode(d)).d.e[1], json.array())
  t.match(json.encode(d), '"a":%[%]')
  t.ok(json.is_array(json.decode("[]")), "a top-level [] too")
end)

test("numbers: integers stay integers and exact; floats are the shortest form that reads back", function(t)
  t.eq(math.type(json.decode("[3]")[1]), "integer")
  t.eq(math.type(json.decode("3")), "integer")
  t.eq(math.type(json.decode("3.5")), "float")
  t.eq(json.encode(123456789012345), "123456789012345")
  t.eq(json.encode(math.maxinteger), "9223372036854775807")
  t.eq(json.encode({ n = -100000000000001 }), '{"n":-100000000000001}')
  t.eq(json.encode(0.40000000000000002), "0.4")
  t.eq(json.encode(1733000000.1229999), "1733000000.123")
  t.eq(json.encode(0.1 + 0.2), "0.30000000000000004", "17 digits when 14 do not read back")
  t.eq(json.decode(json.encode(2 ^ 60)), 2 ^ 60)
  t.eq(json.encode({ 0 / 0, math.huge, -math.huge }), "[null,null,null]")
end)

test("a decimal of up to three fraction digits is written without printf, exactly as %.14g would", function(t)
  for _, v in ipairs({ 1733000000.123, 0.5, -1.25, 0.001, 99999999999.999, 12.34, 1733000000.1, -0.0, 0.0005, 3.14159 }) do
    local want
    for p = 14, 17 do
      want = string.format("%." .. p .. "g", v)
      if tonumber(want) == v then break end
    end
    t.eq(json.encode(v), want, string.format("%.17g", v))
    t.eq(json.decode(json.encode({ v }))[1], v, "reads back")
  end
  t.match(json.encode({ a = { 1733000000.123, 2.5, "x/y" } }), '^{"a":%[1733000000%.123,2%.5,"x/y"%]}$')
end)

test("strings: slashes unescaped, control characters escaped, invalid UTF-8 replaced", function(t)
  t.eq(json.encode("/tmp/a\\b"), '"/tmp/a\\\\b"')
  t.eq(json.encode("a\nb\0c"), '"a\\nb\\u0000c"')
  t.eq(json.encode("ok \xe2\x82\xac bad \xff \xc0\xaf \xed\xa0\x80"), '"ok € bad \\ufffd \\ufffd\\ufffd \\ufffd\\ufffd\\ufffd"')
  t.eq(json.decode('"a\\/b"'), "a/b")
  local line = json.encode({ ["k\xfe"] = "v" })
  t.eq(line, '{"k\\ufffd":"v"}', "keys are made valid too")
end)

test("long strings (escaped in one pass, not by cjson) are written exactly as short ones", function(t)
  local piece = "a/\"\\\n\1\127\u{20ac}\xff"
  local short = json.encode({ piece })
  t.eq(short, '["a/\\"\\\\\\n\\u0001\\u007f\u{20ac}\\ufffd"]', "the cjson path, for reference")
  local long = piece:rep(40)
  local held = { long, { k = long } }
  local text = json.encode(held)
  local want = '"' .. short:sub(3, -3):rep(40) .. '"'
  t.eq(text, "[" .. want .. ',{"k":' .. want .. "}]")
  t.eq(held[1], long, "the caller's table is restored")
  t.eq(held[2].k, long)
  t.eq(json.encode(long), want, "a long string alone")
  t.eq(json.encode(piece), short:sub(2, -2), "a short string alone (the same pass)")
  t.eq(json.encode(""), '""')
  t.eq(json.decode(json.encode("x\0y")), "x\0y")
end)

test("json.raw splices encoded JSON in as it is", function(t)
  local raw = json.raw('{"x":[1,2],"s":"/"}')
  t.eq(json.raw_text(raw), '{"x":[1,2],"s":"/"}')
  t.eq(json.raw_text({}), nil)
  t.eq(json.encode(raw), '{"x":[1,2],"s":"/"}')
  t.eq(json.decode(json.encode({ result = raw, n = 1 })), { result = { x = { 1, 2 }, s = "/" }, n = 1 })
  t.eq(json.decode(json.encode({ a = { raw } })).a[1].x[2], 2)
end)

test("what cannot be encoded is an error, never a raise, and the tables come back as they were", function(t)
  local ok, err = json.encode({ [1] = "a", ["1"] = "b" })
  t.eq(ok, nil)
  t.match(err, 'both 1 and "1"')
  local cyc = {}
  cyc.self = cyc
  t.eq(select(2, json.encode(cyc)):match("nested over"), "nested over")
  t.eq(json.encode({ f = print }), nil)
  local inner = json.array()
  local v = { a = inner, big = 2 ^ 62 // 1, f = 0.1 + 0.2, bad = print }
  t.eq(json.encode(v), nil, "fails on the function")
  t.ok(rawequal(v.a, inner) and v.big == 2 ^ 62 // 1 and v.f == 0.1 + 0.2 and v.bad == print,
    "every swapped value is restored after the failure")
  t.eq(select(2, json.decode("{nope")) ~= nil, true)
  t.eq(select(2, json.decode(nil)), "expected a JSON string, got nil")
end)

test("a sentinel-looking string in the input is data, not a splice", function(t)
  local s = "\1rmcp0000000000000000:1\1"
  t.eq(json.decode(json.encode({ s = s, a = json.array() })).s, s)
  t.eq(json.decode(json.encode({ "\1rmcp:E\1" }))[1], "\1rmcp:E\1")
end)

test("a table reached along two paths encodes at each place, whatever it holds", function(t)
  local shared = { f = 1.5, e = json.array(), r = json.raw('{"x":1}'), long = string.rep("y", 300), big = 2^60 }
  local copy = { f = 1.5, e = json.array(), r = json.raw('{"x":1}'), long = string.rep("y", 300), big = 2^60 }
  local out = assert(json.encode({ a = shared, b = { shared, { c = shared } } }))
  local want = json.decode(assert(json.encode({ a = copy, b = { copy, { c = copy } } })))
  t.eq(json.decode(out), want)
  t.eq(shared.f, 1.5, "every swapped value is back")
  t.eq(json.raw_text(shared.r), '{"x":1}')
  t.eq(json.encode({ shared, shared }), json.encode({ copy, copy }))
end)

test("a string spelling the encoder's internal marker is refused both ways, never spliced", function(t)
  local _, prefix = debug.getupvalue(json.encode, 3) -- what only a caller reading the nonce could spell
  t.eq(type(prefix), "string")
  local out, err = json.encode({ a = json.array(), [prefix .. "9\1"] = 1 })
  t.eq(out, nil)
  t.match(err, "internal marker")
  out, err = json.encode({ json.array(), prefix .. "1\1" })
  t.eq(out, nil)
  t.match(err, "internal marker")
  local marker = '"\\u0001' .. prefix:sub(2) .. 'E\\u0001"'
  local v, derr = json.decode('{"a":[],"b":[' .. marker .. ']}')
  t.eq(v, nil)
  t.match(derr, "internal empty%-array marker")
  t.eq(json.encode({ json.array(), "ok\1x" }), '[[],"ok\\u0001x"]', "a lone \\1 is data")
end)
