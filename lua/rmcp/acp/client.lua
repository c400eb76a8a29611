-- ACP client over one `reasonix acp` process: starts it (own process group, PDEATHSIG), speaks
-- NDJSON JSON-RPC on its stdio, and hands updates, permission requests and exit to the owner.
local uv = require "luv"
local proc = require "rmcp.proc"
local jsonrpc = require "rmcp.lib.jsonrpc"
local async = require "rmcp.lib.async"
local log = require "rmcp.lib.log"
local json = require "rmcp.lib.json"

local M = {}

-- The exact bytes the agent writes around a text chunk (measured on reasonix 1.38.11): before the
-- session id, between it and the kind, between the kind and the text, and after the text.
local CHUNK_HEAD = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"'
local CHUNK_KIND = '","update":{"sessionUpdate":"'
local CHUNK_TEXT = '","content":{"type":"text","text":'
local CHUNK_TAIL = "}}}}"
local CHUNK_KINDS = { agent_message_chunk = true, agent_thought_chunk = true, user_message_chunk = true }

-- The kind and text of a session/update text chunk read straight off the line when it has exactly
-- the agent's layout, else nil (the line then goes through the JSON-RPC peer like any other). Chunks
-- are most of an agent's traffic: this skips building four tables per line; the text is taken as it
-- is when it has no escapes, else decoded by the JSON library.
function M.text_chunk(line)
  if line:sub(1, #CHUNK_HEAD) ~= CHUNK_HEAD or line:sub(-#CHUNK_TAIL) ~= CHUNK_TAIL then return nil end
  local sid_end = line:find('"', #CHUNK_HEAD + 1, true)
  if not sid_end or line:sub(sid_end, sid_end + #CHUNK_KIND - 1) ~= CHUNK_KIND then return nil end
  local kind_at = sid_end + #CHUNK_KIND
  local kind_end = line:find('"', kind_at, true)
  if not kind_end then return nil end
  local kind = line:sub(kind_at, kind_end - 1)
  if not CHUNK_KINDS[kind] or line:sub(kind_end, kind_end + #CHUNK_TEXT - 1) ~= CHUNK_TEXT then return nil end
  local token = line:sub(kind_end + #CHUNK_TEXT, -#CHUNK_TAIL - 1)
  if #token < 2 or token:byte(1) ~= 34 or token:byte(-1) ~= 34 then return nil end
  local inner = token:sub(2, -2)
  if not inner:find('[%c"\\]') then return kind, inner end
  local text = json.decode(token)
  if type(text) ~= "string" then return nil end
  return kind, text
end

-- The notifications of the agent's that agentd reads: ACP's session updates, and reasonix's status
-- updates that carry usage (1.38.11 sends three status updates a turn, one of them `"event":"usage"`
-- after each model call; the phase ones are dropped undecoded).
local UPDATE = "session/update"
local STATUS = "_reasonix.io/session/status_update"

-- True when line is, by its head, a notification agentd ignores: the agent's layout
-- (`{"jsonrpc":"2.0","method":"<a plain name>",`), a method other than UPDATE (or a STATUS without
-- usage) and no "id" anywhere. It is dropped undecoded; any other line goes through the JSON-RPC
-- peer (which ignores such a notification, or answers a request).
function M.ignored_notification(line)
  local method = line:match('^{"jsonrpc":"2%.0","method":"([%w_./%-]+)",')
  if method == nil or method == UPDATE or line:find('"id":', 1, true) then return false end
  return method ~= STATUS or not line:find('"event":"usage"', 1, true)
end

---@class AcpAgent                 one `reasonix acp` process and our JSON-RPC peer on its stdio (methods: Agent below)
---@field opts table                 what start or adopt was given: bin, args, cwd, env, limits, the on_* callbacks
---@field peer table                 the JSON-RPC peer (lib/jsonrpc.lua) its lines go through
---@field p userdata?                the process (rmcp.proc), once started or adopted
---@field stderr string              the tail of its stderr (stderr_max bytes)
---@field stderr_max integer
---@field exited boolean             its process ended (handle_exit)
---@field exit_code integer?
---@field exit_signal integer?
---@field stopping boolean           stop() began: stdin closed, TERM and KILL follow
---@field kill_timer userdata?       the timer of that escalation
---@field last_line_at integer?      uv.now() of its last line: protocol progress (agentd/health.lua)
local Agent = {}
Agent.__index = Agent

M.PROTOCOL_VERSION = 1

-- An agent object with its JSON-RPC peer, not attached to a process yet.
---@return AcpAgent
local function new_agent(opts)
  local self = setmetatable({
    opts = opts, stderr = "", stderr_max = opts.stderr_tail or 4000,
    exited = false, stopping = false,
  }, Agent)
  self.peer = jsonrpc.new({
    name = "acp",
    send = function(line)
      local stdin = self.p and not self.exited and self.p.stdin
      if stdin then stdin:write(line) end
    end,
    methods = {
      ["session/request_permission"] = function(params, reply)
        if opts.on_permission then opts.on_permission(params, reply) else reply(nil, jsonrpc.error(-32601, "no handler")) end
      end,
    },
    on_notification = function(method, params)
      if method == UPDATE then
        if opts.on_update and type(params.update) == "table" then opts.on_update(params.sessionId, params.update) end
      elseif method == STATUS and params.event == "usage" and opts.on_usage then
        opts.on_usage(params)
      end
    end,
    on_request = function(method, _, reply)
      reply(nil, jsonrpc.error(jsonrpc.METHOD_NOT_FOUND, "method not found: " .. method))
    end,
    on_protocol_error = function(message, line)
      log.warn("agent %s: %s: %.200s", tostring(self:pid()), message, line or "")
    end,
  })
  return self
end

-- The process options that route an agent's stdio into self (proc.spawn and proc.adopt).
local function stdio_opts(self, o)
  o.stdout_mode = "ndjson"
  o.max_line = self.opts.max_line
  o.on_line = function(line)
    self.last_line_at = uv.now() -- protocol progress (agentd/health.lua)
    local on_chunk = self.opts.on_chunk
    if on_chunk then
      local kind, text = M.text_chunk(line)
      if kind then return on_chunk(kind, text) end
    end
    if M.ignored_notification(line) then return end
    self.peer:receive(line)
  end
  o.on_oversize = function(n) log.warn("agent %s: dropped an oversize line of %d bytes", tostring(self:pid()), n) end
  o.on_stderr = function(chunk) self:add_stderr(chunk) end
  o.on_exit = function(c, sig) self:handle_exit(c, sig) end
  return o
end

-- Starts the agent process. opts: bin, args, cwd, env, max_line, stderr_tail (bytes kept), and the
-- callbacks on_update(acp_sid, update), on_chunk(kind, text) (a text chunk, without on_update),
-- on_usage(params) (a reasonix usage status update), on_permission(params, reply),
-- on_exit(code, signal, agent). Returns the agent or nil, message, code.
function M.start(opts)
  local self = new_agent(opts)
  local p, err, code = proc.spawn(stdio_opts(self, {
    file = opts.bin, args = opts.args or { "acp" }, cwd = opts.cwd, env = opts.env,
    stdin = "pipe", stdout = "pipe", stderr = "pipe",
  }))
  if not p then return nil, err, code end
  self.p = p
  return self
end

-- Takes over an agent process that a previous image of this daemon started (kept across exec):
-- st is what Agent:handover_state() gave; opts as for start (bin/args/cwd/env unused).
function M.adopt(opts, st)
  local self = new_agent(opts)
  self.peer.next_id = st.next_id or 0
  self.stderr = st.stderr or ""
  local fds = st.fds or {}
  local p, err, code = proc.adopt(stdio_opts(self, {
    pid = st.pid, stdin = fds.stdin, stdout = fds.stdout, stderr = fds.stderr,
  }))
  if not p then return nil, err, code end
  self.p = p
  return self
end

-- Stops reading the agent and says what a successor image needs to take it over: pid, pipe fds,
-- the next request id and the stderr tail; nil, why while a partial line is still buffered.
function Agent:handover_state()
  self:set_reading(false)
  local out = self.p.stdout
  if out and out:buffered() > 0 then
    self:set_reading(true)
    return nil, "a partial line from the agent is buffered"
  end
  local fds = {}
  for _, name in ipairs({ "stdin", "stdout", "stderr" }) do
    local ch = self.p[name]
    fds[name] = ch and ch:fileno() or nil
  end
  return { pid = self.p:pid(), fds = fds, next_id = self.peer.next_id, stderr = self.stderr }
end

-- Stops (on = false) or restarts reading the agent's stdout and stderr (the agent blocks on a full
-- pipe meanwhile); a no-op once its pipes are closed.
function Agent:set_reading(on)
  if not self.p then return end
  for _, name in ipairs({ "stdout", "stderr" }) do
    local ch = self.p[name]
    if ch and not ch:is_closed() then
      if on then ch:resume() else ch:pause() end
    end
  end
end

-- Bytes written to the agent that its stdin pipe has not taken yet (0 once it is closed).
function Agent:queued()
  local stdin = self.p and self.p.stdin
  return stdin and stdin:queued() or 0
end

-- Keeps the tail of the agent's stderr for error text.
function Agent:add_stderr(chunk)
  local s = self.stderr .. chunk
  if #s > self.stderr_max then s = s:sub(#s - self.stderr_max + 1) end
  self.stderr = s
end

-- Records the exit, fails pending requests, and tells the owner.
function Agent:handle_exit(code, signal)
  if self.exited then return end
  self.exited = true
  self.exit_code, self.exit_signal = code, signal
  self.peer:close("agent process exited")
  if self.kill_timer then self.kill_timer:close(); self.kill_timer = nil end
  if self.opts.on_exit then self.opts.on_exit(code, signal, self) end
end

-- The agent's pid (nil before start).
function Agent:pid()
  return self.p and self.p:pid()
end

-- The last lines of stderr, trimmed.
function Agent:stderr_tail()
  return (self.stderr:gsub("^%s+", ""):gsub("%s+$", ""))
end

-- Sends a request; cb(result, err). Returns the request id.
function Agent:request(method, params, cb)
  return self.peer:request(method, params, cb)
end

-- Sends a request from inside a coroutine and waits; returns result, err.
function Agent:call(method, params)
  return async.request(self.peer, method, params)
end

-- Sends a notification.
function Agent:notify(method, params)
  return self.peer:notify(method, params)
end

-- ACP initialize without client fs or terminal; returns result, err (coroutine).
function Agent:initialize(client_info)
  return self:call("initialize", {
    protocolVersion = M.PROTOCOL_VERSION,
    clientCapabilities = { fs = { readTextFile = false, writeTextFile = false }, terminal = false },
    clientInfo = client_info,
  })
end

-- Ends the process: closes stdin (the agent exits on EOF), then TERM and KILL of its group if it lingers.
-- cb() runs once it has exited.
function Agent:stop(cb, grace_ms)
  if cb then
    if self.exited then return cb() end
    local prev = self.opts.on_exit
    self.opts.on_exit = function(...) if prev then prev(...) end cb() end
  end
  if self.exited or self.stopping then return end
  self.stopping = true
  if self.p.stdin then self.p.stdin:shutdown() end
  local timer = uv.new_timer()
  self.kill_timer = timer
  local stage = 0
  timer:start(grace_ms or 300, 700, function()
    stage = stage + 1
    if self.exited then return end
    if stage == 1 then self.p:kill("TERM") else self.p:kill("KILL") end
  end)
end

-- Kills the process group at once (daemon shutdown).
function Agent:kill()
  if not self.exited and self.p then self.p:kill("KILL") end
end

return M
