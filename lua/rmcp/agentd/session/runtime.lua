-- A session's runtime table (s.rt, never persisted): its fresh shape, and the bounded text buffers
-- it keeps the agent's output in. The shape is declared in init.lua (SessionRuntime).
local caps = require "rmcp.rules.caps"

local M = {}

-- A bounded text accumulator: pieces are joined lazily, and only about the last max bytes are kept
-- (cut = true once text was dropped).
function M.buf_new()
  return { parts = {}, size = 0 }
end

-- Appends text to buffer b, dropping the oldest text once it holds over 1.25 × max (a quarter of
-- slack keeps the re-joins rare without holding twice the cap).
function M.buf_add(b, text, max)
  if text == "" then return end
  local parts = b.parts
  parts[#parts + 1] = text
  b.size = b.size + #text
  if b.size > max + max // 4 then
    local joined = caps.tail(table.concat(parts), max)
    b.parts, b.size, b.cut = { joined }, #joined, true
  end
end

-- The text held in buffer b.
function M.buf_text(b)
  if #b.parts > 1 then b.parts = { table.concat(b.parts) } end
  return b.parts[1] or ""
end

-- Buffer b after what it held was taken: b itself when it held nothing, else a fresh buffer.
function M.buf_emptied(b)
  if b.size == 0 and not b.cut then return b end
  return M.buf_new()
end

local buf_new = M.buf_new

-- Fresh runtime state (never persisted).
function M.new_rt()
  return {
    text = buf_new(), thought = buf_new(), full_text = buf_new(), full_thought = buf_new(), turn_text = buf_new(),
    turn_thought = buf_new(),
    turns = {}, turns_dropped = 0, events = {}, event_t = {}, noncritical = 0, events_overflow = 0,
    plan_rev = 0, plan_seen = 0, error_rev = 0, error_seen = 0,
    tools = {}, active = {}, queued = {}, next_request_id = 0, wait_dirty = false,
    counters = { chunks = 0, tool_calls = 0, turns = 0, steers = 0, prompts = 0, decisions = 0 },
  }
end

return M
