-- `reasonix-mcp doctor`: what a user runs first when something is off — agent binary and version, a
-- provider configured, the agent profile (the command the policies choose: it starts, initializes,
-- and what it offers), the runtime dir safe, the daemon up, and the tail of its log.
local uv = require "luv"
local sys = require "rmcp.sys"
local sock = require "rmcp.sock"
local command = require "rmcp.lib.command"
local json = require "rmcp.lib.json"
local log = require "rmcp.lib.log"
local async = require "rmcp.lib.async"
local config = require "rmcp.config"
local client = require "rmcp.clients.agentd"
local envfile = require "rmcp.envfile"

local M = {}

-- Runs file with args and waits (coroutine); returns stdout text, exit code (nil, why when it did
-- not start).
local function run(file, args)
  local r, err = command.run(file, args, { env = config.agent_env() })
  if not r then return nil, err end
  return r.stdout, r.code
end

-- The variables Codex passes to an MCP server it starts; any other needs `--env NAME=value` when
-- registering (Claude Code passes its whole environment).
M.CODEX_PASSES = { "HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ" }

-- What each host will pass us from this shell: the settings (REASONIX_*) a Codex registration
-- without `--env` loses (those the env file has reach every host), and the agent the server would then run. Returns ok (false when Codex
-- would find no agent), detail.
function M.host_env()
  local codex_env = {}
  for _, name in ipairs(M.CODEX_PASSES) do codex_env[name] = config.env(name) end
  for name in pairs(envfile.names) do codex_env[name] = config.env(name) end -- the server applies the file under Codex too
  local lost, covered = {}, 0
  for name in pairs(uv.os_environ()) do
    if name:match("^REASONIX") then
      if envfile.names[name] then covered = covered + 1 else lost[#lost + 1] = name end
    end
  end
  table.sort(lost)
  local bin, err = config.agent_bin(codex_env)
  local lines = {
    "Claude Code passes its whole environment; Codex passes only " .. table.concat(M.CODEX_PASSES, " "),
    #lost == 0 and (covered > 0 and "the settings file has every REASONIX* setting here: Codex loses none" or "no REASONIX* setting here, nothing to carry")
      or ("under Codex these are lost unless registered with --env NAME=value or put in the settings file: " .. table.concat(lost, " ")),
    "under Codex the agent would be: " .. (bin or err),
    "settings file " .. envfile.path() .. (#envfile.applied > 0 and (" sets " .. table.concat(envfile.applied, " "))
      or " sets nothing (NAME=value lines there reach every host)"),
  }
  return bin ~= nil, table.concat(lines, "\n" .. string.rep(" ", 28))
end

-- Starts the agent a spawn naming agent (nil: the default) runs, with what the policies'
-- agent_command make of it (as agentd would for a session in the current dir), and reports its
-- profile and what it offers: ok, detail (coroutine).
function M.profile_check(agent)
  require("rmcp.policy.loader").init{ role = "agentd" }
  local rules_spawn = require "rmcp.rules.spawn"
  local bin = config.agent_bin()
  local cwd = uv.cwd()
  local cmd, perr = rules_spawn.agent_command(bin, { purpose = "session", agent = agent, cwd = cwd })
  if not cmd then return false, perr or "no agent command (no reasonix binary and no policy's agent_command)" end
  local p = cmd.profile
  local head = string.format("profile %s: %s", p.name, table.concat(cmd.argv, " "))
  local agent, err = require("rmcp.acp.client").start({ bin = cmd.argv[1], args = { table.unpack(cmd.argv, 2) }, cwd = cwd,
    env = rules_spawn.command_env(cmd), max_line = config.limit("max_line") })
  if not agent then return false, head .. "; does not start: " .. tostring(err) end
  local timer = uv.new_timer()
  timer:start(30000, 0, function() agent:kill() end)
  local function done(ok, detail)
    if not timer:is_closing() then timer:close() end
    agent:stop()
    return ok, head .. "\n" .. string.rep(" ", 28) .. detail
  end
  local init, ierr = agent:initialize({ name = "reasonix-mcp doctor", version = require("rmcp.host").version })
  if ierr then return done(false, "initialize failed: " .. tostring(ierr.message)) end
  local res, nerr = agent:call("session/new", { cwd = cwd, mcpServers = json.array() })
  if nerr then return done(false, "session/new failed: " .. tostring(nerr.message)) end
  agent:call("session/close", { sessionId = res.sessionId })
  local info = type(init.agentInfo) == "table" and init.agentInfo or {}
  local offers = {}
  for _, o in ipairs(res.configOptions or {}) do offers[#offers + 1] = tostring(o.id) end
  local models = type(res.models) == "table" and res.models.availableModels or {}
  local modes = type(res.modes) == "table" and res.modes.availableModes or {}
  local names = function(list, k) local t = {} for _, x in ipairs(list) do t[#t + 1] = tostring(x[k]) end return table.concat(t, ", ") end
  local steer = type(p.steer) == "table" and ("by " .. p.steer.method) or p.steer == "queue" and "queued for the turn's end" or "none"
  return done(true, string.format("agent %s %s; options by %s%s%s%s; steer %s", tostring(info.name or "?"), tostring(info.version or ""),
    p.options, #offers > 0 and ("; configOptions: " .. table.concat(offers, ", ")) or "",
    #models > 0 and ("; models: " .. names(models, "modelId")) or "", #modes > 0 and ("; modes: " .. names(modes, "id")) or "", steer))
end

-- Open files per agent in agentd (its stdin, stdout and stderr pipes) and what agentd holds
-- besides (journals kept open, up to 256; sockets, logs): what the hard limit must leave room for.
local FDS_PER_AGENT, FDS_BESIDES = 3, 320

-- Whether agentd's open-file limit leaves room for a fleet: agentd raises its soft limit to the
-- hard one at start (as this raises ours), so the hard limit is what counts; a note (nil) below
-- room for 1,000 agents. Returns ok, detail.
function M.fd_limit()
  local before, _, hard = require("rmcp.proc").raise_nofile()
  if not before then return nil, "cannot read RLIMIT_NOFILE: " .. tostring(_) end
  if hard < 0 then return true, "unlimited" end
  local room = math.max(0, (hard - FDS_BESIDES) // FDS_PER_AGENT)
  local text = string.format("soft %d, hard %d: agentd raises its soft limit to %d, room for about %d live agents",
    before, hard, hard, room)
  if room >= 1000 then return true, text end
  return nil, text .. " (raise the hard limit, e.g. `ulimit -Hn 8192` as root or LimitNOFILE= in a unit, for a larger fleet)"
end

-- Collects the checks: a list of {name, ok, detail} (coroutine). start_agents: each installed
-- built-in agent is started too (doctor --agents).
function M.checks(start_agents)
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
  add("agent profile", M.profile_check())
  local agents = require "rmcp.rules.agents"
  for _, name in ipairs(agents.BUILTIN) do -- each built-in ACP agent this install has
    local spec = agents.builtin(name)
    local bin = spec and agents.binary(spec)
    if not spec then -- (not in this install)
    elseif not bin then
      add("agent " .. name, nil, "not installed (" .. config.agent_install_hint(name, spec) .. "): a spawn naming it is refused")
    elseif start_agents then -- (a note when it does not start: a default spawn does not run it)
      local ok, detail = M.profile_check(name)
      add("agent " .. name, ok or nil, detail)
    else
      add("agent " .. name, true, string.format("%s (%s@%s); `doctor --agents` starts it", bin, spec.package, spec.version))
    end
  end
  local box = require("rmcp.clients.bwrap").available()
  local default = config.env("REASONIX_MCP_DEFAULT_SANDBOX") or "none"
  -- without bubblewrap, a default sandbox refuses every spawn: that fails; else it is a note
  local verdict = true
  if not box.ok then
    if default == "none" then verdict = nil else verdict = false end
  end
  add("sandbox", verdict,
    box.ok and ("bubblewrap " .. box.bwrap .. " works: sandbox workspace and strict can be had")
    or (box.why .. ": a spawn asking for a sandbox is refused (or, with fallback, runs unsandboxed)"
      .. (default ~= "none" and ("; REASONIX_MCP_DEFAULT_SANDBOX=" .. default .. " asks it of every spawn") or "")))
  add("host environment", M.host_env())
  add("open-file limit", M.fd_limit())
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

-- Prints the checks and the log tail; exits 0 when nothing failed. args: {"--agents"} also starts
-- each installed built-in agent (initialize, session/new: what it offers).
function M.main(args)
  async.run(function()
    local failed = false
    for _, c in ipairs(M.checks(args and args[1] == "--agents")) do
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
