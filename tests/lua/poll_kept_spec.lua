-- The text a lean poll result keeps (rules/poll.lua shape with a kept table): a session polled
-- again while nothing happens gets the kept text, and anything a result says differently (status,
-- stop or exit reason, any usage figure, a message, work, a decision, a smaller budget) gets a
-- fresh one: the kept text never stands for a result it does not say. The same for the usage line
-- a session keeps for its results (session/usage.lua line).
local json = require "rmcp.lib.json"
local poll = require "rmcp.rules.poll"

local with_env = require("testing").with_env

-- A drained snapshot of an idle session with nothing new, its usage line usage.
local function quiet(usage, over)
  local s = { session_id = "rx-1", status = "idle", stop_reason = "end_turn", text = "", usage = usage }
  for k, v in pairs(over or {}) do s[k] = v end
  return s
end

-- The usage line of an idle session.
local function line(over)
  local u = { turn = 3, total = 10 }
  for k, v in pairs(over or {}) do u[k] = v end
  return u
end

-- Shapes snap as a plain poll with kept; returns the text and the result decoded from it.
local function shaped(snap, kept)
  local r, text = poll.shape(snap, assert(poll.options({})), kept)
  assert(text, "a fitting result comes with its text")
  return text, json.decode(text), r
end

test("a result that says nothing new is its kept text again", function(t)
  local kept, usage = {}, line()
  local first = shaped(quiet(usage), kept)
  local again, decoded = shaped(quiet(usage), kept)
  t.ok(rawequal(again, kept.text) and again == first, "the kept text, not a fresh encoding")
  t.eq(decoded, { session_id = "rx-1", status = "idle", stop_reason = "end_turn", usage = { turn = 3, total = 10 } })
end)

test("any field that differs gets a fresh text that says it", function(t)
  local kept, usage = {}, line()
  shaped(quiet(usage), kept)
  local _, r = shaped(quiet(line({ total = 11 })), kept)
  t.eq(r.usage.total, 11, "another usage line (session/usage.lua makes one for any change)")
  _, r = shaped(quiet(usage, { status = "exited", exit_reason = "crashed" }), kept)
  t.eq({ r.status, r.exit_reason }, { "exited", "crashed" }, "the status and exit reason")
  _, r = shaped(quiet(usage, { status = "exited", exit_reason = "budget" }), kept)
  t.eq(r.exit_reason, "budget")
  _, r = shaped(quiet(usage, { stop_reason = "cancelled" }), kept)
  t.eq(r.stop_reason, "cancelled")
  _, r = shaped(quiet(nil), kept)
  t.eq(r.usage, nil, "no usage")
  _, r = shaped(quiet(usage, { session_id = "rx-2" }), kept)
  t.eq(r.session_id, "rx-2")
  -- each piece of news a lean result may hold (rules/poll.lua lean_fields), after a quiet one kept
  local news = {
    message = { text = "done" }, plan = { plan_changed = true, plan = { { content = "a" } } },
    current_work = { status = "running", current_work = { type = "tool", tool = "bash" } },
    permission_request = { permission_request = { request_id = 1 } }, error_text = { error_changed = true, error_text = "x" },
    background_recovery = { background_recovery = { attempts = 1 } }, health = { health = { state = "stalled" } },
    changes = { changes = { files = 1 } }, integration = { integration = { state = "queued" } },
  }
  for field, over in pairs(news) do
    shaped(quiet(usage), kept)
    _, r = shaped(quiet(usage, over), kept)
    t.ok(r[field] ~= nil, field .. " is said")
    _, r = shaped(quiet(usage), kept)
    t.eq(r[field], nil, field .. ": quiet again, nothing of the result before")
  end
  local full = poll.shape(quiet(usage, { text = "done", plan_changed = true, plan = {}, current_work = {},
    permission_request = {}, error_changed = true, error_text = "x", background_recovery = {}, health = {},
    changes = {}, integration = {} }), assert(poll.options({})))
  for k in pairs(full) do
    t.ok(news[k] or k == "message_truncated" or k == "session_id" or k == "status" or k == "stop_reason" or k == "usage",
      k .. " is named above")
  end
end)

test("a kept text over a smaller budget is cut as any result; detail is never kept", function(t)
  local kept, usage = {}, line()
  shaped(quiet(usage), kept)
  with_env({ REASONIX_MCP_MAX_RESULT_BYTES = "40" }, function()
    local r, text = poll.shape(quiet(usage), assert(poll.options({})), kept)
    t.eq(text, nil, "no text that does not fit")
    t.eq(r.result_truncated, true)
  end)
  local text = shaped(quiet(usage), kept)
  local d = poll.shape(quiet(usage, { text = "", turns = {}, events = {} }), assert(poll.options({ detail = true })), kept)
  t.ok(d.events ~= nil, "a detailed result is shaped afresh")
  t.ok(rawequal(shaped(quiet(usage), kept), text), "and leaves the kept text as it was")
end)

test("the usage line a session's results show is made again when anything it shows changes", function(t)
  local usage = require "rmcp.agentd.session.usage"
  local revision = require "rmcp.agentd.session.revision"
  local rules_usage = require "rmcp.rules.usage"
  local s = { id = "rx-1", status = "idle", rt = { last_turn_usage = { total = 3 } } }
  revision.set(s, "usage", { total = 10, unreported = 0 })
  local first = usage.line(s)
  t.eq(first, { turn = 3, total = 10 })
  t.ok(rawequal(usage.line(s), first), "the same line while nothing changed")
  revision.set(s, "usage", rules_usage.add(s.usage, { total = 5 })) -- (added in place, as a turn's figure is)
  t.eq(usage.line(s), { turn = 3, total = 15 }, "the session's figure")
  s.rt.last_turn_usage.total = 4 -- (a late figure of the ended turn, added in place)
  t.eq(usage.line(s), { turn = 4, total = 15 }, "the turn's figure")
  revision.set_in(s, "usage", "unreported", 1)
  t.eq(usage.line(s).estimated, true, "a turn that reported none")
  s.rt.budget_warning = "80% of the session budget"
  t.eq(usage.line(s).warning, "80% of the session budget", "a budget's warning")
  s.budget_note = "session budget reached"
  t.eq(usage.line(s).budget, nil, "a note shows only while the budget stops it")
  s.rt.budget_stop = "finish"
  t.eq(usage.line(s).budget, "session budget reached", "the budget stops it")
  s.rt = nil
  revision.set(s, "exit_reason", "budget")
  t.eq(usage.line(s), { turn = 0, total = 15, estimated = true, budget = "session budget reached" }, "parked: no runtime")
end)
