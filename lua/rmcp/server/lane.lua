-- The server's hot path in C (rmcp.serverlane, core/serverlane.c): a host's tools/call of a tool
-- that only passes its arguments to agentd (tools/common.lua forwarded) goes to agentd and its raw
-- result back to the host without entering Lua. This module decides when the lane may take calls
-- (sync, after everything Lua handles), and closes it before anything that must see the calls in
-- flight (a cancel, the link's drop, a reload's new tool table, a stop): closing hands them over
-- and server/calls.lua ends each as one of its own. REASONIX_MCP_SERVERLANE=0 keeps it closed.
local json = require "rmcp.lib.json"
local log = require "rmcp.lib.log"
local reload = require "rmcp.lib.reload"

local M = {}

---@class ServerLane
---@field c userdata                  the C lane
---@field server McpServer
---@field off boolean                 REASONIX_MCP_SERVERLANE=0, or stopped
---@field generation integer?         the reload generation of the tool table the C lane has
---@field tools table<string, table>  that table's lane tools by name, {tool, entry}: what a handed-over
---                                   call was, and its C lane entry (what it sent agentd: kept here, as
---                                   a hot reload of tools/common.lua forgets its forwards)
---@field ch userdata?                the link channel the C lane was last opened on
---@field opened table?               what it was last opened with (sync reopens only on a change)
local Lane = {}
Lane.__index = Lane

-- True when every key of table t is one of names.
local function only(t, names)
  for k in pairs(t) do
    if not names[k] then return false end
  end
  return true
end

local SCALAR_KEYS = { type = true, enum = true, minimum = true, maximum = true, minLength = true, default = true,
                      description = true }
local LIST_KEYS = { type = true, items = true, minItems = true, description = true }

-- The checks of property schema p the C lane knows ({kind, enum?, minimum?, maximum?, min_items?,
-- nonempty?}), or kind "lua": a call with that argument goes to Lua. A number is checked as an
-- integer: any other number goes to Lua.
local function prop_check(p)
  local t = p.type
  if t == "array" and only(p, LIST_KEYS) and type(p.items) == "table" and p.items.type == "string"
     and only(p.items, { type = true }) then
    return { kind = "strings", min_items = p.minItems }
  end
  if not only(p, SCALAR_KEYS) then return { kind = "lua" } end
  if t == "number" then t = "integer" end
  if t ~= "string" and t ~= "boolean" and t ~= "integer" then return { kind = "lua" } end
  if p.enum ~= nil then
    if t ~= "string" then return { kind = "lua" } end
    for _, v in ipairs(p.enum) do
      if type(v) ~= "string" then return { kind = "lua" } end
    end
  end
  if (p.minimum ~= nil or p.maximum ~= nil) and t ~= "integer" then return { kind = "lua" } end
  -- a minLength of 1 is "not empty", which the raw text tells; a longer one counts characters
  if p.minLength ~= nil and (t ~= "string" or (p.minLength > 0 and p.minLength ~= 1)) then return { kind = "lua" } end
  return { kind = t, enum = p.enum, minimum = p.minimum, maximum = p.maximum, nonempty = p.minLength == 1 or nil }
end

-- The C lane's entry of tool (named name), or nil when the lane cannot take its calls: a policy's,
-- one that does more than forward, or an inputSchema beyond the checks the lane makes.
function M.entry(name, tool)
  -- (required here: tools/common.lua is reloadable, and a reload's handlers are the new one's)
  local direct = not tool.policy and require("rmcp.tools.common").forwarded(tool.handler)
  local s = direct and direct.when or tool.inputSchema
  if not direct or type(s) ~= "table" or s.type ~= "object" or s.additionalProperties ~= false then return nil end
  for k in pairs(s) do
    if k ~= "type" and k ~= "properties" and k ~= "required" and k ~= "additionalProperties" then return nil end
  end
  local required = {}
  for _, r in ipairs(s.required or {}) do required[r] = true end
  local props = {}
  for pname, p in pairs(s.properties or {}) do
    local check = type(p) == "table" and prop_check(p) or { kind = "lua" }
    if required[pname] and check.kind == "lua" then return nil end
    check.name, check.required = pname, required[pname] or nil
    props[#props + 1] = check
    required[pname] = nil
  end
  if next(required) or #props > 32 then return nil end
  return { name = name, method = direct.method, keep = direct.keep, blocking = direct.blocking, props = props }
end

-- The lane of server, on its stdout (host) and stdin (input); max_in_flight as the stdin gate's,
-- on_settle() when the gates must look again.
---@return ServerLane
function M.new(server, opts)
  local self = setmetatable({ server = server, off = os.getenv("REASONIX_MCP_SERVERLANE") == "0", tools = {} }, Lane)
  self.c = require("rmcp.serverlane").new{
    host = opts.host, input = opts.input, peer = server.peer, max_in_flight = opts.max_in_flight,
    on_settle = opts.on_settle,
    on_adopt = function(call) self:adopt(call) end,
    -- a call came past the reload check's window: the check the call would run, then the lane again
    on_window = function()
      server:refresh()
      self:sync()
    end,
  }
  return self
end

-- server/calls.lua takes over call {id, aid, tool, args?} of the C lane.
function Lane:adopt(call)
  local server = self.server
  local args = call.args and json.decode(call.args) or {}
  local t = self.tools[call.tool]
  server.calls:adopt(server, t.tool, t.entry, args, call.id, call.aid)
end

-- Closes the lane: its calls in flight are Lua's from now on.
function Lane:close()
  self.ch, self.opened = nil, nil
  if not self.c:is_open() and self.c:count() == 0 then return end
  for _, call in ipairs(self.c:close()) do self:adopt(call) end
end

-- The link channel the lane may use now, or nil while it must stay closed.
local function usable(self)
  local server = self.server
  if self.off or not server.initialized or not server.tool_list or not server.orchestrator_id then return nil end
  if reload.has_warnings() then return nil end
  local link = server.links[server.orchestrator_id]
  return link and link:channel()
end

-- Opens, updates or closes the lane as the server's state allows: run after every line Lua handled.
-- (An open lane's link is live: the link's drop closes it first; what else could change is looked
-- at first, cheaply: most lines change nothing.)
function Lane:sync()
  local server = self.server
  local fd, until_ns = reload.quiet_window()
  local o, receipts = self.opened, server.receipts
  if o and o.until_ns == until_ns and o.watch_fd == fd and self.generation == server.tools_generation
     and o.confirm == (receipts.supervised and receipts.reported) and not reload.has_warnings() and not self.off then
    return
  end
  local ch = usable(self)
  if not ch or not until_ns then return self:close() end
  if self.generation ~= server.tools_generation or self.ch ~= ch then
    self:close() -- (another tool table or link: the calls in flight go to Lua first)
    self.ch = ch
  end
  if self.generation ~= server.tools_generation then
    local list = {}
    self.tools = {}
    for name, tool in pairs(server.tools_by_name) do
      local e = M.entry(name, tool)
      if e then list[#list + 1], self.tools[name] = e, { tool = tool, entry = e } end
    end
    self.c:set_tools(list)
    self.generation = server.tools_generation
  end
  local confirm = receipts.supervised and receipts.reported
  local key = receipts:key(0)
  o = { agentd = ch, by_key = server.calls.by_key, structured = server.protocol_version >= "2025-06-18",
        key_prefix = key and key:sub(1, -2) or nil, confirm = confirm, watch_fd = fd, until_ns = math.tointeger(until_ns) }
  self.c:open(o)
  self.opened = o
end

-- The calls in flight in the lane.
function Lane:count()
  return self.c:count()
end

-- True when the lane has the call of host request id in flight.
function Lane:has(id)
  return self.c:has(id)
end

-- Stops the lane for good (the server stops): its calls are Lua's.
function Lane:stop()
  self.off = true
  self:close()
  log.info("server lane: %d call(s) taken", self.c:taken())
end

return M
