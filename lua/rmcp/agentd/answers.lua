-- The answers agentd keeps for a connection and gives in C (rmcp.answerlane, core/answerlane.c): a
-- request with params {} whose answer Lua gave and kept is answered from that text, without
-- entering Lua, until anything it could show changes. Every such change calls M.changed (a session's
-- listed field, parked or not among them: session/revision.lua; a session coming or going; today's
-- spend; a reload queued; a module or policy swapped in, a reload warning waiting), and a kept
-- answer holds at most while the reload check would skip its stats (an edit of a module or policy
-- is Lua's to see first). REASONIX_MCP_ANSWERLANE=0 keeps none.
local uv = require "luv"
local answerlane = require "rmcp.answerlane"
local reload = require "rmcp.lib.reload"
local config = require "rmcp.config"

local M = {}

-- Lets the lane see the lines of conn's channel ch first (conn.answers), unless switched off.
function M.attach(conn, ch)
  if config.env("REASONIX_MCP_ANSWERLANE") == "0" then return end
  conn.answers = answerlane.new(ch)
end

-- Keeps text as the result of conn's next requests of method with params {}, for at most for_s
-- seconds (nil: no limit of its own), while nothing changes and the reload check stays quiet.
function M.keep(conn, method, text, for_s)
  local lane = conn.answers
  if not lane or reload.has_warnings() then return end
  local fd, until_ns = reload.quiet_window()
  if not fd then return end
  if for_s then until_ns = math.min(until_ns, uv.hrtime() + math.floor(for_s * 1e9)) end
  lane:keep(method, text, fd, until_ns)
end

-- Every kept answer of every connection is stale: something one could show changed.
M.changed = answerlane.changed

-- How many requests conn's lane answered.
function M.taken(conn)
  return conn.answers and conn.answers:taken() or 0
end

-- Lets every line of conn's channel go to Lua again (the connection closes).
function M.detach(conn)
  if conn.answers then conn.answers:close() end
  conn.answers = nil
end

return M
