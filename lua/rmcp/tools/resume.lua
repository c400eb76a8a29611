-- reasonix_resume: revive stopped or crashed sessions from their persisted transcripts; one, or
-- many at once (after a daemon death, say).
local common = require "rmcp.tools.common"

local properties = common.agent_options()
properties.session_id = common.session_id()
properties.session_ids = common.session_ids()
properties.cwd = { type = "string" }
properties.keep_alive = { type = "boolean" }
properties.idle_timeout = { type = "number" }
properties.parallelism = common.parallelism
properties.continue_interrupted = { type = "boolean", default = true }

return {
  name = "reasonix_resume",
  title = "Resume agents",
  description = "Revive exited sessions with their history (options as spawn's). session_ids: many; a cut "
    .. "turn continues.",
  inputSchema = common.object(properties),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = true, openWorldHint = true },
  cli = { positional = { "session_id" } },
  -- Doc-only: docs/tools.md is generated from it (scripts/gen-docs.lua); tools/list never sends it.
  doc = {
    args = {
      { "session_id", "One session (or session_ids)." },
      { "session_ids", "Many sessions at once (after a daemon death or a stop)." },
      { "model", "As spawn's (over what reasonix_configure saved)." },
      { "effort", "As spawn's." },
      { "work_mode", "As spawn's." },
      { "tool_approval", "As spawn's." },
      { "cwd", "One session only: where it goes on." },
      { "keep_alive", "As spawn's." },
      { "idle_timeout", "As spawn's." },
      { "parallelism", "With session_ids: how many resume at once." },
      { "continue_interrupted", "With session_ids: a session whose turn a daemon death cut short gets a new turn telling it to continue." },
    },
    result = {
      { "session_id, status, …", "One session: as spawn's result; a live session answers {session_id, status, already_live: true}." },
      { "results[]", "With session_ids: per id, {session_id, status, continued?, already_live?} or {session_id, status, error}." },
      { "resumed, failed", "With session_ids: the counts." },
      { "session_ids", "With session_ids: the ids, for one watch." },
    },
  },
  handler = function(args, ctx)
    local ok, err = common.one_of(args, { "session_id", "session_ids" })
    if not ok then return nil, err end
    if args.session_id then
      if args.parallelism or args.continue_interrupted ~= nil then
        return nil, "parallelism and continue_interrupted go with session_ids"
      end
      return ctx.agentd("resume", args, true)
    end
    if args.cwd then return nil, "cwd is per session: resume one session_id with it" end
    return ctx.agentd("resume_fleet", args, true)
  end,
}
