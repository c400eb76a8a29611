-- The MCP session over one stdio connection: lifecycle and version negotiation, capabilities,
-- tools/list and tools/call (tool failures become isError results), cancellation, progress relay,
-- logging/setLevel. Protocol envelopes come from rmcp.lib.jsonrpc; tools live in tools/ (the one tool table).
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local log = require "rmcp.lib.log"
local toolsets = require "rmcp.rules.toolsets"
local elicitation = require "rmcp.server.elicitation"
local orchestrator = require "rmcp.server.orchestrator"
local receipts = require "rmcp.server.receipts"
local uv = require "luv"
-- what serves tools, not initialize: loaded on first use, after the initialize answer went out
local lazy = require "rmcp.lib.lazy"
local schema = lazy "rmcp.lib.schema"
local tools = lazy "rmcp.tools"
local calls = require "rmcp.server.calls"
local view = lazy "rmcp.server.tool_view"
local relay = lazy "rmcp.server.relay"
local reload = lazy "rmcp.lib.reload"

local M = {}

-- Protocol versions we speak, newest first; the first is offered when the client asks for another.
M.VERSIONS = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" }
-- The notifications/message level until the host sets one: routine events (info) are withheld,
-- since hosts print what they receive; decisions (notice), errors and crashes are sent.
M.DEFAULT_LOG_LEVEL = "notice"
local supported = {}
for _, v in ipairs(M.VERSIONS) do supported[v] = true end

local LEVELS = log.MCP_LEVELS

M.INSTRUCTIONS = [[
Coding agents run in a background daemon; you orchestrate them.
1. reasonix_spawn each piece of work (task; agents for many): session ids at once.
2. Keep reasonix_watch(session_ids) in flight: it returns when an agent finishes, needs a decision or dies. No polling.
3. A permission_request: reasonix_respond_permission (asking: a person is answering it; leave it). A finished agent: drop its id (details: reasonix_poll, reasonix_transcript). Watch the rest again.
4. reasonix_send steers or starts a turn; reasonix_stop ends an agent (resumable).
Lost your ids? reasonix_list.]]

---@class McpServer                  the MCP session with one host over stdio (methods: Server below)
---@field peer table                  the JSON-RPC peer of the host's lines (lib/jsonrpc.lua)
---@field project_dir string?         the host's project dir (our cwd)
---@field version string              our version
---@field supervised boolean          a launcher can restart us
---@field make_link fun(server: McpServer, orch: string): table  makes the agentd link of an orchestrator
---@field finish_start function?      what the tools need and initialize does not (run once by load_tools)
---@field initialized boolean         initialize answered
---@field client_ready boolean        notifications/initialized received
---@field protocol_version string     the version agreed at initialize
---@field client_info table?          the host's clientInfo
---@field client_caps table           the host's capabilities
---@field log_level string            the notifications/message level the host set
---@field receipts ServerReceipts      the receipts of our watch and poll answers (server/receipts.lua)
---@field calls ServerCalls           the tool calls in flight (server/calls.lua)
---@field elicitations table          open elicitation forms (elicitation.lua)
---@field orchestrator_id string?     this host's orchestrator (initialize)
---@field orchestrator_how string?    how it was found (orchestrator.id; "env": given, no per-conversation ids)
---@field links table                 orchestrator id -> agentd link: this host's, and one per conversation
---@field toolsets table              set name -> true: the tool sets tools/list shows (rules/toolsets.lua)
---@field tool_list table?            the tools, loaded once initialize is answered (load_tools)
---@field tools_by_name table?
---@field tools_generation integer?   the reload generation they were loaded at
---@field tools_cache table?          the encoded tools/list answer {version, text}
---@field warned table                warnings already reported to this host (until the next swap)
---@field lane ServerLane?            the forwarding tools' calls in C (server/lane.lua; server/main.lua makes it)
local Server = {}
Server.__index = Server

-- Creates the MCP session. opts: send(line), project_dir, link(server, orchestrator_id) -> agentd link,
-- version (server version), supervised (a launcher can restart us), finish_start() (what the tools
-- need and initialize does not: run once, before the tools load), on_answered() (a host request
-- was answered or dropped: it left flight).
---@return McpServer
function M.new(opts)
  local self = setmetatable({
    project_dir = opts.project_dir,
    version = opts.version or "0",
    supervised = opts.supervised or false,
    receipts = receipts.new(opts.supervised or false), -- of watch and poll answers (server/receipts.lua)
    make_link = opts.link,
    finish_start = opts.finish_start,
    initialized = false,          -- initialize answered
    client_ready = false,         -- notifications/initialized received
    protocol_version = M.VERSIONS[1],
    client_info = nil,
    client_caps = {},
    log_level = M.DEFAULT_LOG_LEVEL,
    calls = calls.new(),          -- the tool calls in flight (server/calls.lua)
    elicitations = {},            -- open elicitation forms (see elicitation.lua)
    orchestrator_id = nil,        -- this host's orchestrator (initialize)
    links = {},                   -- orchestrator id -> agentd link: this host's, and one per conversation
    toolsets = nil,               -- set name -> true: the tool sets tools/list shows (rules/toolsets.lua)
  }, Server)
  local warning
  self.toolsets, warning = toolsets.initial(os.getenv("REASONIX_MCP_TOOLSETS"))
  if warning then log.warn("%s", warning) end
  local methods = {}
  for name, fn in pairs(M.methods) do
    methods[name] = function(params, reply) return fn(self, params, reply) end
  end
  self.peer = jsonrpc.new{
    name = "mcp",
    send = opts.send,
    methods = methods,
    on_answered = opts.on_answered,
    on_notification = function(method, params) self:on_notification(method, params) end,
    on_protocol_error = function(message, line)
      log.warn("mcp: protocol error: %s (line: %s)", message, tostring(line):sub(1, 200))
    end,
  }
  self.tool_list, self.tools_by_name = nil, nil -- loaded once initialize is answered (load_tools)
  self.warned = {}                -- warnings already reported to this client (until the next swap)
  return self
end

-- Finishes the start (finish_start) and loads the tool modules if not yet done. Not needed to
-- answer initialize, so a server start does it after that answer is written (the host's tools/list
-- comes a round trip later); the first request that needs the tools does it otherwise.
function Server:load_tools()
  if self.tool_list then return end
  local finish = self.finish_start
  self.finish_start = nil
  if finish then finish() end
  self.tool_list, self.tools_by_name = tools.load()
  self.tools_generation = reload.generation()
end

-- True when two decoded JSON values are equal (key order aside).
local function same_value(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then return a == b end
  for k, v in pairs(a) do if not same_value(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

-- Hot reload at the start of a call: picks up changed modules and policy files, rebuilds the tool
-- list when anything was swapped in, and tells the client when that changed what tools/list shows.
function Server:refresh()
  self:load_tools()
  reload.check()
  if self.tools_generation == reload.generation() then return end
  self.tools_generation = reload.generation()
  self.warned = {}
  local ok, list, by_name = xpcall(tools.load, debug.traceback)
  if not ok then
    log.error("tool list rebuild failed, keeping the previous tools: %s", tostring(list))
    return reload.warn("the tool list could not be rebuilt, the previous tools stay: " .. tostring(list):match("^[^\n]*"), true)
  end
  local before = self:tools_json()
  self.tool_list, self.tools_by_name = list, by_name
  self.tools_cache = nil
  if not same_value(json.decode(self:tools_json()), json.decode(before)) and self:ready_for_requests() then
    log.info("tool list changed by a reload (%d tools)", #list)
    self:notify("notifications/tools/list_changed")
  end
end

-- Adds the pending reload warnings (each reported to one caller once) to result: in _meta, as a
-- text block when it has content, and as a notifications/message warning. Returns result.
function Server:with_warnings(result)
  local list = json.array()
  for _, w in ipairs(reload.take_warnings()) do
    if not self.warned[w] then
      self.warned[w] = true
      list[#list + 1] = w
    end
  end
  if #list == 0 or type(result) ~= "table" then return result end
  result._meta = type(result._meta) == "table" and result._meta or {}
  result._meta["reasonix/warnings"] = list
  for _, w in ipairs(list) do
    self:log_message("warning", { text = "reasonix-mcp: " .. w, warning = w })
    if type(result.content) == "table" then
      result.content[#result.content + 1] = { type = "text", text = "warning (reasonix-mcp): " .. w }
    end
  end
  return result
end

-- Feeds one line from the host.
function Server:receive(line)
  self.peer:receive(line)
end

-- Answers a line over the size limit that was dropped unread.
function Server:oversize(nbytes, limit)
  log.warn("mcp: dropped a %d-byte message (limit %d)", nbytes, limit)
  self.peer:respond_error(nil, jsonrpc.INVALID_REQUEST,
    string.format("Invalid Request: message of %d bytes exceeds the %d-byte limit", nbytes, limit))
end

-- True once notifications may be sent (the initialize response went out).
function Server:ready_for_notifications()
  return self.initialized
end

-- True once the client said it is initialized, so requests to it are allowed.
function Server:ready_for_requests()
  return self.initialized and self.client_ready
end

-- Sends a notification to the host.
function Server:notify(method, params)
  return self.peer:notify(method, params)
end

-- True when a notifications/message at level would be sent (initialized, level passes the client's).
function Server:logs(level) return self.initialized and (LEVELS[level] or 2) >= (LEVELS[self.log_level] or 2) end

-- Sends notifications/message if level passes the client's level; returns whether it was sent.
function Server:log_message(level, data)
  if not self:logs(level) then return false end
  self.peer:notify("notifications/message", { level = level, logger = "reasonix", data = data })
  return true
end

-- This host's orchestrator id (settled at initialize; derived here for a call before it).
function Server:host_orchestrator()
  if not self.orchestrator_id then
    self.orchestrator_id, self.orchestrator_how = orchestrator.id(self.client_info and self.client_info.name, self.project_dir)
  end
  return self.orchestrator_id
end

-- The agentd link of orchestrator orch (default this host's), created on first use (it starts
-- agentd when needed).
function Server:link(orch)
  orch = orch or self:host_orchestrator()
  local link = self.links[orch]
  if not link or not link.conn then
    link = self.make_link(self, orch)
    self.links[orch] = link
  end
  return link
end

-- The orchestrator a tools/call acts for: the conversation's when the host names one in _meta
-- (Codex's threadId) and no REASONIX_MCP_ORCHESTRATOR_ID is set, else this host's.
function Server:call_orchestrator(meta)
  local base = self:host_orchestrator()
  if self.orchestrator_how == "env" then return base end
  return orchestrator.for_conversation(base, meta.threadId)
end

-- Sends a request to agentd outside any tool call (elicitation answers) for orchestrator orch;
-- cb(result, err).
function Server:agentd_request(method, params, cb, orch)
  return self:link(orch):request(method, params, cb)
end

-- The tools/list array as JSON for the negotiated version: the tools of the enabled sets, built once
-- per tool list, version and choice of sets (the cache is dropped when any of them changes).
function Server:tools_json()
  local cache = self.tools_cache
  if cache and cache.version == self.protocol_version then return cache.text end
  local text = view.list_json(self.tool_list, self.toolsets, self.protocol_version)
  self.tools_cache = { version = self.protocol_version, text = text }
  return text
end

-- Lists the tool sets, after enabling and disabling the named ones for this MCP session
-- (reasonix_toolsets); a change sends notifications/tools/list_changed. Returns the result, or nil
-- and a message.
function Server:change_toolsets(enable, disable)
  local changed, err = toolsets.change(self.toolsets, enable, disable)
  if changed == nil then return nil, err end
  if changed then
    self.tools_cache = nil
    log.info("tool sets listed: %s", toolsets.listed_names(self.toolsets))
    if self:ready_for_requests() then self:notify("notifications/tools/list_changed") end
  end
  return { toolsets = view.sets(self.tool_list, self.toolsets), list_changed = changed,
           note = changed and "Hosts that refresh on notifications/tools/list_changed offer the tools now; others "
             .. "(Claude Code and Codex within a run) at their next start, with REASONIX_MCP_TOOLSETS." or nil }
end

M.methods = {}

-- What we offer, for initialize and server/discover (elicitation is a client capability we use).
function Server:capabilities()
  return { tools = { listChanged = true }, logging = {} }
end

-- Who we are, for initialize and server/discover.
function Server:server_info()
  return { name = "reasonix-mcp", title = "Reasonix agents", version = self.version }
end

-- Negotiates the version, records the client and its capabilities, derives the orchestrator id.
M.methods["initialize"] = function(self, params, reply)
  if self.initialized then
    return reply(nil, jsonrpc.error(jsonrpc.INVALID_REQUEST, "initialize was already called on this connection"))
  end
  local pv = params.protocolVersion
  if type(pv) ~= "string" then
    return reply(nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, "initialize: params.protocolVersion must be a string"))
  end
  if params.capabilities ~= nil and type(params.capabilities) ~= "table" then
    return reply(nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, "initialize: params.capabilities must be an object"))
  end
  if params.clientInfo ~= nil and (type(params.clientInfo) ~= "table" or type(params.clientInfo.name) ~= "string") then
    return reply(nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, "initialize: params.clientInfo must be an object with a string name"))
  end
  self.protocol_version = supported[pv] and pv or M.VERSIONS[1]
  self.client_caps = params.capabilities or {}
  self.client_info = params.clientInfo
  self.initialized = true
  local oid, how = orchestrator.id(self.client_info and self.client_info.name, self.project_dir)
  self.orchestrator_id, self.orchestrator_how = oid, how
  log.info("initialize: client %s %s asked %s, speaking %s; orchestrator %s (%s); elicitation %s",
    tostring(self.client_info and self.client_info.name), tostring(self.client_info and self.client_info.version),
    pv, self.protocol_version, oid, how, elicitation.supported(self.client_caps) and "yes" or "no")
  local result = {
    protocolVersion = self.protocol_version,
    capabilities = self:capabilities(),
    serverInfo = self:server_info(),
  }
  if self.protocol_version >= "2025-03-26" then result.instructions = M.INSTRUCTIONS end
  if self.protocol_version < "2025-06-18" then result.serverInfo.title = nil end
  reply(result)
  -- the answer is written: the tools load before the host's next request is read
  local timer = uv.new_timer()
  timer:start(0, 0, function()
    timer:close()
    local ok, err = pcall(self.load_tools, self)
    if not ok then log.error("loading the tools failed (the next request tries again): %s", tostring(err)) end
  end)
end

-- Stateless discovery (newer clients probe with it before choosing initialize); lists only the
-- versions we speak, so a 2026-07-28 client falls back to the initialize handshake.
M.methods["server/discover"] = function(self, _params, reply)
  reply({
    resultType = "complete",
    supportedVersions = json.array({ table.unpack(M.VERSIONS) }),
    capabilities = self:capabilities(),
    serverInfo = self:server_info(),
    instructions = M.INSTRUCTIONS,
  })
end

-- Answers a liveness check (allowed before initialize).
M.methods["ping"] = function(_self, _params, reply)
  reply({})
end

-- Refuses a request that needs an initialized session; returns true when refused.
local function not_initialized(self, reply, method)
  if self.initialized then return false end
  reply(nil, jsonrpc.error(-32002, method .. ": the server is not initialized; send initialize first"))
  return true
end

-- Sets the lowest level sent as notifications/message.
M.methods["logging/setLevel"] = function(self, params, reply)
  if not_initialized(self, reply, "logging/setLevel") then return end
  if type(params.level) ~= "string" or not LEVELS[params.level] then
    return reply(nil, jsonrpc.error(jsonrpc.INVALID_PARAMS,
      "logging/setLevel: params.level must be one of debug, info, notice, warning, error, critical, alert, emergency"))
  end
  self.log_level = params.level
  log.info("client log level: %s", params.level)
  reply({})
end

-- Lists the tools of the enabled sets as the negotiated version describes them (no pagination).
M.methods["tools/list"] = function(self, params, reply)
  if not_initialized(self, reply, "tools/list") then return end
  if params.cursor ~= nil and type(params.cursor) ~= "string" then
    return reply(nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, "tools/list: params.cursor must be a string"))
  end
  self:refresh()
  reply(self:with_warnings({ tools = json.raw(self:tools_json()) }))
end

-- Validates and runs one tool; tool failures are isError results, protocol errors JSON-RPC errors.
M.methods["tools/call"] = function(self, params, reply)
  if not_initialized(self, reply, "tools/call") then return end
  local name = params.name
  if type(name) ~= "string" then
    return reply(nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, "tools/call: params.name must be a string (a tool name from tools/list)"))
  end
  local args = params.arguments
  if args == nil or args == json.null then args = {} end
  if type(args) ~= "table" or schema.json_type(args) == "array" then
    return reply(nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, "tools/call: params.arguments must be an object"))
  end
  self:refresh()
  local tool = self.tools_by_name[name]
  if not tool then
    return reply(nil, jsonrpc.error(jsonrpc.INVALID_PARAMS, "Unknown tool: " .. name .. " (tools/list shows the reasonix_* tools)"))
  end
  schema.drop_nulls(args)
  local ok, err = schema.validate(tool.inputSchema, args)
  if not ok then return reply(view.error(name, "invalid arguments: " .. err)) end
  schema.conform(tool.inputSchema, args)

  self.calls:run(self, tool, args, self.peer.current_id, type(params._meta) == "table" and params._meta or {}, reply)
end

-- Handles a notification from the host.
function Server:on_notification(method, params)
  if method == "notifications/initialized" then
    self.client_ready = true
  elseif method == "notifications/cancelled" then
    self:cancel(params.requestId, params.reason)
  elseif method == "$/rmcp/launcher" then
    -- from our launcher, before any host line: what it does for us
    self.receipts:launcher_hello(params)
  elseif method == "$/rmcp/answered" then
    -- from our launcher: the receipt of our answer to params.id (it wrote it to the host, or dropped
    -- it: cancelled); thread_id is the request's _meta.threadId, which names its orchestrator
    self.receipts:report(self, self:call_orchestrator({ threadId = params.thread_id }), params.id, params.delivered == true)
  elseif method == "notifications/roots/list_changed" or method == "notifications/progress" then
    -- nothing to do: the project dir is the server's cwd
  else
    log.debug("mcp: ignored notification %s", tostring(method))
  end
end

-- Cancels an in-flight tools/call: its watch/wait in agentd is released, no reply is sent.
function Server:cancel(request_id, reason)
  self.calls:cancel(self, request_id, reason)
end

-- Handles a push from agentd on the link of orchestrator orch: agent events (relay + elicitation)
-- and watch progress.
function Server:on_agentd_notification(method, params, orch)
  if type(params) ~= "table" then return end
  if method == "agent_event" then
    relay.agent_event(self, params)
    elicitation.agent_event(self, params, orch)
  elseif method == "reload_warning" then
    -- agentd's copy of a broken policy fails like ours: the same text is reported once
    if type(params.message) == "string" then reload.warn(params.message, true) end
    if self.lane then self.lane:sync() end -- (closes it: the next call carries the warning)
  elseif method == "watch_progress" then
    self.calls:progress(self, orch, params)
  else
    log.debug("agentd: ignored notification %s", tostring(method))
  end
end

-- Ends the session (host closed stdin): releases every watch by closing the agentd links.
function Server:close()
  for _, link in pairs(self.links) do link:close() end
end

return M
