-- Smoke test of the foundation: the real `reasonix acp`, started through the core's spawn (own
-- process group, PDEATHSIG) with NDJSON framing and the JSON-RPC peer, on the offline provider,
-- answers initialize, session/new and one session/prompt whose streamed text and reasoning match
-- the scenario. The fake agent gets the same treatment for its fault modes (crash, hang).
-- needs: agent python3
local uv = require "luv"
local proc = require "rmcp.proc"
local jsonrpc = require "rmcp.lib.jsonrpc"
local async = require "rmcp.lib.async"
local json = require "rmcp.lib.json"
local rh = require "reasonix_home"
local acp_client = require "rmcp.acp.client"

-- Starts argv through rmcp.proc with a JSON-RPC peer on its stdio; collects session/update params
-- and the raw lines.
local function start_agent(t, file, args, env, cwd)
  local updates, stderr, exited, lines = {}, {}, nil, {}
  local peer
  local p = assert(proc.spawn{
    file = file, args = args, env = env, cwd = cwd,
    stdin = "pipe", stdout = "pipe", stderr = "pipe",
    on_line = function(line) lines[#lines + 1] = line; peer:receive(line) end,
    on_stderr = function(chunk) stderr[#stderr + 1] = chunk end,
    on_exit = function(code, signal) exited = { code = code, signal = signal }; peer:close("agent exited") end,
  })
  peer = jsonrpc.new{ name = "smoke", send = function(line) p.stdin:write(line) end,
    on_notification = function(method, params)
      if method == "session/update" then updates[#updates + 1] = params.update end
    end }
  t.defer(function()
    if p:running() then
      p.stdin:shutdown()
      t.wait_for(function() return exited end, 3000, "the agent to exit after stdin closed")
    end
  end)
  return {
    proc = p, peer = peer, updates = updates, lines = lines,
    stderr = function() return table.concat(stderr) end,
    exited = function() return exited end,
  }
end

-- Concatenates the text of updates of one kind.
local function text_of(updates, kind)
  local out = {}
  for _, u in ipairs(updates) do
    if u.sessionUpdate == kind and u.content and u.content.text then out[#out + 1] = u.content.text end
  end
  return table.concat(out)
end

test("real reasonix acp: initialize, session/new, a streamed prompt", function(t)
  local bin = assert(rh.find_agent())
  local prov = assert(rh.start_provider{ scenario = { rules = {
    { last_role = "user", user_contains = "SMOKE", reasoning = "thinking it over", text = "smoke answer: 42", chunk = 5 } } } })
  t.defer(function() prov:stop() end)
  local home = rh.make_home(prov.port)
  t.defer(home.cleanup)
  local a = start_agent(t, bin, { "acp" }, rh.env_list(home.env), home.workspace)

  local init, err = async.request(a.peer, "initialize", { protocolVersion = 1,
    clientCapabilities = { fs = { readTextFile = false, writeTextFile = false } } })
  t.ok(init, "initialize failed: " .. tostring(err))
  t.eq(init.protocolVersion, 1, "ACP protocol version")
  local new
  new, err = async.request(a.peer, "session/new", { cwd = home.workspace, mcpServers = json.array() })
  t.ok(new and new.sessionId, "session/new failed: " .. tostring(err))
  local result
  result, err = async.request(a.peer, "session/prompt", { sessionId = new.sessionId,
    prompt = { { type = "text", text = "SMOKE test" } } })
  t.ok(result, "session/prompt failed: " .. tostring(err))
  t.eq(result.stopReason, "end_turn")
  t.eq(text_of(a.updates, "agent_message_chunk"), "smoke answer: 42", "streamed text")
  t.eq(text_of(a.updates, "agent_thought_chunk"), "thinking it over", "streamed reasoning")
  -- agentd drops the notifications it ignores (all but session/update and the usage status updates)
  -- undecoded by their head
  -- (acp/client.lua): the agent's own layout must still have it, or every one of them is decoded
  local statuses, ignored, dropped = 0, 0, 0
  for _, line in ipairs(a.lines) do
    local msg = json.decode(line)
    local usage_status = type(msg) == "table" and msg.method == "_reasonix.io/session/status_update"
      and type(msg.params) == "table" and msg.params.event == "usage" -- (read: what the turn spent)
    if type(msg) == "table" and msg.method and msg.id == nil and msg.method ~= "session/update" and not usage_status then
      ignored = ignored + 1
      if msg.method == "_reasonix.io/session/status_update" then statuses = statuses + 1 end
      if acp_client.ignored_notification(line) then dropped = dropped + 1 end
    else
      t.eq(acp_client.ignored_notification(line), false, "only ignored notifications are dropped: " .. line:sub(1, 120))
    end
  end
  t.ok(statuses >= 2, "the turn sent its status notifications (" .. statuses .. ")")
  t.eq(dropped, ignored, "every notification agentd ignores has the head it drops")
  t.eq(acp_client.ignored_notification('{"jsonrpc":"2.0","method":"_reasonix.io/session/status_update","id":7,"params":{}}'),
    false, "a request of that name (it has an id) is answered, never dropped")
  local reqs = prov:requests()
  t.ok(#reqs >= 1, "the provider saw the request")
  t.match(reqs[#reqs].body.messages[#reqs[#reqs].body.messages].content, "SMOKE test", "the prompt reached the model")
end)

test("fake agent crash mode: exit code and stderr text reach Lua after EOF", function(t)
  local fake = os.getenv("RMCP_SOURCE_DIR") .. "/tests/fake_agent/fake_acp.lua"
  local env = { "PATH=" .. os.getenv("PATH"), "FAKE_ACP_MODE=crash", "RMCP_TEST_RUN=" .. os.getenv("RMCP_TEST_RUN") }
  local a = start_agent(t, require("rmcp.host").exe, { "script", fake, "acp" }, env)
  t.ok(async.request(a.peer, "initialize", { protocolVersion = 1 }), "initialize")
  local new = async.request(a.peer, "session/new", { cwd = "/tmp", mcpServers = json.array() })
  local result, err = async.request(a.peer, "session/prompt", { sessionId = new.sessionId,
    prompt = { { type = "text", text = "go" } } })
  t.eq(result, nil, "a crashed turn has no result")
  t.match(tostring(err), "agent exited")
  t.wait_for(function() return a.exited() end, 5000, "the exit status")
  t.eq(a.exited().code, 3, "exit code of the crash mode")
  t.ok(#a.stderr() > 0, "stderr text captured")
end)

test("fake agent hang mode: kill of the process group ends it", function(t)
  local fake = os.getenv("RMCP_SOURCE_DIR") .. "/tests/fake_agent/fake_acp.lua"
  local env = { "PATH=" .. os.getenv("PATH"), "FAKE_ACP_MODE=hang", "RMCP_TEST_RUN=" .. os.getenv("RMCP_TEST_RUN") }
  local a = start_agent(t, require("rmcp.host").exe, { "script", fake, "acp" }, env)
  t.ok(async.request(a.peer, "initialize", { protocolVersion = 1 }), "initialize")
  local new = async.request(a.peer, "session/new", { cwd = "/tmp", mcpServers = json.array() })
  local answered = false
  a.peer:request("session/prompt", { sessionId = new.sessionId, prompt = { { type = "text", text = "go" } } },
    function(r) answered = r ~= nil end)
  local timer = uv.new_timer()
  t.await(function(done) timer:start(300, 0, done) end, 2000, "a short wait on a hung prompt")
  timer:close()
  t.eq(answered, false, "a hung agent does not answer")
  t.ok(a.proc:kill("KILL"), "kill sent to the group")
  t.wait_for(function() return a.exited() end, 3000, "the hung agent to die")
  t.eq(a.exited().signal, 9)
end)
