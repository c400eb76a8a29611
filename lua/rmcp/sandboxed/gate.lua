-- The sandbox's side of agentd's network gate (agentd/session/netgate.lua): a connection to the
-- gate's socket that asks for one target (lib/connect_line.lua) and, once the gate said OK, is a
-- plain byte stream to it; and the splice of a local client onto it, through the byte pump in C.
local uv = require "luv"
local sock = require "rmcp.sock"
local relay = require "rmcp.relay"
local log = require "rmcp.lib.log"
local connect_line = require "rmcp.lib.connect_line"
local stream_head = require "rmcp.lib.stream_head"

local M = {}

M.ANSWER_MS = 30000 -- the gate resolves and connects before it answers

-- Asks the gate listening at path for host:port. cb(pipe, rest): the luv pipe to the target and the
-- bytes it already sent; or cb(nil, nil, why, refused): refused is true when the gate said NO (why is
-- its reason), false when it could not be reached or gave no answer. cb may run before this returns.
function M.connect(path, host, port, cb)
  local fd, err = sock.connect(path)
  if not fd then return cb(nil, nil, "the network gate is not reachable: " .. tostring(err), false) end
  local pipe = uv.new_pipe(false)
  local ok, oerr = pipe:open(fd)
  if ok then ok, oerr = pipe:write(connect_line.request(host, port)) end
  if not ok then
    if not pipe:fileno() then uv.fs_close(fd) end
    pipe:close()
    return cb(nil, nil, "the network gate: " .. tostring(oerr), false)
  end
  stream_head.read(pipe, "\n", connect_line.MAX_LINE, M.ANSWER_MS, function(line, rest, why)
    if not line then
      pipe:close()
      return cb(nil, nil, "the network gate gave no answer: " .. why, false)
    end
    local yes, reason = connect_line.parse_answer(line)
    if yes then return cb(pipe, rest) end
    pipe:close()
    cb(nil, nil, reason, true)
  end)
end

-- Relays client (a luv stream) and up (the pipe connect gave) into each other, to_a written to the
-- client first and to_b to the target first; both handles are closed here (the relay has its own
-- duplicates). label names the connection in the log.
function M.splice(client, up, to_a, to_b, label)
  local r, err = relay.pipe(client:fileno(), up:fileno(), {
    to_a = to_a,
    to_b = to_b,
    on_done = function(out, back, rerr)
      log.debug("%s: done (%d bytes out, %d back)%s", label, out, back, rerr and ": " .. rerr or "")
    end,
  })
  if not r then log.warn("%s: cannot relay: %s", label, tostring(err)) end
  client:close()
  up:close()
end

return M
