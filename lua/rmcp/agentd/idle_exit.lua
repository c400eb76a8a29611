-- A daemon nobody uses goes away: like tmux's server when its last session ends, agentd exits by
-- itself once it has had no live session and no connection for REASONIX_MCP_DAEMON_IDLE_EXIT seconds
-- (default 600, 0 = never). An observer (the dashboard) looks at a fleet and does not keep it up;
-- routines with a schedule, a run at work or a trigger waiting do. Sessions that are exited or orphaned on disk are not live and do not keep
-- it up; the next client autostarts a fresh daemon, which restores them. State lives in d.idle_exit.
local uv = require "luv"
local log = require "rmcp.lib.log"
local config = require "rmcp.config"
local session = require "rmcp.agentd.session"
local lazy = require "rmcp.lib.lazy"
local scheduler = lazy "rmcp.agentd.routines.scheduler" -- (loaded only where there are routines)

local M = {}

-- True when nothing uses the daemon now: no connection but observers, no live session, no handover,
-- no routine to keep.
local function unused(d)
  if d.shutting_down or (d.upgrade and d.upgrade.handing_over) then return false end
  if d.routines and scheduler.keeps_daemon(d) then return false end
  for conn in pairs(d.conns) do
    if not conn.observer then return false end
  end
  for _, s in pairs(d.sessions) do
    if session.is_live(s) then return false end
  end
  return true
end

-- Starts the check: every tenth of the idle period (between 50 ms and 10 s), so the exit comes at
-- most 10% late; shutdown(reason) is called once the daemon has been unused for the whole period.
function M.start(d, shutdown)
  local secs = config.daemon_idle_exit()
  if secs <= 0 then
    log.info("idle exit off (REASONIX_MCP_DAEMON_IDLE_EXIT=0)")
    return
  end
  local period = math.floor(secs * 1000)
  local every = math.max(50, math.min(10000, period // 10))
  local st = { timer = uv.new_timer(), since = nil }
  d.idle_exit = st
  st.timer:start(every, every, function()
    if not unused(d) then
      st.since = nil
      return
    end
    local now = uv.now()
    st.since = st.since or now
    if now - st.since >= period then
      st.timer:stop()
      shutdown(string.format("no live session and no connection for %gs (REASONIX_MCP_DAEMON_IDLE_EXIT)", secs))
    end
  end)
  st.timer:unref() -- the check alone never keeps the loop alive
end

-- Stops the check (shutdown).
function M.stop(d)
  local st = d.idle_exit
  if st and not st.timer:is_closing() then st.timer:close() end
  d.idle_exit = nil
end

return M
