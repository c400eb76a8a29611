-- A session brought back from its file when the daemon starts: fields of the wrong type reset (a
-- hand-edited or damaged file), the metadata caught up with its journal (a save follows the journal
-- by a moment), the turns not yet delivered put back, and a session that was live comes back
-- orphaned with its death pending for the host.
local json = require "rmcp.lib.json"
local log = require "rmcp.lib.log"
local store = require "rmcp.agentd.store"
local state = require "rmcp.agentd.session.state"
local order = require "rmcp.agentd.session.order"
local runtime = require "rmcp.agentd.session.runtime"
local park = require "rmcp.agentd.session.park"
local usage = require "rmcp.lib.lazy" "rmcp.agentd.session.usage" -- (a live session's spend, caught up)
local revision = require "rmcp.agentd.session.revision"

local M = {}

-- Statuses a record may hold on disk.
local known_status = { starting = true, running = true, idle = true, awaiting_decision = true,
                       exited = true, orphaned = true }

-- The elements of array a (nil: none) that have type want, as a JSON array.
local function only(a, want)
  local out = json.array()
  for _, v in ipairs(a or {}) do
    if type(v) == want then out[#out + 1] = v end
  end
  return out
end

-- Resets the fields of record rec whose type is wrong (a hand-edited or damaged file) to their
-- defaults and says which in rec.damaged (list shows it; it is saved) and the log, so nothing is
-- thrown later or lost silently. The record keeps everything else it holds.
local function repair(rec)
  local bad = {}
  for k, want in pairs(store.field_types) do
    local v = rec[k]
    if v ~= nil and not store.fits(v, want) then
      local got = v == json.null and "null" or (v ~= v and "nan")
        or ((v == math.huge or v == -math.huge) and "infinite") or type(v)
      bad[#bad + 1] = string.format("%s (%s, want %s)", k, got, want)
      rec[k] = nil
    end
  end
  if rec.status ~= nil and not known_status[rec.status] then
    bad[#bad + 1] = string.format("status (%q)", rec.status)
    rec.status = nil
  end
  rec.task = rec.task or ""
  rec.status = rec.status or "exited"
  rec.turns_total = rec.turns_total or 0
  rec.created_at = rec.created_at or rec.updated_at or 0
  rec.updated_at = rec.updated_at or rec.created_at
  rec.warnings = only(rec.warnings, "string")
  if #bad > 0 then
    table.sort(bad)
    rec.damaged = "session file had damaged fields, reset to defaults: " .. table.concat(bad, ", ")
    log.warn("session %s: %s", rec.id, rec.damaged)
  end
end

-- Puts back the turns of s that ended after its last drain (poll or watch), read from its
-- journal, so a daemon death loses none of the per-turn history not yet delivered and repeats
-- none that was: a drain's "delivered" record is written at once, the metadata's turns_drained a
-- moment later (store.save). A record from before turns_drained was kept counts only its last
-- turn as undelivered when a result is pending.
local function undrained_turns(s, records)
  local drained = s.turns_drained
  if drained == nil then drained = s.terminal_pending and s.turns_total - 1 or s.turns_total end
  if drained >= s.turns_total then return end
  records = records or store.read_journal(s.transcript_path)
  for _, rec in ipairs(records) do
    if rec.type == "delivered" and math.type(rec.turns) == "integer" and rec.turns > drained then drained = rec.turns end
  end
  s.turns_drained = drained
  if drained >= s.turns_total then return end
  local n = 0
  for _, rec in ipairs(records) do
    if rec.type == "turn_end" then
      n = n + 1
      if n > drained then
        state.add_turn(s.rt, type(rec.text) == "string" and rec.text or "",
          type(rec.stop_reason) == "string" and rec.stop_reason or nil)
      end
    end
  end
end

-- The prompt records that start a turn (a steer or a queued message joins the running one).
local turn_starts = { prompt = true, recovery = true, queued_turn = true }

-- Brings the metadata of s, live when its daemon died, up to its journal: a live session's save
-- follows the replies it wakes by a millisecond or two (store.save), while the journal is written
-- at once, so a turn that ended just before the death may be in the journal only. Its end counts
-- (turns_total, last_text, stop_reason), and a session whose last turn had ended was idle, not cut
-- short. Returns the journal's records.
local function catch_up(s, records)
  local ended, last_end, running = 0, nil, nil
  for _, rec in ipairs(records) do
    if rec.type == "turn_end" then
      ended, last_end, running = ended + 1, rec, false
    elseif rec.type == "prompt" and turn_starts[rec.via] then
      running = true
    end
  end
  if ended <= (s.turns_total or 0) then return records end
  log.info("session %s: its journal has %d turn end(s) its metadata missed (the daemon died before saving them)",
    s.id, ended - (s.turns_total or 0))
  s.turns_total = ended
  if type(last_end.text) == "string" then s.last_text = last_end.text end
  if type(last_end.stop_reason) == "string" then revision.set(s, "stop_reason", last_end.stop_reason) end
  if running == false then revision.set(s, "status", "idle") end
  return records
end

-- Rebuilds a session from its persisted record after a daemon start (fields of the wrong type
-- reset, with a warning); live ones become orphaned. One that was finished is parked on its record
-- (park.lua): a daemon keeps the day's history without holding it in memory.
function M.restore(d, rec)
  repair(rec)
  local s = rec
  s.rt = runtime.new_rt()
  revision.set(s, "pending", {})
  s.plan = only(s.plan, "table")
  s.skipped_options = only(s.skipped_options, "string")
  if s.posture and type(s.posture.allow_write) == "table" then json.array(s.posture.allow_write) end
  revision.set(s, "transcript_path", store.journal_path(d.paths.sessions, s.id))
  local records
  local was_live = state.is_live(s)
  if was_live then
    records = catch_up(s, store.read_journal(s.transcript_path))
    usage.replay(s, records) -- (the journal has every increment; the save may lag it)
    s.interrupted_turn = s.status ~= "idle" or nil -- a turn was cut short: resume_fleet continues it
    revision.set(s, "status", "orphaned")
    revision.set(s, "exit_reason", "daemon_died")
    revision.set(s, "terminal_pending", true)
  end
  s.rt.released = true -- a restored session's text is its journal's
  undrained_turns(s, records)
  order.put(d, s.id, s)
  if not was_live then park.park_on_record(d, s) end
  return s
end

-- Restores every record of records (store.load_all's) into d: live ones come back orphaned, and
-- saved so. Returns how many were restored, and how many of them were orphaned now.
function M.records(d, records)
  local n, orphaned = 0, 0
  for _, rec in ipairs(records) do
    local was = rec.status
    local s = M.restore(d, rec)
    n = n + 1
    if s.status == "orphaned" and was ~= "orphaned" then
      orphaned = orphaned + 1
      state.persist(d, s)
    end
  end
  return n, orphaned
end

-- Brings back finished session e from the session index (index.lua: an entry checked whole, its
-- record's fields but park.PARKED and the journal's path), parked on its record as restore parks a
-- finished one read from it: nothing else is read.
function M.from_index(d, e)
  local s = e
  s.plan = s.plan or json.array()
  revision.set(s, "transcript_path", store.journal_path(d.paths.sessions, s.id))
  revision.set(s, "pending", {})
  revision.set(s, "parked", "record")
  order.put(d, s.id, s)
  return s
end

return M
