-- Relays agentd's agent_event pushes to the MCP host as the diagnostic `reasonix/agent_event`
-- notification plus a standard `notifications/message`, and logs every relay so a host that drops
-- them can be told apart from a server that never sent them.
local log = require "rmcp.lib.log"

local M = {}

-- The fields of an agent_event that go on the wire, in the spec's shape.
local FIELDS = { "session_id", "event", "status", "stop_reason", "transcript_path", "note", "error_text",
                 "permission_request" }

-- MCP log level for an event: errors and crashes stand out, decisions are notices, and routine
-- lifecycle (a turn's end, a deliberate stop) is info, below the default level (server/mcp.lua).
local function level_of(ev)
  if ev.error_text then return "error" end
  if ev.event == "permission_request" then return "notice" end
  return "info"
end

-- A one-line human summary of an event (the notifications/message text).
local function summary(ev)
  local parts = { string.format("session %s: %s", tostring(ev.session_id), tostring(ev.event)) }
  if ev.status then parts[#parts + 1] = "status=" .. tostring(ev.status) end
  if ev.stop_reason then parts[#parts + 1] = "stop_reason=" .. tostring(ev.stop_reason) end
  local pr = ev.permission_request
  if type(pr) == "table" and type(pr.tool_call) == "table" and pr.tool_call.title then
    parts[#parts + 1] = string.format("%s: %s", pr.kind or "permission", tostring(pr.tool_call.title))
  end
  if ev.error_text then parts[#parts + 1] = "error: " .. tostring(ev.error_text):sub(1, 300) end
  if ev.note then parts[#parts + 1] = tostring(ev.note) end
  return table.concat(parts, " ")
end

-- Sends one agent_event to the host (server: the mcp Server) and logs what was sent.
function M.agent_event(server, ev)
  if type(ev) ~= "table" then return end
  local params = {}
  for _, k in ipairs(FIELDS) do params[k] = ev[k] end
  if not server:ready_for_notifications() then
    log.info("relay agent_event session=%s event=%s: not sent (MCP session not initialized)",
      tostring(ev.session_id), tostring(ev.event))
    return
  end
  local ok, err = server:notify("reasonix/agent_event", params)
  local level = level_of(ev)
  -- (the summary is only made for a message that goes out: routine events are below the default level)
  local sent_msg = server:logs(level) and server:log_message(level, { text = summary(ev), event = params })
  log.info("relay agent_event session=%s event=%s status=%s -> reasonix/agent_event %s, notifications/message(%s) %s",
    tostring(ev.session_id), tostring(ev.event), tostring(ev.status),
    ok and "sent" or ("failed: " .. tostring(err)), level, sent_msg and "sent" or "below client log level")
end

return M
