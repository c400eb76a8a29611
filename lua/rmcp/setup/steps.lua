-- What setup does, one step at a time, and the record of it: each step is said before it runs, or
-- only said (prefixed "would") under --dry-run, when nothing is run or written. The record
-- (~/.config/reasonix-mcp/setup.json) holds what setup changed, so that `setup --remove` undoes
-- exactly that. Files are written whole and atomically, keeping the mode of the file they replace.
local uv = require "luv"
local command = require "rmcp.lib.command"
local files = require "rmcp.lib.files"
local json = require "rmcp.lib.json"

local M = {}
M.__index = M

-- A run over the record at record_path; dry: say what would be done, change nothing.
function M.new(record_path, dry)
  local text = files.read(record_path)
  local record = text and json.decode(text)
  return setmetatable({ path = record_path, dry = dry, failed = 0,
    record = type(record) == "table" and record or {} }, M)
end

-- Prints text as part of the run's report.
function M:say(text)
  io.stdout:write(text, "\n")
  io.stdout:flush()
end

-- Says what and runs fn (returns true or nil, why), unless this is a dry run; returns whether it
-- ran and succeeded (a dry run: true). A failure is said and counted.
function M:step(what, fn)
  if self.dry then self:say("  would " .. what) return true end
  self:say("  " .. what)
  local ok, err = fn()
  self.changed = true
  if not ok then
    self.failed = self.failed + 1
    self:say("    FAILED: " .. tostring(err))
  end
  return ok
end

-- Runs file with args to its end (coroutine); true, its stdout, or nil, why (its stderr).
function M.run(file, args, timeout_ms)
  local r, err = command.run(file, args, { timeout_ms = timeout_ms or 60000 })
  if not r then return nil, err end
  if r.code ~= 0 then
    local why = (r.stderr ~= "" and r.stderr or r.stdout):gsub("%s+$", "")
    return nil, string.format("%s exited %s%s", file, tostring(r.code), why ~= "" and (": " .. why) or "")
  end
  return true, r.stdout
end

-- The text of the file at path, or "" and false when there is none.
function M.read(path)
  local text = files.read(path)
  return text or "", text ~= nil
end

-- Writes text to path (its dir made when missing), keeping the mode of the file it replaces (a new
-- one is 0600); true or nil, why.
function M.write(path, text)
  local st = uv.fs_stat(path)
  local ok, err = files.mkdir_p(path:match("^(.*)/[^/]*$") or ".", 448)
  if not ok then return nil, err end
  ok, err = files.write_atomic(path, text)
  if ok and st then ok, err = uv.fs_chmod(path, st.mode & 4095) end
  return ok, err
end

-- Puts restored (a file's text before setup) back at path: the file removed when setup created it
-- and restored is empty.
function M.restore(path, restored, created)
  if created and restored == "" then return uv.fs_unlink(path) end
  return M.write(path, restored)
end

-- What M.restore does with restored, in a step's words.
function M.restore_says(restored, created)
  return (created and restored == "") and "remove the file (setup created it)" or "restore the file as it was before setup"
end

-- Saves the record when a step ran (or removes its file once it records nothing); true or nil, why.
function M:save()
  if self.dry or not self.changed then return true end
  if next(self.record) == nil then
    if uv.fs_stat(self.path) then return uv.fs_unlink(self.path) end
    return true
  end
  return M.write(self.path, json.encode(self.record) .. "\n")
end

return M
