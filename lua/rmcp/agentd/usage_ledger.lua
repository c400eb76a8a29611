-- The spend ledger: every increment any agent spends, one JSON line in a file per local day
-- (<home>/usage/YYYY-MM-DD.jsonl), written the moment the session journals it. It answers what a
-- session's figures cannot: an orchestrator's spend today (its daily budget) and the report by day,
-- orchestrator, agent, routine and model (`ctl usage`). Owns d.usage_day (today's open file and
-- the spend per orchestrator in it, rebuilt from the file at start).
local uv = require "luv"
local json = require "rmcp.lib.json"
local log = require "rmcp.lib.log"
local files = require "rmcp.lib.files"
local rules = require "rmcp.rules.usage"

local M = {}

-- The ledger file of day (YYYY-MM-DD) under dir.
function M.path(dir, day)
  return dir .. "/" .. day .. ".jsonl"
end

-- Today, by the local clock.
function M.today()
  return os.date("%Y-%m-%d")
end

-- The spend per orchestrator in the records of one ledger file (path): {owner → {tokens, cost?,
-- cost_unknown?}}.
local function spend_in(path)
  local by = {}
  for rec in M.records(path) do
    local o = rec.o or "?"
    local b = by[o] or { tokens = 0 }
    by[o] = b
    b.tokens = b.tokens + (math.type(rec.total) == "integer" and rec.total or 0)
    if type(rec.cost) == "number" then b.cost = (b.cost or 0) + rec.cost elseif (rec.total or 0) > 0 then b.cost_unknown = true end
  end
  return by
end

-- Iterates the records of ledger file path (a damaged line is skipped).
function M.records(path)
  local f = io.open(path, "r")
  if not f then return function() return nil end end
  return function()
    while true do
      local line = f:read("l")
      if not line then f:close() return nil end
      local ok, rec = pcall(json.decode, line)
      if ok and type(rec) == "table" then return rec end
    end
  end
end

-- d's open day, today's (a new day closes yesterday's file and starts from nothing).
local function day_of(d)
  local today = M.today()
  local u = d.usage_day
  if u and u.day == today then return u end
  if u and u.fd then uv.fs_close(u.fd) end
  files.mkdir_p(d.paths.usage, tonumber("700", 8))
  u = { day = today, by_owner = spend_in(M.path(d.paths.usage, today)) }
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
  local b = u.by_owner[owner] or { tokens = 0 }
  u.by_owner[owner] = b
  b.tokens = b.tokens + inc.total
  if inc.cost then b.cost = (b.cost or 0) + inc.cost elseif inc.total > 0 then b.cost_unknown = true end
end

-- What orchestrator owner spent today: {tokens, cost?, cost_unknown?}.
function M.spent_today(d, owner)
  return day_of(d).by_owner[owner] or { tokens = 0 }
end

-- The ledger files under dir from day `from` to day `to` (YYYY-MM-DD, either nil: open), oldest first.
function M.days(dir, from, to)
  local out = {}
  local h = uv.fs_scandir(dir)
  while h do
    local name = uv.fs_scandir_next(h)
    if not name then break end
    local day = name:match("^(%d%d%d%d%-%d%d%-%d%d)%.jsonl$")
    if day and (not from or day >= from) and (not to or day <= to) then out[#out + 1] = day end
  end
  table.sort(out)
  return out
end

return M
