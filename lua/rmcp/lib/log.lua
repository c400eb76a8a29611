-- Diagnostics for every process: one line per message to stderr (the daemon points stderr at its log).
-- stdout is never used: in the MCP server it carries only protocol.
local M = {}

-- The RFC 5424 levels as MCP's notifications/message names them, in increasing severity (the
-- launcher and the server filter what they send a host by the level it set).
M.MCP_LEVELS = { debug = 1, info = 2, notice = 3, warning = 4, error = 5, critical = 6, alert = 7, emergency = 8 }

local levels = { debug = 10, info = 20, warn = 30, error = 40 }
local threshold = levels[os.getenv("REASONIX_MCP_LOG_LEVEL") or "info"] or levels.info
local sink = function(line) io.stderr:write(line) end
local pid = require("luv").os_getpid() -- a process that re-executes itself loads this module anew
local who = string.format(" reasonix-mcp[%d] ", pid) -- what follows the time in every line: role[pid]

-- Names the process in every line (server, agentd, ...).
function M.set_role(name) who = string.format(" %s[%d] ", name, pid) end

-- Sends lines elsewhere (a rotating file, a test buffer); fn(line) gets text ending in "\n".
function M.set_sink(fn) sink = fn end

-- The last n lines of the file at path (a log), or nil when it cannot be read.
function M.tail(path, n)
  local f = io.open(path, "r")
  if not f then return nil end
  local lines = {}
  for line in f:lines() do
    lines[#lines + 1] = line
    if #lines > n then table.remove(lines, 1) end
  end
  f:close()
  return lines
end

-- The UTC time of a line, formatted once per second (os.date costs more than the rest of a line).
local stamp_sec, stamp_text = nil, ""
local function stamp()
  local now = os.time()
  if now ~= stamp_sec then stamp_sec, stamp_text = now, os.date("!%Y-%m-%dT%H:%M:%SZ", now) end
  return stamp_text
end

-- Formats and writes one message at level if it passes the threshold.
local function emit(level, fmt, ...)
  if levels[level] < threshold then return end
  local ok, text = pcall(string.format, fmt, ...)
  if not ok then text = tostring(fmt) end
  sink(stamp() .. who .. level .. ": " .. text .. "\n")
end

-- Logs string.format(fmt, ...) at that level (a bad format logs fmt as it is).
function M.debug(fmt, ...) emit("debug", fmt, ...) end
function M.info(fmt, ...) emit("info", fmt, ...) end
function M.warn(fmt, ...) emit("warn", fmt, ...) end
function M.error(fmt, ...) emit("error", fmt, ...) end

return M
