-- A session: one agent, its ACP traffic folded into one table, journaled and persisted. This package
-- is the only writer of session state; everything outside it goes through the verbs below.
--   state.lua   the shape, event queue, persist/journal, drain and delivery marks
--   runtime.lua the runtime table's fresh shape (s.rt) and its bounded text buffers
--   restore.lua a session brought back from its file at start (repaired, caught up with its journal)
--   events.lua  what the agent sends: chunks, updates, decisions (and their answers), its exit
--   turns.lua   prompts, steers, forced send, turn end, idle cleanup, stop
--   start.lua   starting the agent and configuring it: command, process, ACP session, options, posture
--   setup.lua   the verbs on the agent process: spawn, resume, adopt (handover), kill all
--   configure.lua  options changed after spawn: now, before the next turn, or at the resume
--   isolate.lua the session's git worktree record: made at spawn, removed on request, recovered at start
--   index.lua   the index of finished sessions a clean shutdown writes, so a start reads no record for them
--   park.lua    a finished session's runtime and long fields held on disk until a verb needs them
--   order.lua   d.sessions' one writer, and each orchestrator's sessions newest first (kept sorted)
--   tally.lua   each orchestrator's parked sessions counted and summed for its lists (kept)
--   sandbox.lua the sandbox its agent starts in: the plan, its private home, its network gate
--   netgate.lua a strict sandbox's way out: the socket agentd lets through what the allowlist names
--   usage.lua   what its agent spends: increments journaled and summed, the budgets that cover it
-- Status: starting → running ⇄ idle, awaiting_decision while a decision is pending, exited
-- (tombstone), orphaned (was live when the daemon died). Sessions live in d.sessions.

---@class Session                  persisted fields and their types: agentd/store.lua (M.field_types)
---@field id string                "rx-" and 12 hex digits
---@field owner string             the orchestrator that spawned it (ownership.lua checks callers)
---@field project_dir string?      the orchestrator's project dir at spawn
---@field cwd string               where the agent runs (inside project_dir)
---@field task string              the first prompt, before the status contract
---@field model string?            effective model (as the agent reports it)
---@field effort string?
---@field tool_approval string?    ask | auto | yolo
---@field work_mode string?
---@field keep_alive boolean?      never cleaned up when idle
---@field idle_timeout number?     seconds idle before cleanup (rules/cleanup.lua)
---@field acp_session_id string?   the agent's own session id (session/resume takes it)
---@field status string            starting | running | idle | awaiting_decision | exited | orphaned
---@field stop_reason string?      of the last turn
---@field exit_reason string?      why the agent is gone (stopped, cleaned_up, crashed, daemon_*)
---@field error_text string?
---@field contract_sent boolean    the status contract went out with a prompt
---@field created_at number
---@field updated_at number
---@field turns_total integer
---@field turns_drained integer?   turns_total at the last poll/watch drain (turns after it are rebuilt from the journal at restore)
---@field damaged string?          why the file was not taken as it was (repaired fields, or unreadable)
---@field unreadable string?       (not persisted) its file could not be read: never written, never resumed
---@field last_text string?        the last turn's text (last 20000 bytes)
---@field plan table?              the agent's plan entries {content, status}
---@field posture table?           sandbox posture (posture.lua)
---@field skipped_options table
---@field warnings table
---@field terminal_pending boolean? a terminal state not yet delivered by a watch or poll
---@field transcript_path string   the journal (<id>.events.jsonl)
---@field work_seconds number?     time spent in turns
---@field queued_config table?     options configured for the next turn or the resume (configure.lua)
---@field interrupted_turn boolean? a turn was cut short by the daemon's death (resume_fleet continues it)
---@field agent_profile string?    the name of its agent's profile (rules/profiles.lua)
---@field agent string?            the agent it runs (spawn's `agent`: reasonix, a built-in ACP agent, a policy's; rules/agents.lua)
---@field agent_info table?        the agent's own {name, version}, from its initialize answer
---@field routine table?           the routine run it is: {id, run_id, marker} (agentd/routines.lua)
---@field on_behalf_of string?     a routine run's: the orchestrator that made the routine
---@field worktree SessionWorktree? its git worktree (isolate=worktree; isolate.lua)
---@field sandbox table?           the sandbox its agent runs in: {level, read, write, hosts, fallback} (rules/sandbox.lua)
---@field changes table?           what its agent changed there at the last turn's end (agentd/worktree.lua changes)
---@field usage table?             what it spent (rules/usage.lua figure, plus unreported: turns that reported none; usage.lua)
---@field usage_seen table?        its agent's last cumulative figure (a reasonix figure, or {acp_cost}): the next increment is counted from it
---@field budget table?            its budget (rules/usage.lua budget_spec)
---@field daily_budget table?      its orchestrator's daily budget, from the spawner's environment
---@field fleet table?             the fleet it was spawned in: {id, name?, budget?}
---@field budget_note string?      why a budget stopped it (exit_reason "budget")
---@field undelivered string[]?    messages sent to it that a budget stop kept: its resume delivers them
---@field forecast table?          its branch's last forecast: {target, ahead, behind, clean, conflicts?, collides_with?, at}
---@field integration table?       where its branch's integration is: {id, state, target, note?, files?, commit?} (agentd/integrate/queue.lua)
---@field pending SessionDecision[] decisions awaiting respond_permission (runtime only)
---@field rt SessionRuntime?       runtime-only state, never persisted (nil while parked)
---@field parked string?           (not persisted) "file" or "record": where a parked finished session holds its runtime and park.PARKED fields (park.lua)
---@field list_rev integer?       (not persisted) the list generation at its last change of a field a list reads (revision.lua)

---@class SessionWorktree           a session's git worktree (agentd/worktree.lua makes it, isolate.lua records it)
---@field state string             creating (saved before git runs) | ready | removed
---@field path string              the worktree, under the managed directory
---@field branch string            its branch, named after the session
---@field base string              the commit it started from
---@field repo string              the repository it belongs to (top level of the spawn's cwd)
---@field rel string               the spawn's cwd relative to repo ("" at the top)
---@field head string?             repo's branch at the start (nil: HEAD was detached)

---@class SessionDecision
---@field request_id integer       ours, per session
---@field kind string              permission | question
---@field tool_call table
---@field options table
---@field reply function           answers the agent's request
---@field delivered boolean        a watch reported it
---@field delivered_at number?     when a watch last reported it (store.now())
---@field seen_by table<integer, boolean>? the connections (ids) whose watch reported it: it wakes each once
---@field answer_failed boolean?   an answer to it failed (or the person dismissed its form) since it was last reported
---@field asking string?           how a person is being asked it now ("elicitation": the host's form), or nil

---@class SessionRuntime
---@field agent AcpAgent?          the live agent
---@field netgate table?           a strict sandbox's network gate, while its agent runs (sandbox.lua)
---@field profile table?           the profile it was started with (rules/profiles.lua; state.profile reads it)
---@field setting_up boolean?      the agent is being started (start.lua)
---@field stopping string?         the exit_reason a requested stop will give
---@field resuming boolean?        a resume is starting the agent
---@field prompt_active boolean    a session/prompt is running
---@field prompt_id integer?       its request id (handover re-attaches it)
---@field prompt_text string?
---@field turn_started_at number?  wall time the turn started (work_seconds)
---@field turn_started_ms integer? uv.now() then (agentd/health.lua counts quiet time from it)
---@field health_alert boolean?    a stall the next watch reports, once (mark_stalled; rules/watch.lua)
---@field finishing boolean?       a turn ended and its worktree's changes are being read before it is reported
---@field after_turn string[]?     messages that start the next turn (a profile that steers by queueing)
---@field last_thought string?     the ended turn's reasoning (last 20000 bytes), for the journal
---@field recovery_attempts integer? recovery turns run for a failed background job (rules/recovery.lua)
---@field recovery_report table?   {attempts, gave_up} for the next drain, once recovery ended
---@field answer_gates boolean?    agentd answers permission requests itself (a tool_approval the agent's modes cannot keep)
---@field released boolean?        a tombstone's text buffers were dropped: its text is its journal's
---@field idle_since integer?      uv.now() when it went idle
---@field idle_timer userdata?     the idle-cleanup timer
---@field queued string[]          messages sent while starting
---@field text table               bounded buffers (state.buf_*): since the last drain…
---@field thought table
---@field turn_text table          …the running turn (and its reasoning)…
---@field turn_thought table
---@field full_text table          …and the whole session (capped)
---@field full_thought table
---@field turns table[]            undrained turn ends {text, stop_reason, text_truncated}
---@field turns_dropped integer
---@field events table             undrained events (a message chunk as its bare text)
---@field event_t number[]         their times
---@field noncritical integer
---@field events_overflow integer
---@field plan_rev integer         bumped on a new plan; plan_seen at the last drain
---@field plan_seen integer
---@field error_rev integer
---@field error_seen integer
---@field tools table              running tool calls by id
---@field active string[]          their ids, oldest first
---@field next_request_id integer
---@field wait_dirty boolean       new output since the last drain (wakes `wait`)
---@field config_options table?    what the agent advertises
---@field acp_offer table?         an "acp" profile agent's models, modes and config options as they stand (rules/acp_options.lua)
---@field started_approval string? the tool_approval its agent process started with (a profile's approval_env is set then)
---@field counters table           chunks, tool_calls, turns, steers, prompts, decisions
---@field turn_usage table?        the running turn's figure (usage.lua)
---@field turn_reported boolean?   the running turn got a usage figure
---@field last_turn_usage table?   the ended turn's figure, for its result
---@field turn_usage_rec table?    the ended turn's usage fields for its journal record
---@field pending_cost number?     an ACP agent's cumulative cost, counted with the turn's tokens
---@field pending_currency string?
---@field budget_warning string?   a budget's warning, shown in the next results
---@field budget_stop string?      a budget stops it: "finish" (at the turn's end) or "stop" (now)
---@field usage_line table?        the usage line its results show and what it was made of (usage.lua line)
---@field infer_profile boolean?   its agent's profile comes from its initialize answer (a policy's command gave none)
---@field integration_news boolean? its integration moved on since the last drain (wakes a watch)

local lazy = require "rmcp.lib.lazy"
local state = require "rmcp.agentd.session.state"
local restore = require "rmcp.agentd.session.restore"
-- (what the agent sends, its turns and options, and the sandbox and worktree code behind them:
-- loaded with the first agent, turn or answer, so an idle daemon does not carry them)
local events = lazy "rmcp.agentd.session.events"
local turns = lazy "rmcp.agentd.session.turns"
-- (with start.lua, loaded on the first spawn, resume, handover or shutdown with agents: an idle
-- daemon stays small)
local setup = lazy "rmcp.agentd.session.setup"
local configure = lazy "rmcp.agentd.session.configure"
local isolate = require "rmcp.agentd.session.isolate"
-- (read at a start that finds the index a clean shutdown left, written at the shutdown)
local index = lazy "rmcp.agentd.session.index"
local usage = lazy "rmcp.agentd.session.usage"

-- The start took a usable index: its sessions are taken in after it listens (index.lua).
local indexed = false

return {
  -- reading
  is_live = state.is_live,
  decision_view = state.decision_view,
  effective_config = state.effective_config,
  config_options = state.config_options,
  last_text = state.last_text,
  turn_text = state.turn_text,
  turn_thought = state.turn_thought,
  handover_state = function(...) return setup.handover_state(...) end,
  -- the daemon's life
  restore_records = restore.records,
  read_index = function(d)
    if not require("luv").fs_stat(d.paths.sessions_index_head) then return nil, "missing" end
    local head, why = index.read(d)
    indexed = head ~= nil
    return head, why
  end,
  load_history = function(d, on_done)
    if not indexed then return on_done() end
    index.load_later(d, on_done)
  end,
  complete_history = function(d)
    if indexed then index.complete(d) end
  end,
  write_index = function(d) index.write(d) end,
  persist = state.persist,
  policy_changed = function(...) return turns.policy_changed(...) end,
  kill_all = function(...) return setup.kill_all(...) end,
  -- verbs of the API
  spawn = function(...) return setup.spawn(...) end,
  resume = function(...) return setup.resume(...) end,
  configure = function(...) return configure.configure(...) end,
  set_budget = function(d, s, budget)
    usage.set_budget(d, s, budget)
    if usage.must_stop(s) then turns.stop(d, s, "budget") end
  end,
  usage_line = function(...) return usage.line(...) end,
  send = function(...) return turns.send(...) end,
  respond = function(...) return events.respond(...) end,
  stop = function(...) return turns.stop(...) end,
  drain = state.drain,
  journal_delivered = state.journal_delivered,
  current_work = state.current_work,
  newest_first = require("rmcp.agentd.session.order").newest_first,
  parked_tally = require("rmcp.agentd.session.tally").parked,
  list_tally = require("rmcp.agentd.session.tally").whole,
  forget = state.discard,
  mark_delivered = state.mark_delivered,
  mark_asking = state.mark_asking,
  mark_stalled = state.mark_stalled,
  mark_integration = state.mark_integration,
  mark_forecast = state.mark_forecast,
  branch_moved = function(...) return require("rmcp.agentd.session.sandbox").branch_moved(...) end,
  command_in = function(d, s, argv) return require("rmcp.agentd.session.sandbox").command_in(d, s, argv, state.profile(s)) end,
  adopt = function(...) return setup.adopt(...) end,
  pause_cleanup = state.cancel_cleanup,
  worktree_removed = isolate.removed,
  recover_worktrees = isolate.recover,
}
