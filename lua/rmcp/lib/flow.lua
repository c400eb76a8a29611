-- Back-pressure for a reader: while its condition says the peer is behind (replies it has not read
-- piling up, too many of its requests in flight), the reader is paused, so a peer that does not
-- read cannot make this process hold work without end; once the condition clears (the caller
-- reports each chance: a drain, a request settled) it reads again. One gate per reader.
local log = require "rmcp.lib.log"
local HIGH_WATER = require("rmcp.channel").HIGH_WATER

local M = {}

local Gate = {}
Gate.__index = Gate

-- A gate whose behind() returns why the reader must wait (a short text), or nil; name is for the
-- log. Set gate.reader before the first check.
function M.gate(name, behind)
  return setmetatable({ name = name, behind = behind, reader = nil, held = false }, Gate)
end

-- Why the written channel w is behind: more than the channel high-water mark unread by the peer
-- (its on_drain fires once it is back under), or nil.
function M.unread(w)
  if w and not w:is_closed() and w:queued() >= HIGH_WATER then
    return string.format("%d bytes written are unread by the peer", w:queued())
  end
  return nil
end

-- After the reader's line was handled: pauses the reader when the peer is behind.
function Gate:check()
  if self.held or not self.reader or self.reader:is_closed() then return end
  local why = self.behind()
  if not why then return end
  self.held = true
  self.reader:pause()
  log.warn("%s: %s; not reading until that clears", self.name, why)
end

-- Something cleared (a drain, a settled request): reads again once the peer is no longer behind.
function Gate:released()
  if not self.held or not self.reader or self.reader:is_closed() or self.behind() then return end
  self.held = false
  self.reader:resume()
  log.info("%s: reading again", self.name)
end

return M
