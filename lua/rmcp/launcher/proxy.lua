-- The launcher's proxy between the host and its `server` children: the router (router.lua: which
-- line goes where), the ledger (ledger.lua: requests in flight and the receipts of answers) and the
-- supervisor (supervisor.lua: children, build-and-swap, crash backoff, give-up), wired together.
-- The host never sees a second answer, and repeatable calls survive a server's replacement.
local ledger_mod = require "rmcp.launcher.ledger"
local router_mod = require "rmcp.launcher.router"
local supervisor_mod = require "rmcp.launcher.supervisor"

local M = {}

---@class LauncherProxy
---@field router LauncherRouter
---@field ledger LauncherLedger
---@field supervisor LauncherSupervisor
local Proxy = {}
Proxy.__index = Proxy

-- Creates the proxy. opts: send_host(line) -> bytes still queued for the host (0: all written) or
-- nil when it cannot be written; spawn_child{n, on_line, on_exit} -> child | nil, err
-- (default: child.spawn of opts.exe); on_stopping() (stop reading the host); on_exit(code) (all
-- children are gone: exit the process); on_settled() (a host request left flight);
-- on_active(child) (a server took over: host lines and answers go through it now).
---@return LauncherProxy
function M.new(opts)
  local self = setmetatable({}, Proxy)
  local on_settled = opts.on_settled or function() end
  self.ledger = ledger_mod.new{
    send_host = opts.send_host,
    active = function() return self.supervisor.active end,
    adopt = function(line) return self.router:adopt(line) end,
    on_settled = function(entry, result_line, left)
      self.router:forget_token(entry)
      self.supervisor:settled(entry, result_line)
      if left then on_settled() end
    end,
  }
  self.supervisor = supervisor_mod.new{
    ledger = self.ledger, send_host = opts.send_host, spawn_child = opts.spawn_child, exe = opts.exe,
    on_line = function(child, line)
      self.router:from_child(child, line)
      self:sync_lane()
    end,
    withdraw = function(child, reason) self.router:withdraw(child, reason) end,
    on_stopping = opts.on_stopping, on_exit = opts.on_exit, on_active = opts.on_active,
  }
  self.router = router_mod.new{ send_host = opts.send_host, ledger = self.ledger, supervisor = self.supervisor }
  return self
end

-- Starts the first server.
function Proxy:start()
  self.supervisor:start()
end

-- Feeds one line from the host (one the lane did not take).
function Proxy:from_host(line)
  self.router:from_host(line)
  self:sync_lane()
end

-- Gives the proxy the launcher's hot path in C (rmcp.fastlane), which sees each line first.
function Proxy:use_lane(lane)
  self.ledger.lane = lane
end

-- The lane relays to the active server while it may take host lines as they come.
function Proxy:sync_lane()
  local s = self.supervisor
  self.ledger:sync_lane(not s.stopping and s.active or nil)
end

-- Answers a host line that was over the size limit and dropped unread.
function Proxy:host_oversize(nbytes, limit)
  self.router:host_oversize(nbytes, limit)
end

-- The host's pipe took everything queued for it (rmcp.channel on_flushed).
function Proxy:host_flushed()
  self.ledger:host_flushed()
end

-- Replaces the active server gracefully (the binary changed).
function Proxy:swap(reason)
  self.supervisor:swap(reason)
end

-- Shuts down; on_exit(code) once every child is gone.
function Proxy:stop(code, why)
  self.supervisor:stop(code, why)
end

-- Number of host requests in flight (back-pressure on the host).
function Proxy:in_flight()
  return self.ledger:in_flight()
end

-- The stdin of the server host lines go to now (back-pressure toward it), or nil.
function Proxy:server_input()
  local active = self.supervisor.active
  return active and (active:pipes()) or nil
end

-- The server children alive now (for tests and logs).
function Proxy:pids()
  return self.supervisor:pids()
end

return M
