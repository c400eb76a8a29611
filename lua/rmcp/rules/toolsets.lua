-- Tool sets: which tools tools/list shows a host. Every tool is listed by default (hosts such as
-- Claude Code and Codex never refresh a list within a run, so a tool listed later is a tool their
-- user never sees); REASONIX_MCP_TOOLSETS=core lists only the orchestration loop, an opt-out for a
-- host with a tiny context. A set decides what is listed only: every tool answers its name whatever
-- is listed.
local M = {}

-- The sets in the order reasonix_toolsets shows them; a tool names its set (`toolset`), else core.
M.SETS = {
  { name = "core", about = "the orchestration loop: spawn, watch, poll, send, answer, stop, resume, list" },
  { name = "fleet", about = "reasonix_configure (a live agent's options) and reasonix_dashboard (the web page)" },
  { name = "worktree", about = "reasonix_worktree: an isolated agent's diff, info and removal (spawn with isolate=\"worktree\")" },
  { name = "routines", about = "reasonix_routine: scheduled loop agents" },
}

local known = {}
for _, s in ipairs(M.SETS) do known[s.name] = true end

-- True when name is a set.
function M.known(name)
  return known[name] == true
end

-- The set tool belongs to.
function M.of(tool)
  return tool.toolset or "core"
end

-- The names of the sets the enabled map on lists, in their order, comma-separated (for the log).
function M.listed_names(on)
  local out = {}
  for _, s in ipairs(M.SETS) do
    if on[s.name] then out[#out + 1] = s.name end
  end
  return table.concat(out, ", ")
end

-- The names of the sets, comma-separated (for messages).
function M.names()
  local out = {}
  for i, s in ipairs(M.SETS) do out[i] = s.name end
  return table.concat(out, ", ")
end

-- The sets the names in list mean ("all": every set), and the names that are no set.
local function expand(list)
  local out, unknown = {}, {}
  for _, name in ipairs(list or {}) do
    if name == "all" then
      for n in pairs(known) do out[#out + 1] = n end
    elseif known[name] then
      out[#out + 1] = name
    else
      unknown[#unknown + 1] = name
    end
  end
  return out, unknown
end

-- The sets listed from the start: text is REASONIX_MCP_TOOLSETS (comma-separated names, or "all";
-- unset or empty: all). Returns the enabled map (core always in) and a warning naming what was not
-- understood, or nil.
function M.initial(text)
  local names = {}
  for name in tostring(text or ""):gmatch("[^,%s]+") do names[#names + 1] = name:lower() end
  if #names == 0 then names[1] = "all" end
  local sets, unknown = expand(names)
  local on = { core = true }
  for _, n in ipairs(sets) do on[n] = true end
  local warning = #unknown > 0 and string.format("REASONIX_MCP_TOOLSETS: unknown set(s) %s ignored (sets: %s, or all)",
    table.concat(unknown, ", "), M.names()) or nil
  return on, warning
end

-- Applies enable and disable (lists of names, "all" allowed) to the enabled map on, in place.
-- Returns true when the listing changed, or nil and a message (nothing applied) for an unknown
-- name; core stays listed whatever disable says.
function M.change(on, enable, disable)
  local en, en_unknown = expand(enable)
  local dis, dis_unknown = expand(disable)
  local bad, where = en_unknown[1] or dis_unknown[1], en_unknown[1] and "enable" or "disable"
  if bad then return nil, string.format("unknown tool set %q in %s (sets: %s, or all)", bad, where, M.names()) end
  local changed = false
  for _, n in ipairs(dis) do
    if n ~= "core" and on[n] then on[n], changed = nil, true end
  end
  for _, n in ipairs(en) do
    if not on[n] then on[n], changed = true, true end
  end
  return changed
end

return M
