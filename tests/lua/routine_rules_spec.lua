-- Routine policy without a daemon: schedule strings and their next due times (daily in a named zone
-- across both of Europe/Athens's 2026 DST changes and New York's skipped hour), what a definition
-- may hold, and what a trigger does under each overlap policy and the machine-wide limit.
local schedule = require "rmcp.rules.schedule"
local rules = require "rmcp.rules.routines"

test("schedule strings: manual, every N unit (at least a minute), daily HH:MM [zone]; bad ones say why", function(t)
  t.eq(schedule.parse("manual").kind, "manual")
  t.eq(schedule.parse("  Every 90m ").seconds, 5400)
  t.eq(schedule.text(schedule.parse("every 90m")), "every 90m")
  t.eq(schedule.text(schedule.parse("every 120m")), "every 2h")
  t.eq(schedule.text(schedule.parse("every 3600s")), "every 1h")
  t.eq(schedule.text(schedule.parse("daily 7:05 Europe/Athens")), "daily 07:05 Europe/Athens")
  t.eq(schedule.parse("daily 07:05").zone, schedule.system_zone(), "no zone: the system's")
  for text, why in pairs({
    ["every 30s"] = "between 1m and 366d", ["every 400d"] = "between 1m and 366d",
    ["daily 24:00 UTC"] = "between 00:00 and 23:59", ["daily 09:60 UTC"] = "between 00:00 and 23:59",
    ["daily 09:00 Mars/Base"] = 'unknown time zone "Mars/Base"', ["daily 09:00 ../../etc/passwd"] = "unknown time zone",
    ["hourly"] = "use manual, every", ["every 5 weeks"] = "use manual, every",
  }) do
    local p, err = schedule.parse(text)
    t.eq(p, nil, text)
    t.ok(err and err:find(why, 1, true), text .. ": " .. tostring(err))
  end
  t.eq(select(2, schedule.parse(3)), "schedule must be a string: manual, every 30m, or daily 09:00 [Area/City]")
end)

test("next due: an interval counts from when it fired; daily is the next local HH:MM, DST included", function(t)
  t.eq(schedule.next_due(schedule.parse("manual"), 100), nil)
  t.eq(schedule.next_due(schedule.parse("every 2h"), 1000), 1000 + 7200)
  local athens = schedule.parse("daily 09:00 Europe/Athens")
  t.eq(schedule.next_due(athens, 1774681199), 1774681200, "2026-03-28 09:00 +02 (a second before)")
  t.eq(schedule.next_due(athens, 1774681200), 1774764000, "at the time itself: the next day, 09:00 +03 (23 h)")
  t.eq(schedule.next_due(athens, 1792821600), 1792911600, "2026-10-24 09:00 +03 -> 10-25 09:00 +02 (25 h)")
  local gap = schedule.parse("daily 02:30 America/New_York") -- 2026-03-08 02:00 EST jumps to 03:00 EDT
  t.eq(schedule.next_due(gap, 1772949600), 1772955000, "from 03-08 01:00 EST: 02:30 does not exist that day, so 03:30 EDT")
  t.eq(schedule.next_due(gap, 1772955000), 1773037800, "then 02:30 EDT the day after")
  t.eq(schedule.next_due(schedule.parse("daily 00:00 UTC"), 0), 86400)
end)

test("a definition: defaults filled, every problem at once; a change checks only what it gives", function(t)
  local f = assert(rules.normalize({ name = "n", prompt = "p" }))
  t.eq(f.schedule, "manual")
  t.eq(f.overlap, "skip")
  t.eq(f.tool_approval, "auto", "unattended: auto, not yolo")
  t.eq(f.delegation, "allowed")
  t.eq(f.enabled, true)
  local none, why = rules.normalize({ schedule = "every 1s", overlap = "maybe", tool_approval = "always" })
  t.eq(none, nil)
  for _, part in ipairs({ "between 1m and 366d", "overlap must be one of queue, skip", "tool_approval must be one of ask, auto, yolo",
                          "name is required", "prompt is required" }) do
    t.ok(why:find(part, 1, true), part .. " in: " .. why)
  end
  local change = assert(rules.normalize({ enabled = false }, { id = "rt-1" }))
  t.eq(change.enabled, false)
  t.eq(change.schedule, nil, "a change leaves the rest")
end)

test("a trigger: skip or queue behind the active run, queue behind the limit, never more than ten waiting", function(t)
  local skip, queue = { overlap = "skip" }, { overlap = "queue" }
  t.eq(rules.on_trigger(skip, false, 0, true), "start")
  t.eq(rules.on_trigger(skip, true, 0, true), "skip")
  t.eq(rules.on_trigger(skip, false, 0, false), "queue", "the limit holds it, overlap or not")
  t.eq(rules.on_trigger(skip, false, 1, false), "skip", "one waiting is enough for skip")
  t.eq(rules.on_trigger(queue, false, 0, true), "start")
  t.eq(rules.on_trigger(queue, true, 3, true), "queue")
  t.eq(rules.on_trigger(queue, false, 1, true), "queue", "behind the ones already waiting")
  local action, why = rules.on_trigger(queue, true, rules.queue_max, true)
  t.eq(action, "skip")
  t.match(why, "queue is full")
end)

test("the run's task carries the instructions and the contract once, with the delegation rule and the marker", function(t)
  local text = rules.task({ id = "rt-1", name = "n", prompt = "DO IT", delegation = "disabled" },
                          { n = 3, trigger = "schedule", marker = "routine-run:rt-1:3:ab" })
  t.eq(select(2, text:gsub("%[reasonix%-mcp routine contract%]", "")), 1)
  t.ok(text:find("^DO IT\n"), "the instructions first")
  t.ok(text:find("Do not delegate", 1, true))
  t.ok(text:find("never open a duplicate issue, branch, pull request or fix", 1, true))
  t.ok(text:find("Run marker: routine-run:rt-1:3:ab", 1, true))
  t.ok(rules.task({ id = "x", name = "n", prompt = "p", delegation = "encouraged" }, { n = 1, trigger = "manual", marker = "m" })
    :find("Delegate independent investigation", 1, true))
end)
