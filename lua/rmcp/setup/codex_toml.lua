-- Codex's registration of us in its config.toml: the table [mcp_servers.reasonix] (and its
-- subtables, [mcp_servers.reasonix.env] …), found and edited as text. Debian has no TOML library
-- for Lua, so this reads only table headers and our table's own `key = value` lines, and every edit
-- is one splice (setup/splice.lua) inside our table or at the end of the file: every other byte
-- stays as it is. Stateless.
local splice = require "rmcp.setup.splice"

local M = {}

-- What README.md asks of a Codex registration: a watch blocks until an agent needs you and Codex
-- cancels a call at tool_timeout_sec (default 60) whatever progress it gets; `codex exec`, where
-- nobody answers prompts, may call the tools. In the order they are written.
M.SETTINGS = {
  { key = "tool_timeout_sec", value = "3600" },
  { key = "default_tools_approval_mode", value = '"approve"' },
}

M.TABLE = "mcp_servers.reasonix"

-- s as a TOML basic string: escaped as a JSON string is.
M.quote = require("rmcp.setup.claude_json").quote

-- The value of a TOML basic string literal raw (`"..."`), or nil when raw is not one.
local function unquote(raw)
  local body = raw:match('^"(.*)"$')
  if not body then return nil end
  return (body:gsub("\\u(%x%x%x%x)", function(h) return string.char(tonumber(h, 16)) end):gsub('\\([\\"])', "%1"))
end

-- The name of a table header line ([a.b] or [[a.b]]) with spaces and quotes dropped, or nil.
local function header_name(line)
  local name = line:match("^%s*%[%[?([^%]]*)%]%]?%s*$") or line:match("^%s*%[%[?([^%]]*)%]%]?%s*#")
  return name and (name:gsub("[%s\"']", ""))
end

-- The lines of text: a list of {start, stop (after its newline), text}.
local function lines(text)
  local out, at = {}, 1
  while at <= #text do
    local nl = text:find("\n", at, true)
    local stop = nl and nl + 1 or #text + 1
    out[#out + 1] = { start = at, stop = stop, text = text:sub(at, (nl or #text + 1) - 1) }
    at = stop
  end
  return out
end

-- Where our table is in text: {start, body (after the header line), body_end (after the body's
-- last line that is not blank or a comment, before any subtable), stop (after the last such line
-- of the table and its subtables)}, or nil.
function M.find(text)
  local span, in_body
  for _, l in ipairs(lines(text)) do
    local name = header_name(l.text)
    if name == M.TABLE then
      span, in_body = { start = l.start, body = l.stop, body_end = l.stop, stop = l.stop }, true
    elseif span and name and name:sub(1, #M.TABLE + 1) ~= M.TABLE .. "." then
      break
    elseif span then
      if name then in_body = false end
      if not l.text:match("^%s*$") and not l.text:match("^%s*#") then
        span.stop = l.stop
        if in_body then span.body_end = l.stop end
      end
    end
  end
  return span
end

-- The `key = value` lines of our table's own body (not its subtables): key → {raw value, line}.
function M.keys(text, span)
  local out = {}
  for _, l in ipairs(lines(text:sub(span.body, span.body_end - 1))) do
    local key, raw = l.text:match("^%s*([%w_%-]+)%s*=%s*(.-)%s*$")
    if key then out[key] = { raw = raw:gsub("%s+#[^\"]*$", ""), start = span.body + l.start - 1, stop = span.body + l.stop - 1 } end
  end
  return out
end

-- Why text defines our server in a form this module does not edit — an inline table or dotted keys
-- (`reasonix = {…}` under [mcp_servers], `mcp_servers.reasonix.… =` above it): a table of ours added
-- beside it would define the server twice and Codex would not load the file — or nil.
function M.unsupported(text)
  local section = ""
  for _, l in ipairs(lines(text)) do
    local name = header_name(l.text)
    if name then
      section = name
    elseif section ~= M.TABLE and section:sub(1, #M.TABLE + 1) ~= M.TABLE .. "." then -- (our table's own keys)
      local key = l.text:match("^%s*([%w_%-%.\"' ]-)%s*=")
      key = key and key:gsub("[%s\"']", "")
      local full = key and (section == "" and key or section .. "." .. key)
      if full and (full == M.TABLE or full:sub(1, #M.TABLE + 1) == M.TABLE .. ".") then
        return string.format("%s defines [%s] as %s (line: %s); write it as a [%s] table, or remove it, and run setup again",
          "config.toml", M.TABLE, section == "" and "dotted keys" or "a key of [" .. section .. "]", l.text, M.TABLE)
      end
    end
  end
  return nil
end

-- What the registration in text runs and lacks: nil when there is none, else {command (nil when
-- not a plain string), args (its raw value or nil), missing = the settings not as README says}.
function M.inspect(text)
  local span = M.find(text)
  if not span then return nil end
  local keys = M.keys(text, span)
  local missing = {}
  for _, s in ipairs(M.SETTINGS) do
    if not keys[s.key] or keys[s.key].raw ~= s.value then missing[#missing + 1] = s end
  end
  return { command = keys.command and unquote(keys.command.raw), args = keys.args and keys.args.raw, missing = missing,
    text = text:sub(span.start, span.stop - 1) }
end

-- Whether the registration in text runs exe with no arguments and has every setting.
function M.is_ours(text, exe)
  local r = M.inspect(text)
  return r ~= nil and r.command == exe and (r.args == nil or r.args:match("^%[%s*%]$") ~= nil) and #r.missing == 0
end

-- Our table, whole, for exe.
function M.render(exe)
  local out = { "[" .. M.TABLE .. "]", "command = " .. M.quote(exe) }
  for _, s in ipairs(M.SETTINGS) do out[#out + 1] = s.key .. " = " .. s.value end
  return table.concat(out, "\n") .. "\n"
end

-- The splice that registers exe in text (our table replaced, or added at the end after a blank
-- line): edit, new_text.
function M.register(text, exe)
  local span = M.find(text)
  if span then return splice.make(text, span.start, span.stop - span.start, M.render(exe)) end
  local sep = text == "" and "" or (text:sub(-1) == "\n" and "\n" or "\n\n")
  return splice.make(text, #text + 1, 0, sep .. M.render(exe))
end

-- The splice that sets the settings our existing table lacks (a wrong value's line replaced, a
-- missing one added after the body's last key): edit, new_text; nil when nothing is missing or
-- there is no table.
function M.settle(text)
  local span = M.find(text)
  if not span then return nil end
  local want, done = {}, {}
  for _, s in ipairs(M.SETTINGS) do want[s.key] = s.value end
  local old = text:sub(span.body, span.body_end - 1)
  local out = {}
  for _, l in ipairs(lines(old)) do
    local key = l.text:match("^%s*([%w_%-]+)%s*=")
    if key and want[key] then
      done[key] = true
      local raw = l.text:match("=%s*(.-)%s*$")
      out[#out + 1] = raw == want[key] and old:sub(l.start, l.stop - 1) or (key .. " = " .. want[key] .. "\n")
    else
      out[#out + 1] = old:sub(l.start, l.stop - 1)
    end
  end
  if #out > 0 and out[#out]:sub(-1) ~= "\n" then out[#out] = out[#out] .. "\n" end
  for _, s in ipairs(M.SETTINGS) do
    if not done[s.key] then out[#out + 1] = s.key .. " = " .. s.value .. "\n" end
  end
  local body = table.concat(out)
  if body == old then return nil end
  return splice.make(text, span.body, #old, body)
end

-- text without our table, or with previous (the table it replaced) in its place.
function M.unregister(text, previous)
  local span = M.find(text)
  if not span then return text end
  if previous then return text:sub(1, span.start - 1) .. previous .. text:sub(span.stop) end
  local before = text:sub(1, span.start - 1):gsub("\n\n$", "\n")
  return before .. text:sub(span.stop)
end

return M
