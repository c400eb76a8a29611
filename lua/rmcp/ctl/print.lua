-- How `reasonix-mcp ctl` shows a tool's result to a person (--json prints it as the tool returns it):
-- a readable form per verb where one helps, else the result's fields, one per line.
local json = require "rmcp.lib.json"

local M = {}

-- Pads or cuts s to width w for a table column.
local function col(s, w)
  s = tostring(s == nil and "-" or s):gsub("%s+", " ")
  if #s > w then return s:sub(1, w - 1) .. "…" end
  return s .. string.rep(" ", w - #s)
end

-- A time as local ISO text (or "-").
local function when(t)
  return t and os.date("%Y-%m-%d %H:%M", math.floor(t)) or "-"
end

-- The sessions of a list result as a table.
local function sessions(r)
  local rows = r.sessions or {}
  if #rows == 0 then print("no sessions") end
  if #rows > 0 then
    print(col("SESSION", 16) .. " " .. col("STATUS", 18) .. " " .. col("STOP", 12) .. " " .. col("CWD", 30) .. " TASK")
  end
  for _, s in ipairs(rows) do
    local status = s.status .. (s.pending_decision and " (decision)" or "")
    print(col(s.session_id, 16) .. " " .. col(status, 18) .. " " .. col(s.stop_reason, 12) .. " " .. col(s.cwd, 30) .. " " .. tostring(s.task))
  end
  if r.hidden then print(string.format("(%d older finished session(s) not shown: --all)", r.hidden)) end
  if r.next_cursor then print("(more: --cursor " .. r.next_cursor .. ")") end
end

-- One session's poll or watch result.
local function session_result(sid, r)
  print(string.format("%s  %s%s", sid, tostring(r.status), r.stop_reason and ("  (" .. r.stop_reason .. ")") or ""))
  if r.current_work then print("  working on: " .. tostring(r.current_work.title or r.current_work.content)) end
  for _, e in ipairs(r.plan or {}) do
    print(string.format("  [%s] %s", e.status == "completed" and "x" or e.status == "in_progress" and ">" or " ", tostring(e.content)))
  end
  if r.permission_request then
    local pr = r.permission_request
    print(string.format("  decision #%s (%s): %s", tostring(pr.request_id), tostring(pr.kind), tostring(pr.tool_call and pr.tool_call.title)))
    for _, o in ipairs(pr.options or {}) do print(string.format("    %s  %s", tostring(o.optionId), tostring(o.name))) end
  end
  if r.error_text then print("  error: " .. r.error_text) end
  if r.changes then
    local c = r.changes
    print(string.format("  changes: %d file(s) +%d -%d, %d commit(s), %d untracked", c.files, c.insertions, c.deletions, c.commits, c.untracked))
  end
  local msg = r.message or r.text
  if msg and msg ~= "" then print("  " .. msg:gsub("\n", "\n  ")) end
end

-- The routines of a routine list result, with their latest runs.
local function routines(r)
  if #r.routines == 0 then print("no routines") end
  for _, x in ipairs(r.routines) do
    print(string.format("%s  %s  [%s]%s  next %s%s  owner %s", x.routine_id, x.name, x.schedule,
      x.enabled and "" or " paused", when(x.next_due), x.queued > 0 and ("  queued " .. x.queued) or "", tostring(x.owner)))
    for i, run in ipairs(x.runs) do
      if i > 5 then break end
      print(string.format("    %-16s %-9s %-17s %s%s", run.run_id, run.trigger, run.status, when(run.started_at or run.ended_at),
        run.error and ("  " .. run.error) or ""))
      if run.permission_request then
        local pr = run.permission_request
        print(string.format("      waits for an answer (%s): %s — ctl routine respond %s OPTION", tostring(pr.kind),
          tostring(pr.tool_call and pr.tool_call.title), x.routine_id))
        for _, o in ipairs(pr.options or {}) do print(string.format("        %s  %s", tostring(o.optionId), tostring(o.name))) end
      end
      if run.result then print("      " .. run.result:gsub("\n", "\n      ")) end
    end
    if x.prompt then print("  prompt: " .. x.prompt:gsub("\n", "\n          ")) end
  end
  print(string.format("%d of at most %d runs at work", r.active_runs, r.concurrency))
end

-- A diff result: the branch, its commits and the stat or patch.
local function diff(r)
  print(string.format("%s on %s (from %s)", tostring(r.session_id), tostring(r.branch), tostring(r.base):sub(1, 12)))
  for _, c in ipairs(r.commits or {}) do print("  commit " .. c.sha:sub(1, 12) .. " " .. c.subject) end
  io.stdout:write(r.stat or r.diff or "", r.truncated and "\n(cut: --json for the flags, or fewer paths)\n" or "")
end

-- The results[] of a many-agent call (spawn, send, resume with several), one line each.
local function many(r)
  for _, x in ipairs(r.results) do
    print(string.format("%s  %s%s", col(x.session_id or x.name, 16), tostring(x.status or x.delivered or ""),
      x.error and ("  error: " .. x.error) or ""))
  end
end

-- Any other result: its top-level fields, one per line (tables as JSON).
local function fields(r)
  local keys = {}
  for k in pairs(r) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do
    local v = r[k]
    print(string.format("%s: %s", k, type(v) == "table" and json.encode(v) or tostring(v)))
  end
end

-- Prints result r of the call of tool name with args for a person.
function M.result(name, args, r)
  if type(r) ~= "table" then print(tostring(r)); return end
  if name == "reasonix_list" then return sessions(r) end
  if name == "reasonix_poll" then return session_result(args.session_id, r) end
  if name == "reasonix_watch" then
    if r.superseded then print("superseded by a newer watch") end
    if r.timed_out then print("timed out") end
    for sid, res in pairs(r.results or {}) do session_result(sid, res) end
    return
  end
  if name == "reasonix_worktree" and args.action == "diff" then return diff(r) end
  if name == "reasonix_routine" and args.action == "list" then return routines(r) end
  if name == "reasonix_routine" and args.action == "templates" then
    for _, t in ipairs(r.templates) do print(string.format("%-24s %s [%s]\n  %s", t.template_id, t.name, t.schedule, t.description)) end
    return
  end
  if type(r.results) == "table" and r.results[1] then return many(r) end
  fields(r)
end

-- Prints a prune result (ctl's own verb).
function M.prune(r)
  local n = #(r.pruned or {})
  print(string.format("%s %d session(s) (keep %d, older than %g days)%s", r.dry_run and "would prune" or "pruned", n,
    r.keep, r.older_than_days, n > 0 and ":" or ""))
  for _, id in ipairs(r.pruned or {}) do print("  " .. id) end
end

return M
