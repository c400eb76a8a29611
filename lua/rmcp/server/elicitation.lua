-- The elicitation bridge: a permission request or agent question for one of this orchestrator's
-- sessions becomes an MCP `elicitation/create` form (one single-select field of the offered options)
-- when the client declared form elicitation. Accept answers it through agentd; decline, cancel or an
-- error leaves it pending, still reported by watch/poll (dismissal is not a rejection).
-- Open forms live in server.elicitations (this module holds no state).
local json = require "rmcp.lib.json"
local log = require "rmcp.lib.log"

local M = {}

-- True when the client declared form-mode elicitation (an empty object means form, 2025-06-18 style).
function M.supported(client_caps)
  local el = type(client_caps) == "table" and client_caps.elicitation or nil
  if type(el) ~= "table" then return false end
  return el.form ~= nil or el.url == nil
end

-- Short JSON of a tool call's arguments for the form text.
local function args_preview(raw)
  if raw == nil then return nil end
  local text = json.encode(raw) or ""
  if #text > 600 then text = text:sub(1, 600) .. "…" end
  return text
end

-- The message shown above the form.
local function message_for(ev, pr)
  local tc = type(pr.tool_call) == "table" and pr.tool_call or {}
  if pr.kind == "question" then
    local q = tc.title
    if type(tc.rawInput) == "table" and type(tc.rawInput.question) == "string" then q = tc.rawInput.question end
    return string.format("Reasonix agent %s asks: %s", tostring(ev.session_id), tostring(q or "(question)"))
  end
  local text = string.format("Reasonix agent %s asks permission to run: %s", tostring(ev.session_id),
    tostring(tc.title or tc.kind or "a tool"))
  local preview = args_preview(tc.rawInput)
  if preview then text = text .. "\nArguments: " .. preview end
  return text
end

-- The requestedSchema: one required string field whose values are the option ids.
local function schema_for(pr, protocol_version)
  local field = { type = "string", title = pr.kind == "question" and "Answer" or "Decision" }
  local ids, names, one_of = json.array(), json.array(), json.array()
  for _, o in ipairs(pr.options or {}) do
    if type(o) == "table" and type(o.optionId) == "string" then
      ids[#ids + 1] = o.optionId
      names[#names + 1] = tostring(o.name or o.optionId)
      one_of[#one_of + 1] = { const = o.optionId, title = tostring(o.name or o.optionId) }
    end
  end
  if #ids == 0 then return nil end
  if protocol_version >= "2025-11-25" then
    field.oneOf = one_of
  else
    field.enum, field.enumNames = ids, names
  end
  return { type = "object", properties = { option = field }, required = json.array({ "option" }) }
end

-- Tells agentd whether a person is being asked decision request_id of session sid in the host's
-- form (open), or that the form closed without an answer: the decision is the orchestrator's again.
local function tell_asking(server, orch, sid, request_id, open)
  server:agentd_request("asking", { session_id = sid, request_id = request_id, open = open }, function(_, err)
    if err then log.info("elicitation: agentd did not take the form's state: %s", tostring(err.message or err)) end
  end, orch)
end

-- Key of one decision: a session's request.
local function key_of(session_id, request_id)
  return tostring(session_id) .. "#" .. tostring(request_id)
end

-- Opens a form for a permission_request agent_event (once per request); answers it on accept.
local function open(server, ev, orch)
  local pr = ev.permission_request
  local key = key_of(ev.session_id, pr.request_id)
  if server.elicitations[key] then return end
  local requested = schema_for(pr, server.protocol_version)
  if not requested then
    log.warn("elicitation: session %s request %s has no options; left for watch/poll", tostring(ev.session_id), tostring(pr.request_id))
    return tell_asking(server, orch, ev.session_id, pr.request_id, false)
  end
  local params = { message = message_for(ev, pr), requestedSchema = requested }
  if server.protocol_version >= "2025-11-25" then params.mode = "form" end
  local entry = { session_id = ev.session_id, request_id = pr.request_id }
  server.elicitations[key] = entry
  log.info("elicitation: asking the client about session %s request %s (%s)", tostring(ev.session_id),
    tostring(pr.request_id), tostring(pr.kind or "permission"))
  tell_asking(server, orch, ev.session_id, pr.request_id, true)
  entry.mcp_id = server.peer:request("elicitation/create", params, function(result, err)
    server.elicitations[key] = nil
    if entry.withdrawn then return end
    if err then
      log.warn("elicitation: client error for session %s request %s: %s; left pending for watch/poll",
        tostring(ev.session_id), tostring(pr.request_id), tostring(err.message or err))
      return tell_asking(server, orch, ev.session_id, pr.request_id, false)
    end
    local action = type(result) == "table" and result.action or nil
    local option = action == "accept" and type(result.content) == "table" and result.content.option or nil
    if type(option) ~= "string" then
      log.info("elicitation: client answered %s for session %s request %s; left pending for watch/poll",
        tostring(action), tostring(ev.session_id), tostring(pr.request_id))
      return tell_asking(server, orch, ev.session_id, pr.request_id, false)
    end
    server:agentd_request("respond_permission",
      { session_id = ev.session_id, option_id = option, request_id = pr.request_id },
      function(res, rerr)
        if rerr then
          log.warn("elicitation: answering session %s request %s with %s failed: %s", tostring(ev.session_id),
            tostring(pr.request_id), option, tostring(rerr.message or rerr))
          server:log_message("warning", { text = string.format(
            "Could not pass your answer %s to agent %s: %s. Answer with reasonix_respond_permission.",
            option, tostring(ev.session_id), tostring(rerr.message or rerr)) })
        else
          log.info("elicitation: session %s request %s answered %s (status %s)", tostring(ev.session_id),
            tostring(pr.request_id), option, tostring(type(res) == "table" and res.status))
        end
      end, orch)
  end)
end

-- Withdraws open forms of a session whose turn ended or whose process died (the request is gone).
local function withdraw(server, session_id, why)
  for key, entry in pairs(server.elicitations) do
    if entry.session_id == session_id and entry.mcp_id then
      entry.withdrawn = true
      server.elicitations[key] = nil
      server.peer:forget(entry.mcp_id)
      server:notify("notifications/cancelled", { requestId = entry.mcp_id, reason = why })
      log.info("elicitation: withdrew the form for session %s request %s (%s)", tostring(session_id),
        tostring(entry.request_id), why)
    end
  end
end

-- Reacts to an agent_event: opens a form for a new decision, withdraws forms that went stale.
function M.agent_event(server, ev, orch)
  if type(ev) ~= "table" then return end
  if ev.event == "permission_request" and type(ev.permission_request) == "table" then
    if not M.supported(server.client_caps) then return end
    if not server:ready_for_requests() then
      log.info("elicitation: session %s decision not bridged (client not initialized)", tostring(ev.session_id))
      return tell_asking(server, orch, ev.session_id, ev.permission_request.request_id, false)
    end
    open(server, ev, orch)
  elseif ev.event == "turn_end" or ev.event == "process_exited" then
    withdraw(server, ev.session_id, "the agent's turn ended (" .. tostring(ev.event) .. ")")
  end
end

return M
