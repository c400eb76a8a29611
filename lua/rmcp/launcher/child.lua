-- One `reasonix-mcp server` child of the launcher: spawned with NDJSON pipes on stdin/stdout and our
-- stderr, told who supervises it, and stopped within bounds (close stdin → TERM → KILL).
local uv = require "luv"
local proc = require "rmcp.proc"
local config = require "rmcp.config"
local log = require "rmcp.lib.log"

local M = {}

---@class LauncherChild
---@field n integer                    sequence number (1: the server core/first_server.c started)
---@field exe string                   the binary it runs
---@field started integer              uv.now() at its start
---@field p userdata                   the rmcp.proc process
---@field pid integer
---@field ready boolean                answered the replayed initialize (supervisor.lua)
---@field exited boolean
---@field code integer?                exit code once exited
---@field signal integer?              terminating signal once exited
---@field stdin_closed boolean         stop or kill began
---@field own table<string, fun(msg: table)> launcher request id -> its answer's handler (supervisor.lua: the replay)
---@field server_reqs table<any, integer> id_key of a request this server sent the host -> host-facing id (router.lua)
---@field timers table<string, userdata> start, drain, term, kill: closed on exit
---@field reason string?               why it was started (supervisor.lua)
---@field failed string?               why its start failed (supervisor.lua)
---@field retiring boolean?            replaced: finishing what it owns, then stopped (supervisor.lua)
local Child = {}
Child.__index = Child

-- Runs fn once after ms; returns the timer (stop it with cancel_timer).
local function after(ms, fn)
  local t = uv.new_timer()
  t:start(ms, 0, function()
    t:close()
    fn()
  end)
  return t
end
M.after = after

-- Stops and closes a timer from after() unless it already fired.
local function cancel_timer(t)
  if t and not t:is_closing() then
    t:stop()
    t:close()
  end
end
M.cancel_timer = cancel_timer

-- Our environment plus REASONIX_MCP_LAUNCHER_PID, which tells the server its parent can restart it.
local function child_env()
  local out = {}
  for k, v in pairs(uv.os_environ()) do
    if k ~= "REASONIX_MCP_LAUNCHER_PID" then out[#out + 1] = k .. "=" .. v end
  end
  out[#out + 1] = string.format("REASONIX_MCP_LAUNCHER_PID=%d", uv.os_getpid()) -- as first_server.c writes it
  table.sort(out)
  return out
end

-- Spawns `exe server`, or for n == 1 takes over the server the C core started before our Lua
-- loaded (core/first_server.c starts it just as this does). opts: exe, n (a sequence number for
-- logs), on_line(child, line), on_exit(child, code, signal), on_stdin_drain(child) (what we wrote
-- it fell back under the high-water mark). Returns the child or nil, message.
function M.spawn(opts)
  local self = setmetatable({
    n = opts.n, exe = opts.exe, started = uv.now(),
    ready = false, exited = false, stdin_closed = false,
    own = {},          -- launcher request id -> fn(msg): answers to the handshake replay
    server_reqs = {},  -- id_key of a request this server sent the host -> host-facing id
    timers = {},
  }, Child)
  local how = {
    -- a line cut by the server's death (it sat half written while the host read nothing) never
    -- reaches the host: its request is still in flight, sent again or failed like the others
    stdout_mode = "ndjson", max_line = 4 * config.limit("max_line"), drop_partial_line = true,
    on_line = function(line) opts.on_line(self, line) end,
    on_oversize = function(n)
      log.error("server pid %s wrote a %d-byte line, over the limit; dropped (a response may be lost)",
        tostring(self.pid), n)
    end,
    on_exit = function(code, signal)
      self.exited = true
      self.code, self.signal = code, signal
      for _, t in pairs(self.timers) do cancel_timer(t) end
      self.timers = {}
      opts.on_exit(self, code, signal)
    end,
    on_stdin_drain = function() if opts.on_stdin_drain then opts.on_stdin_drain(self) end end,
  }
  local first_pid, stdin_fd, stdout_fd
  if opts.n == 1 then first_pid, stdin_fd, stdout_fd = proc.take_first_server() end
  local p, err
  if first_pid then
    how.pid, how.stdin, how.stdout = first_pid, stdin_fd, stdout_fd
    p, err = proc.adopt(how)
    if not p then
      -- its pipes close, so it stops (PDEATHSIG too); a server of our own replaces it
      log.warn("cannot take over the first server (pid %d): %s", first_pid, tostring(err))
      uv.fs_close(stdin_fd)
      uv.fs_close(stdout_fd)
      how.pid, how.stdin, how.stdout = nil, nil, nil
    end
  end
  if not p then
    how.file, how.args, how.env = opts.exe, { "server" }, child_env()
    -- our death hangs the server up rather than killing it: it passes on what we wrote it (the word
    -- on an answer the host has), then stops at its stdin's end (server/main.lua)
    how.pdeathsig = "HUP"
    how.stdin, how.stdout, how.stderr = "pipe", "pipe", "inherit"
    p, err = proc.spawn(how)
  end
  if not p then return nil, err end
  self.p = p
  self.pid = p:pid()
  return self
end

-- Writes one line to the server's stdin; false once its stdin is closed or it is gone.
function Child:send(line)
  if self.exited or self.stdin_closed then return false end
  local queued = self.p.stdin:write(line)
  return queued ~= nil
end

-- The server's stdin and stdout as channels (back-pressure: lib/flow.lua), nil once it is gone.
function Child:pipes()
  if self.exited then return nil, nil end
  return self.p.stdin, self.p.stdout
end

-- Ends the server: closes its stdin (it stops on EOF), TERM after grace_ms, KILL grace_ms later.
function Child:stop(grace_ms)
  if self.exited then return end
  if not self.stdin_closed then
    self.stdin_closed = true
    self.p.stdin:shutdown()
  end
  if self.timers.term then return end
  grace_ms = grace_ms or 2000
  self.timers.term = after(grace_ms, function()
    self:kill("TERM")
    self.timers.kill = after(grace_ms, function() self:kill("KILL") end)
  end)
end

-- Signals the server's process group now.
function Child:kill(sig)
  if self.exited then return end
  if not self.stdin_closed then
    self.stdin_closed = true
    self.p.stdin:shutdown()
  end
  self.p:kill(sig)
end

-- How the child ended, for logs: "exit code 3", "signal 9", or "running".
function Child:describe_exit()
  if not self.exited then return "running" end
  if self.signal and self.signal ~= 0 then return "signal " .. tostring(self.signal) end
  return "exit code " .. tostring(self.code)
end

return M
