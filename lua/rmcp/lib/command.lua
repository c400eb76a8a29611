-- Running a short command to its end from a coroutine: its stdout and stderr collected (each up to
-- a cap), its exit code, killed when it overruns its time. For the tools agentd and doctor call as
-- processes (git, the agent's --version); never for agents.
local uv = require "luv"
local proc = require "rmcp.proc"
local async = require "rmcp.lib.async"

local M = {}

M.max_output = 8 * 1024 * 1024 -- bytes kept of each stream; more is dropped and flagged

-- Runs file with args (o: cwd, env (a list of NAME=value; nil: ours), timeout_ms (default 10000))
-- and waits; returns {code, signal, stdout, stderr, truncated, timed_out} or nil, why it did not start.
function M.run(file, args, o)
  o = o or {}
  return async.await(function(resume)
    local out, err, sizes = {}, {}, { 0, 0 }
    local r = { truncated = false }
    local timer = uv.new_timer()
    -- Keeps chunk of stream i (1 stdout, 2 stderr) while under the cap.
    local function keep(list, i, chunk)
      if sizes[i] + #chunk > M.max_output then r.truncated = true; return end
      sizes[i] = sizes[i] + #chunk
      list[#list + 1] = chunk
    end
    local p, perr = proc.spawn({
      file = file, args = args, cwd = o.cwd, env = o.env, stdin = "null", stdout = "pipe", stderr = "pipe",
      stdout_mode = "raw",
      on_stdout = function(chunk) keep(out, 1, chunk) end,
      on_stderr = function(chunk) keep(err, 2, chunk) end,
      on_exit = function(code, signal)
        if not timer:is_closing() then timer:close() end
        r.code, r.signal, r.stdout, r.stderr = code, signal, table.concat(out), table.concat(err)
        resume(r)
      end,
    })
    if not p then timer:close(); return resume(nil, perr) end
    timer:start(o.timeout_ms or 10000, 0, function()
      timer:close()
      r.timed_out = true
      p:kill("KILL")
    end)
  end)
end

return M
