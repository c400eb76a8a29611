-- `setup claude`: this binary registered with Claude Code at user scope, loaded before the first
-- turn (claude_json.render) — with `claude mcp add-json` when Claude Code is installed, else
-- written into its config file (setup/claude_json.lua) — and
-- undone by `setup --remove`. Its record (setup/steps.lua keeps it as hosts.claude) is {mode
-- ("command" | "file"), exe, file, created, previous (the registration replaced, as JSON text),
-- edits (our splices of the file)}.
local config = require "rmcp.config"
local claude_json = require "rmcp.setup.claude_json"
local splice = require "rmcp.setup.splice"
local steps = require "rmcp.setup.steps"

local M = {}

M.NAME = "Claude Code"

-- The file Claude Code keeps its user-scope servers in.
function M.file()
  local dir = config.env("CLAUDE_CONFIG_DIR")
  return dir and (dir .. "/.claude.json") or (config.user_home() .. "/.claude.json")
end

-- Registers exe through run (setup/steps.lua); rec: what an earlier setup recorded ({} for
-- none). Returns the record of what it did, or nil when it did nothing (coroutine).
function M.register(run, exe, rec)
  local file = M.file()
  local text, exists = steps.read(file)
  local entry, raw = claude_json.entry(text)
  if claude_json.is_current(entry, exe) then return run:say("  already registered: runs " .. exe) end
  if claude_json.is_ours(entry, exe) then
    run:say("  updating the registration that runs " .. exe .. ": alwaysLoad, so its tools are there from the first turn")
  elseif entry then
    run:say("  replacing the registration that runs " .. tostring(entry.command or entry.url or raw))
  end
  -- what --remove puts back: what an earlier setup replaced while one of ours is still there, else
  -- the entry there now (a registration the user made since is theirs to get back)
  local previous = raw
  if entry ~= nil and rec.exe ~= nil and entry.command == rec.exe then previous = rec.previous end
  local new = { exe = exe, file = file, previous = previous, created = rec.created or not exists, edits = {} }
  local bin = config.which("claude")
  local ok
  if bin then
    new.mode = "command"
    ok = true
    if entry then
      ok = run:step("run: claude mcp remove reasonix --scope user", function() return steps.run(bin, { "mcp", "remove", "reasonix", "--scope", "user" }) end)
    end
    local entry_json = claude_json.entry_json(exe)
    ok = ok and run:step("run: claude mcp add-json reasonix --scope user '" .. entry_json .. "'",
      function() return steps.run(bin, { "mcp", "add-json", "reasonix", "--scope", "user", entry_json }) end)
  else
    local edit, new_text = claude_json.register(text, exe)
    if not edit then return run:step("edit " .. file, function() return nil, new_text end) and nil end
    new.mode, new.edits = "file", { edit }
    if rec.mode == "file" then new.edits = rec.edits; table.insert(new.edits, edit) end
    ok = run:step("write mcpServers.reasonix (claude is not on PATH)", function() return steps.write(file, new_text) end)
  end
  return ok and new or nil
end

-- Undoes what register recorded in rec; returns whether it did (coroutine).
function M.unregister(run, rec)
  local file = rec.file
  local text = steps.read(file)
  local entry = claude_json.entry(text)
  local bin = config.which("claude")
  local ok
  if not claude_json.is_ours(entry, rec.exe) then
    run:say("  the registration no longer runs " .. rec.exe .. ": left as it is")
    ok = true
  elseif rec.mode == "command" and bin then
    ok = run:step("run: claude mcp remove reasonix --scope user", function() return steps.run(bin, { "mcp", "remove", "reasonix", "--scope", "user" }) end)
    if ok and rec.previous then
      ok = run:step("run: claude mcp add-json reasonix --scope user '<the registration setup replaced>'",
        function() return steps.run(bin, { "mcp", "add-json", "reasonix", "--scope", "user", rec.previous }) end)
    end
  else
    local restored = rec.mode == "file" and splice.undo_all(text, rec.edits) or nil
    if restored then
      ok = run:step(steps.restore_says(restored, rec.created), function() return steps.restore(file, restored, rec.created) end)
    else
      ok = run:step("remove mcpServers.reasonix" .. (rec.previous and " and put back the registration it replaced" or "")
        .. " (the file changed since setup)", function() return steps.write(file, claude_json.unregister(text, rec.previous)) end)
    end
  end
  return ok
end

return M
