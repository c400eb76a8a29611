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

-- Runs the launcher on this process's stdio; returns at once (the loop does the work).
function M.main(_args)
  log.set_role("launcher")
  local exe = require("rmcp.host").invoked
  local child_mod = require "rmcp.launcher.child"
  -- the first server starts before the rest of the launcher loads, so the two start-ups overlap;
  -- its lines and exit reach the proxy's callbacks, which are in place before the loop runs
  local first_hooks
  local first, first_err = child_mod.spawn{
    exe = exe, n = 1,
    on_line = function(c, line) if first_hooks then first_hooks.on_line(c, line) end end,
    on_exit = function(c, code, signal) if first_hooks then first_hooks.on_exit(c, code, signal) end end,
  }
  local channel = require "rmcp.channel"
  local sys = require "rmcp.sys"
  local flow = require "rmcp.lib.flow"
  local proxy_mod = require "rmcp.launcher.proxy"
  local binwatch = require "rmcp.lib.binwatch"
  local max_line = config.limit("max_line")

  local out, input, watcher, proxy
  local signals = {}

  local err
  -- a host that leaves stdout unread, or has too many requests in flight, is not read until that
  -- clears: what the launcher holds for it stays bounded
  local gate = flow.gate("launcher stdin", function()
    local why = flow.unread(out)
    if why then return why end
    local n = proxy and proxy:in_flight() or 0
    if n >= MAX_IN_FLIGHT then return n .. " requests in flight" end
  end)
  out, err = channel.open(1, {
    mode = "ndjson", read = false, write = true,
    on_eof = function(e)
      if e and proxy then proxy:stop(0, "the host stopped reading stdout: " .. tostring(e)) end
    end,
    on_drain = function() gate:released() end,
    -- an answer waiting in our queue is the host's only once the pipe took it (Proxy:relay_answer)
    on_flushed = function() if proxy then proxy:host_flushed() end end,
  })
  if not out then
    log.error("cannot open stdout: %s", tostring(err))
    return sys.stop(1)
  end

  proxy = proxy_mod.new{
    -- the first child is the one started above; later ones (restarts, swaps) start here
    spawn_child = function(o)
      if o.n == 1 then
        first_hooks = o
        return first, first_err
      end
      return child_mod.spawn{ exe = exe, n = o.n, on_line = o.on_line, on_exit = o.on_exit }
    end,
    send_host = function(line)
      if out:is_closed() then return nil end
      return (out:write(line))
    end,
    on_stopping = function()
      if input then input:close() end
      if watcher then watcher:close() end
      for _, s in ipairs(signals) do s:close() end
    end,
    -- the channel teardown flushes queued stdout (up to 2 s) before the process exits
    on_exit = function(code) sys.stop(code) end,
    on_settled = function() gate:released() end,
  }

  input, err = channel.open(0, {
    mode = "ndjson", read = true, write = false, max_line = max_line,
    on_line = function(line)
      proxy:from_host(line)
      gate:check()
    end,
    on_oversize = function(n) proxy:host_oversize(n, max_line) end,
    on_eof = function(e) proxy:stop(0, e and ("stdin error: " .. tostring(e)) or "the host closed stdin") end,
  })
  if not input then
    log.error("cannot open stdin: %s", tostring(err))
    return sys.stop(1)
  end
  gate.reader = input

  for _, name in ipairs({ "sigterm", "sigint", "sighup" }) do
    local sig = uv.new_signal()
    sig:start(name, function() proxy:stop(0, name:upper()) end)
    signals[#signals + 1] = sig
  end

  watcher = binwatch.watch(exe, function() proxy:swap("the binary changed on disk") end,
    { poll_ms = config.limit("launcher_poll_ms") or 2000 })
  log.info("launcher pid %d supervising `%s server`", uv.os_getpid(), exe)
  proxy:start()
end

return M
