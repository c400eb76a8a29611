-- The checks of fuzz_agentd.c: agentd's socket API (agentd/api.lua over lib/jsonrpc.lua), each line
-- of an input fed to one connection as its NDJSON, against a fresh daemon table holding restored
-- sessions of the caller ("fuzz": idle with turns, orphaned, exited) and of another orchestrator.
-- Nothing may start a process (rmcp.proc and uv.spawn refuse, so spawn and resume fail as with a
-- missing binary). Checks: no Lua error escapes receive(); no handler raises (a raised
-- error comes back as -32603 with a traceback); every line written is one line of valid UTF-8
-- JSON, a response or an agent_event; the other orchestrator's sessions never show (an error may
-- echo an id the caller gave).
-- An input that does not start with "!" gets a valid hello first.
-- The core's process, socket and channel modules are stand-ins whose every function fails: no
-- process starts, no socket opens (the connection is fed directly).
for _, name in ipairs({ "rmcp.proc", "rmcp.sock", "rmcp.channel" }) do
  package.preload[name] = function()
    return setmetatable({}, { __index = function(_, k)
      return function() return nil, "fuzz: " .. name .. "." .. k .. " is not available" end
    end })
  end
end
package.preload["rmcp.host"] = function() return { version = "0.0.0-fuzz", exe = "/nonexistent/reasonix-mcp" } end
local uv = require "luv"
local json = require "rmcp.lib.json"
local utf8_fix = require("fuzz_utf8").fix
local sentinel = require "fuzz_sentinel"

uv.spawn = function() return nil, "fuzz: no processes" end
require("rmcp.lib.log").set_sink(function() end)

local config = require "rmcp.config"
local daemon = require "rmcp.agentd.daemon"
local session = require "rmcp.agentd.session"
local watch = require "rmcp.agentd.watch"
local api = require "rmcp.agentd.api"

local home = assert(os.getenv("RMCP_FUZZ_HOME"), "RMCP_FUZZ_HOME")
local project = "/tmp"

local HELLO = '{"jsonrpc":"2.0","id":0,"method":"hello","params":{"protocol":1,"orchestrator_id":"fuzz",'
  .. '"project_dir":"/tmp","client":{"name":"fuzz","warnings":true},"env":{"PATH":"/nonexistent"}}}'

-- The sessions a daemon restores before each input (plain records, as on disk).
local function records()
  return {
    { id = "rx-000000000001", owner = "fuzz", cwd = project, project_dir = project, task = "idle one",
      status = "idle", turns_total = 2, turns_drained = 0, last_text = "second", terminal_pending = true },
    { id = "rx-000000000002", owner = "fuzz", cwd = project, project_dir = project, task = "gone",
      status = "exited", exit_reason = "stopped", turns_total = 1, turns_drained = 1 },
    { id = "rx-000000000003", owner = "other", cwd = project, project_dir = project, task = "SECRET-OTHER",
      status = "idle", turns_total = 1, last_text = "SECRET-OTHER" },
  }
end

-- Writes the journal of the first session (two finished turns and a tool call).
local function write_journal(sessions)
  local f = assert(io.open(sessions .. "/rx-000000000001.events.jsonl", "w"))
  f:write('{"type":"spawn","owner":"fuzz","cwd":"/tmp","t":1}\n',
    '{"type":"tool_call","id":"t1","title":"read x","kind":"read","t":2}\n',
    '{"type":"turn_end","stop_reason":"end_turn","text":"first","t":3}\n',
    '{"type":"turn_end","stop_reason":"end_turn","text":"second","t":4}\n')
  f:close()
end

-- One input: nil when every check holds, else what failed (a Lua error also fails it).
return function(input)
  for line in input:gmatch("[^\n]+") do
    if sentinel.within(json.decode(line)) then return nil end
  end
  local paths = config.paths(home)
  write_journal(paths.sessions)
  local d = daemon.new(paths, nil)
  d.on_change = function(s, event, extra)
    watch.check(d, s)
    if event then api.emit(d, s, event, extra) end
  end
  d.on_output = function(s) watch.check(d, s) end
  d.shutdown = function() d.shutting_down = true end
  session.restore_records(d, records())
  local bad
  local conn = api.connect(d, function(line)
    if bad then return end
    if type(line) ~= "string" then bad = "sent a " .. type(line); return end
    if line:find("\n", 1, true) then bad = "sent a line with a newline: " .. line; return end
    local _, valid = utf8_fix(line)
    if not valid then bad = "sent invalid UTF-8: " .. string.format("%q", line); return end
    local msg = json.decode(line)
    if type(msg) ~= "table" then bad = "sent a line that is not a JSON object: " .. line; return end
    if msg.method == nil and msg.result == nil and msg.error == nil then bad = "sent neither a response nor a notification: " .. line; return end
    if type(msg.error) == "table" and type(msg.error.data) == "table" and msg.error.data.traceback then
      bad = "a handler raised: " .. tostring(msg.error.message) .. "\n" .. tostring(msg.error.data.traceback)
      return
    end
    -- (an error may echo the id the caller gave; nothing else may name or show that session)
    if line:find("SECRET-OTHER", 1, true) or (msg.error == nil and line:find("rx-000000000003", 1, true)) then
      bad = "another orchestrator's session leaked: " .. line
    end
  end)
  if input:sub(1, 1) ~= "!" then conn.peer:receive(HELLO) end
  for line in input:gmatch("[^\n]+") do
    conn.peer:receive(line)
    if bad then break end
  end
  api.close(d, conn)
  -- what was deferred (saves, timers of the watches just closed) runs and is freed
  uv.run("nowait")
  if bad then return bad end
  return nil
end
