-- A strict sandbox's network path without the sandbox: agentd's gate (rmcp.agentd.session.netgate)
-- in this process, `reasonix-mcp sandbox-net` as a plain child process listening on 127.0.0.1, and
-- targets this process serves. The forward and the proxy (CONNECT and absolute-form), an allowed and
-- a refused target, a large transfer both ways with a slow reader, half-close, the gate closed while
-- connections run, the agent's exit code and signals passed on, its stdio untouched.
local uv = require "luv"
local proc = require "rmcp.proc"
local sock = require "rmcp.sock"
local log = require "rmcp.lib.log"
local connect_line = require "rmcp.lib.connect_line"
local netgate = require "rmcp.agentd.session.netgate"
local http_proxy = require "rmcp.sandboxed.http_proxy"

local BIN = require("rmcp.host").exe

local free_port = require("ports").free

-- A TCP server on 127.0.0.1 for the case; on_client(tcp) per connection. Returns its port.
local function serve(t, on_client)
  local srv = uv.new_tcp()
  assert(srv:bind("127.0.0.1", 0))
  assert(srv:listen(64, function()
    local c = uv.new_tcp()
    srv:accept(c)
    t.defer(function() if not c:is_closing() then c:close() end end)
    on_client(c)
  end))
  t.defer(function() srv:close() end)
  return srv:getsockname().port
end

-- A target that echoes what it reads and answers an EOF with "got N bytes", then its own EOF.
local function echo_target(t)
  return serve(t, function(c)
    local n = 0
    c:read_start(function(err, data)
      if data then n = n + #data; c:write(data); return end
      if err then return c:close() end
      c:write("got " .. n .. " bytes")
      c:shutdown(function() c:close() end)
    end)
  end)
end

-- A connection the case drives: what it read (buf), eof, err; write, shutdown, stop and start reading.
local function wrap(tcp)
  local c = { tcp = tcp, parts = {}, len = 0, eof = false }
  function c.start()
    tcp:read_start(function(err, data)
      if err then c.err = err
      elseif data then c.parts[#c.parts + 1] = data; c.len = c.len + #data
      else c.eof = true end
    end)
  end
  function c.text()
    if #c.parts > 1 then c.parts = { table.concat(c.parts) } end
    return c.parts[1] or ""
  end
  function c.close() if not tcp:is_closing() then tcp:close() end end
  c.start()
  return c
end

-- Connects to 127.0.0.1:port.
local function dial(t, port)
  local tcp = uv.new_tcp()
  local err = t.await(function(done) tcp:connect("127.0.0.1", port, done) end, 5000, "connect")
  t.ok(not err, "connect to " .. port .. ": " .. tostring(err))
  local c = wrap(tcp)
  t.defer(c.close)
  return c
end

-- Connects to the gate's socket itself, as the sandbox's side does.
local function dial_gate(t, path)
  local fd = assert(sock.connect(path))
  local pipe = uv.new_pipe(false)
  assert(pipe:open(fd))
  local c = wrap(pipe)
  t.defer(c.close)
  return c
end

-- Opens a gate at <dir>/net.sock for session "rx-test": allow refuses port refuse_port (and the
-- name "blocked.invalid") with a reason. Log lines of the case are collected in gate.lines.
local function open_gate(t, dir, refuse_port)
  local lines = {}
  log.set_sink(function(line) lines[#lines + 1] = line; io.stderr:write(line) end)
  t.defer(function() log.set_sink(function(line) io.stderr:write(line) end) end)
  local g = assert(netgate.open(dir .. "/net.sock", function(host, port)
    if port == refuse_port or host == "blocked.invalid" then return false, "not on rx-test's list" end
    return true
  end, "rx-test"))
  t.defer(function() g:close() end)
  return g, lines
end

-- Starts sandbox-net with args and the agent argv; the agent prints "ready" first, so the
-- listeners are up once it is read. Returns {p, out, err, code, sig, exited}.
local function sandbox_net(t, args, agent, env)
  local run = { out = "", err = "" }
  local argv = { "sandbox-net" }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  argv[#argv + 1] = "--"
  for _, a in ipairs(agent) do argv[#argv + 1] = a end
  run.p = assert(proc.spawn({
    file = BIN, args = argv, env = env, stdout_mode = "raw",
    on_stdout = function(chunk) run.out = run.out .. chunk end,
    on_stderr = function(chunk) run.err = run.err .. chunk end,
    on_exit = function(code, sig) run.code, run.sig, run.exited = code, sig, true end,
  }))
  t.defer(function() if not run.exited then run.p:kill("KILL") end end)
  return run
end

-- sandbox-net with an agent that says ready and then copies its stdin to its stdout.
local function started(t, args)
  local run = sandbox_net(t, args, { "/bin/sh", "-c", "echo ready; exec cat" })
  t.wait_for(function() return run.out:find("ready\n", 1, true) or run.exited end, 30000, "the agent's ready") -- (a bound, not a wait: a loaded machine starts it late)
  t.ok(not run.exited, "sandbox-net runs: " .. run.err)
  return run
end

-- Ends a run whose agent copies stdin (close its stdin) and returns its exit code.
local function finish(t, run)
  run.p.stdin:shutdown()
  t.wait_for(function() return run.exited end, 10000, "sandbox-net's exit")
  return run.code
end

test("the handshake lines: CONNECT host:port, OK, NO why; host:port forms", function(t)
  t.eq({ connect_line.parse_request("CONNECT Api.Example.COM.:443") }, { "api.example.com", 443 })
  t.eq({ connect_line.parse_request("CONNECT [::1]:8080\r") }, { "::1", 8080 })
  t.eq(connect_line.request("::1", 80), "CONNECT [::1]:80\n")
  t.eq(connect_line.request("127.0.0.1", 80), "CONNECT 127.0.0.1:80\n")
  for _, bad in ipairs({ "CONNECT host", "CONNECT host:0", "CONNECT host:65536", "CONNECT ::1:80", "GET host:80",
                         "CONNECT a b:1", "CONNECT h$st:80", "CONNECT :80" }) do
    t.eq(connect_line.parse_request(bad), nil, bad)
  end
  t.eq({ connect_line.parse_answer("OK") }, { true })
  t.eq({ connect_line.parse_answer("NO not on the list") }, { false, "not on the list" })
  t.eq(connect_line.no("two\nlines"), "NO two lines\n")
end)

test("the proxy's request heads: CONNECT, absolute-form in origin form, what is refused", function(t)
  t.eq(http_proxy.parse("CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443"),
    { connect = true, host = "api.example.com", port = 443 })
  local req = http_proxy.parse("POST http://h.example:8080/v1/x?q=1#frag HTTP/1.1\r\nHost: h.example:8080\r\n"
    .. "Proxy-Connection: keep-alive\r\nConnection: keep-alive\r\nProxy-Authorization: Basic eA==\r\n"
    .. "Content-Length: 2")
  t.eq(req.host, "h.example")
  t.eq(req.port, 8080)
  t.eq(req.head, "POST /v1/x?q=1 HTTP/1.1\r\nHost: h.example:8080\r\nContent-Length: 2\r\nConnection: close\r\n\r\n")
  req = http_proxy.parse("GET http://h.example HTTP/1.0")
  t.eq({ req.port, req.head }, { 80, "GET / HTTP/1.0\r\nHost: h.example\r\nConnection: close\r\n\r\n" })
  for _, bad in ipairs({ "GET /x HTTP/1.1", "GET https://h/ HTTP/1.1", "GET http://u:p@h/ HTTP/1.1",
                         "CONNECT h HTTP/1.1", "nonsense" }) do
    local r, status = http_proxy.parse(bad)
    t.eq({ r, status }, { nil, 400 }, bad)
  end
end)

test("forward: a connection on the forward's port reaches its target through the gate, both ways", function(t)
  local dir = t.tmpdir("rmcp-netgate")
  local g, lines = open_gate(t, dir)
  local target, port = echo_target(t), free_port()
  local run = started(t, { "--sock", dir .. "/net.sock", "--forward", port .. "=127.0.0.1:" .. target })
  local c = dial(t, port)
  c.tcp:write("hello")
  t.wait_for(function() return c.len >= 5 end, 5000, "the echo")
  t.eq(c.text(), "hello")
  t.eq(g:connections(), 1)
  t.match(table.concat(lines), "net rx%-test: 127%.0%.0%.1:" .. target .. " allowed")
  c.close()
  t.wait_for(function() return g:connections() == 0 end, 5000, "the link's end")
  t.eq(finish(t, run), 0)
  t.eq(run.out, "ready\n")
end)

test("proxy: CONNECT is answered 200 and relayed; an absolute-form request goes in origin form", function(t)
  local dir = t.tmpdir("rmcp-netgate")
  open_gate(t, dir)
  local echo, heads = echo_target(t), {}
  local web = serve(t, function(c)
    local got = ""
    c:read_start(function(_, data)
      if not data then return end
      got = got .. data
      if got:find("\r\n\r\nhi$") then
        heads[#heads + 1] = got
        c:write("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nthere", function() c:close() end)
      end
    end)
  end)
  local port = free_port()
  local run = started(t, { "--sock", dir .. "/net.sock", "--proxy", tostring(port) })

  local c = dial(t, port)
  c.tcp:write("CONNECT 127.0.0.1:" .. echo .. " HTTP/1.1\r\nHost: 127.0.0.1:" .. echo .. "\r\n\r\nearly")
  t.wait_for(function() return c.len >= #http_proxy.ESTABLISHED + 5 end, 5000, "200 and the echo")
  t.eq(c.text(), http_proxy.ESTABLISHED .. "early", "the bytes sent after the head went through too")
  c.tcp:write(" late")
  t.wait_for(function() return c.len >= #http_proxy.ESTABLISHED + 10 end, 5000, "the second echo")

  local h = dial(t, port)
  h.tcp:write("POST http://127.0.0.1:" .. web .. "/v1/chat?x=1 HTTP/1.1\r\nHost: 127.0.0.1:" .. web
    .. "\r\nProxy-Connection: keep-alive\r\nContent-Length: 2\r\n\r\nhi")
  t.wait_for(function() return h.eof end, 5000, "the answer and the close")
  t.match(h.text(), "^HTTP/1%.1 200 OK\r\n.*\r\n\r\nthere$")
  t.eq(heads[1], "POST /v1/chat?x=1 HTTP/1.1\r\nHost: 127.0.0.1:" .. web .. "\r\nContent-Length: 2\r\n"
    .. "Connection: close\r\n\r\nhi")
  t.eq(finish(t, run), 0)
  t.eq(run.out, "ready\n")
end)

test("a refused target: the gate answers NO with allow's reason, the proxy 403 with it, a forward closes", function(t)
  local dir = t.tmpdir("rmcp-netgate")
  local g, lines = open_gate(t, dir, 9)
  local echo, port, fport = echo_target(t), free_port(), free_port()
  local run = started(t, { "--sock", dir .. "/net.sock", "--proxy", tostring(port),
                           "--forward", fport .. "=127.0.0.1:9" })
  local direct = dial_gate(t, dir .. "/net.sock")
  direct.tcp:write("CONNECT 127.0.0.1:9\n")
  t.wait_for(function() return direct.eof end, 5000, "NO and the close")
  t.eq(direct.text(), "NO not on rx-test's list\n")
  t.match(table.concat(lines), "net rx%-test: 127%.0%.0%.1:9 refused: not on rx%-test's list")

  local c = dial(t, port)
  c.tcp:write("CONNECT 127.0.0.1:9 HTTP/1.1\r\n\r\n")
  t.wait_for(function() return c.eof end, 5000, "403 and the close")
  t.eq(c.text(), http_proxy.response(403, "not on rx-test's list"))
  local a = dial(t, port)
  a.tcp:write("GET http://blocked.invalid/ HTTP/1.1\r\nHost: blocked.invalid\r\nContent-Length: 3\r\n\r\nabc")
  t.wait_for(function() return a.eof end, 5000, "403 and the close")
  t.match(a.text(), "^HTTP/1%.1 403 Forbidden\r\n.*not on rx%-test's list\n$")
  local f = dial(t, fport)
  t.wait_for(function() return f.eof or f.err end, 5000, "the forward's close")
  t.eq(f.len, 0)

  local allowed = dial(t, port) -- the same proxy still serves an allowed target
  allowed.tcp:write("CONNECT 127.0.0.1:" .. echo .. " HTTP/1.1\r\n\r\n")
  t.wait_for(function() return allowed.len >= #http_proxy.ESTABLISHED end, 5000, "200")
  t.eq(allowed.text(), http_proxy.ESTABLISHED)
  allowed.close()
  t.wait_for(function() return g:connections() == 0 end, 5000, "every link's end")
  t.eq(finish(t, run), 0)
  t.eq(run.out, "ready\n", "sandbox-net's log lines went to stderr, never to the agent's stdout")
  t.match(run.err, "proxy 127%.0%.0%.1:9: not on rx%-test's list")
end)

test("the gate refuses a bad request, a line too long, silence, no such name, a dead port, one over the cap", function(t)
  local dir = t.tmpdir("rmcp-netgate")
  local g = open_gate(t, dir)
  local saved = netgate.REQUEST_MS
  netgate.REQUEST_MS = 200
  t.defer(function() netgate.REQUEST_MS = saved end)
  local cases = {
    { "GET / HTTP/1.1\n", "^NO expected CONNECT host:port\n$" },
    { "CONNECT 127.0.0.1:0\n", "^NO port out of range" },
    { string.rep("x", 2000), "^NO no request: no end of its head within 1024 bytes\n$" },
    { "CONNECT 127.0.0.1:1", "^NO no request: nothing complete within 200 ms\n$" },
    { "CONNECT nowhere..invalid:80\n", "^NO cannot resolve nowhere%.%.invalid: " },
    { "CONNECT 127.0.0.1:" .. free_port() .. "\n", "^NO connect failed: ECONNREFUSED" },
  }
  for _, case in ipairs(cases) do
    local c = dial_gate(t, dir .. "/net.sock")
    c.tcp:write(case[1])
    t.wait_for(function() return c.eof or c.err end, 10000, "the answer to " .. case[1]:sub(1, 40))
    t.match(c.text(), case[2], case[1]:sub(1, 40))
  end
  t.wait_for(function() return g:connections() == 0 end, 5000, "every link's end")
  local max = netgate.MAX_LINKS
  netgate.MAX_LINKS = 2
  t.defer(function() netgate.MAX_LINKS = max end)
  local quiet = { dial_gate(t, dir .. "/net.sock"), dial_gate(t, dir .. "/net.sock") }
  t.wait_for(function() return g:connections() == 2 end, 5000, "two links waiting for their request")
  local third = dial_gate(t, dir .. "/net.sock")
  t.wait_for(function() return third.eof end, 5000, "the third one refused")
  t.eq(third.text(), "NO too many connections at once\n")
  t.eq({ quiet[1].len, quiet[2].len, g:connections() }, { 0, 0, 2 })
end)

-- Lines of 16 bytes, each its own offset: a lost, doubled or misplaced chunk shows.
local function pattern(n, tag)
  local parts = {}
  for i = 0, n // 16 - 1 do parts[#parts + 1] = string.format("%s%14d\n", tag, i * 16) end
  return table.concat(parts)
end

test("16 MiB each way through a forward with a slow reader: the target is held back, nothing is lost", function(t)
  local dir = t.tmpdir("rmcp-netgate")
  open_gate(t, dir)
  local N = 16 * 1024 * 1024
  local down, up = pattern(N, "d"), pattern(N, "u")
  local target
  local tport = serve(t, function(c)
    target = wrap(c)
    c:send_buffer_size(64 * 1024) -- (loopback buffers grow to MiBs: keep the ends' small)
    c:write(down, function() c:shutdown() end)
  end)
  local port = free_port()
  local run = started(t, { "--sock", dir .. "/net.sock", "--forward", port .. "=127.0.0.1:" .. tport })
  local c = dial(t, port)
  c.tcp:read_stop()
  c.tcp:recv_buffer_size(64 * 1024)
  c.tcp:write(up, function() c.tcp:shutdown() end)
  t.wait_for(function() return target and target.len == N end, 20000, "the target read all the client sent")
  local held, was = target.tcp:get_write_queue_size(), -1
  while held ~= was do -- until the kernel buffers on the way are full
    t.sleep(300)
    was, held = held, target.tcp:get_write_queue_size()
  end
  t.ok(held > 0 and c.len == 0, "the target's writes are held back while the client reads nothing: " .. held
    .. " of " .. N .. " bytes still queued, " .. (N - held) .. " in kernel buffers on the way")
  local gap = uv.new_timer() -- a slow reader: one chunk, then a pause
  t.defer(function() if not gap:is_closing() then gap:close() end end)
  local function slow()
    c.tcp:read_start(function(err, data)
      if data then
        c.parts[#c.parts + 1] = data; c.len = c.len + #data
        c.tcp:read_stop()
        gap:start(1, 0, slow)
      else c.eof, c.err = true, err end
    end)
  end
  slow()
  t.wait_for(function() return c.eof end, 60000, "all of it and the EOF at the slow reader")
  t.ok(c.text() == down, "the client read the target's bytes in order (" .. c.len .. " of " .. N .. ")")
  t.ok(target.text() == up, "the target read the client's bytes in order")
  t.wait_for(function() return target.eof end, 5000, "the client's EOF at the target")
  t.eq(finish(t, run), 0)
end, { timeout = 120000 })

test("half-close: the client's EOF reaches the target, which still answers; then the client sees EOF", function(t)
  local dir = t.tmpdir("rmcp-netgate")
  open_gate(t, dir)
  local echo, port, pport = echo_target(t), free_port(), free_port()
  local run = started(t, { "--sock", dir .. "/net.sock", "--forward", port .. "=127.0.0.1:" .. echo,
                           "--proxy", tostring(pport) })
  local c = dial(t, port)
  c.tcp:write("abc")
  c.tcp:shutdown()
  t.wait_for(function() return c.eof end, 5000, "the target's answer and EOF")
  t.eq(c.text(), "abcgot 3 bytes")
  local p = dial(t, pport)
  p.tcp:write("CONNECT 127.0.0.1:" .. echo .. " HTTP/1.1\r\n\r\nxy")
  p.tcp:shutdown()
  t.wait_for(function() return p.eof end, 5000, "the target's answer and EOF through the proxy")
  t.eq(p.text(), http_proxy.ESTABLISHED .. "xygot 2 bytes")
  t.eq(finish(t, run), 0)
end)

test("the gate closed while connections run: both ends see the close, the socket goes, new ones fail", function(t)
  local dir = t.tmpdir("rmcp-netgate")
  local g = open_gate(t, dir)
  local ends = 0
  local tport = serve(t, function(c)
    c:read_start(function(_, data)
      if data then return c:write(data) end
      ends = ends + 1
      c:close()
    end)
  end)
  local port = free_port()
  local run = started(t, { "--sock", dir .. "/net.sock", "--forward", port .. "=127.0.0.1:" .. tport })
  local a, b = dial(t, port), dial(t, port)
  a.tcp:write("1"); b.tcp:write("2")
  t.wait_for(function() return a.len == 1 and b.len == 1 end, 5000, "both links relaying")
  local waiting = dial_gate(t, dir .. "/net.sock") -- one still to send its request
  t.wait_for(function() return g:connections() == 3 end, 5000, "three links")
  g:close()
  t.eq(g:connections(), 0)
  t.wait_for(function() return (a.eof or a.err) and (b.eof or b.err) and (waiting.eof or waiting.err) end, 5000,
    "the clients' close")
  t.wait_for(function() return ends == 2 end, 5000, "the target's close")
  t.eq(uv.fs_stat(dir .. "/net.sock"), nil, "the socket file is gone")
  local late = dial(t, port)
  t.wait_for(function() return late.eof or late.err end, 5000, "a new connection closed")
  t.eq(finish(t, run), 0)
  t.match(run.err, "the network gate is not reachable")
end)

test("the agent's exit code and signals are passed on; its stdin and stdout are untouched", function(t)
  local dir = t.tmpdir("rmcp-netgate")
  open_gate(t, dir)
  local sockp = dir .. "/net.sock"
  local run = started(t, { "--sock", sockp })
  run.p.stdin:write(string.rep("\0\255{\"jsonrpc\":\"2.0\"}\r\n", 1000))
  t.wait_for(function() return #run.out == 6 + 21 * 1000 end, 5000, "the copy on stdout")
  t.ok(run.out == "ready\n" .. string.rep("\0\255{\"jsonrpc\":\"2.0\"}\r\n", 1000), "stdin to stdout, byte for byte")
  t.eq(finish(t, run), 0)

  local seven = sandbox_net(t, { "--sock", sockp }, { "sh", "-c", "exit 7" })
  t.wait_for(function() return seven.exited end, 10000, "exit 7")
  t.eq({ seven.code, seven.out }, { 7, "" })

  local killed = sandbox_net(t, { "--sock", sockp }, { "/bin/sh", "-c", "kill -KILL $$" })
  t.wait_for(function() return killed.exited end, 10000, "the agent killed")
  t.eq({ killed.code, killed.sig }, { 137, 0 }, "128 + the agent's signal, as bwrap reports it")

  local term = sandbox_net(t, { "--sock", sockp },
    { "/bin/sh", "-c", "trap 'echo term; exit 3' TERM; echo ready; while :; do sleep 0.05; done" })
  t.wait_for(function() return term.out == "ready\n" end, 10000, "ready")
  term.p:kill("TERM")
  t.wait_for(function() return term.exited end, 10000, "the agent's exit on TERM")
  t.eq({ term.code, term.out }, { 3, "ready\nterm\n" })
end)

test("sandbox-net: bad arguments, a missing agent, a port in use; no settings file and no chunk cache", function(t)
  local dir = t.tmpdir("rmcp-netgate")
  local bad = sandbox_net(t, { "--forward", "80=nohost" }, { "true" })
  t.wait_for(function() return bad.exited end, 10000, "exit")
  t.eq({ bad.code, bad.out }, { 2, "" })
  t.match(bad.err, "%-%-forward takes PORT=HOST:PORT")
  local missing = sandbox_net(t, { "--sock", dir .. "/net.sock" }, { "/no/such/agent" })
  t.wait_for(function() return missing.exited end, 10000, "exit")
  t.eq({ missing.code, missing.out }, { 127, "" })
  local taken = uv.new_tcp()
  assert(taken:bind("127.0.0.1", 0)); assert(taken:listen(1, function() end))
  t.defer(function() taken:close() end)
  local busy = sandbox_net(t, { "--sock", dir .. "/net.sock", "--proxy", tostring(taken:getsockname().port) },
    { "true" })
  t.wait_for(function() return busy.exited end, 10000, "exit")
  t.eq(busy.code, 1)
  t.match(busy.err, "cannot listen on 127%.0%.0%.1:%d+: EADDRINUSE")

  local home, rhome = dir .. "/home", dir .. "/rmcp-home"
  assert(os.execute("mkdir -p " .. home .. "/.config/reasonix-mcp"))
  local f = assert(io.open(home .. "/.config/reasonix-mcp/env", "w"))
  f:write("REASONIX_MCP_FROM_FILE=yes\n")
  f:close()
  local env = { "HOME=" .. home, "REASONIX_MCP_HOME=" .. rhome, "PATH=" .. os.getenv("PATH"),
                "RMCP_TEST_RUN=" .. os.getenv("RMCP_TEST_RUN") }
  local envrun = sandbox_net(t, { "--sock", dir .. "/net.sock" },
    { "sh", "-c", "echo ${REASONIX_MCP_FROM_FILE:-unset}" }, env)
  t.wait_for(function() return envrun.exited end, 10000, "exit")
  t.eq({ envrun.code, envrun.out }, { 0, "unset\n" }, "the agent's environment as it was given")
  t.eq(uv.fs_stat(rhome), nil, "nothing written under REASONIX_MCP_HOME (no compiled-chunk cache)")
end)
