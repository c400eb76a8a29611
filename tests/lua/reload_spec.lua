-- Hot reload (lib/reload.lua) and user policies (policy/hooks.lua, policy/api.lua) in process, without
-- agents: build-and-swap keeps module identity, a broken change keeps the old version and is reported
-- once with file:line, a change set swaps as one unit, policies load in order into a narrow
-- environment, hooks chain and fall back, and the examples' hooks decide as their comments say.
local uv = require "luv"
local reload = require "rmcp.lib.reload"
local loader = require "rmcp.policy.loader"
local hooks = require "rmcp.policy.hooks"
local log = require "rmcp.lib.log"

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local EXAMPLES = here .. "../../examples/"

-- Writes text to path through a rename (a new inode: a change is seen even within one clock tick).
local function write(path, text)
  local tmp = path .. ".tmp"
  local f = assert(io.open(tmp, "w"))
  f:write(text)
  f:close()
  assert(os.rename(tmp, path))
end

-- Copies an example file into dir.
local function copy_example(name, dir)
  local f = assert(io.open(EXAMPLES .. name))
  write(dir .. "/" .. name, f:read("a"))
  f:close()
end

-- A private module tree (rtest.*) and policy dir, with reload started on them; undone after the case.
local function setup(t)
  local root = t.tmpdir("rmcp-reload")
  assert(uv.fs_mkdir(root .. "/rtest", 448))
  assert(uv.fs_mkdir(root .. "/policy", 448))
  local saved_path = package.path
  package.path = root .. "/?.lua;" .. package.path
  local logs = {}
  log.set_sink(function(line) logs[#logs + 1] = line end)
  t.defer(function()
    log.set_sink(function(line) io.stderr:write(line) end)
    reload.stop()
    package.path = saved_path
    for name in pairs(package.loaded) do
      if type(name) == "string" and name:match("^rtest%.") then package.loaded[name] = nil end
    end
  end)
  local ctx = { root = root, policy = root .. "/policy", logs = logs }
  -- The log lines so far, joined.
  function ctx.log() return table.concat(logs) end
  function ctx.start(opts)
    opts = opts or {}
    reload.init{ role = "test", prefixes = { "rtest." }, on_swap = opts.on_swap }
    loader.init{ role = "test", dirs = { ctx.policy } }
  end
  function ctx.module(name, text) write(root .. "/rtest/" .. name .. ".lua", text) end
  function ctx.policy_file(name, text) write(ctx.policy .. "/" .. name, text) end
  -- The pending warnings, joined.
  function ctx.warnings() return table.concat(reload.take_warnings(), "\n") end
  return ctx
end

local MOD_B = [[
local M = {}
function M.value() return %d end
return M
]]
local MOD_A = [[
local b = require "rtest.b"
local M = {}
M.version = %d
function M.value() return b.value() * 10 + M.version end
return M
]]

test("a changed module swaps in place; modules that hold it see the new code", function(t)
  local ctx = setup(t)
  ctx.module("b", MOD_B:format(1))
  ctx.module("a", MOD_A:format(1))
  ctx.start()
  local a = require "rtest.a"
  local b = require "rtest.b"
  t.eq(a.value(), 11)
  t.eq(reload.check(), false, "nothing changed")
  local gen = reload.generation()
  ctx.module("b", MOD_B:format(2))
  t.eq(reload.check(), true)
  t.eq(reload.generation(), gen + 1)
  t.ok(require("rtest.b") == b, "the module table keeps its identity")
  t.eq(b.value(), 2)
  t.eq(a.value(), 21, "a (not reloaded) calls the new b through the live table")
  ctx.module("a", MOD_A:format(5))
  t.eq(reload.check(), true)
  t.eq(a.value(), 25)
  ctx.module("b", MOD_B:format(3))
  reload.check()
  t.eq(a.value(), 35, "a reloaded earlier still follows later reloads of b")
  t.eq(ctx.warnings(), "")
end)

test("a syntax or load error keeps the old version and is reported once with file:line", function(t)
  local ctx = setup(t)
  ctx.module("b", MOD_B:format(1))
  ctx.start()
  local b = require "rtest.b"
  ctx.module("b", "local M = {}\nfunction M.value( return 2 end\nreturn M\n")
  t.eq(reload.check(), false)
  t.eq(b.value(), 1, "old version keeps running")
  local w = ctx.warnings()
  t.match(w, "rtest/b%.lua:2:", "the warning names file:line")
  t.match(w, "previous version keeps running")
  t.match(ctx.log(), "error: reload failed, previous version kept: [^\n]*rtest/b%.lua:2:", "logged with file:line")
  reload.check()
  t.eq(ctx.warnings(), "", "reported once")
  ctx.module("b", "local M = {}\nM.x = nil .. 1\nreturn M\n")
  t.eq(reload.check(), false)
  t.match(ctx.warnings(), "rtest/b%.lua:2: attempt to concatenate")
  t.eq(b.value(), 1)
  ctx.module("b", "return 42\n")
  reload.check()
  t.match(ctx.warnings(), "must return a table")
  ctx.module("b", "local M = {}\nfunction M.value() return 7 end\nfunction M.selfcheck() return M.value() == 8, 'value is not 8' end\nreturn M\n")
  reload.check()
  t.match(ctx.warnings(), "selfcheck failed: value is not 8")
  t.eq(b.value(), 1)
  ctx.module("b", MOD_B:format(9))
  t.eq(reload.check(), true)
  t.eq(b.value(), 9, "a fixed file is picked up")
end)

test("changes swap as one unit: a broken module rolls back a good one changed with it", function(t)
  local ctx = setup(t)
  ctx.module("b", MOD_B:format(1))
  ctx.module("a", MOD_A:format(1))
  ctx.start()
  local a, b = require "rtest.a", require "rtest.b"
  ctx.module("b", MOD_B:format(2))
  ctx.module("a", "local b = require 'rtest.b'\nerror('a is broken')\n")
  t.eq(reload.check(), false)
  t.eq(b.value(), 1, "b's new version was rolled back")
  t.eq(a.value(), 11)
  t.match(ctx.warnings(), "rtest/a%.lua:2: a is broken")
  ctx.module("a", MOD_A:format(3))
  t.eq(reload.check(), true)
  t.eq(a.value(), 23, "fixing a brings in both")
end)

test("policies load in name order into a narrow environment; hooks chain and fall back", function(t)
  local ctx = setup(t)
  ctx.policy_file("20-second.lua", [[
return { caps = function(name, value) if name == "max_watch_message" then return value // 2 end end }
]])
  ctx.policy_file("10-first.lua", [[
local seen = { io = io ~= nil, require = require ~= nil, exec = os.execute ~= nil, debug = debug ~= nil,
               load = load ~= nil, string = string.format ~= nil, rmcp = rmcp.policy.file }
return {
  _seen = seen,
  caps = { max_watch_message = 100, max_events = 3 },
  permission = function(req) if req.tool_kind == "read" then return "approve", "reads are fine" end end,
}
]])
  write(ctx.policy .. "/notes.txt", "not a policy")
  ctx.start()
  local list = loader.policies()
  t.eq(#list, 2)
  t.eq(list[1].file, "10-first.lua")
  t.eq(list[2].file, "20-second.lua")
  t.eq(list[1].hooks._seen, { io = false, require = false, exec = false, debug = false, load = false,
                              string = true, rmcp = "10-first.lua" })
  t.eq(hooks.limit("max_watch_message", 4000), 50, "first sets 100, second halves it")
  t.eq(hooks.limit("max_events", 50), 3)
  t.eq(hooks.limit("max_line", 7), 7, "only poll/watch caps are policy-controlled")
  local s = { id = "rx-1", cwd = "/w", status = "running" }
  local options = { { optionId = "allow_once", kind = "allow_once" }, { optionId = "reject_once", kind = "reject_once" } }
  local d = hooks.permission(s, { request_id = 1, kind = "permission", options = options },
    { title = "read_file a", kind = "read", rawInput = { path = "a" } })
  t.eq(d, { verdict = "approve", option_id = "allow_once", reason = "reads are fine", policy = "10-first.lua" })
  t.eq(hooks.permission(s, { request_id = 2, kind = "permission", options = options }, { title = "bash x", kind = "execute" }), nil)
  t.eq(ctx.warnings(), "")
end)

test("a broken policy keeps its previous version; a hook error falls back to the default", function(t)
  local ctx = setup(t)
  ctx.policy_file("caps.lua", "return { caps = { max_watch_message = 100 } }\n")
  ctx.start()
  t.eq(hooks.limit("max_watch_message", 4000), 100)
  ctx.policy_file("caps.lua", "return { caps = { max_watch_message = 200 }\n")
  t.eq(reload.check(), false)
  t.eq(hooks.limit("max_watch_message", 4000), 100, "old version kept")
  t.match(ctx.warnings(), "previous version keeps running: .*policy/caps%.lua:2:")
  ctx.policy_file("caps.lua", "return {\n  caps = { max_watch_message = 300 },\n  selfcheck = function() return nil + 1 end,\n}\n")
  t.eq(reload.check(), false)
  t.match(ctx.warnings(), "policy/caps%.lua:3: attempt to perform arithmetic")
  t.eq(hooks.limit("max_watch_message", 4000), 100)
  ctx.policy_file("caps.lua", "return { cpas = {} }\n")
  reload.check()
  t.match(ctx.warnings(), "unknown hook 'cpas'")
  ctx.policy_file("caps.lua", "return { caps = function(name) if name == 'max_events' then error('oops') end end }\n")
  t.eq(reload.check(), true)
  t.eq(hooks.limit("max_watch_message", 4000), 4000)
  t.eq(hooks.limit("max_events", 50), 50, "an error in a hook keeps the default")
  t.eq(hooks.limit("max_events", 50), 50)
  local w = reload.take_warnings()
  t.eq(#w, 1, "a failing hook is reported once")
  t.match(w[1], "policy/caps%.lua:1: oops")
  os.remove(ctx.policy .. "/caps.lua")
  t.eq(reload.check(), true)
  t.eq(#loader.policies(), 0, "a removed policy is gone")
end)

test("the caps a poll is shaped with follow a policy edit, the environment and a caps function at once", function(t)
  local poll = require "rmcp.rules.poll"
  local with_env = require("testing").with_env
  local ctx = setup(t)
  ctx.policy_file("caps.lua", "return { caps = { max_watch_message = 100 } }\n")
  ctx.start()
  -- The message of a plain poll of a session that said 1000 bytes (its length: the cap in force).
  local function message_bytes()
    local r = poll.shape({ session_id = "rx-1", status = "idle", text = string.rep("x", 1000) }, assert(poll.options({})))
    return #r.message:gsub("\n%[… %d+ bytes cut …%]\n", "")
  end
  t.eq(message_bytes(), 100)
  t.eq(message_bytes(), 100, "asked again: the same")
  ctx.policy_file("caps.lua", "return { caps = { max_watch_message = 200 } }\n")
  t.eq(reload.check(), true)
  t.eq(message_bytes(), 200, "a policy edit applies to the next poll")
  t.eq(hooks.limit("max_events", 50), 50, "a cap the table leaves out: the configured value")
  with_env({ REASONIX_MCP_MAX_EVENTS = "7" }, function()
    t.eq(assert(poll.options({ detail = true })).max_events, 7, "a new configured value applies at once")
  end)
  t.eq(assert(poll.options({ detail = true })).max_events, 50)
  ctx.policy_file("caps.lua", "local n = 0\nreturn { caps = function(name) if name == 'max_watch_message' then n = n + 1; return 100 * n end end }\n")
  t.eq(reload.check(), true)
  t.eq(message_bytes(), 100)
  t.eq(message_bytes(), 200, "a caps function is asked on every call")
  os.remove(ctx.policy .. "/caps.lua")
  t.eq(reload.check(), true)
  t.eq(message_bytes(), 1000, "no policy: the configured cap (4000) keeps the whole text")
end)

test("a new policy file is found on the next check; a broken new file is reported and skipped", function(t)
  local ctx = setup(t)
  local swaps = 0
  ctx.start({ on_swap = function() swaps = swaps + 1 end })
  t.eq(#loader.policies(), 0)
  ctx.policy_file("bad.lua", "return { tools = { { name = 'x' } } }\n")
  ctx.policy_file("ok.lua", "return { agent_command = function(argv) return { 'wrap', table.unpack(argv) } end }\n")
  t.eq(reload.check(), true)
  t.eq(swaps, 1)
  t.eq(#loader.policies(), 1)
  t.match(ctx.warnings(), "bad%.lua not loaded: .*tools%[1%]: tool x: description")
  t.eq(hooks.agent_command({ "/bin/reasonix", "acp" }, {}), { "wrap", "/bin/reasonix", "acp" })
  ctx.policy_file("open.lua", "return {}\n")
  assert(uv.fs_chmod(ctx.policy .. "/open.lua", tonumber("666", 8)))
  reload.check()
  t.match(ctx.warnings(), "open%.lua not loaded: refused: .*writable by others")
  t.eq(#loader.policies(), 1)
end)

test("spawn_defaults adjusts only what the caller left open; permission may pick a question's answer", function(t)
  local ctx = setup(t)
  ctx.policy_file("spawn.lua", [[
return {
  spawn_defaults = function(opts, info)
    if info.cwd:find("/docs$") then return { model = "mock/cheap", effort = "low", keep_alive = true } end
    if info.cwd:find("/bad$") then return { effort = 3, colour = "red" } end
  end,
  permission = function(req)
    if req.kind == "question" and req.title == "Which library?" then return { option_id = "q1:2" } end
    if req.kind == "question" then return { option_id = "q9:9" } end
  end,
}
]])
  ctx.start()
  local spawn = require "rmcp.rules.spawn"
  local o = assert(spawn.options({ task = "x", effort = "high" }))
  spawn.adjust(o, { cwd = "/w/docs", project_dir = "/w", orchestrator_id = "o" })
  t.eq({ o.model, o.effort, o.keep_alive }, { "mock/cheap", "high", true }, "the explicit effort stays")
  local o2 = assert(spawn.options({ task = "x", keep_alive = false }))
  spawn.adjust(o2, { cwd = "/w/docs" })
  t.eq(o2.keep_alive, false, "an explicit keep_alive stays")
  local o3 = assert(spawn.options({ task = "x" }))
  local effort = o3.effort
  spawn.adjust(o3, { cwd = "/w/bad" })
  t.eq(o3.effort, effort)
  local w = ctx.warnings()
  t.match(w, "effort must be a string")
  t.match(w, "cannot set colour")
  local options = { { optionId = "q1:1", kind = "allow_once" }, { optionId = "q1:2", kind = "allow_once" },
                    { optionId = "q1:cancel", kind = "reject_once" } }
  local s = { id = "rx-2", cwd = ctx.root }
  local d = hooks.permission(s, { request_id = 4, kind = "question", options = options }, { title = "Which library?", kind = "other" })
  t.eq({ d.verdict, d.option_id }, { "select", "q1:2" })
  t.eq(hooks.permission(s, { request_id = 5, kind = "question", options = options }, { title = "Other?", kind = "other" }), nil)
  t.match(ctx.warnings(), "option q9:9, which the request does not offer")
end)

test("tool modules and the tool registry are checked before they swap in", function(t)
  local tools = require "rmcp.tools"
  t.ok(tools.selfcheck())
  local check_tool = require("rmcp.lib.tool_shape").check
  t.ok(not pcall(check_tool, { name = "x", description = "d", inputSchema = { type = "object" } }, "here"))
  t.ok(pcall(check_tool, { name = "x", description = "d", inputSchema = { type = "object" }, handler = print }, "here"))
end)

test("example permissions.lua: approves file access inside cwd, denies destructive commands, passes the rest", function(t)
  local ctx = setup(t)
  copy_example("permissions.lua", ctx.policy)
  ctx.start()
  t.eq(ctx.warnings(), "")
  local ws = ctx.root
  local s = { id = "rx-1", cwd = ws, status = "running" }
  local opts = { { optionId = "allow_once", kind = "allow_once" }, { optionId = "allow_always", kind = "allow_always" },
                 { optionId = "reject_once", kind = "reject_once" } }
  local function ask(tc, kind)
    local d = hooks.permission(s, { request_id = 1, kind = kind or "permission", options = opts }, tc)
    return d and d.verdict, d and d.option_id
  end
  t.eq({ ask({ title = "write_file a.txt", kind = "edit", rawInput = { path = "a.txt" }, locations = { { path = ws .. "/a.txt" } } }) },
       { "approve", "allow_once" })
  t.eq({ ask({ title = "read_file x", kind = "read", rawInput = { path = "sub/../x" } }) }, { "approve", "allow_once" })
  t.eq({ ask({ title = "write_file ../out.txt", kind = "edit", rawInput = { path = "../out.txt" } }) }, {}, "outside cwd: passed on")
  t.eq({ ask({ title = "write_file /etc/x", kind = "edit", locations = { { path = "/etc/x" } } }) }, {})
  for _, cmd in ipairs({ "rm -rf build", "cd x && rm -fr /", "git push --force origin main", "git push -f", "git reset --hard HEAD~3" }) do
    t.eq({ ask({ title = "bash " .. cmd, kind = "execute", rawInput = { command = cmd } }) }, { "deny", "reject_once" }, cmd)
  end
  for _, cmd in ipairs({ "echo hi", "ls -la", "git push origin main", "grep -rf patterns ." }) do
    t.eq({ ask({ title = "bash " .. cmd, kind = "execute", rawInput = { command = cmd } }) }, {}, cmd)
  end
  t.eq({ ask({ title = "Which?", kind = "other", rawInput = {} }, "question") }, {}, "questions go to the orchestrator")
end)

test("examples idle_cleanup, small_caps, agent_wrapper and fanout_tool load and decide as documented", function(t)
  local ctx = setup(t)
  for _, name in ipairs({ "idle_cleanup.lua", "small_caps.lua", "agent_wrapper.lua", "fanout_tool.lua" }) do
    copy_example(name, ctx.policy)
  end
  ctx.start()
  t.eq(ctx.warnings(), "")
  t.eq(#loader.policies(), 4)
  local grace, note = hooks.cleanup({ status = "idle" }, nil)
  t.eq(grace, 600)
  t.match(note, "idle for 10 min")
  t.eq(hooks.cleanup({ status = "idle", keep_alive = true }, nil), nil, "keep_alive: never")
  t.eq(hooks.cleanup({ status = "idle", idle_timeout = 5 }, 5), 5, "an explicit idle_timeout wins")
  t.eq(hooks.limit("max_watch_message", 4000), 600)
  t.eq(hooks.limit("max_events", 50), 8)
  t.eq(hooks.agent_command({ "/x/reasonix", "acp" }, { purpose = "session" }),
       { ctx.policy .. "/agent-wrapper.sh", "/x/reasonix", "acp" })
  local list = hooks.tools()
  t.eq(#list, 1)
  t.eq(list[1].tool.name, "reasonix_fanout")
end)

test("example budgets.lua: prices a model, warns at 80 % of a session's budget, stops a routine's run at 100 %", function(t)
  local ctx = setup(t)
  copy_example("budgets.lua", ctx.policy)
  ctx.start()
  t.eq(ctx.warnings(), "")
  local usage = require "rmcp.rules.usage"
  local p = hooks.price("deepseek/deepseek-chat", usage.price_spec)
  t.eq(p.currency, "USD")
  local cost = usage.cost_at({ input = 1000000, cache_read = 400000, cache_write = 0, output = 100000, reasoning = 0 }, p)
  t.ok(math.abs(cost - (600000 * 0.27 + 400000 * 0.07 + 100000 * 1.10) / 1e6) < 1e-9, "cached input at cache_read")
  t.eq(hooks.price("other/model", usage.price_spec), nil, "no price: the cost stays unknown")
  local s = { id = "s1", budget = { tokens = 1000 } }
  local function decide(sess, tokens)
    local v = usage.verdict(sess.budget, { tokens = tokens }, "session budget")
    return hooks.budget(sess, { total = tokens }, v, usage.ACTIONS)
  end
  s.budget.warn_at = 0 -- (the built-in warning off: what warns is the example)
  t.eq(decide(s, 700).action, "go")
  local v = decide(s, 800)
  t.eq(v.action, "warn")
  t.match(v.note, "80%% of the session's 1000 tokens")
  t.eq(decide(s, 1000).action, "finish", "a session's own: the built-in finish stands")
  local run = { id = "s2", budget = { tokens = 1000, warn_at = 0 }, routine = { id = "rt-1" } }
  v = decide(run, 1000)
  t.eq(v.action, "stop", "a routine's run stops at once")
  t.match(v.note, "routines stop at 100 %%")
end)

test("a policy dir under a home that does not exist yet is watched from the nearest existing dir", function(t)
  local ctx = setup(t)
  local home = ctx.root .. "/home/mcp"
  local policy = home .. "/policy"
  reload.init{ role = "server" }
  loader.init{ role = "server", dirs = { policy } }
  local stats = 0
  local real_stat = uv.fs_stat
  uv.fs_stat = function(...) stats = stats + 1; return real_stat(...) end
  t.defer(function() uv.fs_stat = real_stat end)
  for _ = 1, 5 do reload.check() end
  t.eq(stats, 0, "covered: checks between edits cost no stats even though the home is missing")
  assert(uv.fs_mkdir(ctx.root .. "/home", 448))
  assert(uv.fs_mkdir(home, 448))
  reload.check()
  stats = 0
  -- agentd's log lives in the home: writing it must not make checks stat again
  for i = 1, 5 do
    local f = assert(io.open(home .. "/agentd.log", "a"))
    f:write("line ", i, "\n")
    f:close()
    reload.check()
  end
  t.eq(stats, 0, "log writes in the home are not changes")
  assert(uv.fs_mkdir(policy, 448))
  write(policy .. "/p.lua", "return { name = 'late' }\n")
  reload.check()
  t.eq(#loader.policies(), 1, "the policy in the new dir is loaded on the next check")
  t.eq(loader.policies()[1].name, "late")
end)
