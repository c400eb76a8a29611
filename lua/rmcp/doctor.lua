-- `reasonix-mcp doctor`: what a user runs first when something is off — agent binary and version, a
-- provider configured, the runtime dir safe, the daemon up, and the tail of its log.
local uv = require "luv"
local sys = require "rmcp.sys"
local sock = require "rmcp.sock"
local proc = require "rmcp.proc"
local json = require "rmcp.lib.json"
local log = require "rmcp.lib.log"
local async = require "rmcp.lib.async"
local config = require "rmcp.config"
local client = require "rmcp.agentd_client"
local envfile = require "rmcp.envfile"

local M = {}

-- Runs file with args and waits (coroutine); returns stdout text, exit code.
local function run(file, args)
  return async.await(function(resume)
    local out = {}
    local timer = uv.new_timer()
    local p, err = proc.spawn({
      file = file, args = args, stdin = "null", stdout = "pipe", stderr = "null", stdout_mode = "raw",
      env = config.agent_env(),
      on_stdout = function(chunk) out[#out + 1] = chunk end,
      on_exit = function(code)
        if not timer:is_closing() then timer:close() end
        resume(table.concat(out), code)
      end,
    })
    if not p then timer:close(); return resume(nil, err) end
    timer:start(10000, 0, function() timer:close(); p:kill("KILL") end)
  end)
end

-- The variables Codex passes to an MCP server it starts; any other needs `--env NAME=value` when
-- registering (Claude Code passes its whole environment).
M.CODEX_PASSES = { "HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ" }

-- What each host will pass us from this shell: the settings (REASONIX_*) a Codex registration
-- without `--env` loses (the env file's reach every host), and the agent the server would then run. Returns ok (false when Codex
-- would find no agent), detail.
function M.host_env()
  local codex_env = {}
  for _, name in ipairs(M.CODEX_PASSES) do codex_env[name] = config.env(name) end
  local from_file = {}
  for _, name in ipairs(envfile.applied) do from_file[name] = true end
  local lost = {}
  for name in pairs(uv.os_environ()) do
    if name:match("^REASONIX") and not from_file[name] then lost[#lost + 1] = name end
  end
  table.sort(lost)
  local bin, err = config.agent_bin(codex_env)
  local lines = {
    "Claude Code passes its whole environment; Codex passes only " .. table.concat(M.CODEX_PASSES, " "),
    #lost == 0 and "no REASONIX* setting here, nothing to carry"
      or ("under Codex these are lost unless registered with --env NAME=value or put in the settings file: " .. table.concat(lost, " ")),
    "under Codex the agent would be: " .. (bin or err),
    "settings file " .. envfile.path() .. (#envfile.applied > 0 and (" sets " .. table.concat(envfile.applied, " "))
      or " sets nothing (NAME=value lines there reach every host)"),
  }
  return bin ~= nil, table.concat(lines, "\n" .. string.rep(" ", 28))
end

-- Collects the checks: a list of {name, ok, detail} (coroutine).
function M.checks()
  local out = {}
  local function add(name, ok, detail) out[#out + 1] = { name = name, ok = ok, detail = detail } end
  local bin, berr = config.agent_bin()
  if not bin then
    add("agent binary", false, berr)
  else
    local version = run(bin, { "--version" })
    add("agent binary", version ~= nil and version ~= "", bin .. (version and ("  " .. version:gsub("%s+$", "")) or "  (does not run)"))
    local text = run(bin, { "doctor", "--json" })
    local doc = text and json.decode(text)
    if type(doc) ~= "table" then
      add("provider configured", false, "reasonix doctor --json gave no JSON")
    else
      local ready = {}
      for _, p in ipairs(doc.providers or {}) do
        if p.key_present then ready[#ready + 1] = tostring(p.name) end
      end
      local cfg = type(doc.config) == "table" and (doc.config.source_path or doc.config.user_path) or "?"
      add("provider configured", #ready > 0, (#ready > 0 and ("providers with a key: " .. table.concat(ready, ", "))
        or "no configured provider has an API key (run `reasonix setup`, or put the key in $REASONIX_HOME/.env)") .. "; config " .. tostring(cfg))
    end
  end
  add("host environment", M.host_env())
  local paths = config.paths()
  local ok, err = sock.secure_dir(paths.home)
  add("runtime dir", ok == true, ok and (paths.home .. " (0700, ours)") or tostring(err))
  local c = client.new({ autostart = false, client_info = { name = "reasonix-mcp doctor" } })
  local up, cerr = c:wait_connected()
  if up then
    add("agentd", true, string.format("pid %s, version %s, socket %s", tostring(c.info.agentd_pid), tostring(c.info.version), paths.sock))
    local rl = c.info.reload
    if type(rl) == "table" and rl.pending then
      add("agentd reload", nil, string.format("pending (%s), %s; waiting for: %s", tostring(rl.reason), tostring(rl.state),
        #(rl.waiting_for or {}) > 0 and table.concat(rl.waiting_for, "; ") or "nothing"))
    elseif type(rl) == "table" and rl.error then
      add("agentd reload", false, rl.error)
    end
    c:close()
  else
    add("agentd", nil, "not running (it starts on first use): " .. tostring(cerr))
  end
  return out
end

-- Prints the checks and the log tail; exits 0 when nothing failed.
function M.main()
  async.run(function()
    local failed = false
    for _, c in ipairs(M.checks()) do
      local mark = c.ok == true and "ok  " or c.ok == nil and "info" or "FAIL"
      if c.ok == false then failed = true end
      print(string.format("[%s] %-20s %s", mark, c.name, c.detail))
    end
    local lines = log.tail(config.paths().log, 10)
    if lines then
      print("\nagentd.log (last " .. #lines .. " lines):")
      for _, l in ipairs(lines) do print("  " .. l) end
    end
    sys.stop(failed and 1 or 0)
  end, function(e)
    io.stderr:write("doctor: ", tostring(e), "\n")
    sys.stop(1)
  end)
end

return M
