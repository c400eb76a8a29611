-- Routine schedules: what a schedule string means and when it next fires. Policy: hot-reloadable.
--   "manual"                   only when asked (reasonix_routine_run)
--   "every 30m"                fixed delay (s, m, h or d): due that long after the last one fired
--   "daily 09:00 Europe/Athens" every day at that local time in an IANA zone (default: the system's);
--                              the C library reads the system zoneinfo, so DST is the zone's own: a
--                              time a change skips runs at the same offset after it (02:30 → 03:30)
-- A schedule that fell due while nothing ran fires once when the scheduler is back; the next one is
-- counted from then, so missed runs are never replayed in a burst.
local sys = require "rmcp.sys"
local files = require "rmcp.lib.files"

local M = {}

M.min_interval = 60          -- seconds: an interval below a minute is a busy loop, not a routine
M.max_interval = 366 * 86400
M.zoneinfo = "/usr/share/zoneinfo"

local units = { s = 1, m = 60, h = 3600, d = 86400 }

-- True when name is an IANA zone this machine's zoneinfo has (a TZif file), or UTC.
function M.valid_zone(name)
  if name == "UTC" then return true end
  if type(name) ~= "string" or #name > 64 or not name:match("^[%w_+%-]+[%w_+%-/]*$") or name:find("..", 1, true)
    or name:sub(-1) == "/" then
    return false
  end
  local head = files.read(M.zoneinfo .. "/" .. name, 4)
  return head == "TZif"
end

-- The system's zone: /etc/timezone (Debian), else where /etc/localtime points, else UTC.
function M.system_zone()
  local text = files.read("/etc/timezone")
  local name = text and text:match("^%s*(%S+)")
  if name and M.valid_zone(name) then return name end
  local target = require("luv").fs_readlink("/etc/localtime")
  name = target and target:match("zoneinfo/(.+)$")
  if name and M.valid_zone(name) then return name end
  return "UTC"
end

-- Reads a schedule string: {kind = "manual"} | {kind = "interval", seconds} |
-- {kind = "daily", hour, min, zone}; or nil, why.
function M.parse(text)
  if type(text) ~= "string" then return nil, "schedule must be a string: manual, every 30m, or daily 09:00 [Area/City]" end
  local s = text:lower():match("^%s*(.-)%s*$")
  if s == "manual" then return { kind = "manual" } end
  local n, unit = s:match("^every%s+(%d+)%s*([smhd])$")
  if n then
    local seconds = tonumber(n) * units[unit]
    if seconds < M.min_interval or seconds > M.max_interval then
      return nil, string.format("schedule %q: the interval must be between 1m and 366d", text)
    end
    return { kind = "interval", seconds = seconds }
  end
  local h, m, rest = text:match("^%s*[Dd][Aa][Ii][Ll][Yy]%s+(%d%d?):(%d%d)%s*(.-)%s*$")
  if h then
    h, m = tonumber(h), tonumber(m)
    if h > 23 or m > 59 then return nil, string.format("schedule %q: the time must be HH:MM between 00:00 and 23:59", text) end
    local zone = rest ~= "" and rest or M.system_zone()
    if not M.valid_zone(zone) then
      return nil, string.format("schedule %q: unknown time zone %q (an IANA name such as Europe/Athens, from %s)",
        text, zone, M.zoneinfo)
    end
    return { kind = "daily", hour = h, min = m, zone = zone }
  end
  return nil, string.format("schedule %q: use manual, every N(s|m|h|d) (at least 1m), or daily HH:MM [Area/City]", text)
end

-- The canonical text of a parsed schedule (what is stored and shown).
function M.text(p)
  if p.kind == "manual" then return "manual" end
  if p.kind == "interval" then
    for _, u in ipairs({ "d", "h", "m" }) do
      if p.seconds % units[u] == 0 then return string.format("every %d%s", p.seconds // units[u], u) end
    end
    return string.format("every %ds", p.seconds)
  end
  return string.format("daily %02d:%02d %s", p.hour, p.min, p.zone)
end

-- The first time strictly after `after` (epoch seconds) that schedule p falls due; nil for manual.
-- For an interval, `after` is when the last one fired (or the routine was made).
function M.next_due(p, after)
  if p.kind == "interval" then return after + p.seconds end
  if p.kind ~= "daily" then return nil end
  local here = assert(sys.tz_local(p.zone, after))
  for day = 0, 2 do
    local t = assert(sys.tz_time(p.zone, { year = here.year, month = here.month, day = here.day + day,
                                           hour = p.hour, min = p.min }))
    if t > after then return t end
  end
  error("no daily time found after " .. tostring(after)) -- not reached: one day on is always later
end

return M
