-- The checks of fuzz_session.c: arbitrary bytes as a session metadata file go through what agentd
-- does at start (agentd/main.lua: store.load_all, then session.restore.restore, which repairs damaged
-- fields) and then through a list row and a save. None of it may raise; after restore every
-- persisted field has its declared type; the list result encodes as valid UTF-8; a saved session
-- loads back and restores to the same damage report (repair is stable). The file is <dir>/rx-fuzz.json,
-- so the id check at load passes when the file says "id":"rx-fuzz".
local json = require "rmcp.lib.json"
local store = require "rmcp.agentd.store"
local restore = require "rmcp.agentd.session.restore"
local rules_list = require "rmcp.rules.list"
local utf8_fix = require("fuzz_utf8").fix
local sentinel = require "fuzz_sentinel"

require("rmcp.lib.log").set_sink(function() end)
-- the disk is not what is fuzzed: a save's fsync would make each input cost a disk flush
require("luv").fs_fsync = function() return 0 end

local dir = assert(os.getenv("RMCP_FUZZ_SESSIONS"), "RMCP_FUZZ_SESSIONS: the scratch sessions dir")
local path = dir .. "/rx-fuzz.json"

-- Writes text as the one session file of the dir.
local function put(text)
  local f = assert(io.open(path, "wb"))
  assert(f:write(text))
  f:close()
end

-- Loads and restores the dir's sessions into a fresh daemon table; returns it.
local function restore_all()
  local d = { paths = { sessions = dir }, sessions = {} }
  for _, rec in ipairs(store.load_all(dir)) do restore.restore(d, rec) end
  return d
end

-- nil when every persisted field of s has its type, else which does not.
local function typed(s)
  for k, want in pairs(store.field_types) do
    if s[k] ~= nil and not store.fits(s[k], want) then return k .. " is a " .. type(s[k]) .. " after restore" end
  end
  return nil
end

-- One input: nil when every check holds, else what failed (a Lua error also fails it).
return function(text)
  if sentinel.within(json.decode(text)) then return nil end
  put(text)
  local d = restore_all()
  local s = d.sessions["rx-fuzz"]
  if s == nil then return nil end
  local bad = typed(s)
  if bad then return bad end
  for _, opts in ipairs({ {}, { encoded = true }, { include_task = true, detail = true, pending_only = true } }) do
    local r, serr = rules_list.shape({ s }, opts)
    if not r then return "list result does not encode: " .. tostring(serr) end
    local out, err = json.encode(r)
    if not out then return "list result does not encode: " .. tostring(err) end
    local _, valid = utf8_fix(out)
    if not valid then return "list result is not valid UTF-8" end
  end
  if not store.save(dir, s, true) then return "a restored session does not save" end
  local again = restore_all().sessions["rx-fuzz"]
  if again == nil then return "a saved session does not load back" end
  bad = typed(again)
  if bad then return "after a save: " .. bad end
  -- (a save writes invalid UTF-8 as U+FFFD, the damage report included)
  if again.damaged ~= (s.damaged and utf8_fix(s.damaged)) then
    return "repair is not stable: " .. tostring(s.damaged) .. " then " .. tostring(again.damaged)
  end
  return nil
end
