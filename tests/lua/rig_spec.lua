-- The offline rig itself, proven against the real agent: tests/support/reasonix_home.lua starts the
-- mock provider and a private agent home, and the real `reasonix acp`, driven through our own ACP
-- client (rmcp.acp.client), streams text and reasoning, plans, asks questions that get answered,
-- writes a file, runs bash, takes a mid-turn steer and reports a provider 400; the model saw what the
-- agent was told. Also the fake agent (scale and fault tests only) answering through the same client.
-- needs: agent python3
local uv = require "luv"
local async = require "rmcp.lib.async"
local json = require "rmcp.lib.json"
local acp = require "rmcp.acp.client"
local rh = require "reasonix_home"

local TODOS = {
  { content = "Inspect code", status = "in_progress" }, { content = "Write fix", status = "pending" },
  { content = "Run tests", status = "pending" },
}
local QUESTIONS = {
  { header = "Library", question = "Which library?", multiSelect = false,
    options = { { label = "requests", description = "popular" }, { label = "httpx" } } },
  { header = "Scope", question = "Which parts?", multiSelect = false, options = { { label = "api" }, { label = "cli" } } },
}
local SCENARIO = { rules = {
  { name = "hello", last_role = "user", user_contains = "HELLO", reasoning = "thinking about it", text = "hello from mock", chunk = 5 },
  { name = "plan", last_role = "user", user_contains = "PLAN", tool_calls = { { name = "todo_write", arguments = { todos = TODOS } } } },
  { name = "plan-done", last_tool_name = "todo_write", text = "Plan done." },
  { name = "ask", last_role = "user", user_contains = "ASK", tool_calls = { { name = "ask", arguments = { questions = QUESTIONS } } } },
  { name = "ask-done", last_tool_name = "ask", text = "Got: ", echo = "tool_result" },
  { name = "write", last_role = "user", user_contains = "WRITE",
    tool_calls = { { name = "write_file", arguments = { path = "notes/hello.txt", content = "line1\nline2\n" } } } },
  { name = "write-done", last_tool_name = "write_file", text = "Wrote it." },
  { name = "bash", last_role = "user", user_contains = "BASH",
    tool_calls = { { name = "bash", arguments = { command = "echo bash-ok-$((6*7)) | tee bash_out.txt" } } } },
  { name = "bash-done", last_tool_name = "bash", text = "Ran: ", echo = "tool_result" },
  { name = "slow", last_role = "user", user_contains = "SLOW", text = string.rep("x", 60), chunk = 2, delay = 0.1 },
  { name = "steered", last_role = "user", user_contains = "STEER-ONE", text = "steered ok" },
  { name = "e400", last_role = "user", user_contains = "FAIL400", status = 400, error = "mock says no", times = 1 },
} }

-- Starts an agent (bin + args) through rmcp.acp.client; it records updates and answers permission
-- requests from the answers queue. Stopped after the case.
local function start(t, bin, args, env, cwd)
  local a = { updates = {}, requests = {}, answers = {} }
  a.agent = assert(acp.start({
    bin = bin, args = args, cwd = cwd, env = env,
    on_update = function(_, u) a.updates[#a.updates + 1] = u end,
    on_permission = function(params, reply)
      a.requests[#a.requests + 1] = params
      local answer = table.remove(a.answers, 1)
      reply(answer and { outcome = { outcome = "selected", optionId = answer } } or { outcome = { outcome = "cancelled" } })
    end,
  }))
  t.defer(function() if not a.agent.exited then a.agent:stop(nil, 200) end end)
  -- The text of the updates of kind since index from (default all).
  function a.text(kind, from)
    local out = {}
    for i = from or 1, #a.updates do
      local u = a.updates[i]
      if u.sessionUpdate == (kind or "agent_message_chunk") and type(u.content) == "table" then out[#out + 1] = u.content.text end
    end
    return table.concat(out)
  end
  -- One prompt turn; returns result, err and the index of its first update.
  function a.prompt(sid, text)
    local from = #a.updates + 1
    local r, err = a.agent:call("session/prompt", { sessionId = sid, prompt = { { type = "text", text = text } } })
    return r, err, from
  end
  return a
end

test("the real agent on the mock provider: text, plan, question, write, bash, steer, 400", function(t)
  local prov = assert(rh.start_provider({ scenario = SCENARIO }))
  t.defer(function() prov:stop() end)
  local home = rh.make_home(prov.port)
  t.defer(function() home.cleanup() end)
  local a = start(t, assert(rh.find_agent()), { "acp" }, rh.env_list(home.env), home.workspace)
  local init = assert(a.agent:initialize({ name = "rig", version = "1" }))
  t.eq(init.protocolVersion, 1)
  local sess = assert(a.agent:call("session/new", { cwd = home.workspace, mcpServers = json.array() }))
  local sid = sess.sessionId
  local opts = {}
  for _, o in ipairs(sess.configOptions or {}) do opts[o.id] = o end
  t.eq(opts.model and opts.model.currentValue, "mock/mock-model")
  t.ok(opts.tool_approval, "session/new offers tool_approval")

  local r, err, from = a.prompt(sid, "HELLO there")
  t.eq(r, { stopReason = "end_turn" }, tostring(err))
  t.eq(a.text("agent_message_chunk", from), "hello from mock")
  t.eq(a.text("agent_thought_chunk", from), "thinking about it")

  r, err, from = a.prompt(sid, "PLAN something")
  local plan
  for i = from, #a.updates do if a.updates[i].sessionUpdate == "plan" then plan = a.updates[i] end end
  t.eq(r, { stopReason = "end_turn" }, tostring(err))
  t.ok(plan, "a plan update")
  t.eq(plan.entries[1].content, "Inspect code")
  t.eq(#plan.entries, 3)
  t.eq(a.text("agent_message_chunk", from), "Plan done.")

  a.answers = { "q1:2", "q2:1" }
  r, err, from = a.prompt(sid, "ASK me")
  t.eq(r, { stopReason = "end_turn" }, tostring(err))
  t.eq({ a.requests[1].toolCall.title, a.requests[2].toolCall.title }, { "Which library?", "Which parts?" },
    "one request_permission per question")
  t.match(a.text("agent_message_chunk", from), "%- Library: httpx")
  t.match(a.text("agent_message_chunk", from), "%- Scope: api")

  r, err = a.prompt(sid, "WRITE a file")
  t.eq(r, { stopReason = "end_turn" }, tostring(err))
  local f = io.open(home.workspace .. "/notes/hello.txt")
  t.eq(f and f:read("a"), "line1\nline2\n", "write_file landed in the workspace")
  if f then f:close() end

  assert(a.agent:call("session/set_config_option", { sessionId = sid, configId = "tool_approval", value = "danger-full-access" }))
  r, err, from = a.prompt(sid, "BASH run")
  t.eq(r, { stopReason = "end_turn" }, tostring(err))
  t.match(a.text("agent_message_chunk", from), "bash%-ok%-42")
  t.ok(uv.fs_stat(home.workspace .. "/bash_out.txt"), "bash wrote in the workspace")

  -- a steer while the slow answer streams reaches the model inside the same turn
  local turn_from = #a.updates + 1
  local done
  a.agent:request("session/prompt", { sessionId = sid, prompt = { { type = "text", text = "SLOW please" } } },
    function(res, e) done = { res, e } end)
  t.wait_for(function() return a.text("agent_message_chunk", turn_from) ~= "" end, 10000, "the slow stream to start")
  local steer = assert(a.agent:call("_reasonix.io/session/steer", { sessionId = sid, prompt = { { type = "text", text = "STEER-ONE use email" } } }))
  t.eq(steer.disposition, "steer_accepted")
  t.wait_for(function() return done end, 20000, "the steered turn to end")
  t.eq(done[1], { stopReason = "end_turn" })
  local reqs = prov:requests()
  local last = reqs[#reqs].body.messages[#reqs[#reqs].body.messages]
  t.eq(last.role, "user")
  t.match(last.content, "Mid%-turn steer")
  t.match(last.content, "STEER%-ONE")
  local _, serr = a.agent:call("_reasonix.io/session/steer", { sessionId = sid, prompt = { { type = "text", text = "late" } } })
  t.eq(serr and serr.code, -32600, "a steer while idle is refused")

  r, err = a.prompt(sid, "FAIL400 now")
  t.eq(r, nil)
  t.eq(err.code, -32603)
  t.match(err.message, "status 400")

  -- what the model received
  local tool_msgs = {}
  for _, req in ipairs(prov:requests()) do
    t.eq(req.headers.authorization, "Bearer mock-key", "the key from REASONIX_HOME/.env is sent")
    for _, m in ipairs(req.body.messages) do
      if m.role == "tool" then tool_msgs[#tool_msgs + 1] = tostring(m.content) end
    end
  end
  local all = table.concat(tool_msgs, "\n")
  t.match(all, '"counts"', "todo_write's result reached the model")
  t.match(all, "The user answered:", "the answers reached the model")
  t.match(all, "wrote 12 bytes", "write_file's result reached the model")

  local code
  t.await(function(cb) a.agent:stop(function() code = a.agent.exit_code; cb() end) end, 5000, "the agent to exit")
  t.eq(code, 0, "the agent exits 0 on stdin EOF")
end, { timeout = 90000 })

test("the fake agent answers through the same client (on reasonix-mcp, no other interpreter)", function(t)
  local fake = rh.REPO .. "/tests/fake_agent/fake_acp.lua"
  local env = rh.env_list({ PATH = os.getenv("PATH"), FAKE_ACP_MODE = "normal", RMCP_TEST_RUN = os.getenv("RMCP_TEST_RUN") })
  local a = start(t, require("rmcp.host").exe, { "script", fake, "acp" }, env, "/tmp")
  assert(a.agent:initialize({ name = "rig", version = "1" }))
  local sess = assert(a.agent:call("session/new", { cwd = "/tmp", mcpServers = json.array() }))
  local r, err, from = a.prompt(sess.sessionId, "echo me")
  t.eq(r, { stopReason = "end_turn" }, tostring(err))
  t.eq(a.text("agent_message_chunk", from), "echo me")
  local code
  t.await(function(cb) a.agent:stop(function() code = a.agent.exit_code; cb() end) end, 5000, "the fake to exit")
  t.eq(code, 0)
end)
