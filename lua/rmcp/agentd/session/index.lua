-- The index of finished sessions, so a daemon over a long history starts without reading and
-- decoding every record. Two files in the home: the body (sessions.index), lines of {set = entries}
-- or {drop = ids}, later lines winning, each entry a record's persisted fields but park.PARKED and
-- transcript_path; and its head (sessions.index.head): {version, dir = the sessions dir's inode and
-- mtime, body = the body's inode and size, read = the ids whose record must be read as before (live,
-- turns to deliver, damaged), base and appended = the entries written whole and added since}.
-- A clean shutdown writes them last, after every save: what changed is appended to the body (the
-- whole is written again when there is no body to add to, or the additions outgrow half of it),
-- then the head. A start takes the head, removes it (from then on the daemon writes records, and a
-- crash leaves nothing to trust), reads the `read` records, and takes the body's sessions in after
-- it listens, a line per turn of the loop (parked on their records: park.lua), or at once when a
-- request other than hello comes first. Any record saved, added or removed changes the sessions
-- dir's mtime (a save is tmp + rename), so a stale index is known: a missing, stale, older or
-- unreadable head is not used at all (every record is read), and a body line found broken while it
-- is taken in puts back every session taken from it and reads every record instead. (A record
-- rewritten in place by hand while no daemon runs leaves the dir's mtime as it was: removing the
-- head makes the next start read every record.)
local uv = require "luv"
local json = require "rmcp.lib.json"
local log = require "rmcp.lib.log"
local files = require "rmcp.lib.files"
local store = require "rmcp.agentd.store"
local park = require "rmcp.agentd.session.park"
local order = require "rmcp.agentd.session.order"
local restore = require "rmcp.agentd.session.restore"

local M = {}

M.VERSION = 1
M.LINE = 128 -- entries per body line: one line is taken in per turn of the loop (a few ms)

local finished = { exited = true, orphaned = true }

-- The persisted fields an entry leaves out: park.PARKED (read from the record when touched) and
-- the journal's path (it follows from the id).
local left_out = { transcript_path = true }
for _, k in ipairs(park.PARKED) do left_out[k] = true end

-- The fields every entry must hold.
local required = { "id", "owner", "cwd", "task", "status", "created_at", "updated_at", "turns_total", "turns_drained" }

-- The body this daemon started from, while it may be appended to: {ino, size, base, appended,
-- read (the head's ids)}; nil when it must be written whole.
local body = nil

-- The body being taken in: {d, f (its file), read (set of the head's ids), put (ids taken from
-- it), idle (the handle that takes a line per turn), on_done}; nil when none is.
local loading = nil

-- The stamp of the sessions dir (its inode and mtime), or nil when it cannot be read.
local function dir_stamp(dir)
  local st = uv.fs_stat(dir)
  return st and { ino = st.ino, sec = st.mtime.sec, nsec = st.mtime.nsec }
end

-- True when session s can be an entry; otherwise its record is read at start as before: live,
-- with turns not yet delivered (they are rebuilt from its journal), a decision pending, a worktree
-- being made, or unreadable.
local function indexable(s)
  return finished[s.status] and not s.unreadable and #s.pending == 0 and math.type(s.turns_drained) == "integer"
    and s.turns_drained >= s.turns_total and not (type(s.worktree) == "table" and s.worktree.state == "creating")
end

-- The entry of session s, or nil when it cannot be one (indexable).
local function entry_of(s)
  if not indexable(s) then return nil end
  local e = {}
  for k in pairs(store.field_types) do
    if not left_out[k] then e[k] = s[k] end
  end
  return e
end

-- True when entry e is whole: a table with every required field, a finished status, and no field
-- unknown or of the wrong type (store.field_types).
local function whole(e)
  if type(e) ~= "table" or not store.valid_id(e.id) or not finished[e.status] then return false end
  for _, k in ipairs(required) do
    if e[k] == nil then return false end
  end
  local types = store.field_types
  for k, v in pairs(e) do
    local want = types[k]
    if want ~= type(v) and not (want and store.fits(v, want)) then return false end
  end
  return true
end

-- Stops taking the body in (done, broken or the daemon exits).
local function stop_loading()
  if not loading then return end
  loading.f:close()
  if loading.idle then loading.idle:close() end
  loading = nil
end

-- Applies body line rec (decoded) to d; false when it is not one this module writes.
local function apply(d, rec)
  if type(rec) ~= "table" or (rec.set == nil and rec.drop == nil) then return false end
  local set, drop = rec.set or {}, rec.drop or {}
  if type(set) ~= "table" or type(drop) ~= "table" then return false end
  for _, e in ipairs(set) do
    if not whole(e) then return false end
    if not loading.read[e.id] then
      restore.from_index(d, e)
      loading.put[e.id] = true
    end
  end
  for _, id in ipairs(drop) do
    if type(id) ~= "string" then return false end
    if loading.put[id] then order.put(d, id, nil) end
    loading.put[id] = nil
  end
  return true
end

-- A body line was broken (why): the sessions taken from the body go, every record is read instead,
-- and the next shutdown writes the index whole.
local function fall_back(d, why)
  log.warn("session index body unusable (%s): reading every session record", why)
  for id in pairs(loading.put) do order.put(d, id, nil) end
  stop_loading()
  body = nil
  local fresh = {}
  for _, rec in ipairs(store.load_all(d.paths.sessions)) do
    if not d.sessions[rec.id] then fresh[#fresh + 1] = rec end
  end
  restore.records(d, fresh)
end

-- Takes in the next line of the body; true when the body is done (or was found broken).
local function step()
  local d = loading.d
  local line = loading.f:read("l")
  if line == nil then
    local n, on_done = 0, loading.on_done
    for _ in pairs(loading.put) do n = n + 1 end
    log.info("took %d finished session(s) from the session index", n)
    stop_loading()
    if on_done then on_done() end
    return true
  end
  if not apply(d, json.decode(line)) then
    local on_done = loading.on_done
    fall_back(d, "a line that is not whole")
    if on_done then on_done() end
    return true
  end
  return false
end

-- Takes in whatever the body still holds now (a request needs the whole history).
function M.complete(_)
  while loading and not step() do end
end

-- Takes the body in after this turn of the loop, a line per turn, then on_done(); on_done() at once
-- when there is nothing to take in.
function M.load_later(_, on_done)
  if not loading then return on_done() end
  loading.on_done = on_done
  loading.idle = uv.new_idle()
  loading.idle:start(function()
    if loading and loading.d.shutting_down then loading.idle:stop() elseif loading then step() end
  end)
end

-- The head of the index of d as {read = ids}, or nil and why it cannot be used. The head is
-- removed either way; a usable one leaves the body open to be taken in (load_later).
function M.read(d)
  local path = d.paths.sessions_index
  local text = files.read(d.paths.sessions_index_head)
  if not text then return nil, "missing" end
  os.remove(d.paths.sessions_index_head)
  local head = json.decode(text)
  if type(head) ~= "table" or type(head.dir) ~= "table" or type(head.body) ~= "table" or type(head.read) ~= "table" then
    return nil, "its head is unreadable"
  end
  if head.version ~= M.VERSION then return nil, "version " .. tostring(head.version) .. ", not " .. M.VERSION end
  local stamp, st = dir_stamp(d.paths.sessions), uv.fs_stat(path)
  if not stamp or stamp.ino ~= head.dir.ino or stamp.sec ~= head.dir.sec or stamp.nsec ~= head.dir.nsec then
    return nil, "the sessions dir changed since it was written"
  end
  if not st or st.ino ~= head.body.ino or st.size ~= head.body.size then return nil, "its body changed since it was written" end
  local read = {}
  for _, id in ipairs(head.read) do
    if not store.valid_id(id) then return nil, "it names an invalid id" end
    read[id] = true
  end
  local f = io.open(path, "rb")
  if not f then return nil, "its body cannot be read" end
  loading = { d = d, f = f, read = read, put = {} }
  body = { ino = st.ino, size = st.size, base = math.tointeger(head.base) or 0,
           appended = math.tointeger(head.appended) or 0, read = head.read }
  return { read = head.read }
end

-- What changed since this daemon started (the sessions whose record it saved or removed, and
-- those the head named to read): the line that adds it to the body ("" when nothing did), how many
-- entries and ids that line holds, and the ids to read at the next start. Nil when too much
-- changed to name (store.changed_ids).
local function additions(d)
  local changed = store.changed_ids()
  if not changed then return nil end
  local sets, drops, read = json.array(), json.array(), json.array()
  local function add(id)
    local s = d.sessions[id]
    local e = s and entry_of(s)
    if e then sets[#sets + 1] = e elseif s then read[#read + 1] = id else drops[#drops + 1] = id end
  end
  for id in pairs(changed) do add(id) end
  for _, id in ipairs(body.read) do
    if not changed[id] then add(id) end
  end
  local n = #sets + #drops
  return n > 0 and json.encode({ set = sets, drop = drops }) .. "\n" or "", n, read
end

-- Appends text to the body (fsynced); returns its new size, or nil and why.
local function append(path, text)
  local fd, err = uv.fs_open(path, "a", 384)
  if not fd then return nil, err end
  local ok, werr = uv.fs_write(fd, text, -1)
  if ok == #text then ok, werr = uv.fs_fsync(fd) else ok, werr = nil, werr or "short write" end
  local st = ok and uv.fs_fstat(fd)
  uv.fs_close(fd)
  if not st then return nil, werr end
  return st.size
end

-- Writes the body whole from d's sessions (all of them taken in first); returns {ino, size, base,
-- appended = 0, read = the ids to read at the next start}, or nil and why.
local function write_whole(d, path)
  M.complete(d)
  local lines, line, n, read = {}, json.array(), 0, json.array()
  for id, s in pairs(d.sessions) do
    local e = entry_of(s)
    if e then
      line[#line + 1], n = e, n + 1
      if #line == M.LINE then lines[#lines + 1], line = json.encode({ set = line }), json.array() end
    else
      read[#read + 1] = id
    end
  end
  if #line > 0 or #lines == 0 then lines[#lines + 1] = json.encode({ set = line }) end
  local ok, err = files.write_atomic(path, table.concat(lines, "\n") .. "\n", true)
  local st = ok and uv.fs_stat(path)
  if not st then return nil, err end
  return { ino = st.ino, size = st.size, base = n, appended = 0, read = read }
end

-- The body after this shutdown's additions (appended when they fit, else written whole), or nil
-- and why.
local function written_body(d, path)
  local st = body and uv.fs_stat(path)
  if st and st.ino == body.ino and st.size == body.size then
    local text, n, read = additions(d)
    if text and body.appended + n <= body.base // 2 + M.LINE then
      local size, err = st.size, nil
      if text ~= "" then size, err = append(path, text) end
      if not size then return nil, err end
      return { ino = body.ino, size = size, base = body.base, appended = body.appended + n, read = read }
    end
  end
  return write_whole(d, path)
end

-- Writes the index of d's sessions (the daemon exits: every save is done, nothing writes after
-- this); parked files go first (the next start keeps no runtime). Logged when it fails: the next
-- start then reads every record.
function M.write(d)
  park.drop_files(d)
  local path = d.paths.sessions_index
  local b, err = written_body(d, path)
  stop_loading()
  local stamp = b and dir_stamp(d.paths.sessions)
  local head = stamp and json.encode({ version = M.VERSION, dir = stamp, body = { ino = b.ino, size = b.size },
    read = b.read, base = b.base, appended = b.appended })
  local ok, werr = head and files.write_atomic(d.paths.sessions_index_head, head, true)
  if not ok then log.warn("session index not written (the next start reads every record): %s", tostring(err or werr or "no stamp")) end
end

return M
