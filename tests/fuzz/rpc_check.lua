-- The checks of fuzz_rpc.c: the MCP session (server/mcp.lua over lib/jsonrpc.lua) fed each line of
-- an input, as the launcher hands lines over, with a scripted agentd link like tests/lua/mcp_spec.lua's
-- (it answers in turn with a result, a raw result, an error, and not at all). No Lua error may escape
-- receive(), and every line the server writes must be one line of valid UTF-8 JSON in an id-first
-- envelope (the launcher routes by that prefix). An input that does not start with "!" gets a valid
-- initialize first, so the fuzzer spends its time past the handshake.
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local mcp = require "rmcp.server.mcp"
local utf8_fix = require("fuzz_utf8").fix
local sentinel = require "fuzz_sentinel"

require("rmcp.lib.log").set_sink(function() end)

local INIT = {
  '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    .. '"capabilities":{"elicitation":{}},"clientInfo":{"name":"fuzz","version":"1"}}}',
  '{"jsonrpc":"2.0","method":"notifications/initialized"}',
}

-- The scripted link's answers, taken in turn: result, raw result, agentd error, no answer.
local ANSWERS = {
  function() return { sessions = json.array(), ok = true } end,
  function() return json.raw('{"sessions":[],"counts":{},"path":"/tmp/x"}') end,
  function() return nil, jsonrpc.error(-32001, "unknown session rx-1") end,
  function() return nil, nil end,
}

-- One input: nil when every check holds, else what failed (a Lua error also fails it).
return function(input)
  for line in input:gmatch("[^\n]+") do
    if sentinel.within(json.decode(line)) then return nil end
  end
  local bad
  local link, n = { conn = true }, 0
  function link.request(_, _, _, cb)
    n = n + 1
    local result, err = ANSWERS[(n - 1) % #ANSWERS + 1]()
    if result ~= nil or err ~= nil then cb(result, err) end
    return n
  end
  function link.cancel() end
  function link.close() end
  local s = mcp.new{
    send = function(line)
      if bad then return end
      if type(line) ~= "string" then bad = "sent a " .. type(line); return end
      if line:find("\n", 1, true) then bad = "sent a line with a newline: " .. line; return end
      local _, valid = utf8_fix(line)
      if not valid then bad = "sent invalid UTF-8: " .. string.format("%q", line); return end
      if json.decode(line) == nil then bad = "sent a line that is not JSON: " .. line; return end
      if not jsonrpc.envelope(line) then bad = "sent a line that is not an id-first envelope: " .. line end
    end,
    project_dir = "/tmp/fuzz-project", version = "0.0.0", link = function() return link end,
  }
  if input:sub(1, 1) ~= "!" then
    for _, line in ipairs(INIT) do s:receive(line) end
  end
  for line in input:gmatch("[^\n]+") do
    s:receive(line)
    if bad then return bad .. "\n  after: " .. string.format("%q", line) end
  end
  s:close()
  return bad
end
