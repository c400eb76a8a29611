-- The command MCP hosts register (`reasonix-mcp` with no subcommand): proxies the host's stdio to a
-- `reasonix-mcp server` child and replaces that child when the binary changes, when the server asks
-- (reasonix_restart_mcp_server) or when it dies, without the host noticing (see proxy.lua).
-- stdout carries only protocol; our diagnostics and the children's go to stderr.
local uv = require "luv"
local log = require "rmcp.lib.log"
local config = require "rmcp.config"

local M = {}

-- Host requests in flight past which the launcher stops reading the host (a host has a handful;
-- each holds an answer's worth of memory until it is read).
local MAX_IN_FLIGHT = 256

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
  }
  return function(o)
    if o.n == 1 then
      hooks = o
      return first, first_err
    end
    return child_mod.spawn{ exe = exe, n = o.n, on_line = o.on_line, on_exit = o.on_exit }
  end
end

-- Opens stdout for the launcher L: a host that leaves it unread, or has too many requests in
-- flight, is not read until that clears (L.gate), so what the launcher holds for it stays bounded.
-- Returns true, or false after logging why not.
local function open_stdout(L)
  local channel, flow = require "rmcp.channel", require "rmcp.lib.flow"
  L.gate = flow.gate("launcher stdin", function()
    local why = flow.unread(L.out)
    if why then return why end
    local n = L.proxy and L.proxy:in_flight() or 0
    if n >= MAX_IN_FLIGHT then return n .. " requests in flight" end
  end)
  local err
  L.out, err = channel.open(1, {
    mode = "ndjson", read = false, write = true,
    on_eof = function(e)
      if e and L.proxy then L.proxy:stop(0, "the host stopped reading stdout: " .. tostring(e)) end
    end,
    on_drain = function() L.gate:released() end,
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
  if not L.input then log.error("cannot open stdin: %s", tostring(err)) end
  if L.input then L.gate:add(L.input) end
  return L.input ~= nil
end

-- Stops the launcher L on TERM, INT and HUP, and swaps its server when the binary changes.
local function watch_signals_and_binary(L, exe)
  for _, name in ipairs({ "sigterm", "sigint", "sighup" }) do
    local sig = uv.new_signal()
    sig:start(name, function() L.proxy:stop(0, name:upper()) end)
    L.signals[#L.signals + 1] = sig
  end
  L.watcher = require("rmcp.lib.binwatch").watch(exe, function() L.proxy:swap("the binary changed on disk") end,
    { poll_ms = config.limit("launcher_poll_ms") or 2000 })
end

-- Runs the launcher on this process's stdio; returns at once (the loop does the work).
function M.main(_args)
  log.set_role("launcher")
  local exe = require("rmcp.host").invoked
  local spawn_child = start_first_server(exe)
  local sys = require "rmcp.sys"
  local L = { signals = {} } -- the launcher: out, input, gate, proxy, watcher, signals
  if not open_stdout(L) then return sys.stop(1) end
  L.proxy = require("rmcp.launcher.proxy").new{
    spawn_child = spawn_child,
    send_host = function(line)
      if L.out:is_closed() then return nil end
      return (L.out:write(line))
    end,
    on_stopping = function()
      if L.input then L.input:close() end
      if L.watcher then L.watcher:close() end
      for _, s in ipairs(L.signals) do s:close() end
    end,
    -- the channel teardown flushes queued stdout (up to 2 s) before the process exits
    on_exit = function(code) sys.stop(code) end,
    on_settled = function() L.gate:released() end,
  }
  if not open_stdin(L) then return sys.stop(1) end
  watch_signals_and_binary(L, exe)
  log.info("launcher pid %d supervising `%s server`", uv.os_getpid(), exe)
  L.proxy:start()
end

return M
