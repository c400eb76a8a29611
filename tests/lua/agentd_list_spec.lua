-- agentd's list (methods/sessions.lua) keeps its rows encoded and its owner's whole tally between
-- calls (rules/list.lua, agentd/session/tally.lua): after each change a session goes through (its
-- status, its spend, a decision asked and answered, a result held and collected, parking and
-- unparking, its integration) every view says what a fresh count of the same sessions says, and
-- says it again from what it kept.
local json = require "rmcp.lib.json"
local uv = require "luv"
local store = require "rmcp.agentd.store"
local state = require "rmcp.agentd.session.state"
local events = require "rmcp.agentd.session.events"
local usage = require "rmcp.agentd.session.usage"
local park = require "rmcp.agentd.session.park"
local order = require "rmcp.agentd.session.order"
local revision = require "rmcp.agentd.session.revision"
local methods = require "rmcp.agentd.methods.sessions"
local rules_list = require "rmcp.rules.list"

-- The views a list is asked for: the default, pending_only, every session, and pages of one (the
-- first and the last the same kind of row as to the task: a row kept before a change is asked for
-- after it).
local VIEWS = { {}, { include_task = true }, { pending_only = true }, { all = true }, { limit = 1 },
                { all = true, limit = 1 } }

-- Checks that each view of orch's list (and the page after each first page) says what a fresh count
-- of its sessions says (what agentd adds of its own, the reload state and today's spend, and the
-- health of an active row left out), twice: the second from what the first kept.
local function same_as_fresh(t, d, what)
  local views = { table.unpack(VIEWS) }
  for _, view in ipairs(views) do
    local fresh = rules_list.shape({ table.unpack(order.newest_first(d, "orch")) }, { sorted = true, all = view.all,
      pending_only = view.pending_only, limit = view.limit, include_task = view.include_task,
      cursor = view.cursor and rules_list.parse_cursor(view.cursor) })
    for round = 1, 2 do
      local got
      methods.list(d, { orch = "orch" }, view, function(r, err) got = assert(r, err and err.message) end)
      got = json.decode(json.raw_text(got))
      got.reload, got.reload_pending = nil, nil
      if got.usage then got.usage.today = nil end
      for _, row in ipairs(got.sessions) do row.health = nil end
      t.eq(got, json.decode(json.encode(fresh)), string.format("%s, view %s, call %d", what, json.encode(view), round))
      if got.next_cursor and not view.cursor then -- and the next page
        local next_view = { cursor = got.next_cursor }
        for k, v in pairs(view) do next_view[k] = v end
        views[#views + 1] = next_view
      end
    end
  end
end

test("every view of a list follows each change of a session, and says it again unchanged", function(t)
  local dir = t.tmpdir("rmcp-list")
  local d = { sessions = {}, paths = { sessions = dir, usage = dir .. "/usage", home = dir }, conns = {} }
  local a = state.create(d, "orch", "/p", { task = "first" }, "/w")
  local b = state.create(d, "orch", "/p", { task = "second" }, "/w")
  local c = state.create(d, "orch", "/p", { task = "third" }, "/w")
  state.create(d, "other", "/p", { task = "not mine" }, "/w")
  same_as_fresh(t, d, "started")
  for _, s in ipairs({ a, b, c }) do state.set_status(d, s, "idle") end
  same_as_fresh(t, d, "idle")
  usage.on_prompt_result(d, a, { usage = { inputTokens = 60, outputTokens = 40 } })
  same_as_fresh(t, d, "a spent")
  a.rt.turn_reported = false
  usage.turn_ended(a)
  same_as_fresh(t, d, "a turn that reported nothing")
  -- a decision asked (events.lua's way) and answered
  revision.add_pending(b, { request_id = 1, kind = "permission", tool_call = { title = "Run?" },
                            options = { { optionId = "yes" } }, reply = function() end })
  state.set_status(d, b, "awaiting_decision")
  same_as_fresh(t, d, "b asks")
  assert(events.respond(d, b, "yes", 1))
  same_as_fresh(t, d, "b answered")
  -- a result held until a watch takes it, then collected
  revision.set(c, "terminal_pending", true)
  same_as_fresh(t, d, "c's result held")
  state.mark_delivered(d, c)
  same_as_fresh(t, d, "c's result collected")
  -- finished and parked, its result held; collected while parked; unparked
  revision.set(c, "exit_reason", "stopped")
  revision.set(c, "terminal_pending", true)
  state.set_status(d, c, "exited")
  t.ok(park.park(d, c), "parked")
  same_as_fresh(t, d, "c parked, its result held")
  state.mark_delivered(d, c)
  same_as_fresh(t, d, "c parked, its result collected")
  state.drain(d, c, nil)
  t.eq(c.parked, nil, "unparked")
  same_as_fresh(t, d, "c unparked")
  -- its integration, each step a fresh record (integrate/queue.lua)
  state.mark_integration(d, a, { id = "in-1", state = "queued", target = "main" })
  same_as_fresh(t, d, "a queued")
  state.mark_integration(d, a, { id = "in-1", state = "merged", target = "main" })
  same_as_fresh(t, d, "a merged")
  state.set_status(d, a, "running")
  same_as_fresh(t, d, "a at work")
  state.discard(d, b)
  same_as_fresh(t, d, "b forgotten")
  store.close_journals()
  uv.run("nowait")
end)

test("a page with a session at work is made again each call (its health changes with time); one of settled sessions is kept", function(t)
  local at_work = { id = "rx-000000000002", status = "running", task = "a", created_at = 2, pending = {}, rt = {} }
  local settled = { id = "rx-000000000001", status = "idle", task = "b", created_at = 1, pending = {}, rt = {} }
  local sessions = { at_work, settled }
  local whole = rules_list.whole(sessions, rules_list.new_tally(), function() return false end, 0)
  local n = 0
  local opts = { whole = whole, encoded = true, sorted = true, health = function() n = n + 1; return { state = "h" .. n } end }
  local function health_now() return json.decode(rules_list.result_text(rules_list.shape(sessions, opts))).sessions[1].health end
  t.eq({ health_now(), health_now() }, { { state = "h1" }, { state = "h2" } })
  local limited = { whole = whole, encoded = true, sorted = true, limit = 1, cursor = { created_at = 2, id = "rx-000000000002" } }
  local page = rules_list.shape(sessions, limited)
  t.ok(rawequal(rules_list.shape(sessions, limited).sessions, page.sessions), "the page of a settled session is kept")
  t.eq(json.decode(rules_list.result_text(page)).sessions[1].session_id, "rx-000000000001")
end)
