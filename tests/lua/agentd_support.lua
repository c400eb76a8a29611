-- Shared setup for the agentd specs: a mock provider, a private agent home and REASONIX_MCP_HOME, the
-- environment an autostarted agentd inherits, clients, and a shutdown that waits for the daemon to go.
local uv = require "luv"
local rh = require "reasonix_home"
local procs = require "procs"
local client = require "rmcp.clients.agentd"

local M = {}

M.bin = rh.find_agent()
M.repo = rh.REPO

-- A watch result that ends a round: idle, or exited (ctx.watch_each's done).
function M.settled(_, r)
  return r.status == "idle" or r.status == "exited"
end

-- A wrapper that runs the fake ACP agent (tests/fake_agent) on our own binary, for scale tests;
-- returns its path (give it as REASONIX_BIN).
function M.fake_agent(t)
  local dir = t.tmpdir("rmcp-fake")
  local wrapper = dir .. "/reasonix"
  local f = assert(io.open(wrapper, "w"))
  f:write("#!/bin/sh\nexec '", require("rmcp.host").exe, "' script ", M.repo, "/tests/fake_agent/fake_acp.lua \"$@\"\n")
  f:close()
  uv.fs_chmod(wrapper, 493)
  return wrapper
end

-- Writes a user policy file named name with text into ctx's policy dir.
function M.write_policy(ctx, name, text)
  local dir = ctx.mcp_home .. "/policy"
  assert(require("rmcp.lib.files").mkdir_p(dir, tonumber("700", 8)))
  local f = assert(io.open(dir .. "/" .. name, "w"))
  f:write(text)
  f:close()
end

-- True while pid exists and is not a zombie.
M.alive = procs.alive

-- Pids of live processes whose command line contains needle and whose environment has env_mark.
function M.find_procs(needle, env_mark)
  local pids = {}
  for _, p in ipairs(procs.find(env_mark, needle)) do pids[#pids + 1] = p.pid end
  return pids
end

-- Sets up one case: provider with scenario, agent home, REASONIX_MCP_HOME, env for the daemon.
-- opts: scenario, home_opts (make_home options), env (extra env). Returns ctx.
function M.setup(t, opts)
  opts = opts or {}
  local prov = assert(rh.start_provider({ scenario = opts.scenario or {} }))
  t.defer(function() prov:stop() end)
  local home = rh.make_home(prov.port, opts.home_opts)
  t.defer(function() home.cleanup() end)
  local mcp_home = home.root .. "/mcp"
  local env = {
    HOME = home.home, REASONIX_HOME = home.rxhome, MOCK_API_KEY = "mock-key", REASONIX_BIN = M.bin,
    REASONIX_MCP_HOME = mcp_home, REASONIX_LANG = "en", REASONIX_MCP_IDLE_TIMEOUT = "",
    REASONIX_MCP_DAEMON_IDLE_EXIT = "",
    REASONIX_MCP_ALLOW_ANY_CWD = "", REASONIX_MCP_ORCHESTRATOR_ID = "",
  }
  for k, v in pairs(opts.env or {}) do env[k] = v end
  -- set for this case only: the next case starts from the environment this one found
  local saved = {}
  for k, v in pairs(env) do
    saved[k] = os.getenv(k) or false
    if v == "" then uv.os_unsetenv(k) else uv.os_setenv(k, v) end
  end
  t.defer(function()
    for k, v in pairs(saved) do
      if v then uv.os_setenv(k, v) else uv.os_unsetenv(k) end
    end
  end)
  local ctx = { t = t, prov = prov, home = home, mcp_home = mcp_home, ws = home.workspace, clients = {} }
  -- Connects a client for orchestrator orch (default "orch-a") rooted at project (default the workspace).
  function ctx.client(orch, project, extra)
    local o = { home = mcp_home, orchestrator_id = orch or "orch-a", project_dir = project or home.workspace,
                client_info = { name = "agentd-spec" } }
    for k, v in pairs(extra or {}) do o[k] = v end
    local c = client.new(o)
    ctx.clients[#ctx.clients + 1] = c
    return c
  end
  -- Calls method and fails the case on an error.
  function ctx.call(c, method, params)
    local r, err = c:call(method, params)
    if not r then t.fail(method .. " failed: " .. tostring(err and err.message) .. " (" .. tostring(err and err.code) .. ")") end
    return r
  end
  -- Calls method and returns the error object (failing when it succeeds).
  function ctx.call_err(c, method, params)
    local r, err = c:call(method, params)
    if r then t.fail(method .. " should have failed, got " .. require("testing").show(r)) end
    return err
  end
  -- Watches ids until a result arrives for sid (or any, when sid is nil); returns that result.
  function ctx.watch_until(c, ids, pred)
    for _ = 1, 20 do
      local r = ctx.call(c, "watch", { session_ids = ids })
      for sid, res in pairs(r.results or {}) do
        if pred(sid, res) then return res, sid end
      end
    end
    t.fail("watch never returned the expected result")
  end
  -- Watches ids until done(sid, result) held for each (at most rounds watches, default 60);
  -- returns the last result of each.
  function ctx.watch_each(c, ids, done, rounds)
    local last, left = {}, {}
    for _, id in ipairs(ids) do left[id] = true end
    for _ = 1, rounds or 60 do
      if next(left) == nil then return last end
      local list = {}
      for id in pairs(left) do list[#list + 1] = id end
      for sid, r in pairs(ctx.call(c, "watch", { session_ids = list }).results or {}) do
        last[sid] = r
        if done(sid, r) then left[sid] = nil end
      end
    end
    if next(left) == nil then return last end
    t.fail("the sessions never reached the state wanted")
  end
  -- Shuts the daemon down (if one runs) and waits until its process is gone; any other agentd of
  -- this home (one still starting, or handing over, when the shutdown went out) gets SIGTERM.
  function ctx.shutdown()
    local c = client.new({ home = mcp_home, orchestrator_id = "teardown", autostart = false })
    local ok = c:wait_connected()
    if ok then
      local pid = c.info.agentd_pid
      c:call("shutdown", {})
      c:close()
      t.wait_for(function() return not M.alive(pid) end, 15000, "agentd to exit")
    else
      c:close()
    end
    t.wait_for(function()
      local left = M.find_procs("agentd", "REASONIX_MCP_HOME=" .. mcp_home)
      for _, pid in ipairs(left) do uv.kill(pid, "sigterm") end
      return #left == 0
    end, 5000, "every agentd of this home to exit")
  end
  t.defer(function()
    for _, c in ipairs(ctx.clients) do c:close() end
    ctx.shutdown()
  end)
  return ctx
end

return M
