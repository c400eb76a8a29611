-- rmcp.lib.after_reply: work queued behind a reply runs later, in order, each job once; a job that
-- raises does not stop the others; flush() runs what waits at once.
local uv = require "luv"
local after_reply = require "rmcp.lib.after_reply"

test("queued jobs wait for the loop, then run in order, past a job that raises", function(t)
  local ran = {}
  local queued_at = uv.hrtime()
  after_reply.queue(function() ran[#ran + 1] = "first" end)
  after_reply.queue(function() error("a failing job") end)
  after_reply.queue(function() ran[#ran + 1] = "third" end)
  t.eq(ran, {}, "nothing runs at once")
  local elapsed_ms = t.await(function(done)
    after_reply.queue(function() done((uv.hrtime() - queued_at) / 1e6) end)
  end, 5000, "the queued jobs")
  t.eq(ran, { "first", "third" })
  t.ok(elapsed_ms >= after_reply.DELAY_MS - 1, "they ran after the delay, not in the same loop pass: " .. elapsed_ms .. " ms")
end)

test("a job queued by a job runs in a later pass; flush runs the waiting jobs at once", function(t)
  local ran = {}
  after_reply.queue(function()
    ran[#ran + 1] = "outer"
    after_reply.queue(function() ran[#ran + 1] = "inner" end)
  end)
  after_reply.flush()
  t.eq(ran, { "outer" }, "the outer job ran at the flush; the one it queued waits")
  t.await(function(done) after_reply.queue(done) end, 5000, "the next pass")
  t.eq(ran, { "outer", "inner" })
end)
