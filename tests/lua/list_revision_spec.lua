-- What lets a list reuse a session's encoded row and its owner's whole tally (agentd/session/
-- revision.lua): every write of a field a list reads goes through revision.lua, which bumps the
-- session's revision and the list generation. Checked on the source (no file writes such a field,
-- or anything in one, or a field named at run time, any other way) and on the rows (a field a
-- list reads but revision.LISTED leaves out is caught).
local src = require "lua_source"
local json = require "rmcp.lib.json"
local rules_list = require "rmcp.rules.list"
local revision = require "rmcp.agentd.session.revision"
local park = require "rmcp.agentd.session.park"

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local ROOT = here .. "../../lua/rmcp/"
local WRITER = "agentd/session/revision.lua"

-- What a write target changes that a list reads, as "s.usage.total (status… )", or nil: a field of
-- listed through s, sess, session or sessions[…] (or a local alias of one), anything inside it (but
-- a field of one pending decision: a list reads how many there are, and the first's own fields,
-- set before it is added), and, with dynamic, a field named at run time.
local function listed_write(parts, aliases, listed, dynamic)
  local alias = aliases[parts[1]]
  if alias then
    local whole = { table.unpack(alias) }
    for i = 2, #parts do whole[#whole + 1] = parts[i] end
    parts = whole
  end
  for i = 1, #parts - 1 do
    local p, nxt = parts[i], parts[i + 1]
    local at_session = (i == 1 and (p == "s" or p == "sess" or p == "session")) or (p == "[]" and parts[i - 1] == "sessions")
    if at_session then
      local name = table.concat(parts, "."):gsub("%.%[%]", "[…]")
      if nxt == "[]" and dynamic then return name .. " (a field named at run time)" end
      if listed[nxt] and not (nxt == "pending" and #parts > i + 2) then return name .. " (" .. nxt .. ", read by a list)" end
    end
  end
  return nil
end

-- The offences of the Lua source text (file f): "f:line: …".
local function offences(f, text, listed)
  local toks, out = src.tokens(text), {}
  local aliases = src.aliases(toks)
  for _, w in ipairs(src.writes(toks)) do
    local what = listed_write(w.parts, aliases, listed, f:match("^agentd/") ~= nil)
    if what then
      out[#out + 1] = string.format("%s:%d: writes %s: write it with rmcp.agentd.session.revision (set, set_in, "
        .. "add_pending, remove_pending), so lists see the change", f, w.line, what)
    end
  end
  return out
end

test("the detector finds every way of writing a listed field, through any name of a session", function(t)
  local listed = { status = true, usage = true, pending = true, integration = true }
  local got = offences("agentd/x.lua", table.concat({
    's.status = "idle"',
    's.usage.total = 3',
    'table.insert(s.pending, dec)',
    's.pending[#s.pending + 1] = dec',
    's.pending[1].delivered = true',
    'local i = s.integration',
    'i.state = "merged"',
    'd.sessions[id].status = "exited"',
    's[key] = value',
    's.warnings = {}',
    'r.status = "idle"',
  }, "\n"), listed)
  for i, o in ipairs(got) do got[i] = o:match("^agentd/x%.lua:(%d+):") end
  t.eq(got, { "1", "2", "3", "4", "7", "8", "9" })
  t.eq(#offences("tools/x.lua", "s[key] = value", listed), 0, "a field named at run time: agentd's sessions only")
end)

test("only agentd/session/revision.lua writes a field a list reads", function(t)
  local out = {}
  for _, f in ipairs(src.files(ROOT)) do
    if f ~= WRITER then
      for _, o in ipairs(offences(f, src.read(ROOT .. f), revision.LISTED)) do out[#out + 1] = o end
    end
  end
  if #out > 0 then t.fail(string.format("fields a list reads written around revision.lua (%d):\n  %s", #out, table.concat(out, "\n  "))) end
end)

test("a write through revision.lua bumps the session's revision and the list generation", function(t)
  local s = { pending = {}, usage = { total = 1 } }
  local before = revision.generation()
  revision.set(s, "status", "idle")
  local first = s.list_rev
  t.ok(first and first > before and revision.generation() == first, "bumped")
  revision.set_in(s, "usage", "total", 2)
  revision.add_pending(s, { request_id = 1 })
  revision.remove_pending(s, 1)
  t.eq({ s.status, s.usage.total, #s.pending }, { "idle", 2, 0 })
  t.eq(s.list_rev, first + 3, "each write bumps")
end)

-- A finished session (its result collected) with every field a plain row, the counts or a view read set.
local function settled()
  return { id = "rx-000000000001", owner = "o", status = "exited", cwd = "/w", task = "the task", transcript_path = "/t",
           stop_reason = "end_turn", exit_reason = "stopped", model = "m", created_at = 1, updated_at = 2, keep_alive = true,
           terminal_pending = false, damaged = "x", usage = { total = 5, cost = 0.1, currency = "USD", unreported = 1 },
           agent = "other", integration = { id = "i", state = "queued", target = "main" }, pending = {}, rt = {} }
end

-- What a list says of session s alone: its plain row, the counts and the spend, whether each view shows it.
local function listing(s)
  local out = {}
  for _, view in ipairs({ {}, { pending_only = true }, { all = true } }) do
    local r = rules_list.shape({ s }, { sorted = true, all = view.all, pending_only = view.pending_only })
    out[#out + 1] = json.encode(r)
  end
  return table.concat(out, "\n")
end

test("revision.LISTED holds every field a plain row, the counts and the views read", function(t)
  local base = listing(settled())
  local read = {}
  for _, k in ipairs({ "id", "status", "cwd", "task", "transcript_path", "stop_reason", "exit_reason", "model", "created_at",
                       "updated_at", "keep_alive", "terminal_pending", "damaged", "usage", "agent", "integration",
                       "pending", "unreadable" }) do
    local s = settled()
    s[k] = ({ status = "idle", usage = { total = 9 }, pending = { { request_id = 1, kind = "permission" } },
              integration = { id = "j" }, terminal_pending = true, keep_alive = false, exit_reason = "crashed",
              id = "rx-000000000002", created_at = 7, updated_at = 7 })[k] or "changed"
    if listing(s) ~= base then read[#read + 1] = k end
  end
  t.eq(#read, 18, "the probe sees the fields it changes: " .. table.concat(read, ", "))
  for _, k in ipairs(read) do t.ok(revision.LISTED[k], k .. " is read by a list: add it to revision.LISTED") end
  -- every other field a session may hold: changing it leaves what a list says as it was
  local s = settled()
  for _, k in ipairs({ "effort", "tool_approval", "work_mode", "idle_timeout", "acp_session_id", "error_text", "last_text",
                       "plan", "warnings", "work_seconds", "queued_config", "agent_profile", "worktree", "changes",
                       "forecast", "budget", "fleet", "routine", "turns_total", "contract_sent" }) do
    t.ok(not revision.LISTED[k], k)
    s[k] = { 7 }
  end
  t.eq(listing(s), base, "fields out of revision.LISTED do not change a plain row, the counts or a view")
  for _, k in ipairs(park.PARKED) do t.ok(not revision.LISTED[k], k .. ": parking takes it out of memory") end
end)
