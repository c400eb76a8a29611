-- `reasonix-mcp setup`: the edits of a host's config and of our env file (idempotent, undone byte
-- for byte, nothing else touched) and the binary run in a private home with no host on PATH
-- (written configs, --dry-run, a second run, --remove).
local uv = require "luv"
local json = require "rmcp.lib.json"
local files = require "rmcp.lib.files"
local command = require "rmcp.lib.command"
local config = require "rmcp.config"
local splice = require "rmcp.setup.splice"
local codex_toml = require "rmcp.setup.codex_toml"
local claude_json = require "rmcp.setup.claude_json"
local env_lines = require "rmcp.setup.env_lines"

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local EXE = "/opt/rx/bin/reasonix-mcp"

local CODEX = table.concat({
  'model = "m"', "# a comment of the user's", "", "[mcp_servers.other]", 'command = "other"', 'args = ["x"]', "",
  "[mcp_servers.other.env]", 'K = "v"', "", "[profiles.p]", "model = \"q\"", "",
}, "\n")

test("codex: our table is added at the end, is ours, and the undo gives the same bytes", function(t)
  for _, text in ipairs({ CODEX, "", 'model = "m"' }) do
    t.eq(codex_toml.inspect(text), nil)
    local edit, new = codex_toml.register(text, EXE)
    t.eq(new:sub(1, #text), text, "every byte before ours kept")
    t.ok(codex_toml.is_ours(new, EXE), new)
    t.match(new, '%[mcp_servers%.reasonix%]\ncommand = "/opt/rx/bin/reasonix%-mcp"\ntool_timeout_sec = 3600\ndefault_tools_approval_mode = "approve"\n$')
    t.eq(codex_toml.settle(new), nil, "nothing left to settle")
    t.eq(splice.undo(new, edit), text)
    t.eq(codex_toml.unregister(new), text:match("\n$") and text or (text == "" and "" or text .. "\n"))
  end
end)

test("codex: a table running something else is replaced in place, subtables too, and put back", function(t)
  local old = '[mcp_servers.reasonix]\ncommand = "/old"\nargs = ["a"]\n\n[mcp_servers.reasonix.env]\nA = "1"\n'
  local text = CODEX:gsub("%[profiles%.p%]", old:gsub("%%", "%%%%") .. "\n[profiles.p]")
  local found = codex_toml.inspect(text)
  t.eq(found.command, "/old")
  t.eq(found.text, old)
  local edit, new = codex_toml.register(text, EXE)
  t.ok(codex_toml.is_ours(new, EXE))
  t.ok(not new:find("/old", 1, true) and not new:find("mcp_servers.reasonix.env", 1, true), new)
  t.match(new, '\n%[profiles%.p%]\nmodel = "q"\n$')
  t.eq(splice.undo(new, edit), text)
  t.eq(codex_toml.unregister(new, found.text), text, "the structural removal puts the old table back")
  t.eq(splice.undo(new .. "# later\n", edit), nil, "a changed file is not undone by the splice")
end)

test("codex: settle adds what our table lacks, fixes a wrong value, keeps the rest", function(t)
  local text = 'a = 1\n\n[mcp_servers.reasonix]\ncommand = "' .. EXE .. '"\ntool_timeout_sec=60   \nstartup_timeout_sec = 20\n\n[mcp_servers.reasonix.env]\nX = "y"\n\n[b]\nc = 2\n'
  t.ok(not codex_toml.is_ours(text, EXE))
  local edit, new = codex_toml.settle(text)
  t.eq(new, 'a = 1\n\n[mcp_servers.reasonix]\ncommand = "' .. EXE .. '"\ntool_timeout_sec = 3600\nstartup_timeout_sec = 20\n'
    .. 'default_tools_approval_mode = "approve"\n\n[mcp_servers.reasonix.env]\nX = "y"\n\n[b]\nc = 2\n')
  t.ok(codex_toml.is_ours(new, EXE))
  t.eq(codex_toml.settle(new), nil)
  t.eq(splice.undo(new, edit), text)
  t.eq(codex_toml.quote('a"b\\c'), '"a\\"b\\\\c"')
end)

local CLAUDE = '{\n  "numStartups": 3,\n  "mcpServers": {\n    "other": {\n      "type": "stdio",\n      "command": "o",\n'
  .. '      "args": ["{not}", "a\\"b"],\n      "env": {}\n    }\n  },\n  "projects": {\n    "/w": {\n      "mcpServers": {}\n    }\n  }\n}\n'

test("claude: our entry goes into mcpServers (made when missing), the rest decodes as before, undo restores bytes", function(t)
  local cases = { CLAUDE, CLAUDE:gsub('"mcpServers": {\n    "other".-\n  },\n', ""), '{\n  "mcpServers": {}\n}', "", "{}" }
  for _, text in ipairs(cases) do
    local edit, new = claude_json.register(text, EXE)
    local before, after = json.decode(text ~= "" and text or "{}"), json.decode(new)
    t.ok(after, "valid JSON: " .. new)
    t.ok(claude_json.is_ours(claude_json.entry(new), EXE), new)
    after.mcpServers.reasonix = nil
    if not before.mcpServers then before.mcpServers = {} end
    t.eq(after, before, "nothing else changed")
    t.eq(splice.undo(new, edit), text)
    local _, again = claude_json.register(new, EXE)
    t.eq(again, new, "registering again writes the same")
  end
end)

test("claude: our entry is loaded before the first turn; an older one of ours without that is registered again", function(t)
  local _, new = claude_json.register("", EXE)
  local entry = claude_json.entry(new)
  t.eq(entry.alwaysLoad, true)
  t.ok(claude_json.is_current(entry, EXE))
  t.eq(json.decode(claude_json.entry_json(EXE)), entry, "add-json gets the entry the file gets")
  local older = '{\n  "mcpServers": {\n    "reasonix": {\n      "type": "stdio",\n      "command": ' .. claude_json.quote(EXE)
    .. ',\n      "args": [],\n      "env": {}\n    }\n  }\n}\n'
  local old_entry = claude_json.entry(older)
  t.ok(claude_json.is_ours(old_entry, EXE), "still ours: --remove takes it out")
  t.ok(not claude_json.is_current(old_entry, EXE), "but registered again")
  local _, again = claude_json.register(older, EXE)
  t.eq(again, new, "with alwaysLoad, as a fresh setup writes it")
end)

test("claude: a registration elsewhere is replaced and put back; the structural removal keeps the rest", function(t)
  local text = CLAUDE:gsub('"other"', '"reasonix"')
  local entry, raw = claude_json.entry(text)
  t.eq(entry.command, "o")
  t.ok(not claude_json.is_ours(entry, EXE))
  local edit, new = claude_json.register(text, EXE)
  t.ok(claude_json.is_ours(claude_json.entry(new), EXE))
  t.eq(splice.undo(new, edit), text)
  t.eq(claude_json.unregister(new, raw), text)
  -- our member first, in the middle, last, alone: the others stay as they were
  local three = '{"mcpServers": {"a": 1, "reasonix": {"command": "x"}, "b": [2]}, "z": {}}'
  t.eq(claude_json.unregister(three), '{"mcpServers": {"a": 1, "b": [2]}, "z": {}}')
  t.eq(claude_json.unregister('{"mcpServers": {"reasonix": {}, "b": 2}}'), '{"mcpServers": {"b": 2}}')
  t.eq(claude_json.unregister('{"mcpServers": {"a": 1,\n "reasonix": {}\n}}'), '{"mcpServers": {"a": 1\n}}')
  t.eq(claude_json.unregister('{"mcpServers": {\n "reasonix": {}\n}}'), '{"mcpServers": {}}')
  t.eq(claude_json.register("[1]", EXE), nil, "not an object: not edited")
end)

test("env file: this shell's REASONIX* settings the file lacks are added once; the undo restores bytes", function(t)
  local environ = { REASONIX_HOME = "/r", REASONIX_MCP_HOME = "/m", REASONIX_MCP_TEST_SEAMS = "/s", PATH = "/bin", REASONIX_BIN = "" }
  local carry = env_lines.carry(environ, { "REASONIX_MCP_HOME" })
  t.eq(carry, { { name = "REASONIX_HOME", value = "/r" } }, "not from the file, not a test seam, not empty")
  local text = "# mine\nREASONIX_MCP_DASHBOARD_AUTOSTART=0"
  local edit, new, lines, differ = env_lines.add(text, { { name = "REASONIX_HOME", value = "/r" }, { name = "REASONIX_MCP_DASHBOARD_AUTOSTART", value = "1" } })
  t.eq(new, text .. "\nREASONIX_HOME=/r\n")
  t.eq(lines, { "REASONIX_HOME=/r" })
  t.eq(differ, { { name = "REASONIX_MCP_DASHBOARD_AUTOSTART", value = "1", file_value = "0" } }, "the file's value is kept")
  t.eq(splice.undo(new, edit), text)
  t.eq(env_lines.add(new, carry), nil, "a second time adds nothing")
  t.eq(env_lines.remove("A=1\nREASONIX_HOME=/r\nB=2\n", lines), "A=1\nB=2\n")
end)

test("the agent's version is pinned once: install-agent.sh and the npm package read config.AGENT_PACKAGE", function(t)
  t.match(config.AGENT_PACKAGE, "^reasonix@%d+%.%d+%.%d+$")
  t.match(files.read(here .. "../../scripts/install-agent.sh"), "M%.AGENT_PACKAGE = \"reasonix@")
  t.match(files.read(here .. "../../packaging/packages.cmake"), "M%.AGENT_PACKAGE = \\\"reasonix@")
  t.match(files.read(here .. "../../packaging/npm/package.json.in"), '"reasonix": "@RMCP_AGENT_VERSION@"')
end)

test("install hints: a checkout's script from a build tree, the setup flag and the npm pin from a package", function(t)
  t.ok(config.checkout(), "the specs run the build tree's binary")
  t.match(config.agent_install_hint(), "^scripts/install%-agent%.sh in this checkout$")
  local spec = { package = "@x/claude-acp", version = "1.2.3" }
  t.match(config.agent_install_hint("claude", spec), "^scripts/install%-agent%.sh claude in this checkout$")
  local installed = "/usr/bin/reasonix-mcp"
  t.eq(config.checkout(installed), nil)
  local hint = config.agent_install_hint(nil, nil, installed)
  t.match(hint, "reasonix%-mcp setup claude|codex %-%-install%-agent")
  t.match(hint, "npm install %-g " .. config.AGENT_PACKAGE:gsub("%p", "%%%0"))
  t.eq(hint:find("scripts/", 1, true), nil, "no checkout script for a package")
  t.eq(config.agent_install_hint("claude", spec, installed), "`npm install -g @x/claude-acp@1.2.3`")
end)

-- Runs `reasonix-mcp setup args…` in home with no host on PATH (an empty dir: a host installed on
-- this machine is not found); returns its stdout and exit code.
local function setup(home, args)
  assert(files.mkdir_p(home .. "/empty"))
  local env = { "HOME=" .. home, "PATH=" .. home .. "/empty", "REASONIX_HOME=" .. home .. "/rx", "REASONIX_MCP_HOME=" .. home .. "/mcp",
    "RMCP_TEST_RUN=" .. os.getenv("RMCP_TEST_RUN") }
  local r = assert(command.run(require("rmcp.host").exe, { "setup", table.unpack(args) }, { env = env, timeout_ms = 90000 }))
  return r.stdout .. r.stderr, r.code
end

-- The files under dir: path → bytes.
local function tree(dir)
  local out = {}
  local function walk(d)
    local req = uv.fs_scandir(d)
    while req do
      local name, kind = uv.fs_scandir_next(req)
      if not name then break end
      if kind == "directory" then walk(d .. "/" .. name) else out[(d .. "/" .. name):sub(#dir + 2)] = files.read(d .. "/" .. name) end
    end
  end
  walk(dir)
  return out
end

test("setup all without the hosts installed: dry run, write, again, remove", function(t)
  local home = t.tmpdir("rmcp-setup")
  assert(files.mkdir_p(home .. "/.codex"))
  assert(files.write_atomic(home .. "/.codex/config.toml", CODEX))
  local start = tree(home)
  local out = setup(home, { "all", "--dry-run" })
  t.match(out, "would write mcpServers%.reasonix")
  t.match(out, "would write %[mcp_servers%.reasonix%] with tool_timeout_sec = 3600")
  t.match(out, "would add REASONIX_HOME=" .. home:gsub("%p", "%%%0") .. "/rx REASONIX_MCP_HOME=")
  t.match(out, "would run: reasonix%-mcp doctor")
  t.eq(tree(home), start, "a dry run changes nothing")
  out = setup(home, { "all" })
  t.match(out, "reasonix%-mcp doctor:\n%[")
  local done = tree(home)
  local exe = require("rmcp.host").exe
  t.ok(codex_toml.is_ours(done[".codex/config.toml"], exe), done[".codex/config.toml"])
  t.eq(done[".codex/config.toml"]:sub(1, #CODEX), CODEX)
  t.ok(claude_json.is_ours(claude_json.entry(done[".claude.json"]), exe), done[".claude.json"])
  t.eq(done[".config/reasonix-mcp/env"], "REASONIX_HOME=" .. home .. "/rx\nREASONIX_MCP_HOME=" .. home .. "/mcp\n")
  out = setup(home, { "all" })
  t.match(out, "Claude Code %(.-%):\n  already registered")
  t.match(out, "Codex %(.-%):\n  already registered")
  local again = tree(home)
  for _, f in ipairs({ ".codex/config.toml", ".claude.json", ".config/reasonix-mcp/env", ".config/reasonix-mcp/setup.json" }) do
    t.eq(again[f], done[f], f .. " unchanged by a second run")
  end
  out = setup(home, { "--remove", "--dry-run" })
  t.match(out, "would restore the file as it was before setup")
  t.eq(tree(home)[".claude.json"], done[".claude.json"])
  out = setup(home, { "--remove" })
  local after = tree(home)
  t.eq(after[".codex/config.toml"], CODEX, "codex's config as it was, byte for byte")
  for _, f in ipairs({ ".claude.json", ".config/reasonix-mcp/env", ".config/reasonix-mcp/setup.json" }) do t.eq(after[f], nil, f .. " removed: setup made it") end
  t.match(out, "remove the file %(setup created it%)")
end, { timeout = 240000 })

test("a registration the user made over ours is what --remove puts back, not the one the first setup replaced", function(t)
  local home = t.tmpdir("rmcp-setup")
  assert(files.mkdir_p(home .. "/.codex"))
  local before = '[mcp_servers.reasonix]\ncommand = "/old/x"\n'
  assert(files.write_atomic(home .. "/.codex/config.toml", before))
  setup(home, { "codex" })
  local exe = require("rmcp.host").exe
  local text = files.read(home .. "/.codex/config.toml")
  t.ok(codex_toml.is_ours(text, exe), text)
  local theirs = '[mcp_servers.reasonix]\ncommand = "/their/y"\n'
  assert(files.write_atomic(home .. "/.codex/config.toml", theirs))
  t.match(setup(home, { "codex" }), "replacing the registration that runs /their/y")
  setup(home, { "--remove" })
  t.eq(files.read(home .. "/.codex/config.toml"), theirs, "the user's own registration is back")
end, { timeout = 240000 })

test("claude: an older setup's entry of this binary is updated to load before the first turn; --remove puts the file back", function(t)
  local home = t.tmpdir("rmcp-setup")
  local exe = require("rmcp.host").exe
  local older = '{\n  "mcpServers": {\n    "other": {"command": "/o"},\n    "reasonix": {\n      "type": "stdio",\n'
    .. '      "command": ' .. claude_json.quote(exe) .. ',\n      "args": [],\n      "env": {}\n    }\n  }\n}\n'
  assert(files.write_atomic(home .. "/.claude.json", older))
  t.match(setup(home, { "claude" }), "updating the registration that runs .-: alwaysLoad")
  local entry = claude_json.entry(files.read(home .. "/.claude.json"))
  t.ok(claude_json.is_current(entry, exe), files.read(home .. "/.claude.json"))
  t.match(setup(home, { "claude" }), "already registered")
  setup(home, { "--remove" })
  t.eq(files.read(home .. "/.claude.json"), older, "as it was before this setup (no record says what came before that)")
end, { timeout = 240000 })

test("codex: a server of ours written as an inline table or dotted keys is refused, not defined twice", function(t)
  t.eq(codex_toml.unsupported(CODEX), nil)
  t.eq(codex_toml.unsupported('[mcp_servers.reasonix]\ncommand = "x"\n[mcp_servers.reasonix.env]\nK = "v"\n'), nil, "our table form")
  t.match(codex_toml.unsupported('[mcp_servers]\nreasonix = { command = "x" }\n'), "a key of %[mcp_servers%]")
  t.match(codex_toml.unsupported('mcp_servers.reasonix.command = "x"\n'), "dotted keys")
  t.match(codex_toml.unsupported('[mcp_servers]\n"reasonix".command = "x"\n'), "a key of %[mcp_servers%]")
  local home = t.tmpdir("rmcp-setup")
  assert(files.mkdir_p(home .. "/.codex"))
  local inline = '[mcp_servers]\nreasonix = { command = "/x" }\n'
  assert(files.write_atomic(home .. "/.codex/config.toml", inline))
  local out, code = setup(home, { "codex" })
  t.match(out, "cannot register: .*write it as a %[mcp_servers%.reasonix%] table")
  t.eq(code, 1)
  t.eq(files.read(home .. "/.codex/config.toml"), inline, "left as it was")
end, { timeout = 240000 })

test("no agent: setup says how to install it and fails; --install-agent runs npm with the pin, --remove takes it away", function(t)
  local home = t.tmpdir("rmcp-setup-agent")
  -- a copy of the binary with no agent beside it, and an npm that records its arguments and
  -- installs an agent that answers --version
  assert(files.mkdir_p(home .. "/bin"))
  local exe = home .. "/bin/reasonix-mcp"
  t.ok(uv.fs_copyfile(require("rmcp.host").exe, exe))
  assert(uv.fs_chmod(exe, 493))
  assert(files.write_atomic(home .. "/bin/npm", table.concat({
    "#!/bin/sh", "PATH=/usr/bin:/bin", 'echo "$@" > "$HOME/npm.args"', 'while [ "$1" != --prefix ]; do shift; done',
    'b="$2/node_modules/@reasonix/cli-linux-x64/bin"', 'mkdir -p "$b"', "printf '#!/bin/sh\\necho reasonix v0-test\\n' > \"$b/reasonix\"",
    'chmod +x "$b/reasonix"', "" }, "\n")))
  assert(uv.fs_chmod(home .. "/bin/npm", 493))
  local env = { "HOME=" .. home, "PATH=" .. home .. "/bin", "RMCP_TEST_RUN=" .. os.getenv("RMCP_TEST_RUN") }
  local function run(args)
    local r = assert(command.run(exe, { "setup", table.unpack(args) }, { env = env, timeout_ms = 90000 }))
    return r.stdout .. r.stderr, r.code
  end
  local out, code = run({ "codex" })
  t.match(out, "Agent:\n  not found: reasonix not found")
  t.eq(out:find("scripts/install-agent.sh", 1, true), nil, "a binary outside a checkout names no checkout script")
  t.match(out, "install it with `reasonix%-mcp setup codex %-%-install%-agent` %(npm install " .. config.AGENT_PACKAGE:gsub("%p", "%%%0"))
  t.eq(code, 1, "no agent: setup does not pretend it is done")
  out = run({ "codex", "--install-agent" }) -- (exits 1: the stand-in agent is no real one)
  local dir = home .. "/.local/share/reasonix-mcp/agent"
  t.match(out, "under Codex the agent would be: " .. dir:gsub("%p", "%%%0"), "the env file's REASONIX_BIN reaches Codex too")
  t.eq(files.read(home .. "/npm.args"), "install --prefix " .. dir .. " --no-audit --no-fund --loglevel=error " .. config.AGENT_PACKAGE .. "\n")
  t.match(out, "reasonix v0%-test")
  t.eq(files.read(home .. "/.config/reasonix-mcp/env"), "REASONIX_BIN=" .. dir .. "/node_modules/@reasonix/cli-linux-x64/bin/reasonix\n")
  t.match(out, "%[ok  %] agent binary +" .. dir:gsub("%p", "%%%0"), "doctor finds it through the env file")
  out = run({ "--remove" })
  t.match(out, "remove " .. dir:gsub("%p", "%%%0") .. " %(setup installed it%)")
  t.eq(uv.fs_stat(dir), nil)
  t.eq(uv.fs_stat(home .. "/.config/reasonix-mcp/env"), nil)
  t.eq(uv.fs_stat(home .. "/.codex/config.toml"), nil)
end, { timeout = 240000 })
