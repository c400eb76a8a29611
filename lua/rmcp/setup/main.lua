-- `reasonix-mcp setup HOST…`: this binary registered with Claude Code and/or Codex in one step
-- (setup/claude.lua, setup/codex.lua), the settings Codex would not pass carried into our env file,
-- the agent found (or installed when asked), then doctor; `--dry-run` says it all and changes
-- nothing; `--remove` undoes what the record (setup/steps.lua) says setup did.
local uv = require "luv"
local sys = require "rmcp.sys"
local async = require "rmcp.lib.async"
local config = require "rmcp.config"
local envfile = require "rmcp.envfile"
local env_lines = require "rmcp.setup.env_lines"
local splice = require "rmcp.setup.splice"
local steps = require "rmcp.setup.steps"

local M = {}

M.HOSTS = { claude = require "rmcp.setup.claude", codex = require "rmcp.setup.codex" }
M.ORDER = { "claude", "codex" }

M.HELP = [[
usage: reasonix-mcp setup claude|codex|all [--dry-run] [--install-agent]
       reasonix-mcp setup --remove [claude|codex|all] [--dry-run]

Registers this binary (its real path) as the MCP server "reasonix" of a host, in your user scope:
  claude  with `claude mcp add-json reasonix --scope user` when claude is on PATH, else by
          writing mcpServers.reasonix into ~/.claude.json ($CLAUDE_CONFIG_DIR/.claude.json):
          {"command": THIS, "alwaysLoad": true}, connected before the first turn (`claude -p`
          would otherwise send its first turn before our tools are listed)
  codex   with `codex mcp add reasonix -- THIS` when codex is on PATH, else by writing
          [mcp_servers.reasonix] into ~/.codex/config.toml ($CODEX_HOME); either way the table
          gets tool_timeout_sec = 3600 (a watch blocks longer than Codex's default 60 s) and
          default_tools_approval_mode = "approve" (`codex exec` may call the tools)
  all     both
A registration that already runs this binary is left as it is ("already registered"); one that
runs something else is replaced (and put back by --remove). Nothing else in those files changes.

With codex, the REASONIX* settings of this shell that Codex would not pass its servers are added
to ~/.config/reasonix-mcp/env (every reasonix-mcp process reads it); a name the file already sets
is left as the file has it.

The agent: found as the server finds it ($REASONIX_BIN, `reasonix` on PATH, the one installed
beside this binary). When there is none, setup says how to install it and exits 1; it installs
nothing unless you ask:
  --install-agent  npm install ]] .. config.AGENT_PACKAGE .. [[ into ~/.local/share/reasonix-mcp/agent
                   (needs npm; REASONIX_BIN in the env file points there)
Then it runs `reasonix-mcp doctor` and prints its result; the exit code is 0 when every step
worked, the agent was found and doctor passed.

  --dry-run        print every step it would take; change nothing
  --remove         undo what setup did (registrations, the env file lines it added, an agent it
                   installed): files setup wrote itself are restored byte for byte, unless they
                   changed since (then only our entry is taken out); what it did is recorded in
                   ~/.config/reasonix-mcp/setup.json
]]

-- The options of args: {hosts, dry, remove, install_agent, help}, or nil, why.
function M.parse(args)
  local o, seen = { hosts = {} }, {}
  local flags = { ["--dry-run"] = "dry", ["--remove"] = "remove", ["--install-agent"] = "install_agent",
    ["--help"] = "help", ["-h"] = "help" }
  for _, a in ipairs(args) do
    local names = a == "all" and M.ORDER or M.HOSTS[a] and { a }
    if flags[a] then
      o[flags[a]] = true
    elseif names then
      for _, n in ipairs(names) do
        if not seen[n] then seen[n] = true o.hosts[#o.hosts + 1] = n end
      end
    else
      return nil, "unknown argument '" .. a .. "'"
    end
  end
  if #o.hosts == 0 and not o.remove and not o.help then return nil, "name a host: claude, codex or all" end
  if o.remove and o.install_agent then return nil, "--install-agent does not go with --remove" end
  return o
end

-- Where setup keeps its record: beside the env file.
function M.record_path()
  return (envfile.path():match("^(.*)/[^/]*$")) .. "/setup.json"
end

-- Where --install-agent puts the agent, and the binary it then runs.
function M.agent_dir()
  local dir = config.user_home() .. "/.local/share/reasonix-mcp/agent"
  return dir, dir .. "/node_modules/" .. config.AGENT_IN_MODULES
end

-- Finds the agent, or installs it when asked; returns the settings it needs in the env file
-- ({name, value} list) and whether there is one (coroutine).
local function agent_step(run, o)
  run:say("Agent:")
  local bin, why = config.agent_bin()
  if bin then
    local ok, out = steps.run(bin, { "--version" }, 10000)
    run:say("  " .. bin .. (ok and ("  " .. out:gsub("%s+$", "")) or "  (does not run: " .. tostring(out) .. ")"))
    return {}, ok ~= nil
  end
  local dir, installed = M.agent_dir()
  if not o.install_agent then
    run:say("  not found: " .. why)
    run:say("  install it with `reasonix-mcp setup " .. table.concat(o.hosts, " ") .. " --install-agent` (npm install "
      .. config.AGENT_PACKAGE .. " into " .. dir .. "), or `npm install -g " .. config.AGENT_PACKAGE .. "`")
    return {}, false
  end
  local npm = config.which("npm")
  if not npm then
    run:say("  not found, and npm is not on PATH to install it: apt-get install npm, then run setup again")
    return {}, false
  end
  local ok = run:step("run: npm install --prefix " .. dir .. " " .. config.AGENT_PACKAGE, function()
    return steps.run(npm, { "install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error", config.AGENT_PACKAGE }, 600000)
  end)
  if ok and not run.dry then
    run.record.agent = { dir = dir }
    local runs, out = steps.run(installed, { "--version" }, 10000)
    run:say("  " .. installed .. "  " .. (runs and out:gsub("%s+$", "") or ("does not run: " .. tostring(out))))
    ok = runs ~= nil
  end
  return { { name = "REASONIX_BIN", value = installed } }, ok
end

-- Adds settings ({name, value} list) the env file lacks, and records the lines.
local function env_step(run, settings)
  local file = envfile.path()
  run:say("Settings file (" .. file .. "):")
  local text, exists = steps.read(file)
  local edit, new_text, lines, differ = env_lines.add(text, settings)
  for _, d in ipairs(differ) do
    run:say(string.format("  leaves %s as the file sets it (%s; this shell: %s)", d.name, d.file_value, d.value))
  end
  if not edit then return run:say(#settings == 0 and "  nothing to carry" or "  already has them") end
  local ok = run:step("add " .. table.concat(lines, " "), function() return steps.write(file, new_text) end)
  if ok and not run.dry then
    local rec = run.record.env or { created = not exists, edits = {}, lines = {} }
    rec.file = file
    rec.edits[#rec.edits + 1] = edit
    for _, l in ipairs(lines) do rec.lines[#rec.lines + 1] = l end
    run.record.env = rec
  end
end

-- Registers exe with host name and records what that did.
local function register_host(run, name, exe)
  local host, hosts = M.HOSTS[name], run.record.hosts or {}
  run:say(host.NAME .. " (" .. host.file() .. "):")
  local done = host.register(run, exe, hosts[name] or {})
  if done and not run.dry then
    hosts[name] = done
    run.record.hosts = hosts
  end
end

-- Undoes what setup recorded for host name.
local function unregister_host(run, name)
  local host, rec = M.HOSTS[name], (run.record.hosts or {})[name]
  run:say(host.NAME .. " (" .. (rec and rec.file or host.file()) .. "):")
  if not rec then return run:say("  setup registered nothing here: nothing to undo") end
  local done = host.unregister(run, rec)
  if done and not run.dry then run.record.hosts[name] = nil end
  return done
end

-- Runs doctor as a user would and prints what it says; returns whether it passed (coroutine).
local function doctor_step(run, exe)
  if run.dry then run:say("\nwould run: reasonix-mcp doctor") return true end
  run:say("\nreasonix-mcp doctor:")
  local r, err = require("rmcp.lib.command").run(exe, { "doctor" }, { timeout_ms = 120000 })
  if not r then run:say("  does not start: " .. tostring(err)) return false end
  run:say((r.stdout:gsub("%s+$", "")))
  return r.code == 0
end

-- setup HOST…: returns the exit code (coroutine).
local function set_up(run, o)
  local exe = require("rmcp.host").exe
  run:say("reasonix-mcp setup" .. (run.dry and " (dry run: nothing is changed)" or "") .. " of " .. exe)
  local settings, have_agent = agent_step(run, o)
  for _, name in ipairs(o.hosts) do
    if name == "codex" then
      for _, s in ipairs(env_lines.carry(uv.os_environ(), envfile.applied)) do table.insert(settings, s) end
    end
  end
  env_step(run, settings)
  for _, name in ipairs(o.hosts) do register_host(run, name, exe) end
  local saved, serr = run:save()
  if not saved then run:say("could not save the record " .. run.path .. ": " .. tostring(serr)) return 1 end
  local doctor_ok = doctor_step(run, exe)
  return (run.failed == 0 and have_agent and doctor_ok) and 0 or 1
end

-- Undoes the env file lines and the agent install once no host registration is left.
local function remove_shared(run)
  local rec = run.record.env
  if rec then
    run:say("Settings file (" .. rec.file .. "):")
    local text = steps.read(rec.file)
    local restored = splice.undo_all(text, rec.edits)
    local ok
    if restored then
      ok = run:step(steps.restore_says(restored, rec.created), function() return steps.restore(rec.file, restored, rec.created) end)
    else
      ok = run:step("remove the lines setup added (the file changed since): " .. table.concat(rec.lines, " "),
        function() return steps.write(rec.file, env_lines.remove(text, rec.lines)) end)
    end
    if ok and not run.dry then run.record.env = nil end
  end
  local agent = run.record.agent
  if agent then
    run:say("Agent:")
    local ok = run:step("remove " .. agent.dir .. " (setup installed it)", function() return steps.run("/bin/rm", { "-rf", agent.dir }) end)
    if ok and not run.dry then run.record.agent = nil end
  end
end

-- setup --remove [HOST…]: returns the exit code (coroutine).
local function remove(run, o)
  run:say("reasonix-mcp setup --remove" .. (run.dry and " (dry run: nothing is changed)" or ""))
  local hosts = o.hosts
  if #hosts == 0 then
    for _, name in ipairs(M.ORDER) do
      if (run.record.hosts or {})[name] then hosts[#hosts + 1] = name end
    end
    if #hosts == 0 and not run.record.env and not run.record.agent then run:say("setup registered nothing: nothing to undo") end
  end
  local left = {}
  for name in pairs(run.record.hosts or {}) do left[name] = true end
  for _, name in ipairs(hosts) do
    if unregister_host(run, name) then left[name] = nil end -- (a host still registered keeps the shared pieces)
  end
  if run.record.hosts and next(run.record.hosts) == nil then run.record.hosts = nil end
  if next(left) == nil then remove_shared(run) end
  local saved, serr = run:save()
  if not saved then run:say("could not save the record " .. run.path .. ": " .. tostring(serr)) return 1 end
  return run.failed == 0 and 0 or 1
end

-- Entry point: parses args, runs setup or --remove, exits with its code.
function M.main(args)
  local o, err = M.parse(args)
  if not o then
    io.stderr:write("reasonix-mcp setup: ", err, "\n", M.HELP:match("^(.-\n)\n"), "(reasonix-mcp setup --help says more)\n")
    return sys.stop(2)
  end
  if o.help then io.stdout:write(M.HELP) return sys.stop(0) end
  async.run(function()
    local run = steps.new(M.record_path(), o.dry)
    sys.stop(o.remove and remove(run, o) or set_up(run, o))
  end, function(e)
    io.stderr:write("reasonix-mcp setup: ", tostring(e), "\n")
    sys.stop(1)
  end)
end

return M
