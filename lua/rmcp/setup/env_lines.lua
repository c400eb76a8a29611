-- The settings setup carries into our env file (rmcp/envfile.lua: `NAME=value` lines every
-- reasonix-mcp process applies when its environment lacks them): the REASONIX* variables of the
-- shell setup runs in, which Codex does not pass its MCP servers. Lines are only added, at the end,
-- as one splice; a name the file already sets is left as the file has it. Stateless.
local splice = require "rmcp.setup.splice"

local M = {}

-- Names never carried: test seams are a test's, not a user's setting; the others are one process's
-- (its launcher, a daemon's handover, the orchestrator a host session is), never every process's.
M.SKIP = { REASONIX_MCP_TEST_SEAMS = true, REASONIX_MCP_LAUNCHER_PID = true, REASONIX_MCP_HANDOVER = true,
           REASONIX_MCP_LIVE_HANDOVER = true, REASONIX_MCP_ORCHESTRATOR_ID = true }

-- The REASONIX* settings of environ (name → value) that did not come from the env file (applied:
-- the names it set): a list of {name, value} sorted by name.
function M.carry(environ, applied)
  local from_file = {}
  for _, n in ipairs(applied or {}) do from_file[n] = true end
  local out = {}
  for name, value in pairs(environ) do
    -- (a value of more than one line cannot be a line of the file)
    if name:match("^REASONIX") and value ~= "" and not value:find("\n", 1, true) and not from_file[name] and not M.SKIP[name] then
      out[#out + 1] = { name = name, value = value }
    end
  end
  table.sort(out, function(a, b) return a.name < b.name end)
  return out
end

-- The names the file's text sets, name → value.
function M.parse(text)
  local out = {}
  for line in text:gmatch("[^\n]+") do
    local name, value = line:match("^%s*([%a_][%w_]*)=(.*)$")
    if name then out[name] = value end
  end
  return out
end

-- The splice that adds settings ({name, value} list) the file's text does not set: edit,
-- new_text, the lines added, and the names it sets otherwise ({name, value, file_value}); edit is
-- nil when nothing is to add.
function M.add(text, settings)
  local have = M.parse(text)
  local lines, differ = {}, {}
  for _, s in ipairs(settings) do
    if have[s.name] == nil then
      lines[#lines + 1] = s.name .. "=" .. s.value
    elseif have[s.name] ~= s.value then
      differ[#differ + 1] = { name = s.name, value = s.value, file_value = have[s.name] }
    end
  end
  if #lines == 0 then return nil, text, lines, differ end
  local sep = (text == "" or text:sub(-1) == "\n") and "" or "\n"
  local edit, new = splice.make(text, #text + 1, 0, sep .. table.concat(lines, "\n") .. "\n")
  return edit, new, lines, differ
end

-- text without one occurrence of each of lines (whole lines): for a file changed since setup
-- added them.
function M.remove(text, lines)
  for _, l in ipairs(lines) do
    local s, e = ("\n" .. text):find("\n" .. l:gsub("%p", "%%%0") .. "\n", 1)
    if s then text = text:sub(1, s - 1) .. text:sub(e) end
  end
  return text
end

return M
