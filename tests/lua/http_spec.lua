-- rmcp.http (core/http.c): requests split anywhere, pipelined, with repeated headers; responses;
-- oversize and malformed input refused with a message.
local http = require "rmcp.http"

test("a request split across feeds, and two pipelined, come out whole", function(t)
  local p = http.parser(4096)
  local text = "POST /api/act?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8746\r\nX-A: 1\r\nx-a: 2\r\nContent-Length: 5\r\n\r\nhello"
    .. "GET /login HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
  local got = {}
  for i = 1, #text, 7 do -- seven bytes at a time: every field is cut somewhere
    local rs = assert(p:feed(text:sub(i, i + 6)))
    for _, r in ipairs(rs) do got[#got + 1] = r end
  end
  t.eq(#got, 2)
  t.eq(got[1].method, "POST")
  t.eq(got[1].path, "/api/act")
  t.eq(got[1].query, "x=1")
  t.eq(got[1].headers.host, "127.0.0.1:8746")
  t.eq(got[1].headers["x-a"], "1, 2", "a repeated header is joined")
  t.eq(got[1].body, "hello")
  t.eq(got[1].keep_alive, true)
  t.eq(got[2].path, "/login")
  t.eq(got[2].body, "")
  t.eq(got[2].keep_alive, false)
  local long = string.rep("K", 300)
  local rs = assert(http.parser():feed("GET / HTTP/1.1\r\n" .. long .. ": v\r\n\r\n"))
  t.eq(rs[1].headers[long:lower()], "v", "a header name of any length is kept whole (fuzz_http found a cut at 256)")
end)

test("oversize and malformed requests are errors, never a crash", function(t)
  local r, err = http.parser(64):feed("GET /" .. string.rep("a", 100) .. " HTTP/1.1\r\n\r\n")
  t.eq(r, nil)
  t.eq(err, "request too large")
  r, err = http.parser():feed("NOT A REQUEST\r\n\r\n")
  t.eq(r, nil)
  t.match(err, "^HPE_")
  local many = { "GET / HTTP/1.1\r\n" }
  for i = 1, 200 do many[#many + 1] = "X-" .. i .. ": v\r\n" end
  r, err = http.parser(1 << 20):feed(table.concat(many) .. "\r\n")
  t.eq(r, nil, "more than 100 headers")
  t.eq(err, "request too large")
end)

test("responses: status, headers, body", function(t)
  local p = http.parser(1024, "response")
  local rs = assert(p:feed("HTTP/1.1 303 See Other\r\nLocation: /\r\nContent-Length: 2\r\n\r\nok"))
  t.eq(rs[1].status, 303)
  t.eq(rs[1].headers.location, "/")
  t.eq(rs[1].body, "ok")
end)
