-- Sandbox posture of an agent: runs `reasonix doctor --json` in the session cwd with the agent's env
-- and reports what the agent can write and execute, with a warning when writes cannot be enforced.
local uv = require "luv"
local proc = require "rmcp.proc"
local json = require "rmcp.lib.json"
local reload = require "rmcp.lib.reload"
local ownership = require "rmcp.agentd.ownership"

local M = {}

-- Turns doctor's JSON into the posture reported by spawn.
function M.from_doctor(doc, cwd)
  local sb = type(doc.sandbox) == "table" and doc.sandbox or {}
  local roots = type(sb.write_roots) == "table" and sb.write_roots or {}
  local allow = json.array()
  for i, r in ipairs(roots) do
    if i > 1 or r ~= cwd then allow[#allow + 1] = r end
  end
  local p = {
    bash = sb.bash,
    sandbox = (sb.bash == "enforce" and sb.available == true) and "bwrap" or "none",
    allow_write = allow,
    network = sb.network,
    workspace_root = roots[1] or cwd,
    config_file = type(doc.config) == "table" and doc.config.source_path or nil,
    agent_version = doc.version,
  }
  local warnings = {}
  local src = p.config_file
  if type(src) == "string" and #allow > 0 and ownership.inside(src, cwd) then
    warnings[#warnings + 1] = "the workspace's own " .. src .. " widens the agent's allow_write to " ..
      table.concat(allow, ", ") .. " (spawn confinement ignores a workspace file; the agent does not)"
  end
  if p.sandbox == "none" then
    if sb.bash == "enforce" then
      warnings[#warnings + 1] = "bash sandbox requested but bubblewrap is unavailable: bash refuses to run except under " ..
        "tool_approval=yolo (danger-full-access), where it runs unconfined and allow_write cannot be enforced"
    else
      warnings[#warnings + 1] = "bash is not sandboxed (bash = " .. tostring(sb.bash) .. "): commands run unconfined and " ..
        "writes outside cwd + allow_write cannot be enforced for bash"
    end
  end
  if #warnings > 0 then p.warning = table.concat(warnings, "; ") end
  return p
end

-- Runs doctor and calls cb(posture) once; a failure yields {error = message, warning = ...}. bin is
-- the agent binary, or the whole doctor argv (a policy's agent command), or nil when there is none.
function M.probe(bin, cwd, env, cb, timeout_ms)
  local out, done = {}, false
  local timer = uv.new_timer()
  local function finish(p)
    if done then return end
    done = true
    if not timer:is_closing() then timer:close() end
    cb(p)
  end
  local function failed(msg)
    finish({ error = msg, sandbox = "unknown", allow_write = json.array(),
             warning = "sandbox posture unknown: " .. msg })
  end
  local file, args = bin, { "doctor", "--json" }
  if type(bin) == "table" then file, args = bin[1], { table.unpack(bin, 2) } end
  if not file then
    return failed("the agent command (set by a policy) does not end in `acp`, so `reasonix doctor` was not run")
  end
  local p, err = proc.spawn({
    file = file, args = args, cwd = cwd, env = env,
    stdin = "null", stdout = "pipe", stderr = "null", stdout_mode = "raw",
    on_stdout = function(chunk) out[#out + 1] = chunk end,
    on_exit = function(code)
      local doc = json.decode(table.concat(out))
      if type(doc) ~= "table" then return failed("reasonix doctor --json exited " .. tostring(code) .. " without JSON") end
      finish(M.from_doctor(doc, cwd))
    end,
  })
  if not p then return failed("cannot run reasonix doctor: " .. tostring(err)) end
  timer:start(timeout_ms or 5000, 0, function()
    p:kill("KILL")
    failed("reasonix doctor --json timed out")
  end)
end

-- A copy of posture p (each session keeps and persists its own).
local function copy(p)
  local out = {}
  for k, v in pairs(p) do out[k] = v end
  if type(p.allow_write) == "table" then out.allow_write = json.array({ table.unpack(p.allow_write) }) end
  return out
end

-- Stamp of a file that shapes the posture, or "-" when it does not exist.
local function stamp(path)
  return reload.stamp(path) or "-"
end

M.CACHE_MS = 30000
local cache = {} -- key -> { at = uv.now(), posture (or its failure) } or { waiters = {cb...} } while a probe runs

-- Like M.probe, but a fleet of spawns pays for doctor once: a posture is reused for CACHE_MS per
-- (doctor argv, cwd, env, agent binary, Reasonix user config, project reasonix.toml), and spawns
-- that ask while a probe for the same key runs share its answer. A failure is kept the same way (an
-- agent without doctor would otherwise cost a process per spawn); a changed binary is a new key.
-- key_argv: the argv the answer is kept under when it is not bin's (a probe in a session's sandbox
-- names that sandbox's dir).
function M.probe_cached(bin, cwd, env, cb, timeout_ms, key_argv)
  local argv = type(bin) == "table" and bin or { bin }
  if not argv[1] then return M.probe(bin, cwd, env, cb, timeout_ms) end
  local config = require "rmcp.config"
  local key = table.concat({ cwd, table.concat(key_argv or argv, "\0"), table.concat(env or {}, "\0"), stamp(argv[1]),
                             stamp(config.reasonix_home() .. "/config.toml"), stamp(cwd .. "/reasonix.toml") }, "\1")
  local e = cache[key]
  if e and e.posture and uv.now() - e.at <= M.CACHE_MS then return cb(copy(e.posture)) end
  if e and e.waiters then e.waiters[#e.waiters + 1] = cb; return end
  for k, old in pairs(cache) do -- expired entries go (the cache holds a few keys at most)
    if old.posture and uv.now() - old.at > M.CACHE_MS then cache[k] = nil end
  end
  e = { waiters = { cb } }
  cache[key] = e
  M.probe(bin, cwd, env, function(p)
    cache[key] = { at = uv.now(), posture = p }
    for _, w in ipairs(e.waiters) do w(copy(p)) end
  end, timeout_ms)
end

return M
