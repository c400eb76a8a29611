-- Persistence of sessions under $REASONIX_MCP_HOME/sessions: <id>.json (metadata, written atomically
-- with rename), <id>.events.jsonl (our append-only journal of what the agent did) and, while a
-- finished session is parked, <id>.parked.json (what it keeps out of memory: agentd/session/park.lua).
local uv = require "luv"
local json = require "rmcp.lib.json"
local files = require "rmcp.lib.files"
local log = require "rmcp.lib.log"
local after_reply = require "rmcp.lib.after_reply"

local M = {}

-- Session fields that are persisted (everything else is runtime state), with the type each must
-- have when read back ("array" and "object" are tables; "integer" a whole number). A field of the
-- wrong type is reset by the session's restore, never used as it is.
M.field_types = {
  id = "string", owner = "string", project_dir = "string", cwd = "string", task = "string",
  model = "string", effort = "string", tool_approval = "string", work_mode = "string",
  keep_alive = "boolean", idle_timeout = "number", acp_session_id = "string", status = "string",
  stop_reason = "string", exit_reason = "string", error_text = "string", contract_sent = "boolean",
  created_at = "number", updated_at = "number", turns_total = "integer", turns_drained = "integer", last_text = "string",
  plan = "array", posture = "object", skipped_options = "array", warnings = "array",
  terminal_pending = "boolean", transcript_path = "string", work_seconds = "number", damaged = "string",
  interrupted_turn = "boolean", queued_config = "object",
  routine = "object", on_behalf_of = "string", -- a routine run's: its marker, and the routine's creator
  agent_profile = "string", agent_info = "object", -- rules/profiles.lua's name; the agent's initialize agentInfo
  worktree = "object", changes = "object", -- isolate=worktree: the worktree (agentd/session/isolate.lua) and the last changes summary
  sandbox = "object", -- the sandbox its agent runs in (rules/sandbox.lua spec; agentd/session/sandbox.lua)
  -- what it spends (agentd/session/usage.lua): its figures, its agent process's last cumulative
  -- figure, its budget, its fleet {id, name, budget?}, its orchestrator's daily budget, why a budget stopped it
  usage = "object", usage_seen = "object", budget = "object", fleet = "object", daily_budget = "object", budget_note = "string",
  undelivered = "array", -- messages sent to it that a budget stop kept for its resume
  integration = "object", -- where its branch's integration is (agentd/integrate/queue.lua)
  forecast = "object", -- its branch's last forecast (agentd/integrate/forecast.lua)
  agent = "string", -- the agent it runs: reasonix, a built-in ACP agent or a policy's (rules/agents.lua)
}

-- True when value v (as decoded) has type want (M.field_types); a number must be finite (JSON has
-- no infinity: one would be saved as null).
function M.fits(v, want)
  if want == "integer" then return math.type(v) == "integer" end
  if want == "number" then return type(v) == "number" and v == v and v ~= math.huge and v ~= -math.huge end
  if want == "array" then return type(v) == "table" and (v[1] ~= nil or next(v) == nil) end
  if want == "object" then return type(v) == "table" and v[1] == nil end
  return type(v) == want
end

-- Wall-clock time in seconds, to the millisecond: one division, so the value is the double nearest
-- to the decimal and prints as 1733000000.123 (not 1733000000.1229999).
function M.now()
  local sec, usec = uv.gettimeofday()
  return (sec * 1000 + usec // 1000) / 1000
end

-- Path of the metadata file of session id.
function M.meta_path(dir, id)
  return dir .. "/" .. id .. ".json"
end

-- Path of the events journal of session id.
function M.journal_path(dir, id)
  return dir .. "/" .. id .. ".events.jsonl"
end

-- Path of the parked part of session id (agentd/session/park.lua).
function M.parked_path(dir, id)
  return dir .. "/" .. id .. ".parked.json"
end

-- True when id is safe to use as a file name (our ids are generated; this guards loaded names).
function M.valid_id(id)
  return type(id) == "string" and #id <= 64 and id:match("^[%w%-_]+$") ~= nil
end

-- n random bytes from the kernel's random source as 2n hex digits (the clock's nanoseconds when it
-- cannot be read). One getrandom call (uv.random), not an open, a buffered 4 KiB read and a close of
-- /dev/urandom: every spawn names its session with it.
function M.random_hex(n)
  local bytes = uv.random(n) or string.format("%016x", uv.hrtime()):sub(-n)
  return (bytes:gsub(".", function(c) return string.format("%02x", c:byte()) end):sub(1, 2 * n))
end

-- Encodes the persisted fields of session s (those it does not hold from extra: a parked session's);
-- returns text or nil (logged).
local function encode(s, extra)
  local rec = {}
  for k in pairs(M.field_types) do
    local v = s[k]
    if v == nil and extra then v = extra[k] end
    rec[k] = v
  end
  local text, err = json.encode(rec)
  if not text then
    log.error("session %s: cannot encode metadata: %s", s.id, err)
    return nil
  end
  return text .. "\n"
end

-- Saves of live sessions waiting to be written after the replies of this moment (lib/after_reply):
-- metadata path -> {s = session, on_error = fn(err) or nil, extra = fields or nil}.
local deferred = {}

-- Open journal fds by session id (O_APPEND, close-on-exec), so an event costs one write, not an
-- open, a seek, a write and a close; journal_n counts them (bounded by MAX_OPEN_JOURNALS).
local journals, journal_n = {}, 0
local MAX_OPEN_JOURNALS = 256

-- Writes session s to path now (tmp + rename, fsync when asked); returns true, or false and why
-- (logged).
local function write_now(path, s, fsync, extra)
  local text = encode(s, extra)
  if not text then return false, "metadata not encodable" end
  local ok, werr = files.write_atomic(path, text, fsync)
  if not ok then log.error("session %s: cannot save metadata to %s: %s", s.id, path, werr) end
  return ok == true, werr
end

-- The ids of the sessions whose record this daemon saved or removed (id -> true), so the session
-- index (agentd/session/index.lua) appends what changed, not the whole history; nil once more than
-- MAX_CHANGED did (a daemon that ran long: the index is written whole).
local changed, changed_n = {}, 0
local MAX_CHANGED = 4096

-- Notes that the record of session id was saved or removed.
local function note_changed(id)
  if not changed or changed[id] then return end
  changed[id], changed_n = true, changed_n + 1
  if changed_n > MAX_CHANGED then changed = nil end
end

-- The ids whose record this daemon saved or removed since it started (the caller must not change
-- it), or nil when too many did to name them.
function M.changed_ids()
  return changed
end

-- Writes every deferred save (each session once, however often it changed in the iteration); a
-- failure goes to the on_error its save gave.
local function flush_deferred()
  if next(deferred) == nil then return end
  local batch = deferred
  deferred = {}
  for path, w in pairs(batch) do
    local ok, err = write_now(path, w.s, false, w.extra)
    if not ok and w.on_error then w.on_error(err) end
  end
end

-- Persists the metadata of session s into dir; the file on disk is always a whole record (tmp +
-- rename). now: written at once and fsynced (a session that ends, daemon shutdown), returning false
-- and why when that failed (logged). Otherwise (a live session changing: several times per turn) the write
-- waits until the replies of this moment are out (lib/after_reply: 1 to 2 ms),
-- coalesced, and is not fsynced: it survives a daemon crash once written, a power loss once the
-- kernel writes it back; if it fails, on_error(err). extra: the persisted fields s does not hold
-- (a parked session's).
function M.save(dir, s, now, on_error, extra)
  local path = M.meta_path(dir, s.id)
  note_changed(s.id)
  if now then
    deferred[path] = nil
    return write_now(path, s, true, extra)
  end
  if next(deferred) == nil then after_reply.queue(flush_deferred) end
  deferred[path] = { s = s, on_error = on_error, extra = extra }
  return true
end

-- Writes the deferred save of session s, if one waits, at once (its fields are about to leave memory).
function M.save_waiting(dir, s)
  local path = M.meta_path(dir, s.id)
  local w = deferred[path]
  if not w then return end
  deferred[path] = nil
  local ok, err = write_now(path, w.s, false, w.extra)
  if not ok and w.on_error then w.on_error(err) end
end

-- The record of session id as its metadata file holds it (decoded), or nil and why.
function M.read_record(dir, id)
  local text = files.read(M.meta_path(dir, id))
  if not text then return nil, "cannot read " .. M.meta_path(dir, id) end
  local rec = json.decode(text)
  if type(rec) ~= "table" then return nil, M.meta_path(dir, id) .. " is not a JSON object" end
  return rec
end

-- Writes the deferred saves at once (shutdown, handover).
function M.flush()
  flush_deferred()
end

-- Removes the metadata file of session id (a spawn that failed); a deferred save is dropped.
function M.remove(dir, id)
  local path = M.meta_path(dir, id)
  note_changed(id)
  deferred[path] = nil
  M.close_journal(id)
  os.remove(path)
end

-- Closes the open journal fd of session id, if any (the session ended; the next append reopens it).
function M.close_journal(id)
  local fd = journals[id]
  if fd then
    uv.fs_close(fd)
    journals[id] = nil
    journal_n = journal_n - 1
  end
end

-- Closes every open journal fd (shutdown, or too many open).
function M.close_journals()
  for id in pairs(journals) do M.close_journal(id) end
end

-- Appends one record (a table; t added) to the journal of session id.
function M.append(dir, id, rec)
  rec.t = rec.t or M.now()
  local line, err = json.encode(rec)
  if not line then
    log.warn("session %s: journal record not encodable: %s", id, err)
    return false
  end
  local fd = journals[id]
  if not fd then
    if journal_n >= MAX_OPEN_JOURNALS then M.close_journals() end
    local ferr
    fd, ferr = uv.fs_open(M.journal_path(dir, id), "a", 384) -- 0600
    if not fd then
      log.warn("session %s: cannot open journal: %s", id, ferr)
      return false
    end
    journals[id], journal_n = fd, journal_n + 1
  end
  local ok, werr = uv.fs_write(fd, line .. "\n", -1)
  if not ok then
    log.warn("session %s: cannot write journal: %s", id, werr)
    M.close_journal(id)
    return false
  end
  return true
end

-- Reads a session's journal (its path: journal_path, the session's transcript_path); returns a
-- list of records (bad lines skipped).
function M.read_journal(path)
  local out = {}
  local f = io.open(path, "r")
  if not f then return out end
  for line in f:lines() do
    local rec = json.decode(line)
    if type(rec) == "table" then out[#out + 1] = rec end
  end
  f:close()
  return out
end

-- The journal records from byte offset `from` (a record boundary an earlier call returned) to the
-- last whole line: records, the offset after them, and whether `from` was past the end (a journal
-- started over: the caller reads from 0 again). Reads only what is new.
function M.read_journal_from(path, from)
  local out = {}
  local f = io.open(path, "rb")
  if not f then return out, 0, from > 0 end
  local size = f:seek("end")
  if from > size then f:close(); return out, 0, true end
  f:seek("set", from)
  local text = f:read("a") or ""
  f:close()
  local last = text:match(".*()\n") -- a line still being written is left for the next call
  if not last then return out, from, false end
  for line in text:sub(1, last):gmatch("[^\n]+") do
    local ok, rec = pcall(json.decode, line)
    if ok and type(rec) == "table" then out[#out + 1] = rec end
  end
  return out, from + last, false
end

-- What a session's journal tells of it: its owner and cwd (the spawn record), how many turns
-- ended and the last turn's text.
local function journal_facts(path)
  local facts = { turns = 0 }
  for _, rec in ipairs(M.read_journal(path)) do
    if rec.type == "spawn" then
      facts.owner = type(rec.owner) == "string" and rec.owner or facts.owner
      facts.cwd = type(rec.cwd) == "string" and rec.cwd or facts.cwd
      facts.t = facts.t or (type(rec.t) == "number" and rec.t or nil)
    elseif rec.type == "turn_end" then
      facts.turns = facts.turns + 1
      facts.text = type(rec.text) == "string" and rec.text or facts.text
    end
  end
  return facts
end

-- The record standing for session id whose metadata could not be read (why): what the file's text
-- (nil: missing) and the journal still tell, so the session is listed as damaged instead of
-- vanishing. Its owner is nil when neither names one. The file itself is never rewritten.
local function damaged_record(dir, id, text, why)
  local function field(name)
    return text and (text:match('"' .. name .. '"%s*:%s*"([^"\\]*)"'))
  end
  local facts = journal_facts(M.journal_path(dir, id))
  local st = uv.fs_stat(M.meta_path(dir, id)) or uv.fs_stat(M.journal_path(dir, id))
  local t = facts.t or (st and st.mtime.sec) or 0
  local owner = field("owner") or facts.owner
  local cwd = field("cwd") or facts.cwd or ""
  local recovered = {}
  if owner then recovered[#recovered + 1] = "owner" end
  if cwd ~= "" then recovered[#recovered + 1] = "cwd" end
  local note = string.format("unreadable session file (%s); recovered: %s; the journal holds %d finished turn(s)",
    why, #recovered > 0 and table.concat(recovered, ", ") or "nothing", facts.turns)
  return {
    id = id, owner = owner, cwd = cwd, project_dir = cwd, task = field("task") or "",
    status = "exited", exit_reason = "damaged", damaged = note, unreadable = why,
    turns_total = facts.turns, last_text = facts.text,
    created_at = t, updated_at = t,
  }
end

-- Why the text of session id's metadata file is not a usable record, or nil when it is.
local function unusable(text, id)
  if not text then return "cannot read it" end
  local rec = json.decode(text)
  if type(rec) ~= "table" or rec[1] ~= nil then return text == "" and "empty" or "not a JSON object" end
  if rec.id ~= id then return "its id field is not " .. id end
  if type(rec.owner) ~= "string" then return "no owner" end
  if type(rec.cwd) ~= "string" then return "no cwd" end
  return nil, rec
end

-- The record of session id read from dir as a load takes it: its metadata file's, or for a file
-- that cannot be read (or is missing while its journal is there) a damaged record built from what
-- remains (see damaged_record); nil when neither file is there.
local function load_one(dir, id)
  local path = M.meta_path(dir, id)
  local f = io.open(path, "r")
  local text = f and f:read("a")
  if f then f:close() end
  if not f and not uv.fs_stat(path) then
    return uv.fs_stat(M.journal_path(dir, id)) and damaged_record(dir, id, nil, "missing") or nil
  end
  local why, rec = unusable(text, id)
  return rec or damaged_record(dir, id, text, why)
end

-- The records of a load that can be listed: one unreadable is logged, one naming no owner is
-- logged and left out.
local function listable(dir, records)
  local kept = {}
  for _, rec in ipairs(records) do
    if rec.unreadable then log.warn("session %s: %s", rec.id, rec.damaged) end
    if rec.owner then
      kept[#kept + 1] = rec
    else
      log.warn("session %s names no owner: not listed; its files are kept as they are in %s", rec.id, dir)
    end
  end
  return kept
end

-- Loads every session in dir: one record per metadata file, and for a file that cannot be read
-- (or a journal whose metadata file is missing) a damaged record built from what remains (see
-- damaged_record; one with no owner is logged and left out). Returns a list of plain tables.
function M.load_all(dir)
  local out, seen, journals_only = {}, {}, {}
  local scan = uv.fs_scandir(dir)
  while scan do
    local name = uv.fs_scandir_next(scan)
    if not name then break end
    local id = name:match("^(.+)%.json$")
    local jid = name:match("^(.+)%.events%.jsonl$")
    if name:match("%.json%.tmp%d+a?$") then
      os.remove(dir .. "/" .. name) -- a save cut short by a crash (one daemon per home: not in use)
    elseif name:match("%.parked%.json$") then
      os.remove(dir .. "/" .. name) -- a previous daemon's parked runtime: a session's runtime starts afresh
    elseif id and M.valid_id(id) then
      seen[id] = true
      out[#out + 1] = load_one(dir, id)
    elseif jid and M.valid_id(jid) then
      journals_only[#journals_only + 1] = jid
    end
  end
  for _, id in ipairs(journals_only) do
    if not seen[id] then out[#out + 1] = damaged_record(dir, id, nil, "missing") end
  end
  return listable(dir, out)
end

-- Loads the sessions ids of dir (the session index names them: agentd/session/index.lua) as
-- load_all loads each; an id with neither file is left out.
function M.load_ids(dir, ids)
  local out = {}
  for _, id in ipairs(ids) do out[#out + 1] = load_one(dir, id) end
  return listable(dir, out)
end

return M
