-- Bubblewrap (Debian's bwrap), the sandbox agentd starts agents in: whether it can make one on this
-- machine — bwrap on PATH ($REASONIX_MCP_BWRAP names another) and a trial run with the namespaces a
-- sandbox uses — tried once per process, then known (a failure is tried again after a minute: you
-- may install it meanwhile). agentd asks before a sandboxed spawn, doctor reports it.
local uv = require "luv"
local log = require "rmcp.lib.log"
local command = require "rmcp.lib.command"
local config = require "rmcp.config"

local M = {}

-- What the last try found: {ok, why?, bwrap?, at (uv.now() of the try)}; nil until tried.
local probed

M.RETRY_MS = 60000 -- a failed try is repeated once this old

-- Whether bubblewrap can make a sandbox here: bwrap on PATH ($REASONIX_MCP_BWRAP names another) and
-- a trial run with the namespaces we use. Returns {ok = true, bwrap = path} or {ok = false, why}.
-- Coroutine; a success is kept for the process's life, a failure for RETRY_MS.
function M.available()
  if probed and (probed.ok or uv.now() - probed.at < M.RETRY_MS) then return probed end
  local named = config.env("REASONIX_MCP_BWRAP")
  local bwrap = named or config.which("bwrap")
  if not bwrap or not uv.fs_access(bwrap, "x") then
    probed = { ok = false, at = uv.now(), why = named and ("REASONIX_MCP_BWRAP=" .. named .. " is not an executable")
      or "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)" }
    return probed
  end
  local r, err = command.run(bwrap, { "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
    "--unshare-net", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "/bin/true" },
    { timeout_ms = 10000 })
  if r and r.code == 0 then
    probed = { ok = true, bwrap = bwrap, at = uv.now() }
  else
    local why = r and (r.stderr ~= "" and r.stderr:gsub("%s+$", "") or ("exit " .. tostring(r.code))) or tostring(err)
    probed = { ok = false, at = uv.now(), why = "bubblewrap cannot make a sandbox here: " .. why .. " (user namespaces off?)" }
  end
  log.debug("sandbox: %s", probed.ok and ("bubblewrap " .. bwrap .. " works") or probed.why)
  return probed
end

return M
