-- What agents spent, from the spend ledger's records (agentd/usage_ledger.lua): summed by day, hour,
-- orchestrator, agent, routine, model, fleet or agent profile, over a range of days, and shown as a
-- table, CSV or JSON (`ctl usage`, the dashboard's chart). Stateless: the caller reads the files and
-- hands each record in. A cost no record knew stays unknown, never 0; a sum whose records only
-- partly knew their cost says so.
local json = require "rmcp.lib.json"

local M = {}

-- The groupings: each name, the record field it reads (day and hour: from the file and the time).
M.KEYS = { day = true, hour = true, orchestrator = "o", agent = "s", routine = "r", model = "m", fleet = "f", profile = "p" }
M.KEY_ORDER = { "day", "hour", "orchestrator", "agent", "routine", "model", "fleet", "profile" }
local ALIASES = { session = "agent", orch = "orchestrator", days = "day", hours = "hour" }

-- The token counts a row sums, in the order they are shown.
M.COUNTS = { "input", "output", "reasoning", "cache_read", "cache_write", "total" }

-- The groupings named in the --by words (each "a,b"; several allowed), in the order given, each
-- once; nil and why for an unknown one.
function M.parse_by(words)
  local by, seen = {}, {}
  for _, w in ipairs(words) do
    for name in w:gmatch("[^,%s]+") do
      name = ALIASES[name] or name
      if not M.KEYS[name] then
        return nil, "unknown grouping '" .. name .. "' (" .. table.concat(M.KEY_ORDER, ", ") .. ")"
      end
      if not seen[name] then by[#by + 1], seen[name] = name, true end
    end
  end
  return by
end

-- The os.time of noon on day (YYYY-MM-DD) by the local clock, or nil when it is no real date.
local function noon(day)
  local y, m, dd = tostring(day):match("^(%d%d%d%d)%-(%d%d)%-(%d%d)$")
  if not y then return nil end
  local t = os.time({ year = tonumber(y), month = tonumber(m), day = tonumber(dd), hour = 12 })
  if os.date("%Y-%m-%d", t) ~= day then return nil end -- 2024-02-30 and the like
  return t
end

-- The day n days after day (n may be negative).
function M.shift(day, n)
  local t = os.date("*t", noon(day))
  t.day = t.day + n
  return os.date("%Y-%m-%d", os.time(t))
end

-- The range of days opts asks for ({from?, to?, days?: the last N days to `to`}), today when none:
-- from, to (YYYY-MM-DD), or nil and why.
function M.range(opts, today)
  local from, to = opts.from, opts.to
  if from == "today" then from = today end
  if to == "today" then to = today end
  if to ~= nil and not noon(to) then return nil, "--to must be a date YYYY-MM-DD, got " .. tostring(to) end
  if from ~= nil and not noon(from) then return nil, "--from must be a date YYYY-MM-DD, got " .. tostring(from) end
  to = to or (from and from > today and from or today)
  if opts.days ~= nil then
    local n = math.tointeger(tonumber(opts.days))
    if not n or n < 1 then return nil, "--days must be a whole number >= 1, got " .. tostring(opts.days) end
    if from then return nil, "give --from or --days, not both" end
    from = M.shift(to, -(n - 1))
  end
  from = from or to
  if from > to then return nil, "--from " .. from .. " is after --to " .. to end
  return from, to
end

-- Every day from from to to, oldest first.
function M.day_list(from, to)
  local out, day = {}, from
  while day <= to do
    out[#out + 1] = day
    day = M.shift(day, 1)
  end
  return out
end

-- A new sum by the groupings by (a list of M.KEYS names), of the records of orchestrator only
-- (nil: every one's).
function M.new(by, only)
  return { by = by, only = only, rows = {}, order = {}, records = 0, damaged = 0, total = M.row_of({}) }
end

-- An empty row with key values keys.
function M.row_of(keys)
  local r = { keys = keys, records = 0, costs = {}, ncost = 0, unknown_tokens = 0 }
  for _, k in ipairs(M.COUNTS) do r[k] = 0 end
  return r
end

-- The value of grouping name in record rec of ledger day day.
local function key_of(name, rec, day)
  if name == "day" then return day end
  if name == "hour" then
    return math.type(rec.t) and os.date("%Y-%m-%d %H:00", math.floor(rec.t)) or (day .. " ??:00")
  end
  local v = rec[M.KEYS[name]]
  return (type(v) == "string" or type(v) == "number") and tostring(v) or nil
end

-- Adds record rec to row r.
local function add_to(r, rec)
  r.records = r.records + 1
  for _, k in ipairs(M.COUNTS) do
    local v = rec[k]
    if math.type(v) == "integer" and v > 0 then r[k] = r[k] + v end
  end
  local total = math.type(rec.total) == "integer" and rec.total or 0
  if type(rec.cost) == "number" and rec.cost == rec.cost then
    local cur = type(rec.cur) == "string" and rec.cur or "?"
    if not r.costs[cur] then r.ncost = r.ncost + 1 end
    r.costs[cur] = (r.costs[cur] or 0) + rec.cost
  elseif total > 0 then
    r.unknown_tokens = r.unknown_tokens + total
  end
end

-- Adds record rec (a decoded ledger line) of ledger day day to sum acc.
function M.add(acc, rec, day)
  if acc.only and rec.o ~= acc.only then return end
  local keys, parts = {}, {}
  for i, name in ipairs(acc.by) do
    keys[name] = key_of(name, rec, day)
    parts[i] = keys[name] or "\0"
  end
  local id = table.concat(parts, "\1")
  local r = acc.rows[id]
  if not r then
    r = M.row_of(keys)
    acc.rows[id] = r
    acc.order[#acc.order + 1] = r
  end
  add_to(r, rec)
  add_to(acc.total, rec)
  acc.records = acc.records + 1
end

-- A cost as a report gives it: 6 significant digits.
local function money(v)
  return tonumber(string.format("%.6g", v))
end

-- Row r as the report gives it: its keys, counts, records and cost: cost and currency when one
-- currency, costs {currency → amount} when several; cost_unknown when no record knew its cost,
-- cost_partial when some did not.
local function shaped(r, by)
  local o = {}
  for _, name in ipairs(by or {}) do o[name] = r.keys[name] or json.null end -- (every row names each key)
  for _, k in ipairs(M.COUNTS) do o[k] = r[k] end
  o.records = r.records
  if r.ncost == 1 then
    local cur, v = next(r.costs)
    o.cost, o.currency = money(v), cur
  elseif r.ncost > 1 then
    o.costs = {}
    for cur, v in pairs(r.costs) do o.costs[cur] = money(v) end
  end
  if r.unknown_tokens > 0 then
    if r.ncost == 0 then o.cost_unknown = true else o.cost_partial = true end
  end
  return o
end

-- The report of sum acc over days from..to: {from, to, by, rows = [shaped rows, ordered by their
-- keys], total (a shaped row), records, damaged}.
function M.finish(acc, from, to)
  local by = acc.by
  table.sort(acc.order, function(a, b)
    for _, name in ipairs(by) do
      local x, y = a.keys[name], b.keys[name]
      if x ~= y then
        if x == nil or y == nil then return y == nil end -- a group without the key last
        return x < y
      end
    end
    return false
  end)
  local rows = json.array()
  for i, r in ipairs(acc.order) do rows[i] = shaped(r, by) end
  return { from = from, to = to, by = json.array(by), orchestrator = acc.only, rows = rows,
           total = shaped(acc.total), records = acc.records, damaged = acc.damaged }
end

-- The cost of shaped row o in words: "0.25 USD", "1.5 EUR + 0.2 USD", "unknown"; partial ones
-- marked "(partial)".
function M.cost_text(o)
  local text
  if o.cost then
    text = string.format("%.4f %s", o.cost, o.currency)
  elseif o.costs then
    local parts = {}
    for cur, v in pairs(o.costs) do parts[#parts + 1] = string.format("%.4f %s", v, cur) end
    table.sort(parts)
    text = table.concat(parts, " + ")
  elseif o.cost_unknown then
    return "unknown"
  else
    return o.total > 0 and "unknown" or "—"
  end
  return o.cost_partial and (text .. " (partial)") or text
end

-- One CSV field: quoted when it holds a comma, a quote, or a line break (quotes doubled).
local function csv_field(v)
  if v == nil then return "" end
  v = tostring(v)
  if v:find('[,"\r\n]') then return '"' .. v:gsub('"', '""') .. '"' end
  return v
end

-- The report as CSV: a header, then a line a row (no total line): its keys, counts, cost (empty
-- when unknown), currency ("mixed" when several: cost then lists each), cost_status (known,
-- partial, unknown, none), records.
function M.csv(rep)
  local head = {}
  for _, name in ipairs(rep.by) do head[#head + 1] = name end
  for _, k in ipairs(M.COUNTS) do head[#head + 1] = k end
  for _, k in ipairs({ "cost", "currency", "cost_status", "records" }) do head[#head + 1] = k end
  local lines = { table.concat(head, ",") }
  for _, o in ipairs(rep.rows) do
    local f = {}
    for _, name in ipairs(rep.by) do f[#f + 1] = csv_field(type(o[name]) == "string" and o[name] or nil) end
    for _, k in ipairs(M.COUNTS) do f[#f + 1] = o[k] end
    local cost, cur = o.cost and string.format("%.6g", o.cost), o.currency
    if o.costs then cost, cur = M.cost_text({ costs = o.costs, total = o.total }), "mixed" end
    local status = o.cost_unknown and "unknown" or o.cost_partial and "partial" or (cost and "known" or "none")
    f[#f + 1], f[#f + 2], f[#f + 3], f[#f + 4] = csv_field(cost), csv_field(cur), status, o.records
    lines[#lines + 1] = table.concat(f, ",")
  end
  return table.concat(lines, "\r\n") .. "\r\n"
end

-- The widths of the columns of lines (lists of cells), aligned: text left, numbers right.
local function columns(lines, numeric)
  local width = {}
  for _, cells in ipairs(lines) do
    for i, c in ipairs(cells) do width[i] = math.max(width[i] or 0, utf8.len(c) or #c) end
  end
  local out = {}
  for _, cells in ipairs(lines) do
    local f = {}
    for i, c in ipairs(cells) do
      local pad = string.rep(" ", width[i] - (utf8.len(c) or #c))
      f[i] = numeric[i] and (pad .. c) or (c .. pad)
    end
    out[#out + 1] = (table.concat(f, "  "):gsub("%s+$", ""))
  end
  return out
end

-- The report as a table for a person: a line a row, a total line, and what the marks mean.
function M.text(rep)
  local range = rep.from == rep.to and rep.from or (rep.from .. " to " .. rep.to)
  local title = "spend " .. range .. (rep.orchestrator and (" of " .. rep.orchestrator) or "")
  local notes = {}
  if rep.damaged > 0 then notes[#notes + 1] = rep.damaged .. " damaged ledger line(s) skipped" end
  if rep.records == 0 then
    notes[#notes + 1] = "no spend recorded"
    return title .. "\n" .. table.concat(notes, "\n") .. "\n"
  end
  local head, numeric = {}, {}
  for _, name in ipairs(rep.by) do head[#head + 1] = name end
  for _, k in ipairs({ "tokens", "input", "output", "cache_read", "cost" }) do
    head[#head + 1] = k
    numeric[#head] = true
  end
  local lines = { head }
  -- The cells of shaped row o; label names the total line in the first key column.
  local function line(o, label)
    local cells = {}
    for i, name in ipairs(rep.by) do
      if label then cells[i] = i == 1 and label or "" else cells[i] = type(o[name]) == "string" and o[name] or "—" end
    end
    for _, k in ipairs({ "total", "input", "output", "cache_read" }) do cells[#cells + 1] = tostring(o[k]) end
    cells[#cells + 1] = M.cost_text(o)
    return cells
  end
  if #rep.by > 0 then
    for _, o in ipairs(rep.rows) do lines[#lines + 1] = line(o) end
  end
  lines[#lines + 1] = line(rep.total, "total")
  local out = columns(lines, numeric)
  if rep.total.cost_partial or rep.total.cost_unknown then
    notes[#notes + 1] = "unknown: no price known for those tokens; (partial): the cost of some of them is unknown"
  end
  return title .. "\n" .. table.concat(out, "\n") .. "\n" .. (#notes > 0 and (table.concat(notes, "\n") .. "\n") or "")
end

return M
