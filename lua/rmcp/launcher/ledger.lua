-- The launcher's ledger: the host requests in flight (with a server, or waiting for a ready one),
-- which of them move to a new server and which fail when their server goes, and the receipts of
-- watch and poll answers — whether the host got each one (agentd/PROTOCOL.md "Receipts"), reported
-- to the active server, which tells agentd. The router feeds it lines, the supervisor tells it when
-- servers come and go; toward the host it writes only answers and errors.
local json = require "rmcp.lib.json"
local jsonrpc = require "rmcp.lib.jsonrpc"
local log = require "rmcp.lib.log"
local wire = require "rmcp.launcher.wire"

local M = {}

-- The error code of a request that cannot be answered because its server went away.
M.RESTARTED = -32000

-- How many receipts a server is sent again when it dies (it may not have passed them on), and how
-- many cancelled watches and polls wait for a late answer.
local RECEIPTS_RESENT = 32
local CANCELLED_KEPT = 64

---@class LauncherRequest             a host request in flight
---@field key any                     jsonrpc.id_key of its id
---@field id any                      its id as the host sent it
---@field line string                 the host's line, verbatim
---@field method string
---@field seq integer                 arrival order
---@field repeatable boolean          a new server may run it again (wire.repeatable)
---@field label string                tool or method name, for messages
---@field receipt boolean             a tool of wire.RECEIPT_TOOLS: its answer gets a receipt
---@field thread string?              its _meta.threadId, which names its orchestrator (receipt tools)
---@field level string?               a logging/setLevel's level
---@field token any?                  id_key of its progressToken (router.lua)
---@field owner LauncherChild?        the server that has it; nil while it waits for one
---@field prev LauncherChild?         the replaced server it moved from (its answer may still come)
---@field done boolean?               answered, failed or cancelled

---@class LauncherReceipt             one $/rmcp/answered for the active server
---@field key any                     the host request's id_key
---@field line string

---@class LauncherLedger
---@field pending table<any, LauncherRequest>   id_key -> host request in flight
---@field n_pending integer
---@field seq integer
---@field waiting table[]             {entry=} | {line=} | {receipt=}: what waits for a ready server, in order
---@field receipts_sent table<LauncherChild, LauncherReceipt[]> the last RECEIPTS_RESENT each live server was sent
---@field cancelled table<any, LauncherRequest> id_key -> a receipt request the host cancelled while a server had it
---@field cancelled_order any[]       their keys, oldest first (at most CANCELLED_KEPT)
---@field unflushed LauncherRequest[] receipt requests whose answer waits in our queue to the host
---@field top_receipt_key integer     the highest integer key of a receipt made or waiting for a flush
---@field send_host fun(line: string): integer? bytes still queued for the host, nil when not written
---@field active fun(): LauncherChild? the server host requests go to now
---@field on_settled fun(entry: LauncherRequest, result_line: string?, left: boolean)
---@field lane userdata?              the hot path in C (rmcp.fastlane): plain requests it relays itself
---@field lane_owner LauncherChild?   the server the lane relays to while open
---@field adopt fun(line: string): LauncherRequest?  the entry of a host request line (router.lua; nil: not JSON)
local Ledger = {}
Ledger.__index = Ledger

-- Creates the ledger. opts: send_host, active, on_settled, adopt (see the class above).
---@return LauncherLedger
function M.new(opts)
  return setmetatable({
    pending = {}, n_pending = 0, seq = 0, waiting = {}, receipts_sent = {},
    cancelled = {}, cancelled_order = {}, unflushed = {}, top_receipt_key = math.mininteger,
    send_host = opts.send_host, active = opts.active, on_settled = opts.on_settled, adopt = opts.adopt,
  }, Ledger)
end

-- Orders requests by arrival.
local function by_seq(a, b) return a.seq < b.seq end

-- The error text for a call lost to a restart.
local function restart_message(entry, why)
  return string.format("%s: the MCP server restarted while this call was in flight (%s); check reasonix_list/"
    .. "reasonix_poll before retrying (the call may or may not have taken effect)", entry.label, why)
end

-- ---- the lane: plain requests relayed in C ----

-- Takes over the lane's requests in flight (their server owns them) and closes it: called before
-- anything looks at the requests in flight as a whole, or at one of them.
function Ledger:take_lane()
  local owner = self.lane_owner
  if not owner then return end
  self.lane_owner = nil
  for _, t in ipairs(self.lane:close()) do
    local entry = self.adopt(t.line)
    if entry then -- (every line the lane took is handed back, even one it should not have taken)
      entry.seq, entry.owner = t.seq, owner
      self.pending[entry.key] = entry
      self.n_pending = self.n_pending + 1
      self.lane:held(entry.id, 1)
    end
  end
end

-- Opens the lane on child (the active server that may take host lines now, or nil: closed).
-- While anything waits for a server, the lane stays closed so that nothing overtakes it.
function Ledger:sync_lane(child)
  if not self.lane then return end
  if child and (child.exited or child.stdin_closed or #self.waiting > 0) then child = nil end
  if child == self.lane_owner then return end
  self:take_lane()
  if child then
    self.lane:open((child:pipes()), child.n)
    self.lane_owner = child
  end
end

-- True when the lane relayed to child a request with this progress token that is not answered yet
-- (the server's progress for it goes to the host).
function Ledger:lane_token(child, token)
  local n = type(token) == "number" and math.tointeger(token) or nil -- (7.0 is 7, as jsonrpc.id_key reads it)
  return self.lane ~= nil and child == self.lane_owner and n ~= nil and self.lane:has_token(n)
end

-- The lane relayed a watch or poll with this (integer) id (queued nil), or wrote its result to the
-- host with queued bytes still unwritten (-1: not written): its receipt is ours (relay below).
function Ledger:lane_receipt(id, queued)
  if queued == nil then return self:forget_receipts(id) end
  self:confirm_taken({ key = id, id = id }, queued)
end

-- Confirms the receipt of entry's answer once the host's pipe has taken it all; queued: what its
-- write left queued (0: all taken; nil or below 0: the write failed, the answer is lost).
function Ledger:confirm_taken(entry, queued)
  if queued == nil or queued < 0 then return self:report(entry, false) end
  if queued == 0 then return self:report(entry, true) end
  self:wait_flush(entry)
end

-- ---- requests in flight ----

-- Records a host request and sends it to server child, or keeps it for the next ready one (nil).
function Ledger:record(entry, child)
  if self.lane then
    entry.seq = self.lane:next_seq()
  else
    self.seq = self.seq + 1
    entry.seq = self.seq
  end
  if entry.receipt then self:forget_receipts(entry.key) end
  if self.pending[entry.key] then
    log.warn("the host reused request id %s while it was in flight; following the newer request", tostring(entry.id))
  else
    self.n_pending = self.n_pending + 1
    if self.lane then self.lane:held(entry.id, 1) end
  end
  self.pending[entry.key] = entry
  self:dispatch(entry, child)
end

-- Sends a recorded request to child, or queues it for the next ready server (child nil).
function Ledger:dispatch(entry, child)
  entry.owner = child
  if child then
    child:send(entry.line)
  else
    self.waiting[#self.waiting + 1] = { entry = entry }
  end
end

-- Keeps a host line that is not a request for the next ready server.
function Ledger:hold(line)
  self.waiting[#self.waiting + 1] = { line = line }
end

-- The host request in flight under id_key key, or nil.
function Ledger:get(key)
  self:take_lane()
  return self.pending[key]
end

-- The host cancelled entry: the cancel goes to its server (a waiting request is simply never sent);
-- a receipt request's answer may still come from there, and is then reported lost.
function Ledger:cancel(entry, line)
  if entry.owner then
    entry.owner:send(line)
    if entry.receipt then self:remember_cancelled(entry) end
  end
  self:settle(entry)
end

-- A server answered (kind "result" or "error") host request id. Each request has one owner, whose
-- answer goes to the host; a replaced server's answer counts only if it came before our cancel (a
-- real watch result; a superseded one is dropped), and then the copy on the new server is cancelled.
function Ledger:answered(child, id, line, kind)
  local key = jsonrpc.id_key(id)
  local entry = self.pending[key]
  if not entry then
    local cancelled = self.cancelled[key]
    if cancelled and cancelled.owner == child and kind == "result" then
      -- the host cancelled this call before its answer came: what it carried did not reach the host
      self.cancelled[key] = nil
      self:report(cancelled, false)
    end
    log.debug("dropped an answer to %s from server pid %d: not in flight any more", tostring(id), child.pid)
    return
  end
  if child == entry.owner then
    self:settle(entry, kind == "result" and line or nil)
    self:relay(entry, line, kind)
  elseif child == entry.prev and not wire.superseded(json.decode(line)) then
    -- the replaced server answered before it saw our cancel: that answer is real (a watch result
    -- it already took from agentd); the copy on the new server is cancelled
    self:settle(entry, kind == "result" and line or nil)
    self:relay(entry, line, kind)
    if entry.owner then entry.owner:send(wire.cancel_line(entry.id, "answered by the previous server")) end
  else
    log.debug("dropped an answer to %s from server pid %d: the request moved to another server", tostring(id), child.pid)
  end
end

-- Forgets a host request (answered or cancelled); on_settled gets its successful answer
-- (result_line, undecoded) and whether it left flight just now.
function Ledger:settle(entry, result_line)
  local left = self.pending[entry.key] == entry
  if left then
    self.pending[entry.key] = nil
    self.n_pending = self.n_pending - 1
    if self.lane then self.lane:held(entry.id, -1) end
  end
  entry.done = true
  self.on_settled(entry, result_line, left)
end

-- Answers a request that will get no answer from a server with a JSON-RPC error.
function Ledger:fail(entry, message, data)
  if entry.done then return end
  self:settle(entry)
  log.warn("answered %s (request %s) with an error: %s", entry.label, tostring(entry.id), message)
  self.send_host(wire.error_response(entry.id, M.RESTARTED, message, data))
end

-- Number of host requests in flight.
function Ledger:in_flight()
  return self.n_pending + (self.lane and self.lane:count() or 0)
end

-- Number of in-flight host requests child owns.
function Ledger:owned(child)
  self:take_lane()
  local n = 0
  for _, e in pairs(self.pending) do
    if e.owner == child then n = n + 1 end
  end
  return n
end

-- Fails every request child owns with text_of(entry) (and data).
function Ledger:fail_owned(child, text_of, data)
  self:take_lane()
  for _, e in pairs(self.pending) do
    if e.owner == child then self:fail(e, text_of(e), data) end
  end
end

-- A replaced server did not finish in time: what it still owns fails.
function Ledger:drain_over(child)
  self:fail_owned(child, function(e) return restart_message(e, "the old server did not finish it in time") end)
end

-- Gives up: every request in flight fails with text, nothing waits any more.
function Ledger:fail_all(text, data)
  self:take_lane()
  for _, e in pairs(self.pending) do self:fail(e, e.label .. ": " .. text, data) end
  self.waiting = {}
end

-- Shutting down: the requests waiting for a server fail, nothing waits any more.
function Ledger:drop_waiting()
  self:take_lane()
  for _, item in ipairs(self.waiting) do
    if item.entry then self:fail(item.entry, item.entry.label .. ": the MCP server is shutting down") end
  end
  self.waiting = {}
end

-- Moves the repeatable requests old has to new (a swap): cancelled on old and sent to new in
-- arrival order (old's answer still counts if it comes first). Returns how many moved.
function Ledger:move_repeatable(old, new)
  self:take_lane()
  local moved = {}
  for _, e in pairs(self.pending) do
    if e.owner == old and e.repeatable then moved[#moved + 1] = e end
  end
  table.sort(moved, by_seq)
  for _, e in ipairs(moved) do
    old:send(wire.cancel_line(e.id, "moved to a new MCP server"))
    e.prev, e.owner = old, new
    new:send(e.line)
  end
  return #moved
end

-- Sends child, the server that just took over, what waited for a ready one, in order.
function Ledger:flush(child)
  local waiting = self.waiting
  self.waiting = {}
  for _, item in ipairs(waiting) do
    if item.entry then
      if not item.entry.done then self:dispatch(item.entry, child) end
    elseif item.receipt then
      self:send_receipt(item.receipt)
    else
      child:send(item.line)
    end
  end
end

-- Server child is gone; role says what it was: "stopping" (the launcher stops), "active" (a
-- crash), "candidate" (a start that failed) or "retired" (a replaced one); how: how it ended.
-- What it owned fails, or after a crash its repeatable requests wait for the next server behind
-- the receipts it was sent (it may not have passed them on); a retired one's receipts go again
-- to the active server.
function Ledger:server_gone(child, role, how)
  self:take_lane()
  local receipts = self.receipts_sent[child] or {}
  self.receipts_sent[child] = nil
  for _, e in pairs(self.pending) do
    if e.prev == child then e.prev = nil end
  end
  if role == "stopping" then
    self:fail_owned(child, function(e)
      return e.label .. ": the MCP server stopped before answering (the launcher is shutting down)"
    end)
  elseif role == "active" then
    self:requeue(child, receipts, how)
  elseif role == "retired" then
    for _, r in ipairs(receipts) do self:send_receipt(r) end
    self:fail_owned(child, function(e) return restart_message(e, "the replaced server exited: " .. how) end)
  end
end

-- After a crash of the active server child: its repeatable requests wait for the next server, behind
-- receipts and ahead of what waited already; the others fail.
function Ledger:requeue(child, receipts, how)
  local moved = {}
  for _, e in pairs(self.pending) do
    if e.owner == child then
      e.owner = nil
      if e.repeatable then
        moved[#moved + 1] = e
      else
        self:fail(e, restart_message(e, "it exited: " .. how), { reason = "mcp_server_restarted" })
      end
    end
  end
  table.sort(moved, by_seq)
  local waiting = {}
  for _, r in ipairs(receipts) do waiting[#waiting + 1] = { receipt = r } end
  for _, e in ipairs(moved) do waiting[#waiting + 1] = { entry = e } end
  for _, item in ipairs(self.waiting) do waiting[#waiting + 1] = item end
  self.waiting = waiting
  if #moved > 0 then log.info("%d request(s) will be sent again to the next server", #moved) end
end

-- ---- receipts ----

-- Reports the receipt of entry's answer: confirmed (the host's pipe took it) or lost (the host had
-- cancelled the request). agentd holds the answer until it hears this and gives a lost one again
-- (agentd/receipts.lua). It goes out right behind the answer (a launcher killed in between makes
-- agentd give the answer twice; the window is two writes wide). On the wire it is
-- `$/rmcp/answered {id, delivered, thread_id?}`, as every version writes it.
function Ledger:report(entry, confirmed)
  local line
  self:note_receipt_key(entry.key)
  if math.type(entry.id) == "integer" and entry.thread == nil then
    line = '{"jsonrpc":"2.0","method":"$/rmcp/answered","params":{"id":' .. entry.id .. ',"delivered":'
      .. tostring(confirmed == true) .. "}}"
  else
    line = json.encode({ jsonrpc = "2.0", method = "$/rmcp/answered",
                         params = { id = entry.id, delivered = confirmed, thread_id = entry.thread } })
  end
  self:send_receipt({ key = entry.key, line = line })
end

-- Keeps the highest integer key a receipt was made for (or waits for a flush for): a request with
-- a higher id (hosts count up) has no receipt to forget (forget_receipts).
function Ledger:note_receipt_key(key)
  if math.type(key) == "integer" and key > self.top_receipt_key then self.top_receipt_key = key end
end

-- entry's result waits in our queue to the host: its receipt is made once that is flushed.
function Ledger:wait_flush(entry)
  self:note_receipt_key(entry.key)
  self.unflushed[#self.unflushed + 1] = entry
end

-- Writes a server's answer (kind "result" or "error") to entry to the host. A receipt request's
-- result is confirmed once the host's pipe took all of it: at once, or when our queue to the host
-- is flushed (a launcher killed with it still queued would lose what agentd let go); one that
-- cannot be written at all is lost.
function Ledger:relay(entry, line, kind)
  local queued = self.send_host(line)
  if entry.receipt and kind == "result" then self:confirm_taken(entry, queued) end
end

-- The host's pipe took everything we queued for it: the answers waiting in the queue are confirmed.
function Ledger:host_flushed()
  local waiting = self.unflushed
  self.unflushed = {}
  for _, entry in ipairs(waiting) do self:report(entry, true) end
end

-- Writes receipt r to the active server, whichever server answered: the host's next request goes
-- there too, after it. With none ready it waits for the next one, ahead of the requests sent
-- again. The last RECEIPTS_RESENT a server was sent go again the same way when it dies.
function Ledger:send_receipt(r)
  local child = self.active()
  if not child or child.exited or child.stdin_closed then
    self.waiting[#self.waiting + 1] = { receipt = r }
    return
  end
  child:send(r.line)
  local sent = self.receipts_sent[child] or {}
  self.receipts_sent[child] = sent
  sent[#sent + 1] = r
  if #sent > RECEIPTS_RESENT then table.remove(sent, 1) end
end

-- Drops the receipts of host request key sent to servers, waiting for one, or waiting for our
-- queue to the host to flush (the host sends the id again: an old receipt must not confirm the
-- new request's answer).
function Ledger:forget_receipts(key)
  if math.type(key) == "integer" and key > self.top_receipt_key then return end
  local function drop(list, receipt_of)
    for i = #list, 1, -1 do
      local r = receipt_of(list[i])
      if r and r.key == key then table.remove(list, i) end
    end
  end
  for _, sent in pairs(self.receipts_sent) do drop(sent, function(r) return r end) end
  drop(self.waiting, function(item) return item.receipt end)
  drop(self.unflushed, function(entry) return entry end)
end

-- Remembers a receipt request the host cancelled while its server had it, so a late answer is
-- reported lost.
function Ledger:remember_cancelled(entry)
  self.cancelled[entry.key] = entry
  local order = self.cancelled_order
  order[#order + 1] = entry.key
  if #order > CANCELLED_KEPT then
    self.cancelled[table.remove(order, 1)] = nil -- its server never answered it
  end
end

return M
