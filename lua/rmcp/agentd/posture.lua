-- Sandbox posture of an agent: runs `reasonix doctor --json` in the session cwd with the agent's env
-- and reports what the agent can write and execute, with a warning when writes cannot be enforced.
local uv = require "luv"
local proc = require "rmcp.proc"
local json = require "rmcp.lib.json"

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
  if p.sandbox == "none" then
    if sb.bash == "enforce" then
      p.warning = "bash sandbox requested but bubblewrap is unavailable: bash refuses to run except under " ..
        "tool_approval=yolo (danger-full-access), where it runs unconfined and allow_write cannot be enforced"
    else
      p.warning = "bash is not sandboxed (bash = " .. tostring(sb.bash) .. "): commands run unconfined and " ..
        "writes outside cwd + allow_write cannot be enforced for bash"
    end
  end
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

return M
