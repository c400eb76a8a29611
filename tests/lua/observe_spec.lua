-- What the dashboard's look at agentd costs: a session's journal read only from where the last look
-- ended (a line still being written left for later, a journal that started over read anew), the
-- running text cut on a whole character, and change nudges sent at once (after the replies of the moment), then at most one per window while a session keeps changing.
local uv = require "luv"
local store = require "rmcp.agentd.store"
local observe = require "rmcp.agentd.observe"
local after_reply = require "rmcp.lib.after_reply"

-- Writes text to path (replacing it).
local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

test("a journal is read from an offset, up to its last whole line", function(t)
  local path = t.tmpdir("rmcp-observe") .. "/s.events.jsonl"
  local recs, off, reset = store.read_journal_from(path, 0)
  t.eq(#recs, 0)
  t.eq(off, 0)
  t.eq(reset, false, "a missing journal read from 0 is just empty")
  write(path, '{"type":"spawn"}\n{"type":"prompt","text":"a"}\n{"type":"tool')
  recs, off, reset = store.read_journal_from(path, 0)
  t.eq(#recs, 2, "the half-written record waits")
  t.eq(recs[2].text, "a")
  t.eq(off, #'{"type":"spawn"}\n{"type":"prompt","text":"a"}\n')
  t.eq(reset, false)
  write(path, '{"type":"spawn"}\n{"type":"prompt","text":"a"}\n{"type":"tool_call"}\nnot json\n')
  local more, off2 = store.read_journal_from(path, off)
  t.eq(#more, 1, "only what is new; a broken line is skipped")
  t.eq(more[1].type, "tool_call")
  t.eq(off2, #'{"type":"spawn"}\n{"type":"prompt","text":"a"}\n{"type":"tool_call"}\nnot json\n')
  local none, same = store.read_journal_from(path, off2)
  t.eq(#none, 0)
  t.eq(same, off2)
  write(path, '{"type":"spawn"}\n')
  local _, _, started_over = store.read_journal_from(path, off2)
  t.eq(started_over, true, "an offset past the end says so")
end)

test("the running turn's text is cut to its newest bytes on a whole character", function(t)
  t.eq(observe.text_tail("abc", 3), "abc")
  t.eq(observe.text_tail("abcd", 3), "bcd")
  local text = "é" .. string.rep("x", 9) -- 11 bytes; the newest 10 start mid-é
  t.eq(observe.text_tail(text, 10), string.rep("x", 9), "the broken character is left out")
  t.eq(observe.text_tail("aé", 2), "é")
end)

test("nudges: the first at once, then one per window while a session keeps changing; a new status at once", function(t)
  local sent = {}
  local conn = { peer = { closed = false, notify = function(_, method, p) sent[#sent + 1] = { method, p.session_id, uv.now(), p.status } end } }
  local d = {}
  observe.add(d, conn)
  local s = { id = "s1", owner = "o", status = "running" }
  uv.update_time()
  local t0 = uv.now()
  observe.changed(d, s)
  t.eq(#sent, 0, "not before the replies of the moment")
  after_reply.flush()
  t.eq(#sent, 1, "at once after them")
  for _ = 1, 5 do observe.changed(d, s) end
  after_reply.flush()
  t.eq(#sent, 1, "within the window: held")
  t.wait_for(function() return #sent == 2 end, 2000, "the held change is sent at the window's end", 5)
  t.ok(sent[2][3] - t0 >= observe.nudge_ms - 1, "not before the window ends")
  observe.changed(d, s)
  after_reply.flush()
  t.eq(#sent, 2, "held again")
  s.status = "idle"
  observe.changed(d, s)
  s.status = "running"
  after_reply.flush()
  t.eq(#sent, 3, "a new status (a turn's end) goes at once")
  t.eq(sent[3][4], "idle", "the status of the moment it changed")
  t.wait_for(function() return #sent == 4 end, 2000, "the held change still follows", 5)
  observe.changed(d, { id = "s2", owner = "o", status = "idle" })
  after_reply.flush()
  t.eq(#sent, 5, "another session has its own window")
  observe.remove(d, conn)
  observe.changed(d, { id = "s3", owner = "o", status = "idle" })
  after_reply.flush()
  t.eq(#sent, 5, "no observer, no nudge")
end)

test("the dashboard's spend chart: today by hour (kept as increments arrive) and the days before, from the ledger", function(t)
  local ledger = require "rmcp.agentd.usage_ledger"
  local report = require "rmcp.rules.usage_report"
  local json = require "rmcp.lib.json"
  local dir = t.tmpdir("rmcp-observe-usage")
  local today = ledger.today()
  local yesterday = report.shift(today, -1)
  write(dir .. "/" .. yesterday .. ".jsonl", '{"t":1,"s":"a","o":"o1","total":40,"cost":0.5,"cur":"USD"}\nbroken\n')
  local three = os.time({ year = tonumber(today:sub(1, 4)), month = tonumber(today:sub(6, 7)), day = tonumber(today:sub(9, 10)), hour = 3 })
  write(dir .. "/" .. today .. ".jsonl", json.encode({ t = three, s = "b", o = "o1", total = 7 }) .. "\n")
  local d = { paths = { usage = dir } }
  ledger.append(d, { id = "c", owner = "o2" }, { input = 5, output = 0, reasoning = 0, cache_read = 0, cache_write = 0, total = 5 })
  local r = observe.usage(d, 3)
  t.eq(#r.hours, 24)
  local at3, now, sum = r.hours[4], r.hours[tonumber(os.date("%H")) + 1], 0
  for _, h in ipairs(r.hours) do sum = sum + h.total end
  t.eq({ sum, r.total.total, r.total.cost_unknown }, { 12, 12, true })
  t.eq({ at3.hour, at3.total >= 7 }, { today .. " 03:00", true })
  t.ok(now.total >= 5, "the increment just written is in this hour")
  t.eq({ #r.days, r.days[1].day, r.days[1].total, r.days[2].day, r.days[2].total, r.days[2].cost, r.days[3].day, r.days[3].total },
       { 3, report.shift(today, -2), 0, yesterday, 40, 0.5, today, 12 })
  t.eq(ledger.spent_today(d, "o1").tokens, 7, "the budgets' figure from the same read")
end)
