-- agentd turns against the real `reasonix acp` on the offline provider: spawn → turn end, mid-turn
-- steer, forced steer when idle, permissions, questions, plan, errored turn, crash, stop.
-- needs: agent python3
local uv = require "luv"
local json = require "rmcp.lib.json"
local support = require "agentd_support"

-- The provider's chat requests whose last user message contains needle.
local function requests_with(prov, needle)
  local out = {}
  for _, r in ipairs(prov:requests()) do
    local msgs = r.body and r.body.messages or {}
    for i = #msgs, 1, -1 do
      local m = msgs[i]
      if m.role == "user" then
        if type(m.content) == "string" and m.content:find(needle, 1, true) then out[#out + 1] = r end
        break
      end
    end
  end
  return out
end

-- Text of the last tool message of a provider request.
local function last_tool_result(req)
  local msgs = req.body.messages
  local m = msgs[#msgs]
  return m.role == "tool" and (type(m.content) == "string" and m.content or "") or nil
end

test("spawn returns at once with posture, the turn ends with the model's text, the contract is sent once", function(t)
  local ctx = support.setup(t, { scenario = { rules = {
    { last_role = "user", user_contains = "HELLO", text = "hi there" },
    { last_role = "user", user_contains = "AGAIN", text = "second answer" },
  } } })
  local c = ctx.client()
  local events = {}
  c.opts.on_notification = function(method, params) if method == "agent_event" then events[#events + 1] = params end end
  local r = ctx.call(c, "spawn", { task = "HELLO agent" })
  t.match(r.session_id, "^rx%-")
  t.eq(r.status, "running")
  t.eq(r.cwd, uv.fs_realpath(ctx.ws))
  t.eq(r.model, "mock/mock-model")
  t.ok(#r.warnings >= 1, "default model not configured → fallback warning")
  t.match(r.warnings[1], "opencode%-go/deepseek%-v4%-flash")
  t.eq(r.tool_approval, "yolo")
  t.eq(r.agent_config.tool_approval, "danger-full-access")
  local skipped = table.concat(r.skipped_options, ",")
  t.match(skipped, "work_mode")
  t.match(skipped, "effort")
  -- what the product decides: no sandbox of ours was asked for; the agent's own (its doctor's word)
  -- is reported as found, with a warning whenever its writes cannot be enforced
  t.eq(r.posture.enforced, { sandbox = "none" })
  t.ok(r.posture.sandbox == "none" or r.posture.sandbox == "bwrap", r.posture.sandbox)
  if r.posture.sandbox == "none" then t.ok(r.posture.warning, "posture warns that writes cannot be enforced") end
  t.eq(r.posture.workspace_root, uv.fs_realpath(ctx.ws))
  local p = ctx.call(c, "poll", { session_id = r.session_id, detail = true })
  t.ok(p.events_filtered >= 1, "static setup events are filtered")
  for _, e in ipairs(p.events) do t.ne(e.type, "available_commands_update") end
  local res = ctx.watch_until(c, { r.session_id }, function(_, x) return x.status == "idle" end)
  t.eq(res.stop_reason, "end_turn")
  t.eq(res.message, "hi there")
  t.ok(res.transcript_path)
  -- the terminal state was delivered: a new watch does not return it again
  local w = ctx.call(c, "watch", { session_ids = { r.session_id }, timeout = 0.2 })
  t.eq(w.timed_out, true)
  -- a follow-up turn, and the contract is not repeated
  local s = ctx.call(c, "send", { session_id = r.session_id, message = "AGAIN please" })
  t.eq(s.delivered, "new_turn")
  res = ctx.watch_until(c, { r.session_id }, function(_, x) return x.status == "idle" end)
  t.eq(res.message, "second answer")
  local with_contract = 0
  for _, req in ipairs(ctx.prov:requests()) do
    for _, m in ipairs(req.body.messages) do
      if m.role == "user" and type(m.content) == "string" and m.content:find("[reasonix-mcp status contract]", 1, true) then
        with_contract = with_contract + 1
      end
    end
  end
  t.eq(with_contract, 2, "the contract is in the first prompt only (seen in both requests' history)")
  t.eq(#requests_with(ctx.prov, "AGAIN please"), 1)
  local second = requests_with(ctx.prov, "AGAIN please")[1]
  t.ok(not second.body.messages[#second.body.messages].content:find("status contract", 1, true))
  local kinds = {}
  for _, e in ipairs(events) do kinds[#kinds + 1] = e.event end
  t.match(table.concat(kinds, ","), "turn_end")
end)

test("a steer inside a running turn reaches the model in the same turn", function(t)
  local ctx = support.setup(t, { scenario = { rules = {
    { last_role = "user", user_contains = "STEER-ONE", text = "steered ok" },
    -- 2.5 s of stream after the first output: the steer lands in it even on a slow build
    { last_role = "user", user_contains = "SLOW", text = string.rep("x", 100), chunk = 2, delay = 0.05 },
  } } })
  local c = ctx.client()
  local r = ctx.call(c, "spawn", { task = "SLOW work" })
  local sid = r.session_id
  ctx.call(c, "wait", { session_ids = { sid } }) -- first output: the turn is streaming
  local s = ctx.call(c, "send", { session_id = sid, message = "STEER-ONE use email", expect = "steer" })
  t.eq(s.delivered, "steer")
  local res = ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  t.eq(res.stop_reason, "end_turn")
  t.match(res.message, "steered ok")
  local p = ctx.call(c, "poll", { session_id = sid, detail = true })
  t.eq(p.counters.turns, 1, "one turn: the steer did not start another")
  local steered = requests_with(ctx.prov, "STEER-ONE")
  t.eq(#steered, 1)
  local last = steered[1].body.messages[#steered[1].body.messages]
  t.match(last.content, "Mid%-turn steer queued by the user")
end)

test("forced steer when idle starts a new turn; expect narrows it", function(t)
  local ctx = support.setup(t, { scenario = { rules = {
    { last_role = "user", user_contains = "FIRST", text = "one" },
    { last_role = "user", user_contains = "NEXT", text = "two" },
  } } })
  local c = ctx.client()
  local sid = ctx.call(c, "spawn", { task = "FIRST" }).session_id
  ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  local err = ctx.call_err(c, "send", { session_id = sid, message = "NEXT", expect = "steer" })
  t.eq(err.code, -32004)
  local s = ctx.call(c, "send", { session_id = sid, message = "NEXT turn" })
  t.eq(s.delivered, "new_turn")
  local res = ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  t.eq(res.message, "two")
  t.eq(#requests_with(ctx.prov, "NEXT turn"), 1)
end)

test("permission round trip under ask (read-only): allow writes, reject blocks", function(t)
  local ctx = support.setup(t, { scenario = { rules = {
    { last_role = "user", user_contains = "WRITEA", tool_calls = { { name = "write_file", arguments = { path = "a.txt", content = "A\n" } } } },
    { last_role = "user", user_contains = "WRITEB", tool_calls = { { name = "write_file", arguments = { path = "b.txt", content = "B\n" } } } },
    { last_tool_name = "write_file", text = "result: ", echo = "tool_result" },
  } } })
  local c = ctx.client()
  local r = ctx.call(c, "spawn", { task = "WRITEA now", tool_approval = "ask" })
  t.eq(r.agent_config.tool_approval, "read-only")
  local sid = r.session_id
  local res = ctx.watch_until(c, { sid }, function(_, x) return x.permission_request ~= nil end)
  t.eq(res.status, "awaiting_decision")
  local pr = res.permission_request
  t.eq(pr.kind, "permission")
  t.match(pr.tool_call.title, "write_file")
  t.eq(pr.tool_call.rawInput.path, "a.txt")
  local list = ctx.call(c, "list", {})
  t.eq(list.sessions[1].pending_decision.request_id, pr.request_id)
  local bad = ctx.call_err(c, "respond_permission", { session_id = sid, option_id = "zzz" })
  t.eq(bad.code, -32602)
  local a = ctx.call(c, "respond_permission", { session_id = sid, option_id = "allow_once" })
  t.eq(a.answered, true)
  res = ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  t.match(res.message, "wrote 2 bytes")
  t.ok(uv.fs_stat(ctx.ws .. "/a.txt"), "a.txt written")
  ctx.call(c, "send", { session_id = sid, message = "WRITEB too" })
  res = ctx.watch_until(c, { sid }, function(_, x) return x.permission_request ~= nil end)
  t.eq(res.message, nil, "a decision's message is new text only, not the previous turn's")
  ctx.call(c, "respond_permission", { session_id = sid, option_id = "reject_once", request_id = res.permission_request.request_id })
  res = ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  t.match(res.message, "blocked")
  t.ok(not uv.fs_stat(ctx.ws .. "/b.txt"), "b.txt not written")
  local tr = ctx.call(c, "transcript", { session_id = sid })
  t.eq(tr.files.written[1], uv.fs_realpath(ctx.ws) .. "/a.txt")
  t.eq(#tr.files.written, 1)
end)

test("an agent question is answered and the answer reaches the model", function(t)
  local ctx = support.setup(t, { scenario = { rules = {
    { last_role = "user", user_contains = "ASKQ", tool_calls = { { name = "ask", arguments = { questions = { {
      header = "Library", question = "Which library?", multiSelect = false,
      options = { { label = "requests", description = "popular" }, { label = "httpx" } } } } } } } },
    { last_tool_name = "ask", text = "Got: ", echo = "tool_result" },
  } } })
  local c = ctx.client()
  local sid = ctx.call(c, "spawn", { task = "ASKQ me" }).session_id
  local res = ctx.watch_until(c, { sid }, function(_, x) return x.permission_request ~= nil end)
  local pr = res.permission_request
  t.eq(pr.kind, "question")
  t.eq(pr.tool_call.title, "Which library?")
  t.eq(pr.options[2].optionId, "q1:2")
  ctx.call(c, "respond_permission", { session_id = sid, option_id = "q1:2" })
  res = ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  t.match(res.message, "httpx")
  local seen = false
  for _, req in ipairs(ctx.prov:requests()) do
    local tr = last_tool_result(req)
    if tr and tr:find("Library: httpx", 1, true) then seen = true end
  end
  t.ok(seen, "the model received the answer")
end)

test("plan and current work reach watch, poll and agent_event", function(t)
  local ctx = support.setup(t, { scenario = { rules = {
    { last_role = "user", user_contains = "PLANIT", tool_calls = { { name = "todo_write", arguments = { todos = {
      { content = "Inspect code", status = "in_progress" }, { content = "Write fix", status = "pending" } } } } } },
    { last_tool_name = "todo_write", text = "Plan done.", delay_first = 4 },
  } } })
  local c = ctx.client()
  local status_events = 0
  c.opts.on_notification = function(method, params)
    if method == "agent_event" and params.event == "status" then status_events = status_events + 1 end
  end
  local sid = ctx.call(c, "spawn", { task = "PLANIT" }).session_id
  t.wait_for(function() return status_events >= 1 end, 15000, "a status agent_event for the plan")
  local mid = ctx.call(c, "poll", { session_id = sid })
  t.eq(mid.status, "running", "the model holds its answer 4 s")
  t.eq(mid.current_work, { type = "plan_step", content = "Inspect code" }, "while working: the in-progress step")
  local res = ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  t.eq(#res.plan, 2)
  t.eq(res.plan[1].content, "Inspect code")
  t.eq(res.plan[1].status, "in_progress")
  t.eq(res.current_work, nil, "the turn ended: no current work, though a step is still in progress")
  local row = ctx.call(c, "list", { detail = true }).sessions[1]
  t.eq(row.plan[2].content, "Write fix", "list detail carries the plan")
  t.eq(row.current_work, nil, "an idle agent is at no work")
  t.eq(ctx.call(c, "list", {}).sessions[1].plan, nil, "a lean list does not")
  local tr = ctx.call(c, "transcript", { session_id = sid })
  t.eq(tr.tool_calls[1].tool, "todo_write")
  t.eq(tr.tool_calls[1].args.todos[2].content, "Write fix")
  t.eq(tr.last_text, "Plan done.")
end)

test("an errored turn (provider 400) reports the error text", function(t)
  local ctx = support.setup(t, { scenario = { rules = {
    { last_role = "user", user_contains = "FAIL400", status = 400, error = "mock says no", times = 1 },
  } } })
  local c = ctx.client()
  local errors = {}
  c.opts.on_notification = function(method, params)
    if method == "agent_event" and params.event == "turn_end" then errors[#errors + 1] = params.error_text end
  end
  local sid = ctx.call(c, "spawn", { task = "FAIL400" }).session_id
  local res = ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  t.eq(res.stop_reason, "error")
  t.match(res.error_text, "status 400")
  t.match(res.error_text, "mock says no")
  -- the agent_event follows the watch reply (a waiting watch is answered first)
  t.match(t.wait_for(function() return errors[1] end, 2000, "the turn_end agent_event"), "status 400")
end)

test("an agent crash ends the session with error text", function(t)
  local ctx = support.setup(t, { scenario = { rules = {
    { last_role = "user", user_contains = "SLOW", text = string.rep("y", 60), chunk = 2, delay = 0.1 },
  } } })
  local c = ctx.client()
  local sid = ctx.call(c, "spawn", { task = "SLOW" }).session_id
  ctx.call(c, "wait", { session_ids = { sid } })
  local row = ctx.call(c, "list", { detail = true }).sessions[1]
  t.ok(row.agent_pid, "list detail shows the agent pid")
  uv.kill(row.agent_pid, "sigkill")
  local res = ctx.watch_until(c, { sid }, function(_, x) return x.status == "exited" end)
  t.eq(res.stop_reason, "process_exited")
  t.eq(res.exit_reason, "crashed")
  t.match(res.error_text, "exited unexpectedly")
  t.match(res.error_text, "signal 9")
  local err = ctx.call_err(c, "send", { session_id = sid, message = "hello?" })
  t.eq(err.code, -32006)
  t.match(err.message, "resume")
end)

test("stop leaves a resumable tombstone", function(t)
  local ctx = support.setup(t, { scenario = { rules = {
    { last_role = "user", user_contains = "SLOW", text = string.rep("z", 80), chunk = 2, delay = 0.1 },
    { last_role = "user", user_contains = "BACK", text = "back again" },
  } } })
  local c = ctx.client()
  local sid = ctx.call(c, "spawn", { task = "SLOW" }).session_id
  ctx.call(c, "wait", { session_ids = { sid } })
  local pid = ctx.call(c, "list", { detail = true }).sessions[1].agent_pid
  local s = ctx.call(c, "stop", { session_id = sid })
  t.eq(s.status, "exited")
  t.eq(s.exit_reason, "stopped")
  t.ok(not support.alive(pid), "the agent process is gone")
  local p = ctx.call(c, "poll", { session_id = sid, include_full = true })
  t.eq(p.status, "exited")
  local cut = p.full_text
  t.match(cut, "^z+$", "the text of the turn the stop cut short")
  -- delivered, the tombstone's buffers are released: its text comes back from the journal
  t.eq(ctx.call(c, "poll", { session_id = sid, include_full = true }).full_text, cut)
  t.eq(ctx.call(c, "list", {}).sessions[1].status, "exited")
  local r = ctx.call(c, "resume", { session_id = sid })
  t.eq(r.status, "idle")
  ctx.call(c, "send", { session_id = sid, message = "BACK" })
  local res = ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  t.eq(res.message, "back again")
end)

test("the spec's defaults apply when the model is configured; models lists refs and per-model efforts", function(t)
  local ctx = support.setup(t, {
    home_opts = { declare_product_default = true, models = { "mock-model", "mock-think" },
                  model_overrides = { ["mock-think"] = { supported_efforts = { "low", "high", "max" }, default_effort = "high" } } },
    scenario = { rules = { { last_role = "user", text = "default model here" } } },
  })
  local c = ctx.client()
  local r = ctx.call(c, "spawn", { task = "hello" })
  t.eq(r.model, "opencode-go/deepseek-v4-flash")
  t.eq(r.effort, "max")
  t.eq(r.agent_config.effort, "max")
  t.eq(#r.warnings, 0)
  ctx.watch_until(c, { r.session_id }, function(_, x) return x.status == "idle" end)
  local reqs = ctx.prov:requests()
  t.eq(reqs[#reqs].body.model, "deepseek-v4-flash")
  t.eq(reqs[#reqs].body.reasoning_effort, "max")
  local m = ctx.call(c, "models", {})
  t.eq(m.default, "opencode-go/deepseek-v4-flash")
  local by_ref = {}
  for _, x in ipairs(m.models) do by_ref[x.ref] = x end
  t.ok(by_ref["mock/mock-model"], "mock/mock-model listed")
  t.eq(by_ref["mock/mock-think"].supported_efforts, { "auto", "low", "high", "max" })
  t.eq(#by_ref["mock/mock-model"].supported_efforts, 0)
  local again = ctx.call(c, "models", {})
  t.eq(#again.models, #m.models, "cached answer")
  local err = ctx.call_err(c, "spawn", { task = "x", model = "mock/not-there" })
  t.eq(err.code, -32602)
  t.match(err.message, "mock/mock%-model")
  t.eq(#ctx.call(c, "list", {}).sessions, 1, "a refused spawn leaves no session")
end)

test("a flood of chunks stays bounded; critical events are never dropped", function(t)
  local dir = t.tmpdir("rmcp-fake")
  local wrapper = dir .. "/reasonix"
  local f = assert(io.open(wrapper, "w"))
  -- the fake agent runs on our own binary: no second Lua interpreter is needed
  f:write("#!/bin/sh\nexec '", require("rmcp.host").exe, "' script ", support.repo, "/tests/fake_agent/fake_acp.lua \"$@\"\n")
  f:close()
  uv.fs_chmod(wrapper, 493)
  local ctx = support.setup(t, { env = { REASONIX_BIN = wrapper, FAKE_ACP_FLOOD = "6000" } })
  local c = ctx.client()
  local r = ctx.call(c, "spawn", { task = "[fake:flood] go" })
  t.ok(r.posture.warning, "posture is unknown for an agent without doctor: reported, not fatal")
  ctx.watch_until(c, { r.session_id }, function(_, x) return x.status == "idle" end)
  -- compact watch consumed the queue: run a second flood and look at it with a detailed poll
  ctx.call(c, "send", { session_id = r.session_id, message = "[fake:flood] again" })
  local w = ctx.call(c, "watch", { session_ids = { r.session_id }, detail = true, max_events = 200 })
  local p = w.results[r.session_id]
  t.eq(p.status, "idle")
  t.eq(#p.events, 200)
  t.eq(p.events[#p.events].type, "turn_end")
  t.ok(p.events_dropped >= 6000 - 200, "drops are counted: " .. tostring(p.events_dropped))
  -- a third flood read with everything asked for still fits a host's output cap
  ctx.call(c, "send", { session_id = r.session_id, message = "[fake:flood] once more" })
  t.wait_for(function() return ctx.call(c, "list", {}).sessions[1].status == "idle" end, 20000, "flood 3", 20)
  local full = ctx.call(c, "poll", { session_id = r.session_id, detail = true, include_full = true,
    include_thought = true, max_events = 200 })
  local size = #json.encode(full)
  t.ok(size <= 45000, "a detailed poll is at most max_result_bytes as JSON, got " .. size)
  t.eq(full.result_truncated, true)
  t.eq(full.full_text_truncated, true)
  t.eq(full.events[#full.events].type, "turn_end", "critical events stay")
  t.ok(#full.turns >= 1 and full.turns[#full.turns].stop_reason == "end_turn", "the turn is there")
end)

test("watch sends progress while it blocks", function(t)
  local ctx = support.setup(t, { scenario = { rules = {
    { last_role = "user", user_contains = "SLOW", text = string.rep("p", 60), chunk = 2, delay = 0.05 },
  } } })
  local c = ctx.client()
  local ticks = {}
  c.opts.on_notification = function(method, params) if method == "watch_progress" then ticks[#ticks + 1] = params end end
  local sid = ctx.call(c, "spawn", { task = "SLOW" }).session_id
  local id
  local result = t.await(function(done)
    id = c:request("watch", { session_ids = { sid }, progress = true, progress_interval_ms = 100 }, done)
  end, 10000, "watch result")
  t.eq(result.results[sid].status, "idle")
  t.ok(#ticks >= 1, "at least one progress notification")
  t.eq(ticks[1].request_id, id)
end)

test("a message sent right after spawn is steered into the first turn, not dropped", function(t)
  local ctx = support.setup(t, { scenario = { rules = {
    { last_role = "user", user_contains = "EARLY-STEER", text = "early steer seen" },
    -- 1.5 s: the send lands in this turn even when a slow build takes its time to make the call
    { last_role = "user", user_contains = "SLOW", text = string.rep("e", 60), chunk = 2, delay = 0.05 },
  } } })
  local c = ctx.client()
  local sid = ctx.call(c, "spawn", { task = "SLOW" }).session_id
  t.eq(ctx.call(c, "send", { session_id = sid, message = "EARLY-STEER now", expect = "steer" }).delivered, "steer")
  local res = ctx.watch_until(c, { sid }, function(_, x) return x.status == "idle" end)
  t.match(res.message, "early steer seen")
end)

test("a watch over many: another session's change keeps the reminder of a decision it reported", function(t)
  local ctx = support.setup(t, { env = { REASONIX_MCP_DECISION_REMIND_S = "4" }, scenario = { rules = {
    { last_role = "user", user_contains = "ASKQ", tool_calls = { { name = "ask", arguments = { questions = { {
      header = "Library", question = "Which library?", multiSelect = false,
      options = { { label = "requests" }, { label = "httpx" } } } } } } } },
    { last_role = "user", user_contains = "PLANIT", tool_calls = { { name = "todo_write", arguments = { todos = {
      { content = "Inspect code", status = "in_progress" } } } } } },
    { last_tool_name = "todo_write", text = "Plan done.", delay_first = 20 },
    { last_role = "user", text = "hi" },
  } } })
  local c = ctx.client()
  local planned = 0
  c.opts.on_notification = function(method, params)
    if method == "agent_event" and params.note == "plan updated" then planned = planned + 1 end
  end
  local asking = ctx.call(c, "spawn", { task = "ASKQ me" }).session_id
  ctx.watch_until(c, { asking }, function(_, x) return x.permission_request ~= nil end)
  local other = ctx.call(c, "spawn", { task = "hello" }).session_id
  ctx.watch_until(c, { other }, function(_, x) return x.status == "idle" end)
  -- the watch goes out first on this connection, so the other's plan (a change that makes nothing
  -- ready) reaches it while it waits
  local t0 = uv.hrtime()
  local got = require("rmcp.lib.async").map({ "watch", "send" }, 2, function(m)
    if m == "watch" then return ctx.call(c, "watch", { session_ids = { asking, other }, timeout = 30 }) end
    return ctx.call(c, "send", { session_id = other, message = "PLANIT" })
  end)
  local woke, ms = got[1], (uv.hrtime() - t0) / 1e6
  t.ok(planned >= 1, "the other's plan changed it while the watch waited")
  t.eq(woke.results[asking] and woke.results[asking].decision_reminder, true, "the reminder woke it")
  t.eq(woke.results[other], nil, "the other, still at work, is not in it")
  t.ok(ms < 12000, string.format("about 4 s after the decision was reported: %.0f ms", ms))
  ctx.call(c, "stop", { session_id = other })
end)
