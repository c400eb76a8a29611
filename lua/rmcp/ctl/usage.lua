-- `reasonix-mcp ctl usage`: what agents spent, from the spend ledger's files (one a day under
-- <REASONIX_MCP_HOME>/usage), read here and not through agentd, so it answers with agentd down.
-- The sums and their shapes are rules/usage_report.lua's.
local jsonl = require "rmcp.lib.jsonl"
local json = require "rmcp.lib.json"
local config = require "rmcp.config"
local report = require "rmcp.rules.usage_report"

local M = {}

M.USAGE = "usage [--by day,orchestrator,agent,routine,model,fleet,profile,hour] [--from DAY] [--to DAY] [--days N] [--csv]"
M.ABOUT = "what agents spent, from the ledger (agentd need not run): today by orchestrator unless told; --json, --csv"

-- The flags of words: {by = [words], from, to, days, csv, help}, or nil and why.
local function flags(words)
  local f, by = { by = {} }, nil
  local takes = { by = true, from = true, to = true, days = true }
  local i = 1
  while i <= #words do
    local w = words[i]
    local name, value = w:match("^%-%-([%w-]+)=(.*)$")
    name = name or w:match("^%-%-([%w-]+)$")
    if not name then return nil, "unexpected '" .. w .. "'" end
    if takes[name] and value == nil then
      value = words[i + 1]
      if value == nil then return nil, "--" .. name .. " needs a value" end
      i = i + 1
    end
    if name == "by" then by = true; f.by[#f.by + 1] = value
    elseif takes[name] then f[name] = value
    elseif name == "csv" or name == "help" then f[name] = true
    else return nil, "unknown flag --" .. name end
    i = i + 1
  end
  if not by then f.by = { "orchestrator" } end
  return f
end

-- The report of the ledger under dir for flags f (only: one orchestrator's records), or nil and why.
function M.report(dir, f, today, only)
  local by, err = report.parse_by(f.by)
  if not by then return nil, err end
  local from, to = report.range(f, today)
  if not from then return nil, to end
  local acc = report.new(by, only)
  for _, day in ipairs(jsonl.days(dir, ".jsonl", from, to)) do
    local _, bad = jsonl.each(dir .. "/" .. day .. ".jsonl", function(rec) report.add(acc, rec, day) end)
    acc.damaged = acc.damaged + (bad or 0)
  end
  return report.finish(acc, from, to)
end

-- Runs the verb: global (--json, --orchestrator: only its records), words; returns the exit code.
function M.run(global, words)
  local f, ferr = flags(words)
  if global.help or f and f.help then
    io.stdout:write(M.USAGE, "\n    ", M.ABOUT, "\n    --days N: the last N days to --to (default today); ",
      "--orchestrator ID: only its spend; a cost never known shows as unknown, a partly known one as (partial)\n")
    return 0
  end
  local rep, err
  if f then rep, err = M.report(config.paths().usage, f, os.date("%Y-%m-%d"), global.orchestrator) end
  if not rep then
    io.stderr:write("ctl: usage: ", ferr or err, " (", M.USAGE, ")\n")
    return 2
  end
  if rep.damaged > 0 and (global.json or f.csv) then -- (the table says so itself)
    io.stderr:write("ctl: usage: ", rep.damaged, " damaged ledger line(s) skipped\n")
  end
  if global.json then
    print(json.encode(rep))
  elseif f.csv then
    io.stdout:write(report.csv(rep))
  else
    io.stdout:write(report.text(rep))
  end
  return 0
end

return M
