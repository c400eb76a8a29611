-- JSON-RPC 2.0 peer over any line transport: used for ACP (agents), the agentd socket and MCP stdio.
-- Envelopes are strict (a response carries result or error, never both, and no extra keys) and are
-- written id first: `{"jsonrpc":"2.0","id":…,"result"|"error"|"method":…` and, for a notification,
-- `{"jsonrpc":"2.0","method":…`, so a relay (the launcher) routes a line by its prefix without
-- decoding it (M.envelope), and a request made with raw = true gets its result as json.raw text,
-- never decoded (the MCP server passes agentd's results through that way).
local json = require "rmcp.lib.json"

local M = {}

M.PARSE_ERROR = -32700
M.INVALID_REQUEST = -32600
M.METHOD_NOT_FOUND = -32601
M.INVALID_PARAMS = -32602
M.INTERNAL_ERROR = -32603

local error_mt = { __name = "jsonrpc.error" }
error_mt.__tostring = function(e) return string.format("%s (%d)", e.message, e.code) end

-- Builds an error object; handlers may return it through reply(nil, err) or raise it.
function M.error(code, message, data)
  return setmetatable({ code = code, message = message, data = data }, error_mt)
end

-- A table key for a request id that keeps 1 and "1" apart (nil for no id or null): an integer (or
-- an integral float) is its own key, any other id a string naming its type ("s:1"; "n:0.5"). Hosts
-- send integers: their key costs no string.
function M.id_key(id)
  if id == nil or id == json.null then return nil end
  local t = type(id)
  if t == "string" then return "s:" .. id end
  local n = t == "number" and math.tointeger(id)
  if n then return n end
  return type(id):sub(1, 1) .. ":" .. tostring(id)
end

-- True when v is an error object built by M.error (or decoded from a peer).
function M.is_error(v)
  return getmetatable(v) == error_mt
end

local Peer = {}
Peer.__index = Peer

-- What a reply function is given to settle its request without answering it: a request the peer
-- cancelled (MCP sends no answer to one).
M.NO_ANSWER = setmetatable({}, { __name = "jsonrpc.no_answer" })

local replier -- (below)

-- Creates a peer. opts: send(line) (required), methods = {name = fn(params, reply, peer)},
-- on_request(method, params, reply, peer) fallback, on_notification(method, params, peer),
-- on_protocol_error(message, line) for lines that are not JSON-RPC, on_answered() after a request
-- of the peer was answered (or settled with NO_ANSWER), name for messages.
function M.new(opts)
  assert(type(opts.send) == "function", "jsonrpc.new: send function required")
  local self = setmetatable({
    send_line = opts.send,
    methods = opts.methods or {},
    on_request = opts.on_request,
    on_notification = opts.on_notification,
    on_protocol_error = opts.on_protocol_error,
    name = opts.name or "peer",
    next_id = 0,
    pending = {},      -- id -> callback(result, err)
    raw = {},          -- id -> true: hand the result over as json.raw text
    pending_n = 0,
    unanswered_n = 0,  -- requests received and not yet answered (back-pressure: lib/flow.lua)
    on_answered = opts.on_answered,
    closed = false,
    settled = false,   -- the id text of the request answered last (run_request)
  }, Peer)
  self.new_reply = replier(self)
  return self
end

-- Sends one envelope: head (`{"jsonrpc":"2.0",…` up to the last member's colon) + the encoding of
-- value + "}"; returns true, or false and a message when value cannot be encoded.
function Peer:send_envelope(head, value)
  if self.closed then return false, "connection closed" end
  local body, err = json.encode(value)
  if not body then return false, err end
  self.send_line(head .. body .. "}")
  return true
end

-- Sends a request (id) or a notification (id nil) for method; params nil leaves "params" out.
function Peer:send_call(id, method, params)
  local head = id == nil and '{"jsonrpc":"2.0","method":' or ('{"jsonrpc":"2.0","id":' .. json.encode(id) .. ',"method":')
  head = head .. (json.encode(method) or '""')
  if params == nil then
    if self.closed then return false, "connection closed" end
    self.send_line(head .. "}")
    return true
  end
  return self:send_envelope(head .. ',"params":', params)
end

-- Sends a request; cb(result, err) runs once with the result or an error object. With raw, a result
-- comes as json.raw(text) (its JSON text, not decoded). Returns the id.
function Peer:request(method, params, cb, raw)
  self.next_id = self.next_id + 1
  local id = self.next_id
  if self.closed then
    cb(nil, M.error(M.INTERNAL_ERROR, "connection closed"))
    return id
  end
  self.pending[id] = cb
  self.pending_n = self.pending_n + 1
  if raw then self.raw[id] = true end
  local ok, err = self:send_call(id, method, params)
  if not ok then
    self:forget(id)
    cb(nil, M.error(M.INTERNAL_ERROR, err))
  end
  return id
end

-- Sends a notification (no reply expected).
function Peer:notify(method, params)
  return self:send_call(nil, method, params)
end

-- Forgets a pending request without calling its callback (after $/cancel, say).
function Peer:forget(id)
  if self.pending[id] then
    self.pending[id] = nil
    self.raw[id] = nil
    self.pending_n = self.pending_n - 1
  end
end

-- Number of requests sent and not yet answered.
function Peer:pending_count()
  return self.pending_n
end

-- Number of requests received from the peer and not yet answered.
function Peer:unanswered()
  return self.unanswered_n
end

-- Marks the peer closed and fails every pending request with reason, in the order they were sent
-- (a caller that sends them again keeps that order).
function Peer:close(reason)
  if self.closed then return end
  self.closed = true
  local pending = self.pending
  self.pending, self.pending_n, self.raw = {}, 0, {}
  local ids = {}
  for id in pairs(pending) do ids[#ids + 1] = id end
  table.sort(ids) -- (our ids: integers, next_id's)
  for _, id in ipairs(ids) do
    pending[id](nil, M.error(M.INTERNAL_ERROR, reason or "connection closed"))
  end
end

local RESPONSE = '{"jsonrpc":"2.0","id":'

-- The JSON text of request id (nil: null).
local function id_text(id)
  if id == nil then return "null" end
  return json.encode(id)
end

-- Sends an error response for the id whose JSON text is idtext (id_text).
local function send_error(peer, idtext, code, message, data)
  return peer:send_envelope(RESPONSE .. idtext .. ',"error":', { code = code, message = message, data = data })
end

-- Sends an error response for id.
function Peer:respond_error(id, code, message, data)
  return send_error(self, id_text(id), code, message, data)
end

-- The request id each reply function that was left to answer later answers (weak: a reply that is
-- gone is forgotten), so a request can be answered by a successor process (agentd handing agents
-- over across exec).
local reply_ids = setmetatable({}, { __mode = "k" })

-- Sends the answer to the request whose id's JSON text is idtext: err, or result (a result that
-- cannot be encoded still gets an answer); NO_ANSWER sends nothing. Returns whether something was sent.
local function answer(peer, idtext, result, err)
  if result == M.NO_ANSWER then return true end
  if err ~= nil then
    if type(err) ~= "table" then err = M.error(M.INTERNAL_ERROR, tostring(err)) end
    return send_error(peer, idtext, err.code or M.INTERNAL_ERROR, err.message or "error", err.data)
  end
  if peer.closed then return false end
  local body, eerr = "{}", nil -- (no result: an empty object)
  if result ~= nil then body, eerr = json.encode(result) end
  if not body then return send_error(peer, idtext, M.INTERNAL_ERROR, "result not encodable: " .. tostring(eerr)) end
  peer.send_line(RESPONSE .. idtext .. ',"result":' .. body .. "}")
  return true
end

-- The maker of peer's once-only reply functions: new_reply(idtext) -> the reply to the request whose
-- id's JSON text is idtext (false: a reply that sends nothing), handed to a method handler. The
-- reply's one piece of state is idtext, nil once it ran (peer is every reply's: no state of its own).
replier = function(peer)
  return function(idtext)
    return function(result, err)
      local text = idtext
      if text == nil then return false end
      idtext = nil
      if text == false then return true end -- no id: nothing to send
      peer.unanswered_n = peer.unanswered_n - 1
      peer.settled = text
      local ok = answer(peer, text, result, err)
      local on_answered = peer.on_answered
      if on_answered then on_answered() end
      return ok
    end
  end
end

-- A reply function for request id (nil: one that sends nothing), with idtext its JSON text; the
-- request counts as unanswered until it runs.
local function make_reply(peer, id, idtext)
  if id == nil then return peer.new_reply(false) end
  peer.unanswered_n = peer.unanswered_n + 1
  return peer.new_reply(idtext)
end

-- The id of the request a reply function answers: one its handler left to answer later, or one
-- made by reply_to (nil for any other).
function M.reply_id(reply)
  return reply_ids[reply]
end

-- A reply function for request id received by another process image (see M.reply_id).
function Peer:reply_to(id)
  local reply = make_reply(self, id, id_text(id))
  if id ~= nil then reply_ids[reply] = id end
  return reply
end

-- Waits for the answer to request id sent by another process image (or C code): cb(result, err) as
-- for request, raw as there.
function Peer:expect(id, cb, raw)
  if self.closed then return cb(nil, M.error(M.INTERNAL_ERROR, "connection closed")) end
  if not self.pending[id] then self.pending_n = self.pending_n + 1 end
  self.pending[id] = cb
  if raw then self.raw[id] = true end
  if id > self.next_id then self.next_id = id end
end

-- The xpcall message handler of every handler call: keeps an error object, wraps anything else.
local function handler_error(e)
  if M.is_error(e) then return e end
  return M.error(M.INTERNAL_ERROR, tostring(e), { traceback = debug.traceback(nil, 2) })
end

-- Logs a handler's error and answers it (a notification's reply sends nothing).
local function handler_failed(peer, err, reply, method)
  if err.data and err.data.traceback then
    io.stderr:write(string.format("%s: handler %s failed: %s\n%s\n", peer.name, method, err.message, err.data.traceback))
    err.data = nil
  end
  reply(nil, err)
end

-- The reply handed to a notification's handler: there is nobody to answer.
local function no_reply() return true end

-- Runs the handler for a valid request (id; idtext: its JSON text, id_text) or notification (id
-- nil) with its reply function, a raised error turned into an error reply. While it runs
-- synchronously, self.current_id is the request's id (nil for a notification), for handlers that
-- key state by it. A reply the handler leaves to answer later is registered for M.reply_id.
local function run_request(self, method, params, id, idtext)
  local outer = self.current_id
  self.current_id = id
  local fn = self.methods[method]
  local reply = no_reply
  if id ~= nil then
    reply = make_reply(self, id, idtext)
    self.settled = false
  end
  local ok, err = true, nil
  if fn then
    ok, err = xpcall(fn, handler_error, params, reply, self, method)
  elseif id == nil then
    if self.on_notification then ok, err = xpcall(self.on_notification, handler_error, method, params, self) end
  elseif self.on_request then
    ok, err = xpcall(self.on_request, handler_error, method, params, reply, self)
  else
    reply(nil, M.error(M.METHOD_NOT_FOUND, "Method not found: " .. method))
  end
  if not ok then handler_failed(self, err, reply, method) end
  if id ~= nil and self.settled ~= idtext then reply_ids[reply] = id end
  self.current_id = outer
end

-- Handles a response to one of our requests.
function Peer:handle_response(msg)
  local cb = self.pending[msg.id]
  if not cb then return end
  self:forget(msg.id)
  if msg.error ~= nil then
    local e = type(msg.error) == "table" and msg.error or { message = tostring(msg.error) }
    cb(nil, M.error(tonumber(e.code) or M.INTERNAL_ERROR, tostring(e.message or "error"), e.data))
  else
    cb(msg.result)
  end
end

-- Reports a line that is not valid JSON-RPC.
function Peer:protocol_error(message, line)
  if self.on_protocol_error then self.on_protocol_error(message, line) end
end

-- What the prefix of an id-first envelope line says, without decoding it: kind ("result", "error",
-- "method": a request, or "notification"), the raw JSON of the id (nil for a notification), and
-- the index where the value of that member starts. nil when line does not start that way.
function M.envelope(line)
  if line:sub(1, 17) ~= '{"jsonrpc":"2.0",' then return nil end
  if line:sub(18, 22) == '"id":' then
    local id_end
    if line:byte(23) == 34 then -- a string id: up to its closing quote
      local pos = 24
      while true do
        local q = line:find('["\\]', pos)
        if not q then return nil end
        if line:byte(q) == 92 then pos = q + 2 else id_end = q; break end
      end
    else
      id_end = (line:find("[,}]", 23) or 0) - 1
      if id_end < 23 then return nil end
    end
    local kind, value_at = line:match('^,"(%a+)":()', id_end + 1)
    if kind ~= "result" and kind ~= "error" and kind ~= "method" then return nil end
    return kind, line:sub(23, id_end), value_at
  end
  if line:sub(18, 27) == '"method":"' then return "notification", nil, 27 end
  return nil
end

-- Feeds one received line: dispatches requests/notifications, settles responses (a raw request's
-- result is handed over undecoded when the line is an id-first envelope).
function Peer:receive(line)
  if self.pending_n > 0 and next(self.raw) ~= nil then -- (raw: only pending ids)
    local id = line:match('^{"jsonrpc":"2.0","id":(%d+),"result":')
    id = id and math.tointeger(tonumber(id))
    if id and self.raw[id] and line:byte(-1) == 125 then
      local cb = self.pending[id]
      self:forget(id)
      return cb(json.raw(line:sub(#'{"jsonrpc":"2.0","id":' + #tostring(id) + #',"result":' + 1, -2)))
    end
  end
  -- (a request written id first, as every writer of ours and node's writes it, is read in one C
  -- pass: core/json.c json.request; any other line is decoded whole)
  local id, method, params, idtext = json.request(line)
  if id then return run_request(self, method, params, id, idtext) end
  local msg, err = json.decode(line)
  if msg == nil then
    self:protocol_error("parse error: " .. tostring(err), line)
    return self:respond_error(nil, M.PARSE_ERROR, "Parse error: " .. tostring(err))
  end
  return self:receive_message(msg, line)
end

-- Feeds one decoded message; line, when given, is only passed on to on_protocol_error.
function Peer:receive_message(msg, line)
  if type(msg) ~= "table" or msg[1] ~= nil or json.is_array(msg) then
    self:protocol_error("not a JSON-RPC object", line)
    return self:respond_error(nil, M.INVALID_REQUEST, "Invalid Request: expected a single JSON-RPC object (batches are not supported)")
  end
  local id = msg.id
  if id == json.null then id = nil end
  -- an id that is neither a string nor an integer cannot be answered by itself: JSON-RPC says null
  local id_ok = id == nil or type(id) == "string" or math.type(id) == "integer"
  if msg.method == nil then
    if id_ok and id ~= nil and (msg.result ~= nil or msg.error ~= nil) then return self:handle_response(msg) end
    self:protocol_error("message without method or result", line)
    if id ~= nil then return self:respond_error(id_ok and id or nil, M.INVALID_REQUEST, "Invalid Request: no method") end
    return
  end
  if msg.jsonrpc ~= "2.0" or type(msg.method) ~= "string" or not id_ok then
    return self:respond_error(id_ok and id or nil, M.INVALID_REQUEST,
      "Invalid Request: need jsonrpc \"2.0\", a string method and a string or integer id")
  end
  local params = msg.params
  if params == json.null then params = nil end
  if params ~= nil and type(params) ~= "table" then
    if id ~= nil then return self:respond_error(id, M.INVALID_PARAMS, "Invalid params: params must be an object or array") end
    return
  end
  return run_request(self, msg.method, params or {}, id, id_text(id))
end

return M
