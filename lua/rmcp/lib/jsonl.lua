-- Files of JSON lines, one record a line, appended to as things happen (the spend ledger): read
-- back record by record, a damaged line (a write cut short, an edit by hand) skipped and counted,
-- never fatal; and the files of such a directory named by their day.
local uv = require "luv"
local json = require "rmcp.lib.json"

local M = {}

-- Calls fn(record) for each JSON object line of the file at path, oldest first; returns the number
-- of records and of damaged lines skipped (nil, why when the file cannot be opened).
function M.each(path, fn)
  local f, err = io.open(path, "r")
  if not f then return nil, err end
  local good, bad = 0, 0
  for line in f:lines() do
    if line ~= "" then
      local ok, rec = pcall(json.decode, line)
      if ok and type(rec) == "table" then
        good = good + 1
        fn(rec)
      else
        bad = bad + 1
      end
    end
  end
  f:close()
  return good, bad
end

-- The days (YYYY-MM-DD) of the files named <day><ext> under dir from day `from` to day `to`
-- (either nil: open), oldest first; none when dir does not exist.
function M.days(dir, ext, from, to)
  local out = {}
  local h = uv.fs_scandir(dir)
  local pattern = "^(%d%d%d%d%-%d%d%-%d%d)" .. ext:gsub("%p", "%%%0") .. "$"
  while h do
    local name = uv.fs_scandir_next(h)
    if not name then break end
    local day = name:match(pattern)
    if day and (not from or day >= from) and (not to or day <= to) then out[#out + 1] = day end
  end
  table.sort(out)
  return out
end

return M
