-- A small deterministic fake of `reasonix acp` (ACP v1, NDJSON JSON-RPC over stdio), for the scale,
-- fault and benchmark tests only: behaviour tests run the real agent against the mock provider.
-- Runs as `reasonix-mcp script fake_acp.lua [MODE]` (the project's own binary: no other Lua is
-- needed); uses only luv, cjson and the Lua stdlib. Shapes and error texts copy shared/reasonix-acp-notes.md.
--
-- Mode: FAKE_ACP_MODE, `--mode M`, a bare `M` argument, or `[fake:M]` inside one prompt's text.
-- A bare `acp` argument is ignored, so `fake_acp.lua acp` stands in for `reasonix acp`.
--   normal      echo the prompt text back (thought chunk, then message chunks), end_turn
--   flood       FAKE_ACP_FLOOD (default 10000) message chunks as fast as the pipe takes them, end_turn;
--               the lines have the real agent's exact byte layout and are built once per session (the
--               first flood), so a later flood costs the fake only its writes
--   stamp       one chunk, then after FAKE_ACP_STAMP_MS (default 20) end_turn; the CLOCK_MONOTONIC ns
--               taken just before the turn's answer is written goes into the file FAKE_ACP_STAMP
--               (the benchmark's watch wake-up row reads it)
--   hang        never answers the prompt (not even after session/cancel)
--   crash       one chunk, a line on stderr, exit 3 mid-turn
--   slow-start  waits FAKE_ACP_DELAY_MS (default 2000) before answering initialize, then as normal
--   permission  raises session/request_permission (allow_once/reject_once) and reports the outcome
-- Other knobs: FAKE_ACP_CHUNK_MS (pause between chunks of a normal turn, default 0, so a test can
-- steer or cancel mid-turn), FAKE_ACP_CHUNK (chars per chunk, default 16), FAKE_ACP_IGNORE_EOF=1
-- (stays alive after stdin closes, as some agents do: only a signal ends it).
-- A steer shows up in the turn's text as "[steer] <text>". resume/load accept any `fake-…` id (no
-- history is kept, so a restarted fake can "resume"). On stdin EOF running turns end `cancelled`
-- (hang's too) and it exits 0; if the client stops reading, it exits without SIGPIPE.
local uv = require "luv"
local cjson = require "cjson"

local json_decode = (require "cjson.safe").decode
local EMPTY = "\0fake_acp_empty_array\0"

local function getenv_num(name, default)
  return tonumber(os.getenv(name) or "") or default
end

local args = arg or {}
local MODE = os.getenv("FAKE_ACP_MODE") or "normal"
do
  local i = 1
  while args[i] do
    if args[i] == "--mode" and args[i + 1] then MODE = args[i + 1]; i = i + 1
    elseif args[i] ~= "acp" and not args[i]:match("^%-") then MODE = args[i] end
    i = i + 1
  end
end
local FLOOD = getenv_num("FAKE_ACP_FLOOD", 10000)
local DELAY_MS = getenv_num("FAKE_ACP_DELAY_MS", 2000)
local CHUNK_MS = getenv_num("FAKE_ACP_CHUNK_MS", 0)
local CHUNK = math.max(1, getenv_num("FAKE_ACP_CHUNK", 16))
local STAMP_MS = getenv_num("FAKE_ACP_STAMP_MS", 20)
local STAMP_FILE = os.getenv("FAKE_ACP_STAMP")
local MODES = { normal = true, flood = true, hang = true, crash = true, ["slow-start"] = true, permission = true,
  stamp = true }
if not MODES[MODE] then
  io.stderr:write("fake_acp: unknown mode '", MODE, "'\n")
  os.exit(2)
end

-- ---- stdio ---------------------------------------------------------------------------------

-- Opens fd as a luv stream (pipe, unix socket or tty).
local function open_stream(fd)
  local kind = uv.guess_handle(fd)
  if kind == "tty" then return uv.new_tty(fd, fd == 0) end
  local p = uv.new_pipe(false)
  assert(p:open(fd))
  return p
end

local stdin, stdout = open_stream(0), open_stream(1)
local closing = false
local broken = false  -- a write failed: the client is gone, write nothing more
local shutdown  -- defined below; a failed write calls it

-- A vanished reader must give EPIPE on write, not kill us with SIGPIPE. The handle stays open
-- (unreferenced, so it never keeps the loop alive): closing it would restore the default action.
local sigpipe = uv.new_signal()
sigpipe:start("sigpipe", function() end)
sigpipe:unref()

-- Encodes a message; EMPTY marks an empty JSON array (lua-cjson writes {} for an empty table).
local function encode(msg)
  return (cjson.encode(msg):gsub('"\\u0000fake_acp_empty_array\\u0000"', "[]"))
end

-- Writes raw NDJSON text; cb runs once the pipe took it (backpressure for floods).
local function write_raw(data, cb)
  if broken or stdout:is_closing() then return end
  stdout:write(data, function(err)
    if err then broken = true; return shutdown() end
    if cb then cb(err) end
  end)
end

local function send(msg, cb) write_raw(encode(msg) .. "\n", cb) end
local function reply(id, result) send({ jsonrpc = "2.0", id = id, result = result }) end
local function reply_error(id, code, message)
  send({ jsonrpc = "2.0", id = id == nil and cjson.null or id, error = { code = code, message = message } })
end
local function notify(method, params) send({ jsonrpc = "2.0", method = method, params = params }) end

local function after(ms, fn)
  local t = uv.new_timer()
  t:start(ms, 0, function() t:close(); fn() end)
  return t
end

-- ---- sessions ------------------------------------------------------------------------------

local sessions = {}        -- sid -> { cwd, model, tool_approval, turn }
local counter = 0
local next_out_id = 0      -- ids of our own requests to the client
local pending_out = {}     -- id -> callback(result, error)

local APPROVALS = {
  { value = "read-only", name = "Read only", description = "Read files; ask before writes and external side effects" },
  { value = "workspace-write", name = "Workspace access", description = "Write inside the workspace and private session temp directory" },
  { value = "danger-full-access", name = "Full access", description = "Skip ordinary prompts while explicit deny rules remain active" },
}
local MODELS = { "fake/fake-model", "fake/fake-model-b" }

local function valid(list, value)
  for _, v in ipairs(list) do if (v.value or v) == value then return true end end
  return false
end

-- The session/new (and resume/load) result body, shaped like the real agent's.
local function session_shape(s)
  local avail, opts = {}, {}
  for _, m in ipairs(MODELS) do
    avail[#avail + 1] = { modelId = m, name = m, description = "fake" }
    opts[#opts + 1] = { value = m, name = m, description = "fake" }
  end
  return {
    models = { availableModels = avail, currentModelId = s.model },
    modes = { currentModeId = "normal", availableModes = {
      { id = "normal", name = "Normal", description = "Work directly and pause when user input is required" },
      { id = "plan", name = "Plan", description = "Research and propose a plan before making changes" },
      { id = "goal", name = "Goal", description = "Keep advancing the next prompt as a goal until complete or blocked" } } },
    configOptions = {
      { id = "model", name = "Model", category = "model", type = "select", currentValue = s.model, options = opts },
      { id = "tool_approval", name = "Permissions", category = "tool_approval", type = "select",
        currentValue = s.tool_approval, options = APPROVALS },
    },
  }
end

local function update(sid, u)
  notify("session/update", { sessionId = sid, update = u })
end

-- The bytes the real agent writes around a text chunk (lua/rmcp/acp/client.lua reads this layout
-- straight off the line, as it does the real agent's); the flood's lines copy it too.
local CHUNK_HEAD = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"'
local CHUNK_KIND = '","update":{"sessionUpdate":"'
local CHUNK_TEXT = '","content":{"type":"text","text":'
local CHUNK_TAIL = "}}}}\n"

-- Sends a text chunk of kind (agent_message_chunk, agent_thought_chunk) for session sid in the
-- real agent's layout.
local function chunk(sid, kind, text)
  write_raw(CHUNK_HEAD .. sid .. CHUNK_KIND .. kind .. CHUNK_TEXT .. cjson.encode(text) .. CHUNK_TAIL)
end

-- A status notification, in the agent's layout (jsonrpc, method, params: agentd drops it by its head).
local function status_update(sid, event, state)
  write_raw('{"jsonrpc":"2.0","method":"_reasonix.io/session/status_update","params":' .. encode({ schemaVersion = 1,
    sessionId = sid, event = event, status = { schemaVersion = 1, sessionId = sid, state = state,
    model = sessions[sid] and sessions[sid].model } }) .. "}\n")
end

local function announce(sid)
  update(sid, { sessionUpdate = "available_commands_update", availableCommands = {
    { name = "review", description = "Review the requested code changes.", input = { hint = "instructions" } } } })
end

local function new_sid()
  counter = counter + 1
  return string.format("fake-%d-%d-%06x", uv.os_getpid(), counter, math.floor(uv.hrtime() / 1000) % 0x1000000)
end

local function prompt_text(prompt)
  local out = {}
  for _, block in ipairs(type(prompt) == "table" and prompt or {}) do
    if type(block) == "table" and type(block.text) == "string" then out[#out + 1] = block.text end
  end
  return table.concat(out)
end

-- Writes stamp (ns) over the last one in STAMP_FILE: one write to an fd opened once, in place and
-- of a fixed width (spaces lead), so the reader the answer wakes is not kept waiting by a file
-- being created or truncated.
local stamp_fd
local function write_stamp(stamp)
  stamp_fd = stamp_fd or uv.fs_open(STAMP_FILE, "w", 384) -- 0600
  if stamp_fd then uv.fs_write(stamp_fd, string.format("%20d\n", stamp), 0) end
end

-- Ends the running turn of s once with stopReason (or a JSON-RPC error); later calls do nothing.
local function finish(s, stop_reason, err)
  local turn = s.turn
  if not turn or turn.done then return end
  turn.done = true
  s.turn = nil
  for _, t in ipairs(turn.timers) do if not t:is_closing() then t:close() end end
  status_update(turn.sid, stop_reason == "end_turn" and "completion" or "error", "idle")
  local stamp = turn.stamp and uv.hrtime()
  if err then reply_error(turn.id, err.code, err.message)
  else reply(turn.id, { stopReason = stop_reason }) end
  if stamp and STAMP_FILE then write_stamp(stamp) end
  if turn.on_finish then turn.on_finish() end
end

-- Sends an agent->client request; cb(result, error) gets the reply.
local function request_client(method, params, cb)
  next_out_id = next_out_id + 1
  pending_out[next_out_id] = cb
  send({ jsonrpc = "2.0", id = next_out_id, method = method, params = params })
end

-- Streams text as message chunks with CHUNK_MS between them, steers folded in, then cb().
local function stream_text(s, turn, text, cb)
  local pos = 1
  local function step()
    while not turn.done do
      if #turn.steers > 0 then
        local st = table.remove(turn.steers, 1)
        chunk(turn.sid, "agent_message_chunk", "[steer] " .. st)
      end
      if pos > #text then return cb() end
      chunk(turn.sid, "agent_message_chunk", text:sub(pos, pos + CHUNK - 1))
      pos = pos + CHUNK
      if CHUNK_MS > 0 then
        turn.timers[#turn.timers + 1] = after(CHUNK_MS, step)
        return
      end
    end
  end
  step()
end

local behaviours = {}

function behaviours.normal(s, turn)
  chunk(turn.sid, "agent_thought_chunk", "echoing")
  stream_text(s, turn, turn.text, function()
    -- A steer that arrived during the last chunk's pause still shows.
    for _, st in ipairs(turn.steers) do chunk(turn.sid, "agent_message_chunk", "[steer] " .. st) end
    turn.steers = {}
    finish(s, "end_turn")
  end)
end
behaviours["slow-start"] = behaviours.normal

local FLOOD_BATCH = 1024 -- lines per write

-- The flood of session sid as strings of FLOOD_BATCH lines each, built on its first flood.
local function flood_batches(s, sid)
  if s.flood and s.flood.n == FLOOD then return s.flood end
  local head = CHUNK_HEAD .. sid .. CHUNK_KIND .. "agent_message_chunk" .. CHUNK_TEXT
  local batches, lines = { n = FLOOD }, {}
  for i = 1, FLOOD do
    lines[#lines + 1] = head .. '"flood ' .. i .. '\\n"' .. CHUNK_TAIL
    if #lines == FLOOD_BATCH or i == FLOOD then
      batches[#batches + 1] = table.concat(lines)
      lines = {}
    end
  end
  s.flood = batches
  return batches
end

function behaviours.flood(s, turn)
  local batches = flood_batches(s, turn.sid)
  if #batches == 0 then return finish(s, "end_turn") end
  -- every batch is queued at once: the pipe paces the writes, no Lua runs between them
  for i, batch in ipairs(batches) do
    write_raw(batch, i == #batches and function(err) if not err and s.turn == turn then finish(s, "end_turn") end end or nil)
  end
end

function behaviours.stamp(s, turn)
  chunk(turn.sid, "agent_message_chunk", "stamp")
  turn.stamp = true
  turn.timers[#turn.timers + 1] = after(STAMP_MS, function() finish(s, "end_turn") end)
end

function behaviours.hang(s, turn)
  turn.ignore_cancel = true
  chunk(turn.sid, "agent_thought_chunk", "hanging")
end

function behaviours.crash(s, turn)
  chunk(turn.sid, "agent_message_chunk", "about to crash")
  write_raw("", function()
    io.stderr:write("fake_acp: simulated crash mid-turn\n")
    io.stderr:flush()
    os.exit(3)
  end)
end

function behaviours.permission(s, turn)
  local call_id = "call_fake_" .. counter
  update(turn.sid, { sessionUpdate = "tool_call", toolCallId = call_id, title = "write_file a.txt", kind = "edit",
    status = "pending", rawInput = { path = "a.txt", content = "A\n" } })
  turn.gate = true
  request_client("session/request_permission", {
    sessionId = turn.sid,
    toolCall = { toolCallId = "gate-" .. counter, title = "write_file a.txt", kind = "edit", status = "pending",
      rawInput = { path = "a.txt", content = "A\n" },
      _meta = { ["reasonix.io"] = { approvalId = tostring(counter), fresh = false, subject = "a.txt", tool = "write_file" } } },
    options = {
      { optionId = "allow_once", name = "Allow", kind = "allow_once" },
      { optionId = "reject_once", name = "Reject", kind = "reject_once" },
    },
  }, function(result, err)
    if turn.done then return end
    local outcome = "error"
    if type(result) == "table" and type(result.outcome) == "table" then
      outcome = result.outcome.outcome == "selected" and tostring(result.outcome.optionId) or tostring(result.outcome.outcome)
    elseif err then
      outcome = "error " .. tostring(type(err) == "table" and err.code or err)
    end
    local ok = outcome == "allow_once"
    update(turn.sid, { sessionUpdate = "tool_call_update", toolCallId = call_id, status = ok and "completed" or "failed",
      content = { { type = "content", content = { type = "text", text = ok and "wrote 2 bytes to a.txt" or "blocked by permission policy" } } } })
    chunk(turn.sid, "agent_message_chunk", "permission: " .. outcome)
    finish(s, "end_turn")
  end)
end

-- ---- methods -------------------------------------------------------------------------------

local methods = {}
local init_timer  -- slow-start's pending initialize answer

function methods.initialize(id, params)
  local function answer()
    reply(id, {
      protocolVersion = 1,
      agentCapabilities = {
        loadSession = true,
        sessionCapabilities = { list = {}, resume = {}, close = {}, delete = {} },
        promptCapabilities = { image = false, audio = false, embeddedContext = true },
        mcpCapabilities = { http = true, sse = false },
        _meta = { ["reasonix.io"] = { sessionSteer = { method = "_reasonix.io/session/steer" } } },
      },
      agentInfo = { name = "fake-acp", version = "v1.38.11-fake" },
      authMethods = EMPTY,
    })
  end
  if MODE == "slow-start" then init_timer = after(DELAY_MS, answer) else answer() end
end

local function require_abs_cwd(id, method, params)
  local cwd = type(params) == "table" and params.cwd
  if type(cwd) ~= "string" or cwd:sub(1, 1) ~= "/" then
    reply_error(id, -32602, method .. ": cwd must be an absolute path")
    return nil
  end
  return cwd
end

methods["session/new"] = function(id, params)
  local cwd = require_abs_cwd(id, "session/new", params)
  if not cwd then return end
  local sid = new_sid()
  local s = { cwd = cwd, model = MODELS[1], tool_approval = "workspace-write" }
  sessions[sid] = s
  local result = session_shape(s)
  result.sessionId = sid
  reply(id, result)
  announce(sid)
end

-- resume/load: the fake keeps no history, so any id it could have issued is "found".
local function revive(method)
  return function(id, params)
    local sid = type(params) == "table" and params.sessionId
    if type(sid) ~= "string" or not sid:match("^fake%-") then
      return reply_error(id, -32602, method .. ": unknown session " .. tostring(sid))
    end
    local s = sessions[sid]
    if not s then
      s = { cwd = params.cwd or "/", model = MODELS[1], tool_approval = "workspace-write" }
      sessions[sid] = s
    end
    reply(id, session_shape(s))
    announce(sid)
    update(sid, { sessionUpdate = "plan", entries = EMPTY })
  end
end
methods["session/resume"] = revive("session/resume")
methods["session/load"] = revive("session/load")

methods["session/list"] = function(id)
  local list = {}
  for sid, s in pairs(sessions) do
    list[#list + 1] = { sessionId = sid, cwd = s.cwd, title = s.title or "", updatedAt = s.updated or "" }
  end
  table.sort(list, function(a, b) return a.sessionId < b.sessionId end)
  reply(id, { sessions = #list > 0 and list or EMPTY })
end

local function known(id, method, params)
  local sid = type(params) == "table" and params.sessionId
  local s = sid and sessions[sid]
  if not s then reply_error(id, -32602, method .. ": unknown session " .. tostring(sid)) end
  return s, sid
end

methods["session/close"] = function(id, params)
  local s, sid = known(id, "session/close", params)
  if not s then return end
  if s.turn then s.turn.ignore_cancel = false; finish(s, "cancelled") end
  sessions[sid] = nil
  reply(id, {})
end
methods["session/delete"] = methods["session/close"]

methods["session/set_config_option"] = function(id, params)
  local s = known(id, "session/set_config_option", params)
  if not s then return end
  local cfg, value = params.configId, params.value
  if cfg == "tool_approval" then
    if not valid(APPROVALS, value) then
      return reply_error(id, -32602, "session/set_config_option: invalid value " .. tostring(value) .. " for tool_approval")
    end
    s.tool_approval = value
  elseif cfg == "model" then
    if not valid(MODELS, value) then
      return reply_error(id, -32602, "session/set_config_option: invalid value " .. tostring(value) .. " for model")
    end
    s.model = value
  else
    return reply_error(id, -32602, "unknown config option " .. tostring(cfg))
  end
  local shape = session_shape(s)
  reply(id, { configOptions = shape.configOptions })
  update(params.sessionId, { sessionUpdate = "config_option_update", configOptions = shape.configOptions })
end

methods["session/set_mode"] = function(id, params)
  local s = known(id, "session/set_mode", params)
  if not s then return end
  reply(id, {})
end

methods["session/set_model"] = function(id, params)
  local s = known(id, "session/set_model", params)
  if not s then return end
  if not valid(MODELS, params.modelId) then
    return reply_error(id, -32602, "invalid value " .. tostring(params.modelId) .. " for model")
  end
  s.model = params.modelId
  reply(id, {})
end

methods["session/prompt"] = function(id, params)
  local s, sid = known(id, "session/prompt", params)
  if not s then return end
  if s.turn then return reply_error(id, -32600, "session/prompt: session already has an active prompt") end
  local text = prompt_text(params.prompt)
  local mode = text:match("%[fake:([%w%-]+)%]") or MODE
  if not MODES[mode] then mode = MODE end
  s.title = s.title or text:sub(1, 40)
  local turn = { id = id, sid = sid, text = text, steers = {}, timers = {}, done = false }
  s.turn = turn
  status_update(sid, "phase", "running")
  behaviours[mode](s, turn)
end

methods["_reasonix.io/session/steer"] = function(id, params)
  local m = "_reasonix.io/session/steer"
  local s = known(id, m, params)
  if not s then return end
  local text = prompt_text(params.prompt)
  if text == "" then return reply_error(id, -32602, m .. ": empty prompt") end
  if not s.turn then return reply_error(id, -32600, m .. ": session has no active prompt") end
  table.insert(s.turn.steers, text)
  reply(id, { disposition = "steer_accepted" })
end

local notifications = {}

notifications["session/cancel"] = function(params)
  local s = type(params) == "table" and sessions[params.sessionId]
  if not s or not s.turn or s.turn.ignore_cancel then return end
  finish(s, "cancelled")
end

-- ---- dispatch ------------------------------------------------------------------------------

local function handle(line)
  if line:match("^%s*$") then return end
  local msg = json_decode(line)
  if type(msg) ~= "table" then return reply_error(nil, -32700, "parse error") end
  local method = msg.method
  if method == nil then
    local cb = pending_out[msg.id]
    pending_out[msg.id] = nil
    if cb then cb(msg.result, msg.error ~= cjson.null and msg.error or nil) end
    return
  end
  if msg.id == nil or msg.id == cjson.null then
    local fn = notifications[method]
    if fn then fn(msg.params) end
    return
  end
  local fn = methods[method]
  if not fn then return reply_error(msg.id, -32601, "method not found: " .. tostring(method)) end
  local ok, err = pcall(fn, msg.id, msg.params)
  if not ok then
    io.stderr:write("fake_acp: ", tostring(err), "\n")
    reply_error(msg.id, -32603, tostring(err))
  end
end

-- On stdin EOF: running turns end as cancelled (like the real agent), then every handle closes.
function shutdown()
  if closing then return end
  closing = true
  for _, s in pairs(sessions) do
    if s.turn then s.turn.ignore_cancel = false; finish(s, "cancelled") end
  end
  if not stdin:is_closing() then stdin:close() end
  if init_timer and not init_timer:is_closing() then init_timer:close() end
  -- An empty write completes after every queued write: then stdout can close. Only our own
  -- handles are closed (the project binary's host owns the rest of the loop).
  if stdout:is_closing() then return end
  local ok = pcall(stdout.write, stdout, "", function()
    if not stdout:is_closing() then stdout:close() end
  end)
  if not ok and not stdout:is_closing() then stdout:close() end
end

local buf = ""
stdin:read_start(function(err, data)
  if (err or not data) and os.getenv("FAKE_ACP_IGNORE_EOF") == "1" then
    stdin:read_stop()
    uv.new_timer():start(3600000, 3600000, function() end) -- alive until a signal
    return
  end
  if err or not data then return shutdown() end
  buf = buf .. data
  local start = 1
  while true do
    local nl = buf:find("\n", start, true)
    if not nl then break end
    handle(buf:sub(start, nl - 1))
    start = nl + 1
  end
  buf = buf:sub(start)
end)

if not package.loaded["rmcp.host"] then
  uv.run()
end
