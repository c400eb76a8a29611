-- The health sampler's alert rule: a turn that goes quiet wakes its watches once; a burst of
-- process CPU makes it running again but does not earn a second alert, a line from the agent does;
-- a live handover carries what the sampler knew.
local uv = require "luv"
local config = require "rmcp.config"
local json = require "rmcp.lib.json"
local health = require "rmcp.agentd.health"

-- A running session s1 whose agent is a quiet process (sleep 60), with a stall after 1 s of quiet;
-- both undone when case t ends. Returns the session and its agent.
local function quiet_session(t)
  local saved = config.limits.runtime_stalled_after
  config.limits.runtime_stalled_after = 1
  t.defer(function() config.limits.runtime_stalled_after = saved end)
  local child = uv.spawn("sleep", { args = { "60" } }, function() end)
  t.ok(child, "a quiet process stands in for the agent")
  t.defer(function() child:kill("sigkill"); child:close() end)
  uv.update_time()
  local agent = { exited = false }
  function agent.pid() return child:get_pid() end
  local s = { id = "s1", status = "running", rt = { agent = agent, turn_started_ms = uv.now() } }
  return s, agent
end

test("a stall alerts once per quiet stretch of the protocol", function(t)
  local s, agent = quiet_session(t)
  local alerts = 0
  local d = { sessions = { s1 = s }, on_change = function(_, kind) if kind == "status" then alerts = alerts + 1 end end }
  health.start(d)
  t.defer(function() d.health.timer:close() end)
  t.wait_for(function() return alerts == 1 end, 5000, "the first stall alerts")
  t.ok(s.rt.health_alert, "flagged for the next watch")
  s.rt.health_alert = nil -- a watch reported it

  d.health.agents[agent].cpu_changed_at = uv.now() -- the process tree burned CPU: progress for the state
  t.wait_for(function() return health.of(d, s).state == "running" end, 2000, "running again after the CPU burst")
  t.wait_for(function() return health.of(d, s).state == "stalled" end, 4000, "quiet again")
  local seen = uv.now()
  t.wait_for(function() return uv.now() - seen >= 600 end, 2000, "a few more samples")
  t.eq(alerts, 1, "a CPU burst alone does not make a new stall")
  t.eq(s.rt.health_alert, nil)

  agent.last_line_at = uv.now() -- the agent spoke: protocol progress re-arms the alert
  t.wait_for(function() return alerts == 2 end, 5000, "the next stall after the agent spoke alerts")
  t.ok(s.rt.health_alert)
end)

test("a live handover carries the sampler's bookkeeping: a stall reported before it is not news after it", function(t)
  local s, agent = quiet_session(t)
  local alerts = 0
  local function on_change(_, kind) if kind == "status" then alerts = alerts + 1 end end
  local d = { sessions = { s1 = s }, on_change = on_change }
  health.start(d)
  t.wait_for(function() return alerts == 1 end, 5000, "the stall alerts")
  d.health.timer:close()
  local carried = json.decode(json.encode(health.handover_state(d, agent)))

  -- the new image: the same process under a new agent object, the runtime carried over
  local adopted = { exited = false, pid = agent.pid }
  s.rt.agent = adopted
  local d2 = { sessions = { s1 = s }, on_change = on_change }
  health.adopt(d2, s, adopted, carried)
  health.start(d2)
  t.defer(function() d2.health.timer:close() end)
  local seen = uv.now()
  t.wait_for(function() return uv.now() - seen >= 800 end, 2000, "a few samples")
  t.eq(health.of(d2, s).state, "stalled", "still stalled: the quiet time goes on")
  t.eq(alerts, 1, "not reported again")
end)
