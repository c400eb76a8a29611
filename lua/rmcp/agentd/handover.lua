-- Live handover: agentd replaces its own image with a new binary (exec: same pid, so the agents stay
-- our children and their PDEATHSIG still points at us) and keeps every agent running, mid-turn or
-- waiting on a decision. The old image pauses the agents' pipes (nothing half-read), writes what the
-- new one needs to $REASONIX_MCP_HOME/agentd.handover.json (each live session's runtime state and
-- the health sampler's bookkeeping of its agent, the agent's pid, pipe fds, next request id, the
-- in-flight session/prompt and the agent's open permission requests; the lock fd; the watch and poll
-- answers held until their receipt, which arrive lost; the open-file limit agents start with, as
-- exec keeps our raised one), clears CLOEXEC on those fds and execs `<binary> agentd` with
-- REASONIX_MCP_HANDOVER naming the file. The new image keeps the lock,
-- restores sessions as usual, then adopts the agents (rmcp.proc.adopt) and re-attaches the prompt,
-- the decisions and the held answers. Every request a client sent that the old image read is
-- answered before the exec; the connections then get a goodbye (api.close), so a client sends what
-- was not read to the new image, once.
-- Opt-in: REASONIX_MCP_LIVE_HANDOVER=1 (a queued reload then waits only for what cannot be moved).
local uv = require "luv"
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local log = require "rmcp.lib.log"
local after_reply = require "rmcp.lib.after_reply"
local config = require "rmcp.config"
local sys = require "rmcp.sys"
local proc = require "rmcp.proc"
local session = require "rmcp.agentd.session"
local store = require "rmcp.agentd.store"
local files = require "rmcp.lib.files"
local receipts = require "rmcp.agentd.receipts"
local health = require "rmcp.agentd.health"
local watch = require "rmcp.agentd.watch"

local M = {}

M.VERSION = 1
M.ENV = "REASONIX_MCP_HANDOVER"

-- True when binary upgrades hand live agents over instead of waiting for them.
function M.enabled()
  return config.flag("LIVE_HANDOVER")
end

-- A child process of ours that is not a session's agent (a models query, a posture probe): exec
-- would leave it unwatched and unreaped. Reads the kernel's child list of our main thread.
local function stray_child(d)
  local f = io.open(string.format("/proc/self/task/%d/children", d.pid), "r")
  if not f then return nil end
  local text = f:read("a") or ""
  f:close()
  local agents = {}
  for _, s in pairs(d.sessions) do
    local a = s.rt and s.rt.agent
    if a and a.p then agents[a:pid()] = true end
  end
  for pid in text:gmatch("%d+") do
    if not agents[tonumber(pid)] then return tonumber(pid) end
  end
  return nil
end

-- What keeps the agents from being handed over right now: the session (nil for the daemon itself)
-- and why; nil when nothing does.
function M.blocker(d)
  for id, s in pairs(d.sessions) do
    local rt = s.rt or {} -- (a parked session has no runtime: it is finished)
    local a = rt.agent
    if rt.setting_up or s.status == "starting" then return s, "starting" end
    if a and not a.exited then
      if rt.stopping then return s, "stopping" end
      local prompt = (rt.prompt_active and rt.prompt_id) and 1 or 0
      if a.peer:pending_count() ~= prompt then return s, "a request to the agent is in flight" end
      if a:queued() > 0 then return s, "writes to the agent are queued" end
      -- a strict sandbox's connections run through our sockets, which the exec closes: an idle
      -- agent's (kept-alive ones) may go, a turn's must end first
      if rt.prompt_active and rt.netgate and rt.netgate:connections() > 0 then
        return s, "its turn's network connections run through agentd"
      end
      for _, dec in ipairs(s.pending) do
        if not jsonrpc.reply_id(dec.reply) then return s, "a decision without a request id" end
      end
    end
    -- its receipt comes over the connection the exec closes: wait for it (a lost one moves along)
    if receipts.pending(d, id) then return s, "an answer on its way to the host" end
  end
  -- a request a client sent is answered before its connection closes (a watch or wait is sent
  -- again): what agentd has not read yet then goes, once, to the new image (api.close: goodbye)
  for conn in pairs(d.conns) do
    if watch.short_in_flight(conn) > 0 then return nil, "a request of connection " .. conn.id .. " is being answered" end
  end
  local pid = stray_child(d)
  if pid then return nil, "helper process " .. pid .. " is still running" end
  return nil
end

-- Pauses every live agent and collects the handover state (and the paused agents); nil, why when
-- an agent has a partial line buffered (then every agent reads again).
function M.collect(d)
  -- (`kept`: the held answers' name in the state file, which images of every version read)
  -- (`nofile_soft`: the open-file limit agents start with; exec keeps our raised one)
  local st = { version = M.VERSION, lock_fd = d.lock, sessions = {}, from_pid = d.pid, kept = receipts.export(d),
               nofile_soft = proc.children_nofile() }
  local paused = {}
  local function undo(why)
    for _, a in ipairs(paused) do a:set_reading(true) end
    return nil, why
  end
  for id, s in pairs(d.sessions) do
    local a = s.rt and s.rt.agent
    if a and not a.exited then
      local ast, why = a:handover_state()
      if not ast then return undo(id .. ": " .. why) end
      paused[#paused + 1] = a
      local hs = session.handover_state(s)
      hs.agent = ast
      hs.health = health.handover_state(d, a)
      st.sessions[id] = hs
    end
  end
  return st, paused
end

-- Gives paused agents back their reading (a handover that did not happen).
function M.release(paused)
  for _, a in ipairs(paused) do
    if not a.exited then a:set_reading(true) end
  end
end

-- Writes state st (from collect) and execs `exe agentd` with the agents handed over; returns only
-- when that failed (nil, why), with everything taken back. The caller closed socket and connections.
function M.exec(d, exe, st, paused, reason)
  local text, jerr = json.encode(st)
  if not text then
    M.release(paused)
    return nil, "cannot encode the handover state: " .. tostring(jerr)
  end
  local path = d.paths.home .. "/agentd.handover.json"
  local ok, werr = files.write_atomic(path, text, false) -- 0600, like every file in the home
  if not ok then
    M.release(paused)
    return nil, "cannot write " .. path .. ": " .. tostring(werr)
  end
  local fds = { d.lock }
  for _, hs in pairs(st.sessions) do
    for _, fd in pairs(hs.agent.fds) do fds[#fds + 1] = fd end
  end
  for _, fd in ipairs(fds) do sys.cloexec(fd, false) end
  for _, s in pairs(d.sessions) do
    session.pause_cleanup(s)
    session.persist(d, s)
  end
  after_reply.flush() -- the agent_events and saves still waiting
  store.flush()
  local env = {}
  for k, v in pairs(uv.os_environ()) do
    if k ~= M.ENV then env[#env + 1] = k .. "=" .. v end
  end
  env[#env + 1] = M.ENV .. "=" .. path
  log.info("handover: exec %s agentd with %d live agent(s) (%s)", exe, #paused, reason)
  local _, err = sys.exec(exe, { "agentd" }, env)
  for _, fd in ipairs(fds) do sys.cloexec(fd, true) end
  os.remove(path)
  M.release(paused)
  return nil, "exec failed: " .. tostring(err)
end

-- In a new image: the handover state named by REASONIX_MCP_HANDOVER (read once, file removed), or nil.
function M.take()
  local path = config.env(M.ENV)
  if not path then return nil end
  uv.os_unsetenv(M.ENV)
  local f = io.open(path, "r")
  local text = f and f:read("a")
  if f then f:close() end
  os.remove(path)
  local st = text and json.decode(text)
  if type(st) ~= "table" or st.version ~= M.VERSION or math.type(st.lock_fd) ~= "integer" then
    log.error("handover: unusable state in %s (version %s); the agents are lost", path, tostring(type(st) == "table" and st.version))
    return nil
  end
  sys.cloexec(st.lock_fd, true)
  return st
end

-- Kills a handed-over agent we cannot adopt, so it does not run on unwatched.
local function discard(hs)
  local pid = math.tointeger(hs.agent and hs.agent.pid)
  if pid then uv.kill(pid, "sigkill") end
  for _, fd in pairs(hs.agent and hs.agent.fds or {}) do uv.fs_close(fd) end
end

-- In a new image, after the sessions were restored from disk: adopts the handed-over agents and
-- gives their sessions back their live state.
function M.adopt_all(d, st)
  local n = 0
  for id, hs in pairs(st.sessions or {}) do
    local s = d.sessions[id]
    if not s then
      log.warn("handover: session %s is not on disk; its agent (pid %s) is stopped", id, tostring(hs.agent.pid))
      discard(hs)
    else
      local agent, err = session.adopt(d, s, hs)
      if not agent then
        log.error("handover: cannot adopt the agent of %s (pid %s): %s; it stays orphaned", id, tostring(hs.agent.pid), tostring(err))
        discard(hs)
      else
        health.adopt(d, s, agent, hs.health)
        n = n + 1
        log.info("handover: adopted %s (agent pid %d, %s%s)", id, agent:pid(), s.status,
          #s.pending > 0 and (", " .. #s.pending .. " decision(s) pending") or "")
      end
    end
  end
  receipts.import(d, st.kept)
  session.policy_changed(d)
  log.info("handover: %d live agent(s) taken over from the previous image", n)
end

return M
