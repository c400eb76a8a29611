-- `reasonix-mcp ctl`: look at and steer the fleet from a shell. Its verbs are the MCP tools
-- (tools/init.lua: one table): the same arguments, the same handler, the same result (as a table, or
-- --json as the tool returns it), over the same agentd API the MCP server uses. Besides them, a
-- few verbs of the machine's owner: prune, log, usage, shutdown. Sessions are scoped to --orchestrator
-- (default $REASONIX_MCP_ORCHESTRATOR_ID, else "cli").
local uv = require "luv"
local sys = require "rmcp.sys"
local json = require "rmcp.lib.json"
local log = require "rmcp.lib.log"
local async = require "rmcp.lib.async"
local schema = require "rmcp.lib.schema"
local config = require "rmcp.config"
local client = require "rmcp.clients.agentd"
local tools = require "rmcp.tools"
local tools_ctx = require "rmcp.tools.ctx"
local args_of = require "rmcp.ctl.args"
local print_result = require "rmcp.ctl.print"
local usage_verb = require "rmcp.ctl.usage"

local M = {}

-- The verbs of the machine's owner that no MCP tool has (an orchestrator manages its own fleet;
-- these act on the daemon and its files).
M.own_verbs = {
  { "prune [--dry-run] [--older-than DAYS] [--keep N] [--force]",
    "remove finished sessions by the retention rule (or these values); --force also takes results no watch collected" },
  { "log [-n LINES]", "tail of agentd.log" },
  { usage_verb.USAGE, usage_verb.ABOUT },
  { "shutdown", "stop agentd and its agents" },
}

-- The verb -> tool map: every built-in tool with a verb (and its aliases), and the names an earlier
-- ctl had (tools/renamed.lua); the built-in tools by module name.
local function verbs()
  local list, _, by_module, renamed = tools.builtin()
  local map = {}
  for _, tool in ipairs(list) do
    if not tool.cli.none then
      map[args_of.verb(tool)] = tool
      for _, a in ipairs(tool.cli.aliases or {}) do map[a] = tool end
    end
  end
  for _, tool in ipairs(renamed) do
    if tool.cli and tool.cli.verb then map[tool.cli.verb] = tool end
  end
  return map, list, by_module
end

-- The usage text: the tools' verbs from the table, then the owner's own.
function M.usage()
  local _, list = verbs()
  local out = { "usage: reasonix-mcp ctl [--orchestrator ID] [--json] VERB ...", "" }
  for _, tool in ipairs(list) do
    if not tool.cli.none then
      local line = args_of.usage(tool)
      out[#out + 1] = string.format("%-40s %s", line, tool.description)
    end
  end
  out[#out + 1] = ""
  for _, v in ipairs(M.own_verbs) do out[#out + 1] = string.format("  %-38s %s", v[1], v[2]) end
  out[#out + 1] = ""
  out[#out + 1] = "VERB --help lists its flags. --orchestrator defaults to $REASONIX_MCP_ORCHESTRATOR_ID, else \"cli\"."
  return table.concat(out, "\n") .. "\n"
end

-- The table as data (`ctl --json help`): each tool with its verb, or why it has none, and the
-- owner's own verbs; tests and the generated docs read it.
function M.table()
  local list, _, _, renamed = tools.builtin()
  local out = { tools = json.array(), own_verbs = json.array(), renamed = json.array() }
  for _, tool in ipairs(renamed) do
    out.renamed[#out.renamed + 1] = { name = tool.name, to = tool.renamed_to, set = tool.renamed_set,
                                      verb = tool.cli and tool.cli.verb }
  end
  for _, tool in ipairs(list) do
    local cli = tool.cli
    local sub = json.array()
    for word in pairs(cli.sub or {}) do sub[#sub + 1] = word end
    table.sort(sub)
    out.tools[#out.tools + 1] = {
      tool = tool.name, hidden = tool.hidden, verb = not cli.none and args_of.verb(tool) or nil, none = cli.none,
      aliases = cli.aliases, positional = cli.positional and json.array(cli.positional) or nil,
      sub = #sub > 0 and sub or nil, every_orchestrator = cli.every_orchestrator,
    }
  end
  for _, v in ipairs(M.own_verbs) do out.own_verbs[#out.own_verbs + 1] = { usage = v[1], about = v[2] } end
  return out
end

-- Splits argv into the global options (--orchestrator ID, --json, --help), the verb and its words.
local function split(argv)
  local global, verb, words = {}, nil, {}
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if a == "--orchestrator" then
      global.orchestrator = argv[i + 1]
      i = i + 1
    elseif a:match("^%-%-orchestrator=") then
      global.orchestrator = a:match("=(.*)$")
    elseif a == "--json" then
      global.json = true
    elseif (a == "--help" or a == "-h") and not verb then
      global.help = true
    elseif not verb and not a:match("^%-") then
      verb = a
    else
      words[#words + 1] = a
    end
    i = i + 1
  end
  return global, verb, words
end

-- The value of flag name (--name VALUE or --name=VALUE) among words, or nil.
local function flag_value(words, name)
  for i, w in ipairs(words) do
    if w == "--" .. name or w == "-" .. name then return words[i + 1] end
    local v = w:match("^%-%-" .. name:gsub("%-", "%%-") .. "=(.*)$")
    if v then return v end
  end
end

-- True when flag name is among words.
local function has_flag(words, name)
  for _, w in ipairs(words) do if w == "--" .. name then return true end end
  return false
end

-- Prints the last n lines of the daemon log.
local function print_log(n)
  local lines = log.tail(config.paths().log, n)
  if not lines then print("no log at " .. config.paths().log); return 1 end
  for _, l in ipairs(lines) do print(l) end
  return 0
end

-- The ctx the tools' handlers get in ctl: agentd calls over client c, the shell's cwd as the
-- project dir; every_orchestrator when the tool's verb acts as the machine's owner.
local function ctl_ctx(c, orchestrator, tool)
  local ctx = { project_dir = uv.cwd(), orchestrator_id = orchestrator,
                every_orchestrator = tool.cli.every_orchestrator and true or nil }
  tools_ctx.with_agentd(ctx, function(method, params, _raw, cb) c:request(method, params, cb) end)
  -- What agentd said of itself at the last hello (agentd_pid, version), or nil.
  function ctx.agentd_info() return c.info end
  -- No MCP server here: nothing to restart.
  function ctx.restart_server() return false end
  return ctx
end

-- Connects to agentd as the orchestrator of global (autostart: start a daemon when none runs);
-- returns the client, or nil after saying why.
local function connect(global, autostart)
  local c = client.new({ orchestrator_id = global.orchestrator, project_dir = uv.cwd(),
                         client_info = { name = "reasonix-mcp ctl", version = require("rmcp.host").version },
                         autostart = autostart })
  local ok, err = c:wait_connected()
  if not ok then io.stderr:write("ctl: ", err, "\n"); return nil end
  return c
end

-- Runs one of the owner's own verbs; returns the exit code, or nil when verb is not one.
local function own_verb(global, verb, words)
  if verb == "log" then return print_log(tonumber(flag_value(words, "n")) or 50) end
  if verb == "usage" then return usage_verb.run(global, words) end
  if verb ~= "prune" and verb ~= "shutdown" then return nil end
  local params = {}
  if verb == "prune" then
    params = { dry_run = has_flag(words, "dry-run"), force = has_flag(words, "force"),
               older_than_days = tonumber(flag_value(words, "older-than")),
               keep = math.tointeger(tonumber(flag_value(words, "keep"))) }
  end
  local c = connect(global, verb ~= "shutdown")
  if not c then return 1 end
  local r, err = c:call(verb, params)
  c:close()
  if not r then io.stderr:write("ctl: ", tostring(err.message), "\n"); return 1 end
  if global.json then print(json.encode(r))
  elseif verb == "prune" then print_result.prune(r) end
  return 0
end

-- Prints the arguments of tool's verb, and its sub-forms.
local function verb_help(tool)
  local line, flags = args_of.usage(tool)
  io.stdout:write(line, "\n    ", tool.description, "\n", flags ~= "" and ("    flags: " .. flags .. "\n") or "")
  local words = {}
  for word, form in pairs(tool.cli.sub or {}) do
    local names = {}
    for _, p in ipairs(form.positional or {}) do names[#names + 1] = p == "action" and word or p:upper() end
    words[#words + 1] = "    " .. args_of.verb(tool) .. " " .. ((form.set or form.tool) and (word .. " ") or "") .. table.concat(names, " ")
  end
  table.sort(words)
  if #words > 0 then io.stdout:write("  forms:\n", table.concat(words, "\n"), "\n") end
end

-- Runs tool's verb with words against agentd; returns the exit code (coroutine).
local function tool_verb(global, tool, words, by_module)
  local args, target = args_of.parse(tool, words, by_module)
  if not args then io.stderr:write("ctl: ", target, " (", args_of.verb(tool), " --help)\n"); return 2 end
  local ok, err = schema.validate(target.inputSchema, args)
  if not ok then io.stderr:write("ctl: ", err, " (", args_of.verb(tool), " --help)\n"); return 2 end
  schema.conform(target.inputSchema, args)
  local c = connect(global, true)
  if not c then return 1 end
  local r, rerr = target.handler(args, ctl_ctx(c, global.orchestrator, tool))
  c:close()
  if r == nil then
    io.stderr:write("ctl: ", type(rerr) == "table" and tostring(rerr.message) or tostring(rerr), "\n")
    return 1
  end
  if json.raw_text(r) then r = json.decode(json.raw_text(r)) end
  if global.json then print(json.encode(r)) else print_result.result(target.name, args, r) end
  return 0
end

-- Runs one command against agentd; returns the exit code (coroutine).
function M.run(argv)
  local global, verb, words = split(argv)
  if not verb or verb == "help" and not words[1] then
    if global.json and verb then print(json.encode(M.table())); return 0 end
    io.stdout:write(M.usage())
    return verb and 0 or (global.help and 0 or 2)
  end
  if verb == "help" then verb, global.help = words[1], true end
  local map, _, by_module = verbs()
  local tool = map[verb]
  if tool and (global.help or has_flag(words, "help")) then verb_help(tool); return 0 end
  local code = own_verb(global, verb, words)
  if code then return code end
  if not tool then io.stderr:write("ctl: unknown verb '", verb, "'\n", M.usage()); return 2 end
  return tool_verb(global, tool, words, by_module)
end

-- Entry from rmcp.main: runs the command and exits with its code.
function M.main(argv)
  async.run(function()
    sys.stop(M.run(argv) or 0)
  end, function(e)
    io.stderr:write("ctl: ", tostring(e), "\n")
    sys.stop(1)
  end)
end

return M
