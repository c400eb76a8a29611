-- The command MCP hosts register (`reasonix-mcp` with no subcommand): proxies the host's stdio to a
-- `reasonix-mcp server` child and replaces that child when the binary changes, when the server asks
-- (reasonix_restart_mcp_server) or when it dies, without the host noticing (see proxy.lua).
-- stdout carries only protocol; our diagnostics and the children's go to stderr.
local uv = require "luv"
local log = require "rmcp.lib.log"
local config = require "rmcp.config"

local M = {}

-- Starts the first server before the rest of the launcher loads, so the two start-ups overlap;
-- its lines and exit reach the proxy's callbacks, which are in place before the loop runs. Returns
-- the proxy's spawn_child: the first child is that one, later ones (restarts, swaps) start there.
local function start_first_server(exe)
  local child_mod = require "rmcp.launcher.child"
  local hooks
  local first, first_err = child_mod.spawn{
    exe = exe, n = 1,
    on_line = function(c, line) if hooks then hooks.on_line(c, line) end end,
    on_exit = function(c, code, signal) if hooks then hooks.on_exit(c, code, signal) end end,
    on_stdin_drain = function(c) if hooks then hooks.on_stdin_drain(c) end end,
  }
  return function(o)
    if o.n == 1 then
      hooks = o
      return first, first_err
    end
    return child_mod.spawn{ exe = exe, n = o.n, on_line = o.on_line, on_exit = o.on_exit,
                            on_stdin_drain = o.on_stdin_drain }
  end
end

-- The launcher's gates (config.lua "Back-pressure"): the host is not read while it is behind on
-- stdout, the active server is behind on its stdin, or too many host requests are in flight
-- (L.gate); the servers that answer the host are not read while the host is behind (L.answers),
-- so their answers wait in them, each bounded in turn, instead of piling up here.
local function make_gates(L)
  local flow = require "rmcp.lib.flow"
  local max_in_flight = config.limit("max_in_flight")
  L.gate = flow.gate("launcher stdin", function()
    return flow.unread(L.out, "the host") or flow.unread(L.proxy and L.proxy:server_input(), "the server")
      or flow.too_many(L.proxy and L.proxy:in_flight() or 0, max_in_flight, "host requests")
  end)
  L.answers = flow.gate("launcher server stdout", function() return flow.unread(L.out, "the host") end)
end

-- Wraps spawn_child: each server's lines are followed by a look at the host's queue (L.answers),
-- and its stdin draining may let the host be read again.
local function gated_spawn(L, spawn_child)
  return function(o)
    local child, err = spawn_child{
      n = o.n, on_exit = o.on_exit,
      on_line = function(c, line)
        o.on_line(c, line)
        L.answers:check()
      end,
      on_stdin_drain = function() L.gate:released() end,
    }
    if child and L.lane then L.lane:watch(child.p, child.n) end
    return child, err
  end
end

-- Opens stdout for the launcher L (its gates: make_gates). Returns true, or false after logging
-- why not.
local function open_stdout(L)
  make_gates(L)
  local err
  L.out, err = require("rmcp.channel").open(1, {
    mode = "ndjson", read = false, write = true,
    on_eof = function(e)
      if e and L.proxy then L.proxy:stop(0, "the host stopped reading stdout: " .. tostring(e)) end
    end,
    on_drain = function()
      L.gate:released()
      L.answers:released()
    end,
    -- an answer waiting in our queue is the host's only once the pipe took it (ledger.lua: receipts)
    on_flushed = function() if L.proxy then L.proxy:host_flushed() end end,
  })
  if not L.out then log.error("cannot open stdout: %s", tostring(err)) end
  return L.out ~= nil
end

-- Opens stdin for the launcher L: each line goes to the proxy, then the gate looks again.
-- Returns true, or false after logging why not.
local function open_stdin(L)
  local max_line = config.limit("max_line")
  local err
  L.input, err = require("rmcp.channel").open(0, {
    mode = "ndjson", read = true, write = false, max_line = max_line,
    on_line = function(line)
      L.proxy:from_host(line)
      L.gate:check()
    end,
    on_oversize = function(n) L.proxy:host_oversize(n, max_line) end,
    on_eof = function(e) L.proxy:stop(0, e and ("stdin error: " .. tostring(e)) or "the host closed stdin") end,
  })
  if not L.input then
    log.error("cannot open stdin: %s", tostring(err))
    return false
  end
  L.gate:add(L.input)
  -- plain requests and their answers pass in C; the gates look again when one settles at the limit
  L.lane = require("rmcp.fastlane").new{
    host = L.out, input = L.input, max_in_flight = config.limit("max_in_flight"),
    on_settle = function()
      L.gate:released()
      L.answers:check()
    end,
    on_receipt = function(id, queued) L.proxy.ledger:lane_receipt(id, queued) end,
  }
  L.proxy:use_lane(L.lane)
  return true
end

-- Stops the launcher L on TERM, INT and HUP, and swaps its server when the binary changes.
local function watch_signals_and_binary(L, exe)
  for _, name in ipairs({ "sigterm", "sigint", "sighup" }) do
    local sig = uv.new_signal()
    sig:start(name, function() L.proxy:stop(0, name:upper()) end)
    L.signals[#L.signals + 1] = sig
  end
  L.watcher = require("rmcp.lib.binwatch").watch(exe, function() L.proxy:swap("the binary changed on disk") end,
    { poll_ms = config.limit("launcher_poll_ms") })
end

-- Runs the launcher on this process's stdio; returns at once (the loop does the work).
function M.main(_args)
  log.set_role("launcher")
  local exe = require("rmcp.host").invoked
  local spawn_child = start_first_server(exe)
  local sys = require "rmcp.sys"
  local L = { signals = {} } -- the launcher: out, input, gate, answers, proxy, watcher, signals
  if not open_stdout(L) then return sys.stop(1) end
  L.proxy = require("rmcp.launcher.proxy").new{
    spawn_child = gated_spawn(L, spawn_child),
    send_host = function(line)
      if L.out:is_closed() then return nil end
      return (L.out:write(line))
    end,
    on_stopping = function()
      if L.input then L.input:close() end
      if L.watcher then L.watcher:close() end
      for _, s in ipairs(L.signals) do s:close() end
      L.answers:disable() -- the servers are read to their end, so they can exit
    end,
    -- the channel teardown flushes queued stdout (up to 2 s) before the process exits
    on_exit = function(code) sys.stop(code) end,
    on_settled = function() L.gate:released() end,
    -- a server that took over answers the host from now on; the one before may have held us back
    on_active = function(child)
      local _, answers = child:pipes()
      if answers then L.answers:add(answers) end
      L.gate:released()
    end,
  }
  if not open_stdin(L) then return sys.stop(1) end
  watch_signals_and_binary(L, exe)
  log.info("launcher pid %d supervising `%s server`", uv.os_getpid(), exe)
  L.proxy:start()
end

return M
