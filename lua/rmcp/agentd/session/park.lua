-- Parked sessions: a finished session (exited or orphaned, no agent, no decision pending) keeps in
-- memory only what lists, watches and retention read (its record's small fields, the task and the
-- plan); its runtime table s.rt (undrained events, counters, the agent's config options, buffers)
-- and the record's long or rarely read fields (PARKED: the last turn's text, the posture, warnings,
-- skipped options, agent info) wait on disk until a verb needs them. They are in <id>.parked.json
-- (s.parked = "file": a line of the fields, a line of the runtime), or, for a session just read
-- back at start (its runtime fresh), in its record <id>.json itself (s.parked = "record": nothing
-- is written). A drain, resume or adoption brings everything back (unpark); reads that need one
-- part (persist, transcript, the agent's config) peek at it. A session is parked again a moment after a drain or save leaves it finished,
-- so a parked session answers every method as it did in memory; a restarted daemon starts every
-- runtime afresh (the files a previous daemon left are removed at load: agentd/store.lua).
local json = require "rmcp.lib.json"
local log = require "rmcp.lib.log"
local files = require "rmcp.lib.files"
local after_reply = require "rmcp.lib.after_reply"
local store = require "rmcp.agentd.store"
local runtime = require "rmcp.agentd.session.runtime"
local tally = require "rmcp.agentd.session.tally"
local revision = require "rmcp.agentd.session.revision"

local M = {}

-- The persisted fields a parked session holds on disk instead of in memory.
M.PARKED = { "last_text", "posture", "warnings", "skipped_options", "agent_info" }

-- Runtime fields that do not go to disk: a process, a timer, the profile (its policies' tables:
-- a finished session's profile is asked again when it resumes), the usage line (made again).
local not_kept = { agent = true, idle_timer = true, profile = true, usage_line = true }

local finished = { exited = true, orphaned = true }

-- True when s can be parked now: finished, no agent or setup, no timer, no decision, readable.
function M.parkable(d, s)
  local rt = s.rt
  return rt ~= nil and finished[s.status] == true and not d.shutting_down and not s.unreadable
    and rt.agent == nil and not rt.setting_up and not rt.resuming and not rt.finishing and rt.idle_timer == nil
    and #s.pending == 0
end

-- The runtime table rt as it goes to disk (what JSON holds of it).
local function runtime_copy(rt)
  local out = {}
  for k, v in pairs(rt) do
    local t = type(v)
    if not not_kept[k] and t ~= "function" and t ~= "userdata" and t ~= "thread" then out[k] = v end
  end
  return out
end

-- The ids of the sessions parked on a file (s.parked == "file"): id -> true.
local on_file = {}

-- Parks s now when it can be (its file written first); returns true when it is parked.
function M.park(d, s)
  if s.parked then return true end
  if not M.parkable(d, s) then return false end
  local dir = d.paths.sessions
  local fields = {}
  for _, k in ipairs(M.PARKED) do fields[k] = s[k] end
  local head, err = json.encode(fields)
  local body, berr = json.encode(runtime_copy(s.rt))
  err = err or berr
  local ok, werr = head and body and files.write_atomic(store.parked_path(dir, s.id), head .. "\n" .. body .. "\n", false)
  if not ok then
    log.warn("session %s: not parked (kept in memory): %s", s.id, tostring(err or werr))
    return false
  end
  store.save_waiting(dir, s) -- a save that waits encodes what is leaving now
  for _, k in ipairs(M.PARKED) do revision.set(s, k, nil) end
  s.rt = nil
  revision.set(s, "parked", "file")
  on_file[s.id] = true
  tally.parked_changed(d)
  return true
end

-- Sessions to park after the replies of this moment (lib/after_reply), each once: session -> d.
local waiting = {}

-- Parks every session waiting for it that still can be (and still exists).
local function park_waiting()
  local batch = waiting
  waiting = {}
  for s, d in pairs(batch) do
    if d.sessions[s.id] == s then M.park(d, s) end
  end
end

-- Parks s a moment from now, after the replies of this moment (when it still can be then): the
-- verb that left it finished, and the watch or poll that follows at once, find it in memory.
function M.later(d, s)
  if s.parked or not finished[s.status] then return end
  if next(waiting) == nil then after_reply.queue(park_waiting) end
  waiting[s] = d
end

-- Parks s, just read back from its record at start with a fresh runtime, on that record: nothing
-- is written. Only one whose runtime holds nothing but a fresh one's (no turn left to deliver) and
-- whose parked fields are its record's (not caught up with its journal: the caller says) can be.
function M.park_on_record(d, s)
  if s.parked or not M.parkable(d, s) or #s.rt.turns > 0 then return end
  for _, k in ipairs(M.PARKED) do revision.set(s, k, nil) end
  s.rt = nil
  revision.set(s, "parked", "record")
  tally.parked_changed(d)
end

-- The fields of M.PARKED from record rec as a restore takes them (restore.lua): a field of the
-- wrong type is left out, the lists keep their strings, allow_write stays a JSON array.
local function checked_fields(rec)
  local out = {}
  for _, k in ipairs(M.PARKED) do
    local v = rec[k]
    if v ~= nil and store.fits(v, store.field_types[k]) then out[k] = v end
  end
  for _, k in ipairs({ "warnings", "skipped_options" }) do
    local list = json.array()
    for _, x in ipairs(out[k] or {}) do
      if type(x) == "string" then list[#list + 1] = x end
    end
    out[k] = list
  end
  if out.posture and type(out.posture.allow_write) == "table" then json.array(out.posture.allow_write) end
  return out
end

-- What parked session s holds on disk: {fields = M.PARKED's, rt = its runtime (nil: a fresh one;
-- read only when with_rt asks: a save needs the fields alone)}. A file that cannot be read
-- (removed by hand) gives a fresh runtime and no fields, logged.
function M.peek(d, s, with_rt)
  local dir = d.paths.sessions
  if s.parked == "record" then
    local rec, err = store.read_record(dir, s.id)
    if not rec then log.warn("session %s: parked fields not found: %s", s.id, err) end
    return { fields = rec and checked_fields(rec) or {} }
  end
  local path = store.parked_path(dir, s.id)
  local f = io.open(path, "r")
  local fields = f and json.decode(f:read("l") or "")
  local rt = f and with_rt and json.decode(f:read("l") or "")
  if f then f:close() end
  if type(fields) ~= "table" or (with_rt and type(rt) ~= "table") then
    log.warn("session %s: %s cannot be read: its runtime starts afresh", s.id, path)
    return { fields = type(fields) == "table" and fields or {} }
  end
  return { fields = fields, rt = with_rt and rt or nil }
end

-- Brings parked session s back into memory (its file goes); nothing when it is not parked.
function M.unpark(d, s)
  if not s.parked then return end
  local held = M.peek(d, s, true)
  local rt = held.rt
  if not rt then
    rt = runtime.new_rt()
    rt.released = true -- its text is its journal's, as for any session read back at start
  end
  for _, k in ipairs(M.PARKED) do revision.set(s, k, held.fields[k]) end
  if s.parked == "file" then os.remove(store.parked_path(d.paths.sessions, s.id)) end
  on_file[s.id] = nil
  s.rt = rt
  revision.set(s, "parked", nil)
  tally.parked_changed(d)
end

-- Notes that a watch took s's terminal state (terminal_pending no longer set): a parked one leaves
-- the view of its owner's list (tally.lua keeps which parked sessions it shows).
function M.collected(d, s)
  if s.parked and s.terminal_pending then tally.parked_changed(d) end
  revision.set(s, "terminal_pending", false)
end

-- Removes the parked files this daemon wrote (it exits: the next one starts every runtime afresh
-- and, started from the session index, does not look for them).
function M.drop_files(d)
  for id in pairs(on_file) do os.remove(store.parked_path(d.paths.sessions, id)) end
  on_file = {}
end

-- Removes what parked session s holds on disk (the session is being forgotten).
function M.forget(d, s)
  waiting[s] = nil
  on_file[s.id] = nil
  if s.parked == "file" then os.remove(store.parked_path(d.paths.sessions, s.id)) end
end

return M
