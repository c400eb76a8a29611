-- The sandbox's rules (rules/sandbox.lua: what a spawn may ask, the allowlist, the bubblewrap
-- command line) and what agentd decides when a sandbox cannot be had: the spawn is refused saying
-- why, or with fallback allowed the agent runs unsandboxed and its posture warns; an agent on another
-- machine (a remote profile) is never said to be sandboxed here; a process in another pid namespace
-- may not connect to agentd. The escapes themselves are tests/e2e/sandbox.test.mjs.
-- needs: agent python3 bwrap
local uv = require "luv"
local rules = require "rmcp.rules.sandbox"
local support = require "agentd_support"

test("a sandbox option: a level or {level, read, write, hosts, fallback}, each field checked", function(t)
  t.eq(rules.spec(nil).level, "none")
  t.eq(rules.spec(nil, "workspace").level, "workspace", "the default level")
  local s = rules.spec({ level = "strict", read = { "/a" }, write = { "/b" }, hosts = { "example.org:443" }, fallback = true })
  t.eq({ s.level, s.read[1], s.write[1], s.hosts[1], s.fallback }, { "strict", "/a", "/b", "example.org:443", true })
  t.match(select(2, rules.spec("sealed")), "sandbox level must be none, workspace or strict")
  t.match(select(2, rules.spec({ level = "workspace", hosts = { "x" } })), "hosts limit the network of a strict sandbox only")
  t.match(select(2, rules.spec({ read = { "/x" } })), "need a level")
  t.match(select(2, rules.spec({ level = "workspace", mounts = {} })), "unknown field mounts")
  t.match(select(2, rules.spec({ level = "workspace", write = { 3 } })), "sandbox.write must be a list of strings")
end)

test("the allowlist: hosts with or without a port, providers' base URLs, loopback", function(t)
  local list = { rules.host_entry("api.example.com"), rules.host_entry("127.0.0.1:8080"), rules.host_entry("[::1]:9000") }
  t.ok(rules.allowed(list, "API.example.com", 443), "a host without a port: any port, case aside")
  t.ok(rules.allowed(list, "127.0.0.1", 8080))
  t.ok(not rules.allowed(list, "127.0.0.1", 8081), "another port")
  t.ok(rules.allowed(list, "::1", 9000))
  t.ok(not rules.allowed(list, "evil.example.com", 443))
  t.eq(rules.host_entry("h:70000"), nil)
  t.eq(rules.endpoint_of("http://127.0.0.1:8080/v1"), "127.0.0.1:8080")
  t.eq(rules.endpoint_of("https://user:pw@api.example.com/v1"), "api.example.com:443")
  t.eq(rules.endpoint_of("http://[::1]/x"), "[::1]:80")
  t.ok(rules.is_loopback("127.0.0.2") and rules.is_loopback("localhost") and not rules.is_loopback("10.0.0.1"))
end)

test("the bubblewrap command line: read-only root, hidden roots, the cwd writable, then what stays read-only in it, strict's own network", function(t)
  local plan = { level = "strict", cwd = "/w/tree", hide = { "/tmp", "/home/u" }, home = "/home/u", private_home = "/s/home",
                 files = { { "/home/u/.reasonix/.env", "/home/u/.reasonix/.env" } }, read = { "/home/u/bin/agent" },
                 write = { "/w/out" }, protect = { "/w/tree/.git/config" }, env = { HOME = "/home/u" }, net_dir = "/s/net" }
  local a = table.concat(rules.argv("bwrap", plan, { "agent", "acp" }), " ")
  for _, want in ipairs({ "^bwrap %-%-die%-with%-parent", "%-%-unshare%-pid", "%-%-cap%-drop ALL", "%-%-ro%-bind / /",
                          "%-%-tmpfs /tmp %-%-tmpfs /home/u %-%-bind /s/home /home/u", "%-%-ro%-bind /home/u/bin/agent /home/u/bin/agent",
                          "%-%-bind /w/out /w/out", "%-%-bind /w/tree /w/tree %-%-chdir /w/tree %-%-ro%-bind /home/u/.reasonix/.env /home/u/.reasonix/.env "
                            .. "%-%-ro%-bind /w/tree/.git/config /w/tree/.git/config",
                          "%-%-unshare%-net", "%-%-ro%-bind /s/net /tmp/%.reasonix%-mcp", "%-%-setenv HOME /home/u", "%-%- agent acp$" }) do
    t.match(a, want)
  end
  plan.level = "workspace"
  t.ok(not table.concat(rules.argv("bwrap", plan, { "agent" }), " "):find("unshare-net", 1, true), "workspace keeps the network")
end)

test("an agent's config dir: the dir its home_env names, or that dir's home_dir when it names the home holding it (Gemini CLI)", function(t)
  local reasonix = { home_env = "REASONIX_HOME", home_dir = ".reasonix" }
  t.eq({ rules.config_dir(reasonix, { REASONIX_HOME = "/r" }, "/h") }, { "/r", "/h/.reasonix" })
  t.eq({ rules.config_dir(reasonix, {}, "/h") }, { "/h/.reasonix", "/h/.reasonix" })
  local gemini = { home_env = "GEMINI_CLI_HOME", home_env_is_parent = true, home_dir = ".gemini" }
  t.eq({ rules.config_dir(gemini, { GEMINI_CLI_HOME = "/g" }, "/h") }, { "/g/.gemini", "/h" },
    "its settings read from /g/.gemini; in the sandbox it names the private home, which holds .gemini")
  t.eq({ rules.config_dir(gemini, {}, "/h") }, { "/h/.gemini", "/h" })
  t.eq(rules.config_dir({}, {}, "/h"), nil)
end)

test("a sandbox that cannot be had refuses the spawn, or with fallback runs unsandboxed and says so", function(t)
  local ctx = support.setup(t, { env = { REASONIX_MCP_BWRAP = "/nonexistent/bwrap" } })
  local c = ctx.client()
  local err = ctx.call_err(c, "spawn", { task = "x", sandbox = "workspace" })
  t.eq(err.code, -32021)
  t.match(err.message, "sandbox workspace refused: REASONIX_MCP_BWRAP=/nonexistent/bwrap is not an executable")
  t.match(err.message, "fallback")
  local r = ctx.call(c, "spawn", { task = "x", sandbox = { level = "workspace", fallback = true } })
  t.eq(r.posture.enforced.sandbox, "none")
  t.eq(r.posture.enforced.requested, "workspace")
  t.match(r.posture.warning, "sandbox workspace not applied: REASONIX_MCP_BWRAP")
  ctx.call(c, "stop", { session_id = r.session_id })
  ctx.shutdown()
end)

test("a sandbox refuses a writable dir holding what it hides, and an agent whose HOME is no dir", function(t)
  local ctx = support.setup(t, { env = { REASONIX_MCP_ALLOW_ANY_CWD = "1" } })
  local c = ctx.client()
  local err = ctx.call_err(c, "spawn", { task = "x", sandbox = { level = "workspace", write = { ctx.home.root } } })
  t.eq(err.code, -32021, err.message)
  t.match(err.message, "writable dir " .. uv.fs_realpath(ctx.home.root):gsub("%p", "%%%0") .. " holds .*, which a sandbox hides")
  local env = uv.os_environ()
  env.HOME = ctx.home.root .. "/nowhere"
  err = ctx.call_err(ctx.client("orch-b", nil, { env = env }), "spawn", { task = "x", sandbox = "workspace" })
  t.match(err.message, "the agent's HOME %(.*/nowhere%) is not an existing dir")
  t.eq(#ctx.call(c, "list", {}).sessions, 0, "nothing was started")
  ctx.shutdown()
end)

-- The doctor's report (its stdout) with env added to ours. Coroutine.
local function doctor(t, env)
  local vars = {}
  for k, v in pairs(uv.os_environ()) do vars[#vars + 1] = k .. "=" .. v end
  for k, v in pairs(env) do vars[#vars + 1] = k .. "=" .. v end
  local r = assert(require("rmcp.lib.command").run(require("rmcp.host").exe, { "doctor" }, { env = vars, timeout_ms = 60000 }))
  t.ok(not r.timed_out, "doctor answers")
  return r.stdout
end

test("doctor says whether a sandbox can be had, and fails when a default sandbox cannot", function(t)
  t.match(doctor(t, {}), "%[ok  %] sandbox +bubblewrap %S+ works")
  t.match(doctor(t, { REASONIX_MCP_BWRAP = "/nonexistent/bwrap" }), "%[info%] sandbox +REASONIX_MCP_BWRAP=/nonexistent/bwrap is not an executable")
  t.match(doctor(t, { REASONIX_MCP_BWRAP = "/nonexistent/bwrap", REASONIX_MCP_DEFAULT_SANDBOX = "workspace" }),
    "%[FAIL%] sandbox .*REASONIX_MCP_DEFAULT_SANDBOX=workspace asks it of every spawn")
end)

test("a process in a pid namespace of its own (a sandboxed agent) may not connect to agentd", function(t)
  local ctx = support.setup(t, {})
  local c = ctx.client()
  ctx.call(c, "list", {})
  local out = {}
  local code = t.await(function(done)
    assert(require("rmcp.proc").spawn({ file = "bwrap", args = { "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
      "--unshare-pid", "--", require("rmcp.host").exe, "ctl", "list" }, stdin = "null", stdout = "pipe", stderr = "stdout",
      stdout_mode = "raw", on_stdout = function(chunk) out[#out + 1] = chunk end, on_exit = function(code) done(code) end }))
  end, 20000, "ctl in its own pid namespace")
  t.eq(code, 1)
  t.match(table.concat(out), "agentd refuses a sandboxed agent")
  t.eq(#ctx.call(c, "list", {}).sessions, 0, "agentd goes on for the others")
  ctx.shutdown()
end)

test("a sandboxed agent's private home: its config copied in, kept across a resume, gone with the session; a policy widens the box", function(t)
  local ctx = support.setup(t, {})
  local policy = ctx.mcp_home .. "/policy"
  assert(require("rmcp.lib.files").mkdir_p(policy, tonumber("700", 8)))
  local f = assert(io.open(policy .. "/box.lua", "w"))
  f:write([[return { sandbox = function(box, info)
    return { hosts = { "pkg.example:443" }, write = { info.project_dir .. "/cache" } }
  end }]])
  f:close()
  uv.fs_mkdir(ctx.ws .. "/cache", tonumber("755", 8))
  local c = ctx.client()
  local r = ctx.call(c, "spawn", { task = "x", sandbox = "strict", keep_alive = true })
  local sid = r.session_id
  local function has(list, want)
    for _, v in ipairs(list or {}) do if v == want then return true end end
    return false
  end
  t.ok(has(r.posture.enforced.hosts, "pkg.example:443"), "the policy's host is allowed")
  t.ok(has(r.posture.enforced.writable, uv.fs_realpath(ctx.ws .. "/cache")), "the policy's dir is writable")
  local dir = ctx.mcp_home .. "/sandboxes/" .. sid
  t.ok(uv.fs_stat(dir .. "/home/.reasonix/config.toml"), "the agent's config is copied into its private home")
  ctx.call(c, "stop", { session_id = sid })
  local again = ctx.call(c, "resume", { session_id = sid })
  t.eq(again.posture.enforced.sandbox, "strict", "a resume starts it in the same sandbox")
  t.ok(uv.fs_stat(dir .. "/home"), "its private home is kept across the resume")
  ctx.call(c, "stop", { session_id = sid })
  ctx.call(c, "poll", { session_id = sid })
  t.eq(ctx.call(c, "prune", { keep = 0, force = true }).pruned, { sid })
  t.wait_for(function() return uv.fs_stat(dir) == nil end, 10000, "the sandbox dir to go with the session")
  ctx.shutdown()
end)

-- A fake agent (tests/fake_agent) that lives in dir, which a sandbox shows: its wrapper and script.
local function fake_in(dir)
  local script = dir .. "/fake_acp.lua"
  local src = assert(io.open(support.repo .. "/tests/fake_agent/fake_acp.lua")):read("a")
  assert(io.open(script, "w")):write(src):close()
  local wrapper = dir .. "/fake-agent"
  assert(io.open(wrapper, "w")):write("#!/bin/sh\nexec '", require("rmcp.host").exe, "' script '", script, "' \"$@\"\n"):close()
  uv.fs_chmod(wrapper, tonumber("755", 8))
  return wrapper
end

test("faults in a strict sandbox (the fake agent): a crash closes its gate; an agent deaf to stop dies with its sandbox", function(t)
  local ws = t.tmpdir("rmcp-box-ws")
  local ctx = support.setup(t, { env = { REASONIX_BIN = fake_in(ws), FAKE_ACP_IGNORE_EOF = "1" } })
  local c = ctx.client(nil, ws)
  local mark = "REASONIX_MCP_HOME=" .. ctx.mcp_home
  local r = ctx.call(c, "spawn", { task = "hello", model = "fake/fake-model", sandbox = "strict" })
  t.eq(r.posture.enforced.sandbox, "strict")
  local sock = ctx.mcp_home .. "/sandboxes/" .. r.session_id .. "/net/net.sock"
  t.ok(uv.fs_stat(sock), "its gate listens")
  t.ok(#support.find_procs("fake_acp.lua", mark) > 0, "the fake runs")
  ctx.call(c, "stop", { session_id = r.session_id })
  t.wait_for(function() return #support.find_procs("fake_acp.lua", mark) == 0 end, 10000, "the deaf agent to die with its sandbox")
  t.eq(uv.fs_stat(sock), nil, "its gate is closed")
  local crash = ctx.call(c, "spawn", { task = "[fake:crash] now", model = "fake/fake-model", sandbox = "strict" })
  ctx.watch_until(c, { crash.session_id }, function(_, res) return res.status == "exited" end)
  t.wait_for(function() return uv.fs_stat(ctx.mcp_home .. "/sandboxes/" .. crash.session_id .. "/net/net.sock") == nil end,
    10000, "the crashed agent's gate to close")
  ctx.shutdown()
end)

test("REASONIX_MCP_SANDBOX_READ shows an agent installed under the home, which a sandbox hides otherwise", function(t)
  local ctx = support.setup(t, {})
  local tools = ctx.home.home .. "/tools"
  assert(require("rmcp.lib.files").mkdir_p(tools, tonumber("755", 8)))
  local agent = fake_in(tools)
  local host = require "rmcp.host"
  local ours = host.exe:match("^(.*)/[^/]+$") .. ":" .. (uv.fs_realpath(host.lua_dir) or host.lua_dir)
  local function client_with(read)
    local env = uv.os_environ()
    env.REASONIX_BIN, env.REASONIX_MCP_SANDBOX_READ = agent, read
    return ctx.client("orch-" .. tostring(read ~= nil), nil, { env = env })
  end
  local seen = ctx.call(client_with(tools .. ":" .. ours), "spawn", { task = "hello", model = "fake/fake-model", sandbox = "workspace" })
  t.eq(seen.posture.enforced.sandbox, "workspace", "with the dir shown the agent starts in its sandbox")
  local err = ctx.call_err(client_with(ours), "spawn", { task = "hello", model = "fake/fake-model", sandbox = "workspace" })
  t.match(err.message, "agent process exited")
  ctx.shutdown()
end)

test("sandboxed spawns alike share one posture probe and one read of git; a changed index or git identity is read again", function(t)
  local ws_bin = t.tmpdir("rmcp-box-bin")
  local wrapper = ws_bin .. "/reasonix"
  -- the real agent, noting each `doctor` (the posture probe, run in the sandbox) in its writable cwd
  assert(io.open(wrapper, "w")):write("#!/bin/sh\n[ \"$1\" = doctor ] && echo run >> .doctor-runs\n",
    "exec '", support.bin, "' \"$@\"\n"):close()
  uv.fs_chmod(wrapper, tonumber("755", 8))
  local ctx = support.setup(t, { env = { REASONIX_BIN = wrapper, REASONIX_MCP_SANDBOX_READ = ws_bin .. ":" .. support.repo } })
  local runs = ctx.ws .. "/.doctor-runs"
  local sh = function(cmd) assert(os.execute(cmd), cmd) end
  local q = function(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
  local function identity(name)
    assert(io.open(ctx.home.home .. "/.gitconfig", "w")):write("[user]\n\tname = ", name, "\n\temail = fleet@example.test\n"):close()
  end
  identity("A One")
  sh("cd " .. q(ctx.ws) .. " && git init -q && echo x > f && git add f && git -c user.name=t -c user.email=t@e commit -qm base")
  local c = ctx.client()
  -- the agent's command line as agentd logged it when it started session sid
  local function argv_of(sid)
    local log = assert(require("rmcp.lib.files").read(ctx.mcp_home .. "/agentd.log"))
    return log:match("session " .. sid:gsub("%p", "%%%0") .. ": agent pid %d+ in [^\n]-: ([^\n]*)") or ""
  end
  local function spawn()
    local r = ctx.call(c, "spawn", { task = "x", sandbox = "workspace", keep_alive = true })
    ctx.watch_until(c, { r.session_id }, support.settled)
    return r
  end
  local count = function() return select(2, (require("rmcp.lib.files").read(runs) or ""):gsub("run", "")) end
  local a = spawn()
  t.match(argv_of(a.session_id), "%-%-setenv GIT_AUTHOR_NAME A One", "your identity makes its commits yours")
  t.eq(count(), 1, "its posture was probed")
  local b = spawn()
  t.eq(count(), 1, "a second spawn alike takes the first's posture")
  t.eq(b.posture.bash, a.posture.bash)
  t.eq(b.posture.sandbox, a.posture.sandbox)
  -- a submodule comes into the index, and your identity changes
  sh("cd " .. q(ctx.ws) .. " && git init -q sub && echo y > sub/g && git -C sub add g && "
    .. "git -C sub -c user.name=t -c user.email=t@e commit -qm s && "
    .. "git update-index --add --cacheinfo 160000,$(git -C sub rev-parse HEAD),sub")
  identity("B Two")
  local d = spawn()
  local argv = argv_of(d.session_id)
  local sub = (uv.fs_realpath(ctx.ws) .. "/sub/.git"):gsub("%p", "%%%0")
  t.match(argv, "%-%-ro%-bind " .. sub .. " " .. sub, "the new submodule's .git is read-only to it")
  t.match(argv, "%-%-setenv GIT_AUTHOR_NAME B Two", "your new identity is taken")
  t.ok(not argv_of(a.session_id):find("sub/.git", 1, true), "(the first had no submodule to guard)")
  for _, r in ipairs({ a, b, d }) do ctx.call(c, "stop", { session_id = r.session_id }) end
  ctx.shutdown()
end)
