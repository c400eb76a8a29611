-- The agents a spawn may name (`agent`): reasonix, the default (its own profile, found as
-- config.agent_bin finds it), the built-in ACP agents (one file each under rules/agents/: {name,
-- package, version, bin, args, agent_info, env, profile, about}, installed by
-- scripts/install-agent.sh NAME into .agent/NAME/) and those a policy's `agents` table adds ({argv,
-- profile?, about?}). Stateless.
local config = require "rmcp.config"

local M = {}

-- The built-in ACP agents besides reasonix, each a file rules/agents/<name>.lua.
M.BUILTIN = { "claude", "codex", "gemini", "opencode" }

-- The spec of built-in agent name, or nil when this install has no such file.
function M.builtin(name)
  for _, n in ipairs(M.BUILTIN) do
    if n == name then
      local ok, spec = pcall(require, "rmcp.rules.agents." .. name)
      return ok and type(spec) == "table" and spec or nil
    end
  end
  return nil
end

-- Every agent name this install knows: reasonix, the built-in ones it has, those of added (a
-- policy's agents: name → spec), sorted after reasonix.
function M.names(added)
  local seen, out = { reasonix = true }, {}
  for _, n in ipairs(M.BUILTIN) do
    if M.builtin(n) then seen[n] = true out[#out + 1] = n end
  end
  for n in pairs(added or {}) do
    if not seen[n] then seen[n] = true out[#out + 1] = n end
  end
  table.sort(out)
  table.insert(out, 1, "reasonix")
  return out
end

-- Checks a spawn's agent (nil: the default) against what this install knows; returns the name or
-- nil and why, listing them.
function M.check(name, added)
  if name == nil then return nil end
  if type(name) ~= "string" or name == "" then return nil, "agent must be a name (" .. table.concat(M.names(added), ", ") .. ")" end
  if name == "reasonix" or (added and added[name]) or M.builtin(name) then return name end
  return nil, "unknown agent " .. name .. " (this install knows: " .. table.concat(M.names(added), ", ") .. ")"
end

-- Where built-in agent spec's binary is for environment map e: $REASONIX_MCP_AGENT_<NAME>, else
-- .agent/<name>/ beside our binary (scripts/install-agent.sh), else its bin on PATH; or nil and why.
function M.binary(spec, e)
  local var = "REASONIX_MCP_AGENT_" .. spec.name:upper()
  local set = config.env_of(e, var)
  if set then return set end
  local dir = require("rmcp.host").exe:match("^(.*)/[^/]*$") or "."
  local beside = dir .. "/../.agent/" .. spec.name .. "/node_modules/.bin/" .. spec.bin
  if require("luv").fs_access(beside, "x") then return beside end
  local found = config.which(spec.bin, e)
  if found then return found end
  return nil, string.format("agent %s (%s@%s) is not installed: %s, put %s on PATH, or set %s",
    spec.name, spec.package, spec.version, config.agent_install_hint(spec.name, spec), spec.bin, var)
end

-- The argv and profile spec of agent name (not reasonix) for environment map e: a policy's
-- (added[name]) or a built-in's; or nil and why.
function M.command(name, e, added)
  local a = added and added[name]
  if a then return { argv = a.argv, profile = a.profile } end -- (none: its initialize answer says which it is)
  local spec = M.builtin(name)
  if not spec then return nil, "unknown agent " .. tostring(name) end
  local bin, why = M.binary(spec, e)
  if not bin then return nil, why end
  return { argv = { bin, table.unpack(spec.args or {}) }, profile = spec.profile }
end

-- The built-in agent whose initialize answer names itself info_name (agentInfo.name), or nil.
function M.by_agent_info(info_name)
  if type(info_name) ~= "string" then return nil end
  for _, n in ipairs(M.BUILTIN) do
    local spec = M.builtin(n)
    if spec and spec.agent_info and info_name:sub(1, #spec.agent_info) == spec.agent_info then return spec end
  end
  return nil
end

return M
