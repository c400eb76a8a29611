-- The documentation a newcomer reads stays true: the generated pages of docs/ match their sources
-- (scripts/gen-docs.lua), the README keeps its promised shape (at most 150 lines, the set-up lines
-- other tests and CI run), every relative link of README.md and docs/ leads to a file, and every
-- setting the code reads is in lua/rmcp/config.lua's settings list (the source of
-- configuration.md), with its default written there once.
local config = require "rmcp.config"
local src = require "lua_source"

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local ROOT = here .. "../../"
local BIN = os.getenv("RMCP_BIN") or require("rmcp.host").exe

-- The text of file path (relative to the repository).
local function read(path)
  return src.read(ROOT .. path)
end

-- Output (stdout and stderr) and success of a shell command.
local function run(cmd)
  local f = io.popen(cmd .. " 2>&1")
  local text = f:read("a")
  return text, f:close()
end

-- The files under dir (relative) whose names end with suffix, found by the shell.
local function files(dir, suffix)
  local out = {}
  local list = run("cd " .. ROOT .. " && find " .. dir .. " -type f -name '*" .. suffix .. "'")
  for path in list:gmatch("[^\n]+") do out[#out + 1] = path end
  return out
end

test("the generated pages of docs/ match the tool table and config.lua", function(t)
  local out, ok = run("cd " .. ROOT .. " && " .. BIN .. " script scripts/gen-docs.lua --check")
  t.ok(ok, "stale generated docs:\n" .. out)
end)

test("README.md is at most 150 lines and keeps the lines tests and CI run", function(t)
  local readme = read("README.md")
  local lines = select(2, readme:gsub("\n", ""))
  t.ok(lines <= 150, "README.md has " .. lines .. " lines (at most 150: the rest belongs in docs/)")
  local fenced = {}
  for block in readme:gmatch("\n```[%w]*\n(.-)\n```") do
    for line in block:gmatch("[^\n]+") do fenced[line] = true end
  end
  for _, line in ipairs({ "reasonix-mcp setup claude", "reasonix-mcp setup codex", "sudo scripts/demo.sh", "sudo scripts/test.sh" }) do
    t.ok(fenced[line], "README.md has a fenced block with the line `" .. line .. "`")
  end
  t.ok(readme:find([[claude mcp add-json reasonix '{"type":"stdio","command":"npx","args":["-y","reasonix-mcp"],"alwaysLoad":true}']], 1, true), "README.md gives the npx one-liner")
  t.match(read(".ci/run"), "exec bash scripts/test.sh", ".ci/run runs the README's test command")
end)

test("every relative link of README.md and docs/ leads to a file", function(t)
  local pages = files("docs", ".md")
  pages[#pages + 1] = "README.md"
  local broken = {}
  for _, page in ipairs(pages) do
    local dir = page:match("^(.*/)") or ""
    for target in read(page):gmatch("%]%(([^)%s]+)%)") do
      local path = target:gsub("#.*$", "")
      if path ~= "" and not path:match("^%a+:") and not select(2, run("test -e " .. ROOT .. dir .. path)) then
        broken[#broken + 1] = page .. ": " .. target
      end
    end
  end
  t.eq(broken, {}, "links to no file")
end)

test("every default, limit and REASONIX_* name the code reads is a documented setting", function(t)
  local rows = {}
  for _, row in ipairs(config.settings) do
    if not row.group then
      t.ok(type(row[3]) == "string" and row[3] ~= "", row[1] .. " says what it does")
      rows[row[1]] = row
    end
  end
  for key, value in pairs(config.defaults) do
    local row = rows["REASONIX_MCP_DEFAULT_" .. key:upper()]
    t.ok(row and row[2] == value, "spawn default " .. key .. " is a setting with its default")
  end
  for key, value in pairs(config.limits) do
    local row = rows["REASONIX_MCP_" .. key:upper()]
    t.ok(row and row[2] == value, "limit " .. key .. " is a setting with its default")
  end
  local sources = files("lua", ".lua")
  for _, more in ipairs({ files("core", ".c"), files("examples", ".lua") }) do
    for _, path in ipairs(more) do sources[#sources + 1] = path end
  end
  local missing = {}
  for _, path in ipairs(sources) do
    for name in read(path):gmatch("REASONIX_[%u%d_]+") do
      local family = name:match("^REASONIX_MCP_AGENT_%u") and "REASONIX_MCP_AGENT_<NAME>"
      if not rows[family or name] and not name:match("_$") then missing[name] = path end -- (a prefix: its names are rows)
    end
  end
  t.eq(missing, {}, "settings the code reads that lua/rmcp/config.lua's settings list lacks")
end)

test("a setting's default is written once, in config.lua's limits, never again where it is read", function(t)
  local twice = {}
  -- the settings list names each number's limit (M.limits.x) instead of writing the number again;
  -- only a setting an example policy reads keeps its default there
  local list = read("lua/rmcp/config.lua"):match("\nM%.settings = (%b{})")
  for name, number, what in list:gmatch('{%s*"(REASONIX_[%u%d_]+)",%s*(%-?%d[%d.]*),%s*"([^"]*)') do
    if not what:match("^examples/") then twice[#twice + 1] = "config.lua settings: " .. name .. " " .. number end
  end
  for _, path in ipairs(files("lua", ".lua")) do
    local text = read(path)
    -- a fallback beside config.limit: a number, or a table of the module's own
    for call in text:gmatch("config%.limit%b()%s+or%s+[%w_.%[%]]+") do twice[#twice + 1] = path .. ": " .. call end
    -- a limit's default written as a fallback in the file that reads that limit
    for name in text:gmatch('config%.limit%(%s*"([%w_]+)"%s*%)') do
      local default = config.limits[name]
      local escaped = tostring(default):gsub("%p", "%%%0")
      local at = default and text:find("[^%w_.]or%s+" .. escaped .. "%f[^%w_.]")
      if at then twice[#twice + 1] = path .. ": " .. name .. "'s default " .. tostring(default) .. " written again" end
    end
    -- a setting's variable read directly, with a value after it for when it is unset
    for call in text:gmatch('env%(%s*"REASONIX_[%u%d_]+"%s*%)[^\n]-%)%s*or%s+%-?[%w_.]+') do
      twice[#twice + 1] = path .. ": " .. call
    end
  end
  t.eq(twice, {}, "a setting's default written again (put it in config.limits once; the settings list shows it)")
end)
