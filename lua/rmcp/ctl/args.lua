-- How `reasonix-mcp ctl` reads a shell's words into a tool's arguments: the tool's inputSchema says
-- each argument's type, its `cli` entry (tools/init.lua) which words are positional, which flags are
-- other names and which sub-forms a first word picks. Nothing here is particular to one tool.
local json = require "rmcp.lib.json"

local M = {}

-- The verb name of tool (its cli.verb, else the name without reasonix_, "_" as "-").
function M.verb(tool)
  return tool.cli.verb or tool.name:gsub("^reasonix_", ""):gsub("_", "-")
end

-- The JSON type a schema property takes (the first of a type list).
local function type_of(prop)
  local t = prop.type
  if type(t) == "table" then t = t[1] end
  return t
end

-- Converts a shell word to the value property prop takes; nil and a message when it cannot. An
-- untyped property takes the word, or JSON when the word starts as an object or array does.
local function convert(name, prop, word)
  local t = type_of(prop)
  if t == "integer" or t == "number" then
    local n = tonumber(word)
    if not n or (t == "integer" and n % 1 ~= 0) then return nil, "--" .. name .. " takes a number (got " .. word .. ")" end
    return t == "integer" and math.tointeger(n) or n
  elseif t == "boolean" then
    if word == "true" or word == "yes" or word == "1" then return true end
    if word == "false" or word == "no" or word == "0" then return false end
    return nil, "--" .. name .. " takes true or false (got " .. word .. ")"
  elseif t == "object" or (t == "array" and prop.items and prop.items.type == "object") then
    local ok, v = pcall(json.decode, word)
    if not ok or type(v) ~= "table" then return nil, "--" .. name .. " takes JSON (" .. tostring(v) .. ")" end
    return v
  elseif t == nil and word:match("^%s*[%[{]") then -- an untyped property (the tool checks it) given as JSON
    local ok, v = pcall(json.decode, word)
    if not ok or type(v) ~= "table" then return nil, "--" .. name .. " takes JSON (" .. tostring(v) .. ")" end
    return v
  elseif t == "array" then
    local out = json.array()
    for piece in word:gmatch("[^,]+") do out[#out + 1] = piece end
    return out
  end
  return word
end

-- The schema property a flag names (underscores or dashes; flags maps other names), with the
-- argument name; nil when the tool has none. A "no-" prefix sets a boolean false.
local function property(schema, flags, flag)
  local name = (flags[flag] or flag):gsub("-", "_")
  if schema.properties[name] then return name, schema.properties[name], false end
  local negated = flag:match("^no%-(.+)$")
  if negated then
    name = (flags[negated] or negated):gsub("-", "_")
    local prop = schema.properties[name]
    if prop and type_of(prop) == "boolean" then return name, prop, true end
  end
end

-- Reads words (after the verb) into arguments of tool: returns args, or nil and a message a person
-- can act on. The first word may pick a sub-form of cli.sub (its own positional, flags and fixed
-- arguments; a sub-form may name another tool: then that tool is returned second).
function M.parse(tool, words, tools_by_module)
  local cli = tool.cli
  local form = cli.sub and words[1] and cli.sub[words[1]] or nil
  local target = tool
  if form and form.tool then target = assert(tools_by_module[form.tool], form.tool) end
  local schema = target.inputSchema
  local positional = (form and form.positional) or cli.positional or {}
  local flags = {}
  for k, v in pairs(cli.flags or {}) do flags[k] = v end
  for k, v in pairs(form and form.flags or {}) do flags[k] = v end
  local args, free = {}, {}
  local start = (form and (form.set or form.tool)) and 2 or 1
  local i = start
  while i <= #words do
    local w = words[i]
    local flag, value = w:match("^%-%-([%w_-]+)=(.*)$")
    flag = flag or w:match("^%-%-([%w_-]+)$")
    if flag then
      local switch = cli.switches and cli.switches[flag]
      if switch then
        for k, v in pairs(switch) do args[k] = v end
      else
        local name, prop, negated = property(schema, flags, flag)
        if not name then return nil, "unknown flag --" .. flag end
        local nxt = words[i + 1]
        if type_of(prop) == "boolean" and value == nil and (nxt == "true" or nxt == "false") then
          args[name] = (nxt == "true") ~= negated
          i = i + 1
        elseif type_of(prop) == "boolean" and value == nil then
          args[name] = not negated
        else
          if value == nil then
            i = i + 1
            value = words[i]
            if value == nil then return nil, "--" .. flag .. " needs a value" end
          end
          local v, err = convert(name, prop, value)
          if v == nil then return nil, err end
          args[name] = v
        end
      end
    else
      free[#free + 1] = w
    end
    i = i + 1
  end
  for n, name in ipairs(positional) do
    local rest = name:match("^(.+)%.%.%.$")
    if rest then
      local list = json.array()
      for j = n, #free do list[#list + 1] = free[j] end
      if #list > 0 then args[rest] = list end
      free = {}
      break
    end
    if free[n] ~= nil then
      local v, err = convert(name, schema.properties[name], free[n])
      if v == nil then return nil, err end
      args[name] = v
    end
  end
  if #free > #positional then return nil, "too many words: " .. table.concat(free, " ", #positional + 1) end
  for k, v in pairs(form and form.set or {}) do args[k] = v end
  return args, target
end

-- One usage line of tool: its verb, positional words and the flags it takes.
function M.usage(tool)
  local cli = tool.cli
  local words = {}
  for _, name in ipairs(cli.positional or {}) do words[#words + 1] = name:upper():gsub("%.%.%.$", "...") end
  local flags = {}
  local positional = {}
  for _, name in ipairs(cli.positional or {}) do positional[name:gsub("%.%.%.$", "")] = true end
  for name in pairs(tool.inputSchema.properties) do
    if not positional[name] then flags[#flags + 1] = "--" .. name:gsub("_", "-") end
  end
  table.sort(flags)
  local line = "  " .. M.verb(tool) .. (#words > 0 and (" " .. table.concat(words, " ")) or "")
  return line, table.concat(flags, " ")
end

return M
