-- Routine definitions and their run history: 0600 JSON files in $REASONIX_MCP_HOME/routines/
-- (<id>.json the definition, <id>.runs.json its newest run records, each written atomically) and
-- their copy in memory, d.routines.defs and .runs (RoutineState, routines/scheduler.lua). The only
-- module that reads or writes those files. Hot-reloadable: it holds no state of its own.
local uv = require "luv"
local log = require "rmcp.lib.log"
local json = require "rmcp.lib.json"
local files = require "rmcp.lib.files"
local agentd_store = require "rmcp.agentd.store"
local rules = require "rmcp.rules.routines"

local M = {}

-- Makes dir (owner-only) if it is missing.
function M.open(dir)
  uv.fs_mkdir(dir, tonumber("700", 8))
  uv.fs_chmod(dir, tonumber("700", 8))
end

-- Writes value as JSON to path atomically, 0600 (lib/files.write_atomic); logs and returns false on failure.
local function save_json(path, value)
  local text, err = json.encode(value)
  if not text then
    log.error("routines: cannot encode %s: %s", path, tostring(err))
    return false
  end
  local ok, werr = files.write_atomic(path, text .. "\n", true)
  if not ok then log.error("routines: cannot write %s: %s", path, tostring(werr)) end
  return ok
end

-- Saves routine r's definition.
function M.save_def(st, r)
  return save_json(st.dir .. "/" .. r.id .. ".json", r)
end

-- Saves routine id's run records (the newest runs_kept).
function M.save_runs(st, id)
  local runs = st.runs[id]
  while #runs > rules.runs_kept do table.remove(runs, 1) end
  return save_json(st.dir .. "/" .. id .. ".runs.json", json.array(runs))
end

-- Reads every definition and its runs from st.dir (a file that does not decode is logged and left).
function M.load_all(st)
  local scan = uv.fs_scandir(st.dir)
  while scan do
    local name = uv.fs_scandir_next(scan)
    if not name then break end
    local id = name:match("^(rt%-[%w]+)%.json$")
    if id then
      local ok, r = pcall(json.decode, files.read(st.dir .. "/" .. name) or "")
      if ok and type(r) == "table" and r.id == id then
        r.queue = json.array(type(r.queue) == "table" and r.queue or {})
        st.defs[id] = r
        local rok, runs = pcall(json.decode, files.read(st.dir .. "/" .. id .. ".runs.json") or "[]")
        st.runs[id] = rok and type(runs) == "table" and runs or {}
      else
        log.error("routines: %s/%s cannot be read; it is left as it is", st.dir, name)
      end
    end
  end
end

-- A routine id no routine of st has.
function M.new_id(st)
  local id
  repeat id = "rt-" .. agentd_store.random_hex(4) until not st.defs[id]
  return id
end

-- Adds routine r with no runs and saves both its files; false (nothing added) when they cannot be saved.
function M.add(st, r)
  st.defs[r.id], st.runs[r.id] = r, {}
  if M.save_def(st, r) and M.save_runs(st, r.id) then return true end
  st.defs[r.id], st.runs[r.id] = nil, nil
  return false
end

-- Removes routine id and its run history (the runs' sessions and transcripts stay).
function M.remove(st, id)
  st.defs[id], st.runs[id] = nil, nil
  os.remove(st.dir .. "/" .. id .. ".json")
  os.remove(st.dir .. "/" .. id .. ".runs.json")
end

-- The run of routine r with run_id, or nil.
function M.find_run(st, r, run_id)
  for _, run in ipairs(st.runs[r.id] or {}) do
    if run.run_id == run_id then return run end
  end
  return nil
end

-- Adds run record run to routine r and saves both files (the definition holds runs_total).
function M.add_run(st, r, run)
  st.runs[r.id] = st.runs[r.id] or {}
  table.insert(st.runs[r.id], run)
  M.save_runs(st, r.id)
  M.save_def(st, r)
end

return M
