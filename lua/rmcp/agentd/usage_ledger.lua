-- The spend ledger: every increment any agent spends, one JSON line in a file per local day
-- (<home>/usage/YYYY-MM-DD.jsonl), written the moment the session journals it. It answers what a
-- session's figures cannot: an orchestrator's spend today (its daily budget) and the report by day,
-- orchestrator, agent, routine and model (`ctl usage`, which reads the files itself: it works with
-- agentd down). Owns d.usage_day (today's open file, the spend per orchestrator and per hour in it,
-- rebuilt from the file at start, and the sums of the days before, read once a day for the dashboard).
local uv = require "luv"
local json = require "rmcp.lib.json"
local jsonl = require "rmcp.lib.jsonl"
local log = require "rmcp.lib.log"
local files = require "rmcp.lib.files"
local rules = require "rmcp.rules.usage"
local answers = require "rmcp.agentd.answers"
-- (sums by hour and day: loaded with the first spend or report, an idle daemon does not carry it)
local report = require "rmcp.lib.lazy" "rmcp.rules.usage_report"

local M = {}

-- The ledger file of day (YYYY-MM-DD) under dir.
function M.path(dir, day)
  return dir .. "/" .. day .. ".jsonl"
end

-- Today by the local clock, as last read, and the loop time (ms) it was read at.
local today, read_at

-- Today, by the local clock (read again when the loop's clock moved on a second: the spend of
-- today is asked on every list).
function M.today()
  local now = uv.now()
  if not read_at or now - read_at >= 1000 or now < read_at then today, read_at = os.date("%Y-%m-%d"), now end
  return today
end

-- Counts record rec in b ({tokens, cost?, cost_unknown?}: an orchestrator's spend).
local function count_in(b, rec)
  local total = math.type(rec.total) == "integer" and rec.total or 0
  b.tokens = b.tokens + total
  if type(rec.cost) == "number" then b.cost = (b.cost or 0) + rec.cost elseif total > 0 then b.cost_unknown = true end
end

-- The open day of day from its ledger file: the spend per orchestrator {owner → {tokens, cost?,
-- cost_unknown?}} and per hour (a rules/usage_report sum) in its records.
local function read_day(dir, day)
  local u = { day = day, by_owner = {}, hours = report.new({ "hour" }) }
  jsonl.each(M.path(dir, day), function(rec)
    local o = rec.o or "?"
    u.by_owner[o] = u.by_owner[o] or { tokens = 0 }
    count_in(u.by_owner[o], rec)
    report.add(u.hours, rec, day)
  end)
  return u
end

-- d's open day, today's (a new day closes yesterday's file and starts from nothing).
local function day_of(d)
  local today = M.today()
  local u = d.usage_day
  if u and u.day == today then return u end
  if u and u.fd then uv.fs_close(u.fd) end
  files.mkdir_p(d.paths.usage, tonumber("700", 8))
  u = read_day(d.paths.usage, today)
  d.usage_day = u
  return u
end

-- Writes increment inc (rules/usage figure) of session s to today's file and counts it for its
-- orchestrator (a routine run's: the routine's creator).
function M.append(d, s, inc)
  local u = day_of(d)
  local owner = s.on_behalf_of or s.owner
  local rec = { t = require("rmcp.agentd.store").now(), s = s.id, o = owner, m = s.model, p = s.agent_profile,
                r = type(s.routine) == "table" and s.routine.id or nil, f = type(s.fleet) == "table" and s.fleet.id or nil }
  for _, k in ipairs(rules.TOKEN_KEYS) do if inc[k] > 0 then rec[k] = inc[k] end end
  rec.total = inc.total
  rec.cost, rec.cur = inc.cost, inc.currency
  local line = json.encode(rec) .. "\n"
  if not u.fd then
    u.fd = uv.fs_open(M.path(d.paths.usage, u.day), "a", 384) -- 0600
  end
  if not (u.fd and uv.fs_write(u.fd, line, -1)) then
    log.warn("usage ledger %s: cannot write; %s's spend is in its journal only", u.day, s.id)
  end
  u.by_owner[owner] = u.by_owner[owner] or { tokens = 0 }
  count_in(u.by_owner[owner], rec)
  report.add(u.hours, rec, u.day)
  answers.changed() -- (a list shows today's spend)
end

-- What orchestrator owner spent today: {tokens, cost?, cost_unknown?}.
function M.spent_today(d, owner)
  return day_of(d).by_owner[owner] or { tokens = 0 }
end

-- The spend of the days before today in the last n (n ≤ 366), one shaped row each (rules/usage_report),
-- read from their files once a day.
local function past_days(d, u, n)
  u.past = u.past or {}
  local out = {}
  for _, day in ipairs(report.day_list(report.shift(u.day, -(n - 1)), report.shift(u.day, -1))) do
    if not u.past[day] then
      local acc = report.new({ "day" })
      jsonl.each(M.path(d.paths.usage, day), function(rec) report.add(acc, rec, day) end)
      u.past[day] = report.finish(acc, day, day).total
    end
    out[#out + 1] = u.past[day]
  end
  return out
end

-- What the fleet spent lately, for the dashboard's chart: {today, hours = [24 shaped rows, hour
-- "YYYY-MM-DD HH:00", of today], days = [n shaped rows, day, oldest first, today last], total (today's)}.
function M.recent(d, n)
  local u = day_of(d)
  local today = report.finish(u.hours, u.day, u.day)
  local by_hour = {}
  for _, r in ipairs(today.rows) do by_hour[r.hour] = r end
  local hours, days = json.array(), json.array()
  for h = 0, 23 do
    local key = string.format("%s %02d:00", u.day, h)
    local r = by_hour[key] or report.finish(report.new({}), u.day, u.day).total
    r.hour = key
    hours[#hours + 1] = r
  end
  for _, r in ipairs(past_days(d, u, n)) do days[#days + 1] = r end
  days[#days + 1] = today.total
  for i, day in ipairs(report.day_list(report.shift(u.day, -(n - 1)), u.day)) do days[i].day = day end
  return { today = u.day, hours = hours, days = days, total = today.total }
end

return M
