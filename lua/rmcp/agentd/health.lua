-- Health of the turns agents are running: `running` (the agent's protocol or its process tree
-- advanced within REASONIX_MCP_RUNTIME_STALLED_AFTER seconds, default 600), `blocked` (queued
-- behind another process's workspace lease: the holder is named) or `stalled` (alive, neither
-- advanced). Diagnostic only: nothing is killed. A turn that becomes stalled wakes its watch once.
--
-- What it reads (Linux): /proc/<pid>/stat for CPU time (utime+stime+cutime+cstime of the agent and
-- its descendants: an agent waiting on its provider burns none, measured with reasonix 1.38.11),
-- /proc/locks and the agent's lease directory ($XDG_CACHE_HOME or $HOME/.cache, then
-- reasonix/workspace-leases): reasonix holds flock(2) WRITE on <key>.lock while a turn uses the
-- workspace, and a queued agent holds <key>.lock.queue while it waits for <key>.lock.
--
-- Its state is in d.health (this module is reloadable): the sampler's timer, the shared /proc
-- snapshot, and per live agent its bookkeeping (d.health.agents[agent]: the process tree's CPU
-- ticks and when they last changed, when the current stall was reported, and of which turn). A
-- stall is flagged on the session through its verb (session.mark_stalled).
local uv = require "luv"
local config = require "rmcp.config"
local log = require "rmcp.lib.log"
local files = require "rmcp.lib.files"
local session = require "rmcp.agentd.session"

local M = {}

-- Seconds without progress before a running turn is stalled.
function M.stalled_after()
  local v = tonumber(config.limit("runtime_stalled_after"))
  return v and v > 0 and v or config.limits.runtime_stalled_after
end

-- The parent pid and CPU ticks (own and waited-for children) of pid, or nil when it is gone.
local function proc_stat(pid)
  local text = files.read("/proc/" .. pid .. "/stat")
  if not text then return nil end
  local rest = text:match("%) (.*)$") -- after the command name, which may hold spaces
  if not rest then return nil end
  local f, i = {}, 0
  for field in rest:gmatch("%S+") do
    i = i + 1
    f[i] = field
    if i >= 15 then break end
  end
  -- rest's fields start at stat field 3 (state): ppid is 4, utime..cstime are 14..17
  local cpu = (tonumber(f[12]) or 0) + (tonumber(f[13]) or 0) + (tonumber(f[14]) or 0) + (tonumber(f[15]) or 0)
  return tonumber(f[2]), cpu
end

-- Every process's parent and CPU ticks: {cpu = {pid → ticks}, children = {ppid → {pid…}}}.
local function process_table()
  local cpu, children = {}, {}
  local dir = uv.fs_scandir("/proc")
  if not dir then return { cpu = cpu, children = children } end
  while true do
    local name = uv.fs_scandir_next(dir)
    if not name then break end
    local pid = tonumber(name)
    if pid then
      local ppid, ticks = proc_stat(pid)
      if ppid then
        cpu[pid] = ticks
        local c = children[ppid]
        if not c then c = {}; children[ppid] = c end
        c[#c + 1] = pid
      end
    end
  end
  return { cpu = cpu, children = children }
end

-- The pids of pid's tree (itself first) in process table procs.
local function tree(procs, pid)
  local out, i = { pid }, 1
  while i <= #out do
    for _, c in ipairs(procs.children[out[i]] or {}) do out[#out + 1] = c end
    i = i + 1
  end
  return out
end

-- The flock WRITE holders by inode from /proc/locks: {[inode] = {pid…}} (waiters, "->", left out).
local function write_locks()
  local by_inode = {}
  for line in (files.read("/proc/locks") or ""):gmatch("[^\n]+") do
    if not line:find("->", 1, true) then
      local kind, mode, pid, inode = line:match("^%d+:%s+(%u+)%s+%u+%s+(%u+)%s+(%d+)%s+%x+:%x+:(%d+)")
      if kind == "FLOCK" and mode == "WRITE" then
        local list = by_inode[inode]
        if not list then list = {}; by_inode[inode] = list end
        list[#list + 1] = tonumber(pid)
      end
    end
  end
  return by_inode
end

-- The lease directory of the agent pid (from its environment), or nil.
local function lease_dir(pid)
  local environ = files.read("/proc/" .. pid .. "/environ")
  if not environ then return nil end
  local env = {}
  for k, v in environ:gmatch("([^=%z]+)=([^%z]*)") do env[k] = v end
  local cache = env.XDG_CACHE_HOME ~= "" and env.XDG_CACHE_HOME or (env.HOME and env.HOME .. "/.cache")
  return cache and cache .. "/reasonix/workspace-leases" or nil
end

-- The sampler's bookkeeping of agent, whose session's runtime is rt: {cpu_total, cpu_changed_at,
-- stalled, turn}; a new turn re-arms the stall report. Weak keys: it goes with the agent.
local function bookkeeping(d, agent, rt)
  d.health = d.health or {}
  local agents = d.health.agents
  if not agents then
    agents = setmetatable({}, { __mode = "k" })
    d.health.agents = agents
  end
  local b = agents[agent]
  if not b then
    b = {}
    agents[agent] = b
  end
  if b.turn ~= rt.turn_started_ms then b.turn, b.stalled = rt.turn_started_ms, nil end
  return b
end

-- What every health answer in one loop iteration shares: the process table, the locks and which
-- session each live agent's process belongs to (built at most once per 500 ms).
local function snapshot(d)
  local now = uv.now()
  local snap = d.health and d.health.snap
  if snap and now - snap.at < 500 then return snap end
  snap = { at = now, procs = process_table(), locks = write_locks(), owner = {} }
  for id, s in pairs(d.sessions) do
    local agent = s.rt and s.rt.agent
    local pid = agent and not agent.exited and agent:pid()
    if pid then
      for _, p in ipairs(tree(snap.procs, pid)) do snap.owner[p] = id end
    end
  end
  d.health = d.health or {}
  d.health.snap = snap
  return snap
end

-- The holder of the workspace lease the agent tree pids waits for ("rx-…" for one of ours, else
-- "pid N"), or nil when it waits for none.
local function lease_holder(snap, pids, dir)
  local mine = {}
  for _, p in ipairs(pids) do mine[p] = true end
  local scan = dir and uv.fs_scandir(dir)
  if not scan then return nil end
  while true do
    local name = uv.fs_scandir_next(scan)
    if not name then return nil end
    local key = name:match("^(.+%.lock)%.queue$")
    if key then
      local qst, lst = uv.fs_stat(dir .. "/" .. name), uv.fs_stat(dir .. "/" .. key)
      local queued, holders = qst and snap.locks[tostring(qst.ino)], lst and snap.locks[tostring(lst.ino)]
      local waiting, holds, other = false, false, nil
      for _, p in ipairs(queued or {}) do waiting = waiting or mine[p] == true end
      for _, p in ipairs(holders or {}) do
        if mine[p] then holds = true else other = other or p end
      end
      if waiting and not holds and other then
        return snap.owner[other] or ("pid " .. other)
      end
    end
  end
end

-- The health of s: nil unless it runs a turn; else {state, quiet_s, workspace_lease_holder?}.
function M.of(d, s)
  local rt = s.rt
  local agent = rt and rt.agent
  if s.status ~= "running" or not agent or agent.exited then return nil end
  local snap = snapshot(d)
  local pids = tree(snap.procs, agent:pid())
  local now = uv.now()
  local cpu_changed_at = bookkeeping(d, agent, rt).cpu_changed_at
  local progress = math.max(agent.last_line_at or 0, cpu_changed_at or 0, rt.turn_started_ms or 0)
  local quiet_s = math.max(0, (now - progress) // 1000)
  local holder = lease_holder(snap, pids, lease_dir(agent:pid()))
  if holder then return { state = "blocked", workspace_lease_holder = holder, quiet_s = quiet_s } end
  if quiet_s >= M.stalled_after() then return { state = "stalled", quiet_s = quiet_s } end
  return { state = "running", quiet_s = quiet_s }
end

-- The health of s when it is worth a poll or watch result's room (blocked or stalled), else nil.
function M.anomaly(d, s)
  if s.status ~= "running" then return nil end -- (M.of's first test: a poll of an idle session asks it)
  local h = M.of(d, s)
  return h and h.state ~= "running" and h or nil
end

-- One sampling pass: the CPU of every running turn's process tree (a change is progress), then
-- the turns that just became stalled are flagged (session.mark_stalled) and reported once per quiet stretch
-- of the protocol: process-tree CPU counts as progress for the state, but only a line from the
-- agent (or a new turn) lets a later stall wake a watch again.
local function sample(d)
  local any = false
  for _, s in pairs(d.sessions) do any = any or (s.status == "running" and s.rt and s.rt.agent ~= nil) end
  if not any then return end
  local snap = snapshot(d)
  for _, s in pairs(d.sessions) do
    local agent = s.rt and s.rt.agent
    if s.status == "running" and agent and not agent.exited then
      local b = bookkeeping(d, agent, s.rt)
      local total = 0
      for _, p in ipairs(tree(snap.procs, agent:pid())) do total = total + (snap.procs.cpu[p] or 0) end
      if b.cpu_total ~= total then b.cpu_total, b.cpu_changed_at = total, uv.now() end
      local h = M.of(d, s)
      local stalled = h and h.state == "stalled"
      if stalled and not b.stalled then
        b.stalled = uv.now()
        log.warn("session %s: stalled: no protocol or process progress for %ds", s.id, h.quiet_s)
        session.mark_stalled(d, s, string.format("stalled: no protocol or process progress for %ds", h.quiet_s))
      elseif not stalled and b.stalled and (agent.last_line_at or 0) > b.stalled then
        b.stalled = nil -- re-armed by the agent speaking: a CPU blip alone does not make a new stall
      end
    end
  end
end

-- The bookkeeping of agent for a new daemon image (handover), or nil.
function M.handover_state(d, agent)
  local b = d.health and d.health.agents and d.health.agents[agent]
  return b and { cpu_total = b.cpu_total, cpu_changed_at = b.cpu_changed_at, stalled = b.stalled, turn = b.turn } or nil
end

-- In a new daemon image: takes the bookkeeping st (handover_state) of agent, adopted for session s.
function M.adopt(d, s, agent, st)
  if type(st) ~= "table" then return end
  local b = bookkeeping(d, agent, s.rt)
  b.cpu_total, b.cpu_changed_at, b.stalled, b.turn = st.cpu_total, st.cpu_changed_at, st.stalled, st.turn
end

-- Starts the sampler (every quarter of the stall threshold, between 0.2 and 30 s).
function M.start(d)
  d.health = d.health or {}
  local every = math.floor(math.max(0.2, math.min(30, M.stalled_after() / 4)) * 1000)
  local timer = uv.new_timer()
  timer:start(every, every, function() sample(d) end)
  timer:unref()
  d.health.timer = timer
end

-- Stops the sampler.
function M.stop(d)
  local h = d.health
  if h and h.timer then
    h.timer:close()
    h.timer = nil
  end
end

return M
