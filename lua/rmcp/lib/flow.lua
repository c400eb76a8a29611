-- Back-pressure for readers: while a gate's condition says a peer is behind (bytes written to it
-- that it has not read, too many of its requests in flight), the gate's readers are paused, so a
-- peer that does not read cannot make this process hold work without end; once the condition
-- clears (the caller reports each chance: a drain, a request settled) they read again. A gate may
-- hold several readers (every pipe whose lines would be written to the same slow peer). The bounds
-- themselves are stated in config.lua ("Back-pressure").
local log = require "rmcp.lib.log"
local HIGH_WATER = require("rmcp.channel").HIGH_WATER

local M = {}

-- Bytes written to a peer and not yet taken by it past which that peer is behind: the channel's
-- high-water mark (1 MiB), whose on_drain tells when it is back under.
M.UNREAD = HIGH_WATER

---@class FlowGate                    readers paused together while a peer is behind
---@field name string                 for the log
---@field behind fun(): string?       why the readers must wait, or nil
---@field readers table<userdata, boolean> the channels it pauses (closed ones are dropped)
---@field held boolean                the readers are paused
---@field off boolean?                disable(): never pauses again
local Gate = {}
Gate.__index = Gate

-- A gate whose behind() returns why its readers must wait (a short text), or nil; name is for the
-- log. Add the readers with gate:add.
---@return FlowGate
function M.gate(name, behind)
  return setmetatable({ name = name, behind = behind, readers = {}, held = false }, Gate)
end

-- Why the written channel w is behind: at least UNREAD bytes unread by the peer (its on_drain
-- fires once it is back under), or nil (a closed one has none queued). whom names the peer in the text.
function M.unread(w, whom)
  if w and w:queued() >= M.UNREAD then
    return string.format("%d bytes written are unread by %s", w:queued(), whom or "the peer")
  end
  return nil
end

-- Why n requests in flight are too many (at least max), or nil; what names them in the text.
function M.too_many(n, max, what)
  if n >= max then return string.format("%d %s in flight", n, what or "requests") end
  return nil
end

-- Pauses or resumes every open reader; forgets the closed ones.
local function set_paused(self, paused)
  for r in pairs(self.readers) do
    if r:is_closed() then self.readers[r] = nil
    elseif paused then r:pause()
    else r:resume() end
  end
end

-- Adds reader (a channel) to the gate: paused at once while the gate is held.
function Gate:add(reader)
  self.readers[reader] = true
  if self.held and not reader:is_closed() then reader:pause() end
end

-- Takes reader out of the gate (it is not resumed).
function Gate:remove(reader)
  self.readers[reader] = nil
end

-- After a reader's line was handled: pauses the readers when the peer is behind.
function Gate:check()
  if self.held or self.off then return end
  local why = self.behind()
  if not why then return end
  self.held = true
  set_paused(self, true)
  log.warn("%s: %s; not reading until that clears", self.name, why)
end

-- Something cleared (a drain, a settled request): reads again once the peer is no longer behind.
function Gate:released()
  if not self.held or (not self.off and self.behind()) then return end
  self.held = false
  set_paused(self, false)
  log.info("%s: reading again", self.name)
end

-- Never pauses again, and resumes its readers now (a process that stops reads its pipes to the end).
function Gate:disable()
  self.off = true
  self:released()
end

return M
