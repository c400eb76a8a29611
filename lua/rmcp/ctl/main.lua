-- `reasonix-mcp ctl`: look at and steer the fleet from a shell, over the same agentd API the MCP server
-- uses. Readable tables by default, --json for scripts. Sessions are scoped to --orchestrator
-- (default $REASONIX_MCP_ORCHESTRATOR_ID, else "cli").
local uv = require "luv"
local sys = require "rmcp.sys"
local json = require "rmcp.lib.json"
local log = require "rmcp.lib.log"
local async = require "rmcp.lib.async"
local config = require "rmcp.config"
local client = require "rmcp.agentd_client"

local M = {}

M.usage = [[
usage: reasonix-mcp ctl [--orchestrator ID] [--json] COMMAND ...
  list [--task] [--all]            sessions of the orchestrator (--all: old finished ones too)
  prune [--dry-run] [--older-than DAYS] [--keep N] [--force]
                                   remove finished sessions by the retention rule (or these
                                   values); --force also takes results no watch collected
  poll ID [--detail] [--thought]   what is new since the last poll
  watch ID... [--timeout S]        block until one finishes, needs a decision or dies
  send ID MESSAGE [--expect steer|new_turn]
  respond ID OPTION                answer a pending permission or question ("cancel" cancels)
  stop ID                          cancel + close + kill (the session stays, resumable)
  resume ID                        revive a stopped or orphaned session
  transcript ID                    tool calls, files touched, last text
  diff ID [--patch] [PATH...]      an isolate=worktree agent's changes against its base
  worktree ID info|remove [--delete-branch]
                                   its worktree; remove keeps a branch with commits
  log [-n LINES]                   tail of agentd.log
  routine COMMAND ...              routines: list, create, run, stop, respond… (ctl routine help)
  shutdown                         stop agentd and its agents
--orchestrator defaults to $REASONIX_MCP_ORCHESTRATOR_ID, else "cli".
]]

-- Splits argv into flags (with values where the flag takes one) and positional words.
function M.parse(argv)
  local takes = { orchestrator = true, timeout = true, expect = true, n = true, ["older-than"] = true, keep = true }
  for k in pairs(require("rmcp.ctl.routine").value_flags) do takes[k] = true end
  local flags, words = {}, {}
  local i = 1
  while i <= #argv do
    local a = argv[i]
    local name = a:match("^%-%-?([%w_-]+)$")
    if name and a ~= "-" then
      if takes[name] then
        flags[name] = argv[i + 1]
        i = i + 1
      else
        flags[name] = true
      end
    else
      words[#words + 1] = a
    end
    i = i + 1
  end
  return flags, words
end

-- Pads or cuts s to width w for a table column.
local function col(s, w)
  s = tostring(s == nil and "-" or s):gsub("%s+", " ")
  if #s > w then return s:sub(1, w - 1) .. "…" end
  return s .. string.rep(" ", w - #s)
end

-- Prints the list result as a table.
local function print_list(r)
  local rows = r.sessions or {}
  if #rows == 0 then print("no sessions"); return end
  print(col("SESSION", 16) .. " " .. col("STATUS", 18) .. " " .. col("STOP", 12) .. " " .. col("CWD", 30) .. " TASK")
  for _, s in ipairs(rows) do
    local status = s.status .. (s.pending_decision and " (decision)" or "")
    print(col(s.session_id, 16) .. " " .. col(status, 18) .. " " .. col(s.stop_reason, 12) .. " " .. col(s.cwd, 30) .. " " .. tostring(s.task))
  end
  if r.hidden then print(string.format("(%d older finished session(s) not shown: --all)", r.hidden)) end
  if r.next_cursor then print("(more than 500: use --json and the API's cursor)") end
end

-- Prints the prune result.
local function print_prune(r)
  local n = #(r.pruned or {})
  print(string.format("%s %d session(s) (keep %d, older than %g days)%s", r.dry_run and "would prune" or "pruned", n,
    r.keep, r.older_than_days, n > 0 and ":" or ""))
  for _, id in ipairs(r.pruned or {}) do print("  " .. id) end
end

-- Prints a poll/watch/compact result readably.
local function print_result(sid, r)
  print(string.format("%s  %s%s", sid, tostring(r.status), r.stop_reason and ("  (" .. r.stop_reason .. ")") or ""))
  if r.current_work then print("  working on: " .. tostring(r.current_work.title or r.current_work.content)) end
  for _, e in ipairs(r.plan or {}) do print(string.format("  [%s] %s", e.status == "completed" and "x" or e.status == "in_progress" and ">" or " ", tostring(e.content))) end
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

-- Prints the last n lines of the daemon log.
local function print_log(n)
  local lines = log.tail(config.paths().log, n)
  if not lines then print("no log at " .. config.paths().log); return 1 end
  for _, l in ipairs(lines) do print(l) end
  return 0
end

-- Runs one command against agentd; returns the exit code (coroutine).
function M.run(argv)
  local flags, words = M.parse(argv)
  local cmd = table.remove(words, 1)
  if not cmd or cmd == "help" or flags.help or flags.h then io.stdout:write(M.usage); return cmd and 0 or 2 end
  if cmd == "log" then return print_log(tonumber(flags.n) or 50) end
  if cmd == "routine" and (words[1] == nil or words[1] == "help") then io.stdout:write(require("rmcp.ctl.routine").usage); return words[1] and 0 or 2 end
  local c = client.new({ orchestrator_id = flags.orchestrator, project_dir = uv.cwd(),
                         client_info = { name = "reasonix-mcp ctl", version = require("rmcp.host").version },
                         autostart = cmd ~= "shutdown" })
  local ok, err = c:wait_connected()
  if not ok then io.stderr:write("ctl: ", err, "\n"); return 1 end
  if cmd == "routine" then
    local code = require("rmcp.ctl.routine").run(c, flags, words)
    c:close()
    return code
  end
  local method, params = cmd, {}
  local id = words[1]
  if cmd == "list" then params = { include_task = flags.task == true, all = flags.all == true, limit = 500 }
  elseif cmd == "prune" then
    params = { dry_run = flags["dry-run"] == true, force = flags.force == true,
               older_than_days = tonumber(flags["older-than"]), keep = math.tointeger(tonumber(flags.keep)) }
  elseif cmd == "poll" then params = { session_id = id, detail = flags.detail == true, include_thought = flags.thought == true }
  elseif cmd == "watch" then params = { session_ids = words, timeout = tonumber(flags.timeout) }
  elseif cmd == "send" then params = { session_id = id, message = words[2], expect = flags.expect }
  elseif cmd == "respond" then method, params = "respond_permission", { session_id = id, option_id = words[2] }
  elseif cmd == "stop" or cmd == "resume" or cmd == "transcript" then params = { session_id = id }
  elseif cmd == "diff" then
    params = { session_id = id, stat = flags.patch ~= true, paths = #words > 1 and { table.unpack(words, 2) } or nil }
  elseif cmd == "worktree" then params = { session_id = id, action = words[2], delete_branch = flags["delete-branch"] == true }
  elseif cmd ~= "shutdown" then
    io.stderr:write("ctl: unknown command '", cmd, "'\n", M.usage)
    return 2
  end
  local r, rerr = c:call(method, params)
  c:close()
  if not r then io.stderr:write("ctl: ", tostring(rerr.message), "\n"); return 1 end
  if flags.json then print(json.encode(r)); return 0 end
  if cmd == "list" then print_list(r)
  elseif cmd == "prune" then print_prune(r)
  elseif cmd == "poll" then print_result(id, r)
  elseif cmd == "diff" then
    print(string.format("%s on %s (from %s)", id, tostring(r.branch), tostring(r.base):sub(1, 12)))
    for _, c in ipairs(r.commits or {}) do print("  commit " .. c.sha:sub(1, 12) .. " " .. c.subject) end
    io.stdout:write(r.stat or r.diff or "", r.truncated and "\n(cut: --json for the flags, or fewer paths)\n" or "")
  elseif cmd == "watch" then
    if r.superseded then print("superseded by a newer watch") end
    if r.timed_out then print("timed out") end
    for sid, res in pairs(r.results or {}) do print_result(sid, res) end
  else print(json.encode(r)) end
  return 0
end

-- Entry from rmcp.main: runs the command and exits with its code.
function M.main(argv)
  async.run(function()
    sys.stop(M.run(argv) or 0)
  end, function(e)
    io.stderr:write("ctl: ", tostring(e), "\n")
    sys.stop(1)
  end)
end

return M
