-- `setup codex`: this binary registered with Codex — with `codex mcp add` when Codex is
-- installed, else written into its config.toml — with the settings README.md gives for it
-- (setup/codex_toml.lua: tool_timeout_sec, default_tools_approval_mode) set in our table, and
-- undone by `setup --remove`. Its record (setup/steps.lua keeps it as hosts.codex) is {mode
-- ("command" | "file" | "kept": registered before, only our settings added), exe, file, created,
-- previous (the table replaced, as text), edits (our splices of the file)}.
local config = require "rmcp.config"
local codex_toml = require "rmcp.setup.codex_toml"
local splice = require "rmcp.setup.splice"
local steps = require "rmcp.setup.steps"

local M = {}

M.NAME = "Codex"

-- The file Codex keeps its configuration in.
function M.file()
  return (config.env("CODEX_HOME") or (config.user_home() .. "/.codex")) .. "/config.toml"
end

-- The settings as one line, for what a step says.
local function settings_text()
  local out = {}
  for _, s in ipairs(codex_toml.SETTINGS) do out[#out + 1] = s.key .. " = " .. s.value end
  return table.concat(out, ", ")
end

-- A step that sets our settings in file's table; adds its splice to edits.
local function settle(run, file, edits)
  return run:step("set " .. settings_text() .. " in [" .. codex_toml.TABLE .. "]", function()
    local edit, new_text = codex_toml.settle((steps.read(file)))
    if not edit then return true end
    edits[#edits + 1] = edit
    return steps.write(file, new_text)
  end)
end

-- Registers exe through run (setup/steps.lua); rec: what an earlier setup recorded ({} for
-- none). Returns the record of what it did, or nil when it did nothing (coroutine).
function M.register(run, exe, rec)
  local file = M.file()
  local text, exists = steps.read(file)
  local unsupported = codex_toml.unsupported(text)
  if unsupported then
    run:say("  cannot register: " .. file .. ": " .. unsupported)
    run.failed = run.failed + 1
    return nil
  end
  local found = codex_toml.inspect(text)
  if codex_toml.is_ours(text, exe) then return run:say("  already registered: runs " .. exe) end
  -- what --remove puts back: what an earlier setup replaced while one of ours is still there, else
  -- the table there now (a registration the user made since is theirs to get back)
  local ours_there = found and (found.command == rec.exe or found.command == exe)
  local previous
  if ours_there then previous = rec.previous elseif found then previous = found.text end
  local new = { exe = exe, file = file, previous = previous, created = rec.created or not exists, edits = {} }
  local bin = config.which("codex")
  local ok
  if found and found.command == exe and (found.args == nil or found.args:match("^%[%s*%]$")) then
    new.mode, new.edits = rec.mode or "kept", rec.edits or {}
    ok = settle(run, file, new.edits)
  else
    if found then run:say("  replacing the registration that runs " .. tostring(found.command)) end
    if bin then
      new.mode = "command"
      ok = run:step("run: codex mcp add reasonix -- " .. exe, function() return steps.run(bin, { "mcp", "add", "reasonix", "--", exe }) end)
      ok = ok and settle(run, file, new.edits)
    else
      local edit, new_text = codex_toml.register(text, exe)
      new.mode, new.edits = "file", rec.mode == "file" and rec.edits or {}
      new.edits[#new.edits + 1] = edit
      ok = run:step("write [" .. codex_toml.TABLE .. "] with " .. settings_text() .. " (codex is not on PATH)",
        function() return steps.write(file, new_text) end)
    end
  end
  return ok and new or nil
end

-- Undoes what register recorded in rec; returns whether it did (coroutine).
function M.unregister(run, rec)
  local file = rec.file
  local text = steps.read(file)
  local found = codex_toml.inspect(text)
  local restored = splice.undo_all(text, rec.edits or {})
  local bin = config.which("codex")
  local ok
  if not found or found.command ~= rec.exe then
    run:say("  the registration no longer runs " .. rec.exe .. ": left as it is")
    ok = true
  elseif rec.mode == "command" and not rec.previous and bin then
    ok = run:step("run: codex mcp remove reasonix", function() return steps.run(bin, { "mcp", "remove", "reasonix" }) end)
  elseif restored and rec.mode ~= "command" then
    ok = run:step(steps.restore_says(restored, rec.created), function() return steps.restore(file, restored, rec.created) end)
  elseif rec.mode == "kept" then
    run:say("  the file changed since setup added " .. settings_text() .. ": left as it is")
    ok = true
  else
    ok = run:step("remove [" .. codex_toml.TABLE .. "]" .. (rec.previous and " and put back the table it replaced" or ""),
      function() return steps.write(file, codex_toml.unregister(restored or text, rec.previous)) end)
  end
  return ok
end

return M
