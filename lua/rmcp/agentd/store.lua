-- Persistence of sessions under $REASONIX_MCP_HOME/sessions: <id>.json (metadata, written atomically
-- with rename) and <id>.events.jsonl (our append-only journal of what the agent did).
local uv = require "luv"
local json = require "rmcp.lib.json"
local log = require "rmcp.lib.log"

local M = {}

-- Session fields that are persisted (everything else is runtime state).
M.fields = {
  "id", "owner", "project_dir", "cwd", "task", "model", "effort", "tool_approval", "work_mode",
  "keep_alive", "idle_timeout", "acp_session_id", "status", "stop_reason", "exit_reason", "error_text",
  "contract_sent", "created_at", "updated_at", "turns_total", "last_text", "plan", "posture",
  "skipped_options", "warnings", "terminal_pending", "transcript_path", "work_seconds",
}

-- Wall-clock time in seconds (with milliseconds).
function M.now()
  local sec, usec = uv.gettimeofday()
  return sec + math.floor(usec / 1000) / 1000
end

-- Path of the metadata file of session id.
function M.meta_path(dir, id)
  return dir .. "/" .. id .. ".json"
end

-- Path of the events journal of session id.
function M.journal_path(dir, id)
  return dir .. "/" .. id .. ".events.jsonl"
end

-- True when id is safe to use as a file name (our ids are generated; this guards loaded names).
function M.valid_id(id)
  return type(id) == "string" and #id <= 64 and id:match("^[%w%-_]+$") ~= nil
end

-- Writes text to path atomically (temp file in the same dir, fsync unless fsync is false, rename);
-- returns true or nil, err.
function M.write_atomic(path, text, fsync)
  local tmp = path .. ".tmp" .. uv.os_getpid()
  local fd, err = uv.fs_open(tmp, "w", 384) -- 0600
  if not fd then return nil, err end
  local ok, werr = uv.fs_write(fd, text, -1)
  if ok and fsync ~= false then ok, werr = uv.fs_fsync(fd) end
  uv.fs_close(fd)
  if not ok then uv.fs_unlink(tmp); return nil, werr end
  local rok, rerr = uv.fs_rename(tmp, path)
  if not rok then uv.fs_unlink(tmp); return nil, rerr end
  return true
end

-- Encodes the persisted fields of session s; returns text or nil (logged).
local function encode(s)
  local rec = {}
  for _, k in ipairs(M.fields) do rec[k] = s[k] end
  local text, err = json.encode(rec)
  if not text then
    log.error("session %s: cannot encode metadata: %s", s.id, err)
    return nil
  end
  return text .. "\n"
end

-- Per metadata path: { seq = writes started, s = session, busy = an async write is in flight,
-- again = the session changed while it was }.
local saves = {}

-- Writes s to path off the loop: open, write, fsync and close on the thread pool, then the rename on
-- the loop, skipped when a synchronous save overtook it (seq). Coalesced: while one write is in
-- flight, further saves only mark the session, and one more write of its latest state follows.
local function save_async(path, st)
  local text = encode(st.s)
  if not text then return end
  st.busy, st.again = true, false
  st.seq = st.seq + 1
  local seq = st.seq
  local tmp = path .. ".tmp" .. uv.os_getpid() .. "a"
  local function done(err)
    if err then
      uv.fs_unlink(tmp, function() end)
      log.error("session %s: cannot save metadata: %s", st.s.id, tostring(err))
    end
    st.busy = false
    if st.again then return save_async(path, st) end
    if saves[path] == st then saves[path] = nil end
  end
  uv.fs_open(tmp, "w", 384, function(oerr, fd) -- 0600
    if not fd then return done(oerr) end
    uv.fs_write(fd, text, -1, function(werr)
      if werr then uv.fs_close(fd, function() end); return done(werr) end
      uv.fs_fsync(fd, function(ferr)
        uv.fs_close(fd, function()
          if ferr then return done(ferr) end
          if st.seq ~= seq then uv.fs_unlink(tmp, function() end); return done() end
          local ok, rerr = uv.fs_rename(tmp, path)
          if not ok then return done(rerr) end
          done()
        end)
      end)
    end)
  end)
end

-- Persists the metadata of session s into dir. now: written at once and fsynced (a session that
-- ends, daemon shutdown); also at once, without fsync, when the file does not exist yet, so a
-- session is listed after a crash right after it began. Otherwise the write is coalesced and
-- fsynced off the loop (save_async); the file on disk is always a whole record (tmp + rename).
-- Returns false when a synchronous write failed (logged).
function M.save(dir, s, now)
  local path = M.meta_path(dir, s.id)
  local st = saves[path]
  if not now and not st and not uv.fs_stat(path) then now = "nosync" end
  if now then
    if st then st.seq = st.seq + 1; st.again = false end -- an in-flight async write must not rename over this one
    local text = encode(s)
    if not text then return false end
    local ok, werr = M.write_atomic(path, text, now ~= "nosync")
    if not ok then log.error("session %s: cannot save metadata: %s", s.id, werr) end
    if ok and now == "nosync" then return M.save(dir, s) end -- made durable off the loop
    return ok == true
  end
  if st then
    st.s = s
    if st.busy then st.again = true; return true end
  else
    st = { seq = 0, s = s }
    saves[path] = st
  end
  save_async(path, st)
  return true
end

-- Removes the metadata file of session id (a spawn that failed); a pending async write is cancelled.
function M.remove(dir, id)
  local path = M.meta_path(dir, id)
  local st = saves[path]
  if st then st.seq, st.again = st.seq + 1, false end
  os.remove(path)
end

-- Appends one record (a table; t added) to the journal of session id.
function M.append(dir, id, rec)
  rec.t = rec.t or M.now()
  local line, err = json.encode(rec)
  if not line then
    log.warn("session %s: journal record not encodable: %s", id, err)
    return false
  end
  local f, ferr = io.open(M.journal_path(dir, id), "a")
  if not f then
    log.warn("session %s: cannot open journal: %s", id, ferr)
    return false
  end
  f:write(line, "\n")
  f:close()
  return true
end

-- Reads the journal of session id; returns a list of records (bad lines skipped).
function M.read_journal(dir, id)
  local out = {}
  local f = io.open(M.journal_path(dir, id), "r")
  if not f then return out end
  for line in f:lines() do
    local rec = json.decode(line)
    if type(rec) == "table" then out[#out + 1] = rec end
  end
  f:close()
  return out
end

-- Loads every session metadata file in dir; returns a list of plain tables (bad files logged, skipped).
function M.load_all(dir)
  local out = {}
  local scan = uv.fs_scandir(dir)
  while scan do
    local name = uv.fs_scandir_next(scan)
    if not name then break end
    local id = name:match("^(.+)%.json$")
    if name:match("%.json%.tmp%d+a?$") then
      os.remove(dir .. "/" .. name) -- a save cut short by a crash (one daemon per home: not in use)
    elseif id and M.valid_id(id) then
      local f = io.open(dir .. "/" .. name, "r")
      local text = f and f:read("a")
      if f then f:close() end
      local rec = text and json.decode(text)
      if type(rec) == "table" and rec.id == id and type(rec.owner) == "string" and type(rec.cwd) == "string" then
        out[#out + 1] = rec
      else
        log.warn("skipping unreadable session file %s/%s", dir, name)
      end
    end
  end
  return out
end

return M
