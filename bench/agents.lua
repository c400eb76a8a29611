-- The "agents" phase of bench/run.lua (`--only agents`; not in the default or --quick run: it takes
-- minutes): spawn → first turn end of each built-in ACP agent through agentd against the same agent
-- driven directly over stdio (initialize, session/new, the first prompt), each against its scripted
-- model API on 127.0.0.1. It runs each agent's e2e file (tests/e2e/agent_<name>.test.mjs, through
-- tests/support/needs.sh with the needs its header names) and reads the line its timing test prints
-- (agent_flow.mjs compareFirstTurn: medians of 3 each way, the direct runs after one not counted).
local uv = require "luv"
local command = require "rmcp.lib.command"

local AGENTS = { "claude", "codex", "gemini", "opencode" }

-- The words of the `// needs:` line of the test file at path, or nil.
local function needs_of(path)
  local f = io.open(path)
  if not f then return nil end
  local text = f:read("a")
  f:close()
  local line = text:match("\n// needs: ([^\n]+)")
  if not line then return nil end
  local out = {}
  for w in line:gmatch("%S+") do out[#out + 1] = w end
  return out
end

-- Our environment with RMCP_BIN naming exe (the build the tests drive), as a NAME=value list.
local function env_with_bin(exe)
  local out = { "RMCP_BIN=" .. exe }
  for k, v in pairs(uv.os_environ()) do
    if k ~= "RMCP_BIN" then out[#out + 1] = k .. "=" .. v end
  end
  return out
end

-- Runs the phase. ctx: repo, exe (our reasonix-mcp), node, row(r), note(fmt, …), fmt_ms.
return function(ctx)
  for _, name in ipairs(AGENTS) do
    local file = ctx.repo .. "/tests/e2e/agent_" .. name .. ".test.mjs"
    local args = { ctx.repo .. "/tests/support/needs.sh" }
    for _, w in ipairs(needs_of(file) or {}) do args[#args + 1] = w end
    for _, w in ipairs({ "--", ctx.node, "--test", "--test-reporter=tap", file }) do args[#args + 1] = w end
    local res = command.run("sh", args, { cwd = ctx.repo, env = env_with_bin(ctx.exe), timeout_ms = 600000 })
    local out = res and res.stdout or ""
    local agentd, direct = out:match("# " .. name .. " spawn %-> first turn end: through agentd .-%(median (%d+)%), directly .-%(median (%d+)%)")
    if agentd then
      ctx.row({ section = "latency", what = "spawn -> first turn end, " .. name .. " (vs. driven directly)",
                value = tonumber(agentd) / 1e3, base = tonumber(direct) / 1e3, fmt = ctx.fmt_ms,
                target = { on = "ratio", op = "<=", limit = 1.5, text = "<= 1.5x the agent driven directly" } })
    end
    if not (res and res.code == 0) then
      -- (the failed test and its error, else the output's end)
      local why = res and ((res.timed_out and "timed out") or ("exit " .. tostring(res.code))) or "did not start"
      local failed = out:match("\n(not ok [^\n]*)")
      local detail = failed and (failed .. " " .. (out:match("\n%s*(error: [^\n]*)") or "")) or (out .. (res and res.stderr or "")):sub(-400)
      ctx.note("agents: %s's e2e file failed (%s)%s: %s", name, why, agentd and "; its timing above stands" or ", not measured", detail)
    end
  end
  ctx.note("agents: each agent's e2e file against its scripted API; through agentd includes the MCP spawn and watch; "
    .. "medians of 3 each way")
end
