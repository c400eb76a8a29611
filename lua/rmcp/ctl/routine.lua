-- `reasonix-mcp ctl routine …`: routines for the person at the shell. The machine's owner sees and
-- manages every routine (all = true); one made here belongs to the ctl orchestrator.
local json = require "rmcp.lib.json"

local M = {}

M.usage = [[
usage: reasonix-mcp ctl [--json] routine COMMAND ...
  list [--prompt] [--results]      every routine: schedule, next run, queue, latest runs
  templates                        the curated templates
  create NAME --prompt TEXT [--schedule S] [--cwd DIR] [--overlap skip|queue]
         [--delegation disabled|allowed|encouraged] [--approval ask|auto|yolo] [--model M]
         [--effort E] [--work-mode W]
  from-template TEMPLATE_ID [--name NAME] [same options as create]
  configure ID [same options as create] [--name NAME]
  pause ID | enable ID             stop or restart its schedule ("run" still works when paused)
  run ID                           trigger now, by its overlap policy
  stop ID                          stop the current run (not the schedule)
  respond ID OPTION                answer the current run's permission request or question
  delete ID                        delete an inactive routine and its run history
S: manual | every 30m | daily 09:00 [Area/City]
]]

-- The flags that take a value (ctl's parser reads them).
M.value_flags = { prompt = true, schedule = true, cwd = true, overlap = true, delegation = true, approval = true,
                  model = true, effort = true, ["work-mode"] = true, name = true }

-- The routine fields the flags give.
local function fields(flags)
  return { prompt = flags.prompt, schedule = flags.schedule, cwd = flags.cwd, overlap = flags.overlap,
           delegation = flags.delegation, tool_approval = flags.approval, model = flags.model, effort = flags.effort,
           work_mode = flags["work-mode"], name = flags.name }
end

-- A time as local ISO text (or "-").
local function when(t)
  return t and os.date("%Y-%m-%d %H:%M", math.floor(t)) or "-"
end

-- Prints routine_list's answer.
local function print_list(r)
  if #r.routines == 0 then print("no routines"); return end
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

-- Runs `routine WORDS…` on connected client c; returns the exit code.
function M.run(c, flags, words)
  local sub = table.remove(words, 1)
  local id = words[1]
  local method, params
  if sub == "list" then method, params = "routine_list", { all = true, include_prompt = flags.prompt == true, include_results = flags.results == true }
  elseif sub == "templates" then method, params = "routine_templates", {}
  elseif sub == "create" then
    method, params = "routine_create", fields(flags)
    params.name = id
  elseif sub == "from-template" then
    method, params = "routine_from_template", fields(flags)
    params.template_id = id
  elseif sub == "configure" then method, params = "routine_configure", fields(flags)
  elseif sub == "pause" or sub == "enable" then method, params = "routine_configure", { enabled = sub == "enable" }
  elseif sub == "run" or sub == "stop" or sub == "delete" then method, params = "routine_" .. sub, {}
  elseif sub == "respond" then method, params = "routine_respond", { option_id = words[2] }
  else
    io.stderr:write(sub and ("ctl: unknown routine command '" .. sub .. "'\n") or "", M.usage)
    return 2
  end
  if sub ~= "list" and sub ~= "templates" and sub ~= "create" and sub ~= "from-template" then
    params.routine_id, params.all = id, true
  end
  local r, err = c:call(method, params)
  if not r then io.stderr:write("ctl: ", tostring(err.message), "\n"); return 1 end
  if flags.json then print(json.encode(r)); return 0 end
  if sub == "list" then print_list(r)
  elseif sub == "templates" then
    for _, t in ipairs(r.templates) do print(string.format("%-24s %s [%s]\n  %s", t.template_id, t.name, t.schedule, t.description)) end
  elseif r.routine_id and r.schedule then
    print(string.format("%s  %s  [%s]%s  next %s", r.routine_id, r.name, r.schedule, r.enabled and "" or " paused", when(r.next_due)))
  else
    print(json.encode(r))
  end
  return 0
end

return M
