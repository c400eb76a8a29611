-- rmcp.lib.async: tasks run in pooled coroutines (an MCP tool call is one), so a coroutine whose
-- task ended runs the next one; a task's error reaches its on_error; a late callback of an ended
-- task's wait never wakes the task that runs next on the same coroutine.
local async = require "rmcp.lib.async"

-- Runs fn as a task and returns the coroutine it ran on (read at its start).
local function run_on(fn, on_error)
  local co
  async.run(function()
    co = coroutine.running()
    return fn()
  end, on_error)
  return co
end

test("a coroutine whose task ended runs the next task; a waiting task keeps its own", function(t)
  local first = run_on(function() end)
  local second = run_on(function() end)
  t.eq(second, first, "the ended task's coroutine was taken again")
  local waiting_on, resume_it
  local waiter = run_on(function()
    waiting_on = coroutine.running()
    async.await(function(resume) resume_it = resume end)
  end)
  local other = run_on(function() end)
  t.ok(other ~= waiter, "a task still waiting keeps its coroutine")
  t.eq(waiting_on, waiter)
  resume_it()
  t.eq(run_on(function() end), waiter, "once it ended, its coroutine serves again")
end)

test("a task's error goes to its on_error with a traceback, and the next task runs as usual", function(t)
  local got
  run_on(function() error("boom") end, function(e) got = e end)
  t.match(got, "boom")
  t.match(got, "traceback")
  local value = async.await(function(resume)
    run_on(function() resume(async.await(function(r) r(7) end) * 6) end)
  end)
  t.eq(value, 42)
end)

test("a late callback of an ended task's wait does not wake the next task on that coroutine", function(t)
  local late
  local co = run_on(function()
    async.await(function(resume)
      late = resume
      resume("first")
    end)
  end)
  local woke, wake = {}, nil
  local next_co = run_on(function()
    woke[#woke + 1] = async.await(function(resume) wake = resume end)
  end)
  t.eq(next_co, co, "the next task runs on the same coroutine")
  late("stale")
  t.eq(woke, {}, "the stale callback did nothing")
  wake("its own")
  t.eq(woke, { "its own" })
end)

test("tasks started from a task, and many waiting at once, each finish", function(t)
  local done = 0
  local resumes = {}
  for i = 1, 40 do
    run_on(function()
      async.await(function(resume) resumes[i] = resume end)
      run_on(function() done = done + 1 end)
    end)
  end
  for i = 40, 1, -1 do resumes[i]() end
  t.eq(done, 40)
end)
