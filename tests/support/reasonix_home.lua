-- Private homes for the real `reasonix acp` agent, and the mock provider it talks to.
-- The one rig of private homes (tests/e2e/helpers.mjs writes the same config.toml for the Node
-- tests); uses only luv, cjson and the Lua stdlib, and runs
-- under `reasonix-mcp script`. Async calls take a callback, or, when
-- called without one from inside a coroutine, wait and return the results. See README.md here.
--
--   local rh = require "reasonix_home"
--   local prov = assert(rh.start_provider({ scenario = { rules = { { last_role = "user", text = "hi" } } } }))
--   local home = rh.make_home(prov.port)
--   -- spawn rh.find_agent() with args {"acp"}, env = rh.env_list(home.env), cwd = home.workspace
--   home:cleanup(); prov:stop()
local uv = require "luv"
local cjson = require "cjson"
local cjson_safe = require "cjson.safe"

local M = {}

local here = (debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or ".")
M.REPO = uv.fs_realpath(here .. "/../..") or (here .. "/../..")
M.AGENT_VERSION = "v1.38.11"
M.PROVIDER_SCRIPT = M.REPO .. "/tests/provider/mock_provider.py"
M.DEFAULT_MODEL = "mock/mock-model"
M.PRODUCT_DEFAULT_MODEL = "opencode-go/deepseek-v4-flash"
M.API_KEY_ENV = "MOCK_API_KEY"
M.API_KEY_VALUE = "mock-key"

-- Runs start(done) and hands done's results to cb; without cb, waits in the running coroutine.
local function callback_or_wait(cb, start)
  if cb then return start(cb) end
  local co, main = coroutine.running()
  assert(co and not main, "reasonix_home: pass a callback, or call from inside a coroutine")
  local done, results, waiting = false, nil, false
  start(function(...)
    if done then return end
    done, results = true, table.pack(...)
    if waiting then
      local ok, err = coroutine.resume(co)
      if not ok then error(err, 0) end
    end
  end)
  if not done then waiting = true; coroutine.yield() end
  return table.unpack(results, 1, results.n)
end

local function is_executable(path)
  return path and uv.fs_access(path, "X") == true
end

-- Path of the real agent: $REASONIX_BIN, then <repo>/.agent/…, then `reasonix` on PATH.
function M.find_agent()
  local env = os.getenv("REASONIX_BIN")
  if env and env ~= "" then return env end
  local loc = M.REPO .. "/.agent/node_modules/@reasonix/cli-linux-x64/bin/reasonix"
  if is_executable(loc) then return loc end
  for dir in (os.getenv("PATH") or ""):gmatch("[^:]+") do
    if is_executable(dir .. "/reasonix") then return dir .. "/reasonix" end
  end
  return nil, "reasonix agent not found: set REASONIX_BIN or run scripts/install-agent.sh"
end

-- A TOML basic string (cjson would escape '/' as '\/', which TOML rejects).
local function toml_str(s)
  s = tostring(s):gsub('[%c"\\]', function(c)
    if c == '"' then return '\\"' elseif c == "\\" then return "\\\\" end
    return string.format("\\u%04X", c:byte())
  end)
  return '"' .. s .. '"'
end

local function toml_value(v)
  local t = type(v)
  if t == "boolean" or t == "number" then return tostring(v) end
  if t == "table" then
    local out = {}
    for i, x in ipairs(v) do out[i] = toml_value(x) end
    return "[" .. table.concat(out, ", ") .. "]"
  end
  return toml_str(v)
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t or {}) do keys[#keys + 1] = k end
  table.sort(keys)
  return keys
end

-- The config.toml text that points the agent at the mock provider on 127.0.0.1:<port>.
-- opts: model, models, provider, api_key_env, model_overrides = { [model] = { field = value } },
-- declare_product_default (also declare opencode-go/deepseek-v4-flash on the mock), extra_toml.
function M.config_toml(port, opts)
  opts = opts or {}
  local provider = opts.provider or "mock"
  local model = opts.model or M.DEFAULT_MODEL
  local models = opts.models
  if not models then
    models = { "mock-model" }
    local prefix = provider .. "/"
    if model:sub(1, #prefix) == prefix and model:sub(#prefix + 1) ~= "mock-model" then
      models[#models + 1] = model:sub(#prefix + 1)
    end
  end
  local base_url = string.format("http://127.0.0.1:%d/v1", port)
  local key_env = opts.api_key_env or M.API_KEY_ENV
  local lines = {
    "# Written by tests/support/reasonix_home: the agent talks only to the local mock provider.",
    "default_model = " .. toml_str(model),
    "",
    "[telemetry]",
    'cli_metrics = "off"',
    "",
    "[[providers]]",
    "name        = " .. toml_str(provider),
    'kind        = "openai"',
    "base_url    = " .. toml_str(base_url),
    "models      = " .. toml_value(models),
    "default     = " .. toml_str(models[1]),
    "api_key_env = " .. toml_str(key_env),
  }
  for _, name in ipairs(sorted_keys(opts.model_overrides)) do
    lines[#lines + 1] = ""
    lines[#lines + 1] = "[providers.model_overrides." .. toml_str(name) .. "]"
    local fields = opts.model_overrides[name]
    for _, k in ipairs(sorted_keys(fields)) do lines[#lines + 1] = k .. " = " .. toml_value(fields[k]) end
  end
  if opts.declare_product_default then
    for _, l in ipairs({ "", "[[providers]]", 'name        = "opencode-go"', 'kind        = "openai"',
      "base_url    = " .. toml_str(base_url), 'models      = ["deepseek-v4-flash", "deepseek-v4-pro"]',
      'default     = "deepseek-v4-flash"', "api_key_env = " .. toml_str(key_env) }) do
      lines[#lines + 1] = l
    end
  end
  if opts.extra_toml and opts.extra_toml ~= "" then
    lines[#lines + 1] = ""
    lines[#lines + 1] = (opts.extra_toml:gsub("^%s+", ""):gsub("%s+$", ""))
  end
  return table.concat(lines, "\n") .. "\n"
end

-- The environment to give the agent (a map): nothing of the caller's HOME or real keys leaks in.
function M.agent_env(home, rxhome, api_key_env, extra)
  local env = {
    HOME = home,
    REASONIX_HOME = rxhome,
    [api_key_env or M.API_KEY_ENV] = M.API_KEY_VALUE,
    PATH = os.getenv("PATH") or "/usr/local/bin:/usr/bin:/bin",
    REASONIX_LANG = "en",
    LANG = "C.UTF-8",
    TMPDIR = os.getenv("TMPDIR") or "/tmp",
  }
  -- The Lua test runner marks its processes with RMCP_TEST_RUN to find leftovers: keep the mark.
  env.RMCP_TEST_RUN = os.getenv("RMCP_TEST_RUN")
  for k, v in pairs(extra or {}) do env[k] = v end
  return env
end

-- A map as the {"K=V", ...} list uv.spawn takes.
function M.env_list(map)
  local out = {}
  for _, k in ipairs(sorted_keys(map)) do
    if map[k] ~= nil and map[k] ~= false then out[#out + 1] = k .. "=" .. tostring(map[k]) end
  end
  return out
end

-- Removes a directory tree (symlinks are unlinked, never followed).
function M.rmtree(path)
  local st = uv.fs_lstat(path)
  if not st then return end
  if st.type == "directory" then
    local dir = uv.fs_scandir(path)
    while dir do
      local name = uv.fs_scandir_next(dir)
      if not name then break end
      M.rmtree(path .. "/" .. name)
    end
    uv.fs_rmdir(path)
  else
    uv.fs_unlink(path)
  end
end

local function write_file(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

local function tmpdir(prefix)
  return assert(uv.fs_mkdtemp((os.getenv("TMPDIR") or "/tmp") .. "/" .. prefix .. "-XXXXXX"))
end

-- Creates root/{home,rxhome,ws} and rxhome/config.toml for a provider on port.
-- opts: root, keep, api_key_env, extra_env, and the config_toml options.
-- Returns { root, home, rxhome, workspace, config_path, env (map), cleanup = function }.
function M.make_home(port, opts)
  opts = opts or {}
  local root = opts.root or tmpdir("rx-home")
  uv.fs_mkdir(root, tonumber("700", 8))
  for _, d in ipairs({ "home", "rxhome", "ws" }) do uv.fs_mkdir(root .. "/" .. d, tonumber("755", 8)) end
  local h = {
    root = root,
    home = root .. "/home",
    rxhome = root .. "/rxhome",
    workspace = root .. "/ws",
    config_path = root .. "/rxhome/config.toml",
    keep = opts.keep,
  }
  write_file(h.config_path, M.config_toml(port, opts))
  -- The agent reads provider keys only from <REASONIX_HOME>/.env (the environment variable named
  -- by api_key_env is ignored at run time); without this it sends no Authorization header.
  write_file(h.rxhome .. "/.env", (opts.api_key_env or M.API_KEY_ENV) .. "=" .. M.API_KEY_VALUE .. "\n")
  uv.fs_chmod(h.rxhome .. "/.env", tonumber("600", 8))
  h.env = M.agent_env(h.home, h.rxhome, opts.api_key_env, opts.extra_env)
  function h.cleanup()
    if h.keep then return end
    M.rmtree(h.root)
    if uv.fs_lstat(h.root) then M.rmtree(h.root) end  -- a file the agent wrote meanwhile
  end
  return h
end

-- One HTTP/1.1 request to 127.0.0.1:port; cb(status, body_text) or cb(nil, err).
function M.http(port, method, path, body, cb)
  return callback_or_wait(cb, function(done)
    local tcp = uv.new_tcp()
    local chunks = {}
    local function finish(...)
      if not tcp:is_closing() then tcp:close() end
      done(...)
    end
    tcp:connect("127.0.0.1", port, function(err)
      if err then return finish(nil, err) end
      local req = string.format("%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n" ..
        "Content-Length: %d\r\nConnection: close\r\n\r\n%s", method, path, port, body and #body or 0, body or "")
      tcp:write(req)
      tcp:read_start(function(rerr, data)
        if rerr then return finish(nil, rerr) end
        if data then chunks[#chunks + 1] = data; return end
        local resp = table.concat(chunks)
        local status = tonumber(resp:match("^HTTP/%d%.%d (%d+)"))
        local head_end = resp:find("\r\n\r\n", 1, true)
        finish(status, head_end and resp:sub(head_end + 4) or "")
      end)
    end)
  end)
end

-- Provider methods -----------------------------------------------------------------------------
local Provider = {}
Provider.__index = Provider

-- Every chat request so far, from the --log file: { {index, t, path, rule, body}, ... }.
function Provider:requests(since)
  local out = {}
  local f = io.open(self.log_path, "rb")
  if not f then return out end
  for line in f:lines() do
    local e = cjson_safe.decode(line)
    if e and (not since or e.index >= since) then out[#out + 1] = e end
  end
  f:close()
  return out
end

-- The usage the provider reported over the streams it finished (GET /_mock/served); cb(table) or
-- cb(nil, err).
function Provider:served(cb)
  return callback_or_wait(cb, function(done)
    M.http(self.port, "GET", "/_mock/served", nil, function(status, text)
      if status == 200 then done(cjson.decode(text)) else done(nil, "served: " .. tostring(status)) end
    end)
  end)
end

-- Replaces the scenario at run time; cb(true) or cb(nil, err).
function Provider:set_scenario(scenario, cb)
  local body = cjson.encode(scenario)
  return callback_or_wait(cb, function(done)
    M.http(self.port, "POST", "/_mock/scenario", body, function(status, text)
      if status == 200 then done(true) else done(nil, "set_scenario: " .. tostring(status) .. " " .. tostring(text)) end
    end)
  end)
end

-- Ends the provider and waits for its exit; cb(code). Closing its stdin is what ends it: a SIGTERM
-- could hit a wrapper instead (pyenv's python3 shim does not exec) and orphan the real interpreter,
-- so SIGTERM, then SIGKILL, only follow when it is still there after a grace period.
function Provider:stop(cb)
  local function start(done)
    if self.exited then return done(self.exit_code) end
    self.on_exit_waiters[#self.on_exit_waiters + 1] = done
    if not self.stdin:is_closing() then self.stdin:close() end
    if self.stop_timer then return end
    local sig = { "sigterm", "sigkill" }
    self.stop_timer = uv.new_timer()
    self.stop_timer:start(2000, 1000, function()
      local s = table.remove(sig, 1)
      if self.exited or not s then
        self.stop_timer:close()
      elseif self.handle and not self.handle:is_closing() then
        pcall(self.handle.kill, self.handle, s)
      end
    end)
  end
  if not cb and not coroutine.isyieldable() then
    return start(function() end)  -- fire and forget: the loop finishes the job
  end
  return callback_or_wait(cb, start)
end

-- Starts mock_provider.py and waits for its {"port":N} line; cb(provider) or cb(nil, err).
-- opts: scenario (table, or a path), log, workdir, timeout_ms (10000), verbose, python ("python3").
-- The provider reads our pipe as stdin and exits when it closes: it never outlives the test.
function M.start_provider(opts, cb)
  opts = opts or {}
  return callback_or_wait(cb, function(done)
    local own_dir
    local workdir = opts.workdir
    if not workdir then workdir = tmpdir("rx-prov"); own_dir = workdir end
    local scenario_path = opts.scenario
    if type(scenario_path) ~= "string" then
      scenario_path = workdir .. "/scenario.json"
      local s = opts.scenario
      write_file(scenario_path, (s == nil or next(s) == nil) and "{}" or cjson.encode(s))
    end
    local log = opts.log or (workdir .. "/requests.jsonl")
    local args = { M.PROVIDER_SCRIPT, "--port", "0", "--scenario", scenario_path, "--log", log, "--exit-on-stdin-eof" }
    if opts.verbose then args[#args + 1] = "--verbose" end

    local self = setmetatable({ log_path = log, workdir = workdir, on_exit_waiters = {} }, Provider)
    self.stdin, self.stdout = uv.new_pipe(false), uv.new_pipe(false)
    local settled, timer = false, uv.new_timer()
    local function settle(p, err)
      if settled then return end
      settled = true
      if not timer:is_closing() then timer:close() end
      if not self.stdout:is_closing() then self.stdout:read_stop(); self.stdout:close() end
      done(p, err)
    end
    local handle, pid = uv.spawn(opts.python or os.getenv("PYTHON") or "python3",
      { args = args, stdio = { self.stdin, self.stdout, 2 } },
      function(code, signal)
        self.exited, self.exit_code, self.exit_signal = true, code, signal
        if self.stop_timer and not self.stop_timer:is_closing() then self.stop_timer:close() end
        if not self.stdin:is_closing() then self.stdin:close() end
        if self.handle and not self.handle:is_closing() then self.handle:close() end
        if own_dir then M.rmtree(own_dir) end
        settle(nil, string.format("mock provider exited (code %s, signal %s) before reporting its port", code, signal))
        for _, w in ipairs(self.on_exit_waiters) do w(code) end
        self.on_exit_waiters = {}
      end)
    if not handle then
      self.stdin:close(); self.stdout:close(); timer:close()
      if own_dir then M.rmtree(own_dir) end
      return done(nil, "spawn python3: " .. tostring(pid))
    end
    self.handle, self.pid = handle, pid
    timer:start(opts.timeout_ms or 10000, 0, function()
      settle(nil, "mock provider did not report its port in time")
      self:stop()
    end)
    local buf = ""
    self.stdout:read_start(function(err, data)
      if err or not data then return end  -- EOF: the exit callback reports it
      buf = buf .. data
      local line = buf:match("^([^\n]*)\n")
      if line then
        local ready = cjson_safe.decode(line)
        if type(ready) == "table" and ready.port then
          self.port = math.tointeger(ready.port) or ready.port
          self.base_url = "http://127.0.0.1:" .. self.port
          settle(self)
        else
          settle(nil, "mock provider said: " .. line)
          self:stop()
        end
      end
    end)
  end)
end

return M
