-- Entry point of every reasonix-mcp process: the C core calls main(argv) once, then runs the loop.
-- Subcommands: (none)/launcher, server, agentd, ctl, doctor, setup, dashboard, sandbox-net, script FILE, version.
local M = {}

local commands = {
  launcher = "rmcp.launcher.main",
  server = "rmcp.server.main",
  agentd = "rmcp.agentd.main",
  ctl = "rmcp.ctl.main",
  doctor = "rmcp.doctor",
  setup = "rmcp.setup.main",
  dashboard = "rmcp.dashboard.main",
  ["sandbox-net"] = "rmcp.sandboxed.net",
}

-- Subcommands that run inside an agent's sandbox: the agent's environment is passed on as agentd
-- made it (no settings file applied) and there is no home to keep compiled chunks in.
local sandboxed = { ["sandbox-net"] = true }

-- Prints usage to stderr.
local function usage()
  io.stderr:write([[
usage: reasonix-mcp [launcher]       MCP server for a host (stdio), restarted on upgrade
       reasonix-mcp server           MCP server without the launcher
       reasonix-mcp agentd           the detached daemon that owns the agents
       reasonix-mcp ctl COMMAND      look at and steer the fleet from a shell (ctl help)
       reasonix-mcp doctor [--agents] check agent binary, provider, socket dir, daemon (--agents: start each built-in agent)
       reasonix-mcp setup HOST       register this binary with claude, codex or all (setup --help)
       reasonix-mcp dashboard        the fleet dashboard on http://127.0.0.1:8746/
       reasonix-mcp sandbox-net ...  inside a strict sandbox: the agent's way out through agentd
       reasonix-mcp script FILE ...  run a Lua file with the core modules (tests, tools)
       reasonix-mcp version
]])
end

-- Runs a Lua file with global arg set like the standalone interpreter does.
local function run_script(argv)
  local file = argv[2]
  if not file then usage(); return 2 end
  local script_arg = { [0] = file }
  for i = 3, #argv do script_arg[#script_arg + 1] = argv[i] end
  _G.arg = script_arg
  local chunk, err = loadfile(file)
  if not chunk then
    io.stderr:write("reasonix-mcp: ", err, "\n")
    return 1
  end
  chunk(table.unpack(script_arg))
end

-- Runs the file REASONIX_MCP_TEST_SEAMS names, once, before the process does anything: a Lua chunk
-- that may replace functions of rmcp.lib.clock and rmcp.lib.fault (a test moves time or makes a
-- fault point fail). Returns nil, error when the file does not load or raises.
local function load_test_seams()
  local file = os.getenv("REASONIX_MCP_TEST_SEAMS")
  if not file or file == "" then return true end
  local chunk, err = loadfile(file)
  if not chunk then return nil, err end
  local ok, rerr = pcall(chunk)
  if not ok then return nil, file .. ": " .. tostring(rerr) end
  return true
end

-- Dispatches argv (argv[1] is the subcommand) and returns an exit code to stop at once, or nothing to run the loop.
function M.main(argv)
  local sub = argv[1] or "launcher"
  local seams_ok, seams_err = load_test_seams()
  if not seams_ok then
    io.stderr:write("reasonix-mcp: REASONIX_MCP_TEST_SEAMS: ", tostring(seams_err), "\n")
    return require("rmcp.sys").stop(1)
  end
  if sub == "script" then
    local code = run_script(argv)
    if code then require("rmcp.sys").stop(code) end
    return
  end
  if sub == "version" or sub == "--version" then
    io.stdout:write("reasonix-mcp ", require("rmcp.host").version, "\n")
    return require("rmcp.sys").stop(0)
  end
  if sub == "help" or sub == "--help" or sub == "-h" then
    usage()
    return require("rmcp.sys").stop(0)
  end
  local module = commands[sub]
  if not module then
    io.stderr:write("reasonix-mcp: unknown command '", sub, "'\n")
    usage()
    return require("rmcp.sys").stop(2)
  end
  local rest = {}
  for i = 2, #argv do rest[#rest + 1] = argv[i] end
  if sandboxed[sub] then return require(module).main(rest) end
  local _, env_err = require("rmcp.envfile").apply()
  if env_err then io.stderr:write("reasonix-mcp: ", env_err, " (the rest of the file is ignored)\n") end
  if sub ~= "doctor" and sub ~= "setup" then
    require("rmcp.lib.chunks").enable(require("rmcp.config").home(), require("rmcp.sock").secure_dir)
  end
  require(module).main(rest)
end

return M
