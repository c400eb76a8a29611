-- Transcript: what the agent actually did, rebuilt from our events journal (tool calls with args,
-- files touched, roles, work duration, last text) — independent of reasonix's private storage.
local json = require "rmcp.lib.json"

local M = {}

M.default_max_tool_calls = 100

-- Adds v to the ordered set (list + index) if not there yet.
local function add(set, v)
  if v and v ~= "" and not set.index[v] then
    set.index[v] = true
    set.list[#set.list + 1] = v
  end
end

-- Makes an ordered set.
local function new_set()
  return { list = json.array(), index = {} }
end

-- The path a file tool touched: its absolute location when reported, else the argument.
local function tool_path(call)
  if type(call.locations) == "table" and type(call.locations[1]) == "table" and call.locations[1].path then
    return call.locations[1].path
  end
  return type(call.args) == "table" and call.args.path or nil
end

-- Builds the transcript of session s from its journal records; last_text_now is the session's last
-- turn's text (session.last_text: a parked session holds it on disk), which a later turn end replaces.
function M.build(s, records, max_tool_calls, last_text_now)
  local calls, by_id = {}, {}
  local written, read, bash = new_set(), new_set(), new_set()
  local roles = { user = 0, steer = 0, assistant = 0, tool = 0, decision = 0 }
  local work, turn_start, last_text = 0, nil, last_text_now
  local decisions = json.array()
  for _, rec in ipairs(records) do
    local t = rec.type
    if t == "prompt" then
      if rec.via == "steer" then roles.steer = roles.steer + 1 else roles.user = roles.user + 1 end
      if rec.via ~= "steer" then turn_start = turn_start or rec.t end
    elseif t == "tool_call" then
      local call = { id = rec.id, tool = rec.title and rec.title:match("^(%S+)") or rec.kind, kind = rec.kind,
                     title = rec.title, args = rec.args, status = rec.status, locations = rec.locations }
      if by_id[rec.id] then
        for k, v in pairs(call) do by_id[rec.id][k] = v end
      else
        calls[#calls + 1] = call
        if rec.id then by_id[rec.id] = call end
        roles.tool = roles.tool + 1
      end
    elseif t == "tool_call_update" then
      local call = by_id[rec.id]
      if call then
        call.status = rec.status or call.status
        if rec.result then call.result = rec.result end
      end
    elseif t == "permission_request" then
      roles.decision = roles.decision + 1
    elseif t == "permission_auto" then
      roles.decision = roles.decision + 1
      decisions[#decisions + 1] = { request_id = rec.request_id, kind = rec.kind, title = rec.title,
                                    decision = rec.decision, option_id = rec.option_id, policy = rec.policy,
                                    reason = rec.reason }
    elseif t == "turn_end" then
      roles.assistant = roles.assistant + 1
      if rec.text and rec.text ~= "" then last_text = rec.text end
      if turn_start and rec.t then work = work + (rec.t - turn_start) end
      turn_start = nil
    elseif t == "process_exit" then
      if turn_start and rec.t then work = work + (rec.t - turn_start) end
      turn_start = nil
    end
  end
  for _, call in ipairs(calls) do
    local ok = call.status ~= "failed"
    if call.tool == "write_file" or call.tool == "edit_file" then
      if ok then add(written, tool_path(call)) end
    elseif call.tool == "read_file" then
      add(read, tool_path(call))
    elseif call.tool == "bash" or call.kind == "execute" then
      add(bash, type(call.args) == "table" and call.args.command or call.title)
    end
  end
  local max = max_tool_calls or M.default_max_tool_calls
  local out = json.array()
  for i = math.max(1, #calls - max + 1), #calls do
    local c = calls[i]
    out[#out + 1] = { tool = c.tool, kind = c.kind, title = c.title, args = c.args, status = c.status,
                      tool_call_id = c.id }
  end
  return {
    session_id = s.id,
    status = s.status,
    tool_calls = out,
    tool_calls_total = #calls,
    tool_calls_truncated = #calls > max or nil,
    files = { written = written.list, read = read.list, bash = bash.list },
    roles = roles,
    work_duration_s = math.floor(work * 10 + 0.5) / 10,
    last_text = last_text,
    transcript_path = s.transcript_path,
    policy_decisions = #decisions > 0 and decisions or nil,
  }
end

return M
