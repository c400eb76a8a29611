-- Defaults, their REASONIX_MCP_* environment overrides, and the runtime paths under $REASONIX_MCP_HOME.
-- Read through functions (not cached values) so tests and a reload see the current environment.
local M = {}

-- The spec's spawn defaults, each overridable by REASONIX_MCP_DEFAULT_<NAME>.
M.defaults = {
  model = "opencode-go/deepseek-v4-flash",
  effort = "max",
  work_mode = "balanced",
  tool_approval = "yolo",
  language = "en",
  isolate = "none", -- "worktree": each agent in a git worktree of its own (agentd/worktree.lua)
  sandbox = "none", -- "workspace" | "strict": each agent in a sandbox agentd makes (rules/sandbox.lua)
  agent = "reasonix", -- or a built-in ACP agent (rules/agents.lua) or a policy's
}

-- Caps and bounds (env REASONIX_MCP_<NAME> overrides the numeric ones).
M.limits = {
  max_events = 50,            -- default event tail of a poll
  max_events_cap = 200,       -- largest max_events a caller may ask for
  max_delta_text = 100000,    -- text delta of a poll (tail kept)
  max_watch_message = 4000,   -- compact message (first/last half kept)
  max_full_text = 200000,     -- full_text / thought (tail kept)
  max_result_bytes = 45000,   -- a poll result (a detailed watch: all its results) as JSON, at most (Claude Code 2.1.332 moves a result over 50,000 characters to a file)
  event_buffer = 4000,        -- unpolled non-critical events kept per session
  turn_buffer = 20,           -- undrained turns kept per session (the newest; poll's turns_dropped counts the rest)
  retain_max = 100,           -- finished, collected sessions kept per orchestrator (agentd/retention.lua)
  retain_days = 7,            -- and none of them older than this (last updated)
  list_limit = 50,            -- rows a list returns by default (a cursor gives the rest)
  decision_remind_s = 300,    -- a decision a host connection saw wakes its watch again after this long unanswered
  background_recovery_attempts = 3, -- fresh turns after "background bash failed: needs attention", in a row (0: off)
  runtime_stalled_after = 600, -- seconds without protocol or process-tree progress before a live turn is stalled
  stderr_tail = 4000,         -- bytes of agent stderr kept for error text
  max_line = 16 * 1024 * 1024, -- longest NDJSON line on the socket and from agents
  max_in_flight = 64,         -- host requests in flight before the host is not read; agentd: twice that per connection (Back-pressure below)
  log_max_bytes = 5 * 1024 * 1024,
  reload_grace_ms = 2000,     -- agentd: quiet time before a queued reload hands over
  reload_settle_ms = 250,     -- agentd: a new binary must stay unchanged this long before it counts
  reload_poll_ms = 2000,      -- agentd: stat poll of its binary (inotify on the dir is the fast path)
  reload_check_ms = 200,      -- agentd: how often a queued reload re-checks what it waits for
  launcher_poll_ms = 2000,    -- launcher: stat poll of its binary (inotify on the dir is the fast path)
  launcher_max_crashes = 5,   -- launcher: quick server crashes in a row before it gives up
  launcher_quick_ms = 10000,  -- launcher: a server that dies sooner than this after its start crashed "quickly"
  launcher_backoff_ms = 250,  -- launcher: delay before the 2nd restart in a row; doubles after that (max 5 s)
  launcher_start_timeout_ms = 15000, -- launcher: a new server must answer the replayed initialize within this
  launcher_drain_ms = 10000,  -- launcher: how long a replaced server may take to finish non-repeatable calls
  launcher_stop_grace_ms = 2000, -- launcher: after closing a server's stdin: TERM, then KILL as long again later
  daemon_idle_exit = 600,     -- agentd: seconds unused (no live session, no connection) before it exits; 0: never
  idle_timeout = -1,          -- seconds an idle agent lives before it is stopped; -1: never
  routine_concurrency = 4,    -- routine runs at once, machine-wide
  progress_interval_ms = 10000, -- how often a blocked watch sends progress
  dashboard_port = 8746,      -- the dashboard's port
}

-- Back-pressure (lib/flow.lua): a peer that stops reading costs each process a bounded number of
-- bytes, however many requests it sends and however large each answer is. Every process of the
-- path (launcher: the host and its server; server: the host and agentd; agentd: each connection)
-- stops reading a peer while
--   * 1 MiB or more written for it, or for where its requests go, is not yet taken (flow.UNREAD:
--     the channel's high-water mark, CHANNEL_HIGH_WATER in core/channel.h, whose on_drain says
--     when it is back under). A process also stops reading what would add to a queue that is
--     behind: the launcher its servers' stdout while the host is, the server its agentd links while
--     its stdout is; so answers wait where they are made, in agentd, which stops reading in turn;
--   * or max_in_flight of the peer's requests are accepted and not yet answered (each will produce
--     an answer). agentd allows a connection twice as many: a server has at most max_in_flight
--     calls, each waiting on one agentd request, so agentd never holds back a server's cancels.
-- A process then holds for such a peer at most 1 MiB + the answer whose write crossed the mark
-- (one answer: up to twice max_result_bytes in a CallToolResult), + in agentd the long requests
-- (watch, wait) that may all end at once: 2 * max_in_flight answers of at most max_result_bytes.
-- 64 is far above what a host keeps in flight (a handful of watches and calls; a host whose 64
-- calls all block is not read until one of them ends, its cancels included).

-- Returns the value of environment variable name, or nil when unset or empty.
local function env(name)
  local v = os.getenv(name)
  if v == nil or v == "" then return nil end
  return v
end
M.env = env

-- The value of name in environment map e (an orchestrator's, sent in hello), or in ours when e is
-- nil; "" counts as unset.
local function env_of(e, name)
  if e == nil then return env(name) end
  local v = e[name]
  if type(v) ~= "string" or v == "" then return nil end
  return v
end
M.env_of = env_of

-- Returns the spawn default for key (model, effort, work_mode, tool_approval, language), as set in
-- environment map e (an orchestrator's; default ours).
function M.default(key, e)
  return env_of(e, "REASONIX_MCP_DEFAULT_" .. key:upper()) or M.defaults[key]
end

-- REASONIX_MCP_<NAME> per limit name, built once (limits are read on hot paths).
local limit_env = setmetatable({}, { __index = function(t, name)
  local v = "REASONIX_MCP_" .. name:upper()
  t[name] = v
  return v
end })

-- Returns the numeric limit name, honouring REASONIX_MCP_<NAME>. (The caps a poll or watch result
-- is shaped with also pass the user policies' caps hook: rules/caps.lua limit.)
function M.limit(name)
  local v = os.getenv(limit_env[name])
  return v and v ~= "" and tonumber(v) or M.limits[name]
end

-- The limits read once per loop iteration, for paths that run per event (a flood is tens of
-- thousands a second): a table name -> M.limit(name), filled on first use; an environment change
-- is seen from the next iteration on.
local snapshot, snapshot_tick = {}, -1
function M.limits_now()
  local now = require("luv").now()
  if now ~= snapshot_tick then
    snapshot_tick = now
    snapshot = setmetatable({}, { __index = function(t, name)
      local v = M.limit(name)
      t[name] = v
      return v
    end })
  end
  return snapshot
end

-- REASONIX_MCP_<NAME> per flag name, built once (a poll reads two flags).
local flag_env = setmetatable({}, { __index = function(t, name)
  local v = "REASONIX_MCP_" .. name
  t[name] = v
  return v
end })

-- True when the boolean env flag REASONIX_MCP_<name> is set to 1/true/yes, in environment map e
-- (an orchestrator's; default ours).
function M.flag(name, e)
  local v
  if e == nil then v = os.getenv(flag_env[name]) else v = e[flag_env[name]] end
  if v == nil or v == "" then return false end -- (a poll reads two: the environment read in place)
  return type(v) == "string" and (v == "1" or v:lower() == "true" or v:lower() == "yes")
end

-- The global idle timeout in seconds (-1 disables cleanup, the default).
function M.idle_timeout()
  return M.limit("idle_timeout")
end

-- Seconds an unused agentd (no live session, no connection) waits before it exits by itself:
-- REASONIX_MCP_DAEMON_IDLE_EXIT; 0 (or less) never.
function M.daemon_idle_exit()
  return M.limit("daemon_idle_exit")
end

-- The user's home directory.
function M.user_home()
  return env("HOME") or "/"
end

-- $REASONIX_MCP_HOME, default ~/.reasonix-mcp.
function M.home()
  return env("REASONIX_MCP_HOME") or (M.user_home() .. "/.reasonix-mcp")
end

-- Paths of the daemon's runtime files for home (default M.home()).
function M.paths(home)
  home = home or M.home()
  return {
    home = home,
    sock = home .. "/agentd.sock",
    lock = home .. "/agentd.lock",
    log = home .. "/agentd.log",
    sessions = home .. "/sessions",
    sessions_index = home .. "/sessions.index", -- the finished sessions, for a quick start (agentd/session/index.lua)
    sessions_index_head = home .. "/sessions.index.head", -- and what of it a start may trust
    routines = home .. "/routines",
    usage = home .. "/usage", -- the spend ledger, a file a day (agentd/usage_ledger.lua)
    integrations = home .. "/integrations", -- the merge queues (agentd/integrate/queue.lua)
  }
end

-- The Reasonix home the agents use ($REASONIX_HOME, default ~/.reasonix), in environment map e
-- (default ours).
function M.reasonix_home(e)
  return env_of(e, "REASONIX_HOME") or ((env_of(e, "HOME") or M.user_home()) .. "/.reasonix")
end

-- Finds an executable named name on the PATH of environment map e (default ours); returns its
-- path or nil.
local function which(name, e)
  for dir in (env_of(e, "PATH") or "/usr/local/bin:/usr/bin:/bin"):gmatch("[^:]+") do
    local p = dir .. "/" .. name
    if require("luv").fs_access(p, "x") then return p end
  end
  return nil
end
M.which = which

-- Where an install keeps the agent beside our binary, relative to the binary's directory: a
-- `reasonix` next to it; the npm package's dependency (hoisted beside node_modules/reasonix-mcp as
-- `npm i`/npx put it, or nested under it as `npm i -g` does); the pinned one scripts/install-agent.sh
-- puts in a checkout's .agent/.
-- The agent's native binary in a node_modules dir, as npm installs the pinned package.
M.AGENT_IN_MODULES = "@reasonix/cli-linux-x64/bin/reasonix"
M.AGENT_BESIDE = { "reasonix", "../../" .. M.AGENT_IN_MODULES, "../node_modules/" .. M.AGENT_IN_MODULES,
  "../.agent/node_modules/" .. M.AGENT_IN_MODULES }

-- The agent version this release is made for, as npm names it: the one place it is pinned
-- (scripts/install-agent.sh and the npm package's dependency read it from this line): what `setup
-- --install-agent` installs and what a missing agent is installed with.
M.AGENT_PACKAGE = "reasonix@1.38.11"

-- The directory of our binary (exe: default ours).
local function exe_dir(exe)
  return (exe or require("rmcp.host").exe):match("^(.*)/[^/]*$") or "."
end

-- The source checkout our binary runs from (exe: default ours; a build tree's binary sits one
-- level below the checkout's scripts/), or nil for an installed package.
function M.checkout(exe)
  local root = exe_dir(exe) .. "/.."
  if require("luv").fs_access(root .. "/scripts/install-agent.sh", "r") then return root end
  return nil
end

-- How to install agent name (default reasonix; spec: a built-in agent's {package, version}) from
-- where our binary (exe: default ours) runs: the checkout's script, else what a package user has.
function M.agent_install_hint(name, spec, exe)
  name = name or "reasonix"
  if M.checkout(exe) then return "scripts/install-agent.sh" .. (name == "reasonix" and "" or " " .. name) .. " in this checkout" end
  if name == "reasonix" then
    return "`reasonix-mcp setup claude|codex --install-agent`, or `npm install -g " .. M.AGENT_PACKAGE .. "`"
  end
  return "`npm install -g " .. spec.package .. "@" .. spec.version .. "`"
end

-- The agent installed beside our binary, or nil: found without any environment, as a host that
-- passes its MCP servers only a few variables (Codex) runs us.
function M.agent_beside()
  local dir = exe_dir()
  for _, rel in ipairs(M.AGENT_BESIDE) do
    local p = dir .. "/" .. rel
    if require("luv").fs_access(p, "x") then return require("luv").fs_realpath(p) or p end
  end
  return nil
end

-- The agent binary for environment map e (default ours): $REASONIX_BIN, else `reasonix` on PATH,
-- else the one installed beside our binary. Returns path or nil, message.
function M.agent_bin(e)
  local bin = env_of(e, "REASONIX_BIN") or which("reasonix", e) or M.agent_beside()
  if bin then return bin end
  return nil, "reasonix not found: put it on PATH, set REASONIX_BIN (with Codex: `codex mcp add --env "
    .. "REASONIX_BIN=...`), or install it: " .. M.agent_install_hint()
end

-- The environment list ("K=V") an agent runs with: base (an orchestrator's environment map, default
-- ours) plus REASONIX_LANG unless its language default is auto.
function M.agent_env(base)
  local uv = require "luv"
  base = base or uv.os_environ()
  local lang = M.default("language", base)
  local out = {}
  for k, v in pairs(base) do
    if k ~= "REASONIX_LANG" or lang == "auto" then out[#out + 1] = k .. "=" .. v end
  end
  if lang ~= "auto" then out[#out + 1] = "REASONIX_LANG=" .. lang end
  table.sort(out)
  return out
end

-- Every setting a user may give (in the environment, the settings file ~/.config/reasonix-mcp/env, or a
-- host registration's --env), by group: {env, default, what it does}. docs/configuration.md is
-- generated from this list (scripts/gen-docs.lua), and tests/lua/docs_spec.lua checks that every
-- default, limit and REASONIX_* name the code reads is in it. A default of nil: unset.
M.settings = {
  { group = "Where things are" },
  { "REASONIX_MCP_HOME", "~/.reasonix-mcp", "The runtime dir (0700): agentd's socket, lock and log, sessions, routines, the spend ledger, worktrees, sandboxes, and cache/lua (compiled Lua chunks, safe to delete)." },
  { "REASONIX_HOME", "~/.reasonix", "The Reasonix config dir the agents use (config.toml, .env with the provider key)." },
  { "REASONIX_BIN", nil, "The reasonix agent binary. Unset: `reasonix` on PATH, else the one installed beside this binary (the npm package's dependency, or scripts/install-agent.sh in a checkout)." },
  { "REASONIX_MCP_AGENT_<NAME>", nil, "A built-in ACP agent's binary (REASONIX_MCP_AGENT_CODEX, …). Unset: .agent/<name>/ beside this build, else PATH." },
  { "REASONIX_MCP_LUA_DIR", nil, "The lua/ tree the binary runs. Unset: the installed share dir beside the binary (<bin>/../share/reasonix-mcp/lua), else, for a build tree's binary only, the source tree it was built from." },
  { "REASONIX_MCP_POLICY_PATH", nil, "Colon-separated dirs of user policy files. Unset: $REASONIX_MCP_HOME/policy (docs/policies.md)." },
  { "REASONIX_MCP_WORKTREE_DIR", "$REASONIX_MCP_HOME/worktrees", "Where isolated agents' git worktrees are made." },
  { "REASONIX_MCP_WORKTREE_BRANCH_PREFIX", "reasonix/", "The branch of an isolated agent: this prefix and its session id." },
  { "REASONIX_MCP_BWRAP", nil, "The bubblewrap binary sandboxes use. Unset: bwrap on PATH." },
  { group = "Spawn defaults (each spawn may override them)" },
  { "REASONIX_MCP_DEFAULT_AGENT", M.defaults.agent, "The agent a spawn runs: reasonix, claude, codex, gemini, opencode or a policy's (docs/agents.md)." },
  { "REASONIX_MCP_DEFAULT_MODEL", M.defaults.model, "The model; one your config does not have falls back to the agent's own default, with a warning." },
  { "REASONIX_MCP_DEFAULT_EFFORT", M.defaults.effort, "Reasoning effort: auto, disabled, low, medium, high, xhigh, max." },
  { "REASONIX_MCP_DEFAULT_TOOL_APPROVAL", M.defaults.tool_approval, "ask, auto or yolo: which tool calls wait for a decision." },
  { "REASONIX_MCP_DEFAULT_WORK_MODE", M.defaults.work_mode, "economy, balanced or delivery." },
  { "REASONIX_MCP_DEFAULT_LANGUAGE", M.defaults.language, "The agents' language: en, zh, or auto (the agent decides; REASONIX_LANG is then passed through)." },
  { "REASONIX_MCP_DEFAULT_ISOLATE", M.defaults.isolate, "worktree: every agent in a git worktree of its own (docs/worktrees.md)." },
  { "REASONIX_MCP_DEFAULT_SANDBOX", M.defaults.sandbox, "workspace or strict: every agent in a sandbox (docs/sandbox.md)." },
  { "REASONIX_MCP_IDLE_TIMEOUT", M.limits.idle_timeout, "Seconds an idle agent lives before it is stopped (resumable); -1: never." },
  { "REASONIX_MCP_BUDGET_TOKENS", nil, "Each session's default budget in tokens (docs/budgets.md)." },
  { "REASONIX_MCP_BUDGET_COST", nil, "Each session's default budget in money." },
  { "REASONIX_MCP_DAILY_TOKENS", nil, "Per orchestrator per day, in tokens: reached, new spawns are refused and running agents stop." },
  { "REASONIX_MCP_DAILY_COST", nil, "The same in money." },
  { "REASONIX_MCP_ALLOW_ANY_CWD", nil, "1: an agent's cwd may be anywhere, not only inside the project dir or an allow_write dir." },
  { "REASONIX_MCP_VERIFY", nil, "The command an integration runs on each branch before it merges (docs/worktrees.md)." },
  { "REASONIX_MCP_SANDBOX_READ", nil, "Colon-separated absolute paths every sandbox shows read-only (toolchains under your home: ~/.cargo:~/.rustup written out)." },
  { "REASONIX_MCP_SANDBOX_HOSTS", nil, "Comma-separated hosts every strict sandbox may reach." },
  { group = "What poll and watch return" },
  { "REASONIX_MCP_INCLUDE_THOUGHT", nil, "1: results carry the agent's reasoning unless a call says otherwise." },
  { "REASONIX_MCP_INCLUDE_FULL", nil, "1: results carry the turn's whole text unless a call says otherwise." },
  { "REASONIX_MCP_MAX_EVENTS", M.limits.max_events, "Events a detailed poll returns by default." },
  { "REASONIX_MCP_MAX_EVENTS_CAP", M.limits.max_events_cap, "The largest max_events a call may ask for (more is clamped)." },
  { "REASONIX_MCP_MAX_DELTA_TEXT", M.limits.max_delta_text, "Characters of text since the last poll (the tail is kept)." },
  { "REASONIX_MCP_MAX_WATCH_MESSAGE", M.limits.max_watch_message, "Characters of a compact message (first and last half kept)." },
  { "REASONIX_MCP_MAX_FULL_TEXT", M.limits.max_full_text, "Characters of full_text and thought (the tail is kept)." },
  { "REASONIX_MCP_MAX_RESULT_BYTES", M.limits.max_result_bytes, "A poll or detailed watch result as JSON, at most: over it the least needed parts go first, each cut flagged, and result_truncated is set. (Claude Code shows its model only a preview of a tool result over 50,000 characters.)" },
  { "REASONIX_MCP_EVENT_BUFFER", M.limits.event_buffer, "Unpolled events kept per session (critical ones are never dropped)." },
  { "REASONIX_MCP_TURN_BUFFER", M.limits.turn_buffer, "Undrained turns kept per session (the newest; turns_dropped counts the rest)." },
  { "REASONIX_MCP_LIST_LIMIT", M.limits.list_limit, "Rows reasonix_list returns a page." },
  { "REASONIX_MCP_DECISION_REMIND_S", M.limits.decision_remind_s, "Seconds after which an unanswered decision wakes a watch again." },
  { group = "The daemon (agentd)" },
  { "REASONIX_MCP_DAEMON_IDLE_EXIT", M.limits.daemon_idle_exit, "Seconds agentd waits with no live session and no connection before it exits (the next client starts it again); 0: never." },
  { "REASONIX_MCP_RETAIN_MAX", M.limits.retain_max, "Finished, collected sessions kept per orchestrator." },
  { "REASONIX_MCP_RETAIN_DAYS", M.limits.retain_days, "…and none of them older than this many days." },
  { "REASONIX_MCP_BACKGROUND_RECOVERY_ATTEMPTS", M.limits.background_recovery_attempts, "Fresh turns in a row after \"background bash failed: needs attention\"; 0: off." },
  { "REASONIX_MCP_RUNTIME_STALLED_AFTER", M.limits.runtime_stalled_after, "Seconds without protocol or process-tree progress before a running turn is reported stalled." },
  { "REASONIX_MCP_ROUTINE_CONCURRENCY", M.limits.routine_concurrency, "Routine runs at once, machine-wide; the others wait their turn." },
  { "REASONIX_MCP_LIVE_HANDOVER", nil, "1: an upgrade re-executes agentd at once and keeps every agent running, mid-turn included (docs/operations.md)." },
  { "REASONIX_MCP_RELOAD_GRACE_MS", M.limits.reload_grace_ms, "Quiet time before a queued reload hands over." },
  { "REASONIX_MCP_RELOAD_SETTLE_MS", M.limits.reload_settle_ms, "How long a new binary must stay unchanged before it counts." },
  { "REASONIX_MCP_RELOAD_POLL_MS", M.limits.reload_poll_ms, "How often agentd stats its binary (inotify is the fast path)." },
  { "REASONIX_MCP_RELOAD_CHECK_MS", M.limits.reload_check_ms, "How often a queued reload re-checks what it waits for." },
  { "REASONIX_MCP_STDERR_TAIL", M.limits.stderr_tail, "Bytes of an agent's stderr kept for its error text." },
  { "REASONIX_MCP_LOG_MAX_BYTES", M.limits.log_max_bytes, "agentd.log's size before it is rotated." },
  { "REASONIX_MCP_LOG_LEVEL", "info", "debug, info, warn or error." },
  { group = "The host, the server and the launcher" },
  { "REASONIX_MCP_ORCHESTRATOR_ID", nil, "Names the orchestrator (default: the host's client name and the workspace). Give each of several same-host instances in one workspace its own; set, it is also every conversation's." },
  { "REASONIX_MCP_TOOLSETS", "all", "Comma-separated tool sets tools/list shows: core, fleet, worktree, routines, or all. Every tool answers its name whatever is listed." },
  { "REASONIX_MCP_MAX_IN_FLIGHT", M.limits.max_in_flight, "Host requests in flight before the host is not read (agentd: twice that per connection); none is read while 1 MiB written to it is unread (\"Back-pressure\" below)." },
  { "REASONIX_MCP_MAX_LINE", M.limits.max_line, "The longest NDJSON line, on the socket and from agents; a longer one is refused and the connection goes on." },
  { "REASONIX_MCP_PROGRESS_INTERVAL_MS", M.limits.progress_interval_ms, "How often a blocked watch sends notifications/progress." },
  { "REASONIX_MCP_SERVERLANE", nil, "0: the server passes every tool call through Lua (its C path for list, poll and the other plain forwards is off; for comparisons)." },
  { "REASONIX_MCP_ANSWERLANE", nil, "0: agentd answers every list through Lua (its C path for a list asked again while nothing it shows changed is off; for comparisons)." },
  { "REASONIX_MCP_LAUNCHER_MAX_CRASHES", M.limits.launcher_max_crashes, "Quick server crashes in a row before the launcher gives up." },
  { "REASONIX_MCP_LAUNCHER_QUICK_MS", M.limits.launcher_quick_ms, "A server that dies sooner than this after its start crashed quickly." },
  { "REASONIX_MCP_LAUNCHER_BACKOFF_MS", M.limits.launcher_backoff_ms, "Delay before the 2nd restart in a row; doubles after that (at most 5 s)." },
  { "REASONIX_MCP_LAUNCHER_START_TIMEOUT_MS", M.limits.launcher_start_timeout_ms, "A new server must answer the replayed initialize within this." },
  { "REASONIX_MCP_LAUNCHER_DRAIN_MS", M.limits.launcher_drain_ms, "How long a replaced server may take to finish its calls." },
  { "REASONIX_MCP_LAUNCHER_STOP_GRACE_MS", M.limits.launcher_stop_grace_ms, "After closing a server's stdin: TERM, then KILL as long again later." },
  { "REASONIX_MCP_LAUNCHER_POLL_MS", M.limits.launcher_poll_ms, "How often the launcher stats its binary for an upgrade." },
  { group = "The dashboard" },
  { "REASONIX_MCP_DASHBOARD_PORT", M.limits.dashboard_port, "Its port." },
  { "REASONIX_MCP_DASHBOARD_HOST", "127.0.0.1", "Its address: loopback only (another address is refused)." },
  { "REASONIX_MCP_DASHBOARD_PASSWORD", nil, "Its password. Unset: a random one written 0600 to dashboard.password in the runtime dir on first start." },
  { "REASONIX_MCP_DASHBOARD_AUTOSTART", nil, "0: the first server does not start it (reasonix_dashboard or `reasonix-mcp dashboard` still do)." },
  { group = "Read by the example policies" },
  { "REASONIX_REMOTE_HOST", nil, "examples/ssh_remote.lua: the machine agents run on, over ssh." },
  { "REASONIX_REMOTE_SSH_CONFIG", nil, "examples/ssh_remote.lua: the ssh config file to use." },
  { "REASONIX_REMOTE_ENV", nil, "examples/ssh_remote.lua: settings for the remote agent." },
  { "REASONIX_REMOTE_BIN", "reasonix", "examples/ssh_remote.lua: the agent on the remote machine." },
  { "REASONIX_MCP_CLEANUP_MINUTES", 10, "examples/idle_cleanup.lua: idle minutes before an agent is stopped." },
  { group = "Set by reasonix-mcp itself (do not set)" },
  { "REASONIX_LANG", nil, "Given to each agent from REASONIX_MCP_DEFAULT_LANGUAGE (unless auto)." },
  { "REASONIX_MCP_LAUNCHER_PID", nil, "Tells a server that a launcher can restart it." },
  { "REASONIX_MCP_HANDOVER", nil, "Names the state file a live handover passes to the new agentd." },
  { "REASONIX_MCP_TEST_SEAMS", nil, "Tests only: a Lua file that replaces clock or fault points at process start." },
}

return M
