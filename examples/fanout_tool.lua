-- Example 2 — add an MCP tool (a policy file: copy it into $REASONIX_MCP_HOME/policy/; the MCP
-- server lists the tool from the next call on and tells the host with notifications/tools/list_changed).
-- Shows the `tools` hook: reasonix_fanout(tasks[]) spawns one agent per sub-task, all at once, and
-- returns their session ids, ready for reasonix_watch(session_ids). The handler runs in the MCP
-- server and reaches agentd through ctx.agentd / ctx.agentd_all (the methods are the reasonix_*
-- tools without the prefix: spawn, send, poll, watch, list, stop, …) as this orchestrator.

return {
  tools = { {
    name = "reasonix_fanout",
    title = "Fan out sub-tasks",
    description = "Spawn one Reasonix agent per sub-task (in parallel) and return their session_ids; then "
      .. "keep reasonix_watch(session_ids) in flight. Options apply to every agent.",
    inputSchema = {
      type = "object",
      properties = {
        tasks = { type = "array", minItems = 1, maxItems = 16, items = { type = "string", minLength = 1 },
                  description = "One prompt per agent, each with its own acceptance criteria." },
        cwd = { type = "string", minLength = 1, description = "Working directory for every agent (default: the project dir)." },
        keep_alive = { type = "boolean", description = "Keep the agents for follow-up turns." },
      },
      required = { "tasks" },
      additionalProperties = false,
    },
    outputSchema = {
      type = "object",
      properties = {
        session_ids = { type = "array", items = { type = "string" } },
        failed = { type = "array", items = { type = "object" } },
      },
      required = { "session_ids" },
    },
    handler = function(args, ctx)
      local calls = {}
      for i, task in ipairs(args.tasks) do
        calls[i] = { "spawn", { task = task, cwd = args.cwd, keep_alive = args.keep_alive } }
      end
      local ids, failed = rmcp.json.array(), rmcp.json.array()
      for i, r in ipairs(ctx.agentd_all(calls)) do
        if r.result then
          ids[#ids + 1] = r.result.session_id
        else
          failed[#failed + 1] = { task = args.tasks[i], error = r.error and r.error.message or "spawn failed" }
        end
      end
      rmcp.log.info("fanout for %s: %d spawned, %d failed", ctx.orchestrator_id, #ids, #failed)
      if #ids == 0 then return nil, "no agent could be spawned: " .. failed[1].error end
      return { session_ids = ids, failed = failed }
    end,
  } },
}
