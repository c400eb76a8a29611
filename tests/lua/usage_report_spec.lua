-- `ctl usage` and its sums (rules/usage_report.lua) on a ledger written by hand: exact sums per
-- grouping, a cost never known shown as unknown (never 0), a partly known one flagged, currencies
-- kept apart, the range of days (and none at all), a damaged line skipped and counted, the CSV
-- header and its escaping, the --json shape. The verb runs as a process, reading the files alone
-- (no agentd runs here).
local uv = require "luv"
local json = require "rmcp.lib.json"
local command = require "rmcp.lib.command"
local report = require "rmcp.rules.usage_report"

local EXE = require("rmcp.host").exe

-- The epoch seconds of a local time on a day of March 2024.
local function at(day, hour, min)
  return os.time({ year = 2024, month = 3, day = day, hour = hour, min = min or 0 })
end

-- The ledger: two days in range (one with a damaged line and a blank one), one before it.
local LEDGER = {
  ["2024-02-28"] = { { t = at(1, 1) - 86400 * 2, s = "s0", o = "orch-a", m = "m1", input = 999, total = 999, cost = 9, cur = "USD" } },
  ["2024-03-01"] = {
    { t = at(1, 9, 10), s = "s1", o = "orch-a", m = "m1", p = "reasonix", input = 100, output = 20, cache_read = 40, total = 120, cost = 0.5, cur = "USD" },
    '{"t": 17093',
    { t = at(1, 9, 40), s = "s2", o = "orch-a", m = "m2", input = 10, output = 5, total = 15 },
    "",
    { t = at(1, 14), s = "s3", o = 'orch, "b"', m = "m1", r = "rt1", f = "fl1", input = 7, output = 3, total = 10, cost = 0.25, cur = "USD" },
  },
  ["2024-03-02"] = {
    { t = at(2, 8), s = "s1", o = "orch-a", m = "m1", input = 200, output = 50, reasoning = 10, cache_write = 5, total = 250, cost = 1.25, cur = "USD" },
    { t = at(2, 8, 30), s = "s4", o = "orch-c", m = "m3", input = 1, output = 1, total = 2, cost = 0.1, cur = "EUR" },
  },
}

-- A private REASONIX_MCP_HOME holding LEDGER; returns its path.
local function home(t)
  local dir = t.tmpdir("rmcp-usage-report")
  assert(uv.fs_mkdir(dir .. "/usage", 448))
  for day, lines in pairs(LEDGER) do
    local f = assert(io.open(dir .. "/usage/" .. day .. ".jsonl", "w"))
    for _, l in ipairs(lines) do f:write(type(l) == "string" and l or json.encode(l), "\n") end
    f:close()
  end
  return dir
end

-- Runs `reasonix-mcp ctl ARGS…` with REASONIX_MCP_HOME = dir; returns code, stdout, stderr.
local function ctl(dir, ...)
  local env = {}
  for k, v in pairs(uv.os_environ()) do
    if k ~= "REASONIX_MCP_HOME" and k ~= "REASONIX_MCP_ORCHESTRATOR_ID" then env[#env + 1] = k .. "=" .. v end
  end
  env[#env + 1] = "REASONIX_MCP_HOME=" .. dir
  local r = assert(command.run(EXE, { "ctl", ... }, { env = env }))
  return r.code, r.stdout, r.stderr
end

-- The --json report of `ctl --json usage ARGS…` over dir's ledger (failing on a non-zero exit).
local function rep(t, dir, ...)
  local code, out, err = ctl(dir, "--json", "usage", "--from", "2024-03-01", "--to", "2024-03-02", ...)
  t.eq(code, 0, "exit code (stderr: " .. err .. ")")
  return json.decode(out), err
end

-- The rows of report r as {key → {total, cost, currency, flag}} by the key of grouping name.
local function by(r, name)
  local out = {}
  for _, row in ipairs(r.rows) do
    local key = row[name] == json.null and "-" or row[name]
    out[key] = { row.total, row.cost, row.currency, row.cost_partial and "partial" or row.cost_unknown and "unknown" or nil }
  end
  return out
end

test("sums by day, orchestrator, agent, model and routine are exact; unknown and partial costs say so", function(t)
  local dir = home(t)
  local r, err = rep(t, dir, "--by", "day")
  t.eq(by(r, "day"), { ["2024-03-01"] = { 145, 0.75, "USD", "partial" }, ["2024-03-02"] = { 252, nil, nil, nil } })
  t.eq(r.rows[2].costs, { USD = 1.25, EUR = 0.1 }, "two currencies are kept apart, never added")
  t.eq({ r.total.total, r.total.input, r.total.output, r.total.reasoning, r.total.cache_read, r.total.cache_write },
       { 397, 318, 79, 10, 40, 5 })
  t.eq({ r.total.costs, r.total.cost_partial, r.records, r.damaged }, { { USD = 2, EUR = 0.1 }, true, 5, 1 })
  t.ok(err:find("1 damaged ledger line"), "the damaged line is told on stderr")
  r = rep(t, dir, "--by", "orchestrator")
  t.eq(by(r, "orchestrator"), { ['orch, "b"'] = { 10, 0.25, "USD" }, ["orch-a"] = { 385, 1.75, "USD", "partial" },
                                ["orch-c"] = { 2, 0.1, "EUR" } })
  t.eq({ r.rows[1].orchestrator, r.rows[2].orchestrator, r.rows[3].orchestrator }, { 'orch, "b"', "orch-a", "orch-c" }, "ordered by key")
  r = rep(t, dir, "--by", "agent")
  t.eq(by(r, "agent"), { s1 = { 370, 1.75, "USD" }, s2 = { 15, nil, nil, "unknown" }, s3 = { 10, 0.25, "USD" }, s4 = { 2, 0.1, "EUR" } })
  t.eq(r.rows[2].cost, nil, "an unknown cost is absent, never 0")
  r = rep(t, dir, "--by", "model,routine")
  t.eq(#r.rows, 4)
  t.eq({ r.rows[1].model, r.rows[1].routine, r.rows[1].total, r.rows[2].model, r.rows[2].routine, r.rows[2].total },
       { "m1", "rt1", 10, "m1", json.null, 370 }, "a row without the key comes after those with it")
  r = rep(t, dir, "--by", "hour", "--by", "fleet")
  local hours = {}
  for _, row in ipairs(r.rows) do hours[#hours + 1] = row.hour .. "=" .. row.total .. "/" .. tostring(row.fleet) end
  t.eq(hours, { "2024-03-01 09:00=135/" .. tostring(json.null), "2024-03-01 14:00=10/fl1", "2024-03-02 08:00=252/" .. tostring(json.null) })
  local code, out = ctl(dir, "--orchestrator", "orch-a", "--json", "usage", "--days", "2", "--to", "2024-03-02", "--by", "agent")
  t.eq(code, 0)
  local only = json.decode(out)
  t.eq({ only.total.total, only.orchestrator, #only.rows }, { 385, "orch-a", 2 }, "--orchestrator keeps its own records")
end)

test("the range of days: --days, a range with no ledger, dates that are no dates", function(t)
  local dir = home(t)
  local code, out = ctl(dir, "--json", "usage", "--days", "1", "--to", "2024-03-01")
  t.eq(code, 0)
  local r = json.decode(out)
  t.eq({ r.from, r.to, r.total.total }, { "2024-03-01", "2024-03-01", 145 })
  code, out = ctl(dir, "--json", "usage", "--from", "2023-01-01", "--to", "2023-01-05")
  t.eq(code, 0)
  r = json.decode(out)
  t.eq({ #r.rows, r.records, r.total.total, r.total.cost, r.total.cost_unknown }, { 0, 0, 0, nil, nil }, "nothing spent, nothing unknown")
  t.eq(json.encode(r.rows), "[]", "rows stays an array")
  code, out = ctl(dir, "usage", "--from", "2023-01-01", "--to", "2023-01-05")
  t.eq({ code, out }, { 0, "spend 2023-01-01 to 2023-01-05\nno spend recorded\n" })
  code, out = ctl(dir, "usage", "--csv", "--from", "2023-01-01", "--to", "2023-01-05")
  t.eq({ code, out }, { 0, "orchestrator,input,output,reasoning,cache_read,cache_write,total,cost,currency,cost_status,records\r\n" })
  local _, _, err = ctl(dir, "usage", "--from", "2024-02-30")
  t.ok(err:find("must be a date"), err)
  t.eq((ctl(dir, "usage", "--from", "2024-03-02", "--to", "2024-03-01")), 2, "a range that ends before it starts")
  t.eq((ctl(dir, "usage", "--by", "colour")), 2, "an unknown grouping")
  t.eq((ctl(dir, "usage", "--days", "0")), 2)
  local empty = t.tmpdir("rmcp-usage-none")
  code, out = ctl(empty, "usage")
  t.eq({ code, out }, { 0, "spend " .. os.date("%Y-%m-%d") .. "\nno spend recorded\n" }, "no ledger at all: today, nothing")
end)

test("CSV: its header, a line a row, fields with commas and quotes escaped; the table for a person", function(t)
  local dir = home(t)
  local code, out = ctl(dir, "usage", "--csv", "--by", "orchestrator,agent", "--from", "2024-03-01", "--to", "2024-03-02")
  t.eq(code, 0)
  t.eq(out, table.concat({
    "orchestrator,agent,input,output,reasoning,cache_read,cache_write,total,cost,currency,cost_status,records",
    '"orch, ""b""",s3,7,3,0,0,0,10,0.25,USD,known,1',
    "orch-a,s1,300,70,10,40,5,370,1.75,USD,known,2",
    "orch-a,s2,10,5,0,0,0,15,,,unknown,1",
    "orch-c,s4,1,1,0,0,0,2,0.1,EUR,known,1",
  }, "\r\n") .. "\r\n")
  code, out = ctl(dir, "usage", "--by", "agent", "--from", "2024-03-01", "--to", "2024-03-02")
  t.eq(code, 0)
  local lines = {}
  for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
  t.eq(lines[1], "spend 2024-03-01 to 2024-03-02")
  t.ok(lines[2]:match("^agent%s+tokens%s+input%s+output%s+cache_read%s+cost$"), lines[2])
  t.ok(lines[4]:match("^s2%s+15%s+10%s+5%s+0%s+unknown$"), lines[4])
  t.ok(lines[7]:match("^total%s+397 .*2%.0000 USD %+ 0%.1000 EUR %(partial%)$") or lines[7]:match("^total%s+397 .*0%.1000 EUR %+ 2%.0000 USD %(partial%)$"), lines[7])
  t.eq(lines[8], "1 damaged ledger line(s) skipped")
end)

test("the rules: groupings and their aliases, ranges from today", function(t)
  t.eq(report.parse_by({ "day,orch", "session", "day" }), { "day", "orchestrator", "agent" })
  t.eq(select(2, report.parse_by({ "colour" })):match("^unknown grouping 'colour'") ~= nil, true)
  t.eq({ report.range({}, "2024-03-01") }, { "2024-03-01", "2024-03-01" })
  t.eq({ report.range({ days = "3" }, "2024-03-01") }, { "2024-02-28", "2024-03-01" }, "across a month's end")
  t.eq({ report.range({ days = 2, to = "2024-01-01" }, "2024-03-01") }, { "2023-12-31", "2024-01-01" })
  t.eq({ report.range({ from = "2024-02-27" }, "2024-03-01") }, { "2024-02-27", "2024-03-01" }, "--from alone: to today")
  t.eq(report.range({ from = "2024-02-27", days = 2 }, "2024-03-01"), nil)
  t.eq(report.day_list("2024-02-28", "2024-03-01"), { "2024-02-28", "2024-02-29", "2024-03-01" })
  local acc = report.new({ "agent" })
  report.add(acc, { s = "x", total = 0, cost = 0.02, cur = "USD" }, "2024-03-01")
  local r = report.finish(acc, "2024-03-01", "2024-03-01")
  t.eq({ r.total.total, r.total.cost, r.total.cost_unknown }, { 0, 0.02, nil }, "a cost with no tokens (an agent's side requests) is known")
end)
