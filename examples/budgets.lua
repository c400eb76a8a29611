-- Example — prices and budgets (a policy file: copy it into $REASONIX_MCP_HOME/policy/).
-- Shows the `price` hook, which gives agentd the price of a model whose agent reports tokens but no
-- cost (a session's cost is then its tokens at this price; with no price it stays unknown, never 0),
-- and the `budget` hook, which agentd asks after every increment an agent spends: here it warns at
-- 80 % of a session's own budget (a field of the next watch/poll result, `usage.warning`, never a
-- wake-up) and stops a routine's run at once when a budget is reached (the run is recorded
-- "stopped", with why and what it spent). The budgets themselves are the caller's: spawn's
-- `budget`, reasonix_configure's, a fleet's, a routine's, REASONIX_MCP_BUDGET_* and
-- REASONIX_MCP_DAILY_* (lua/rmcp/agentd/PROTOCOL.md "Usage and budgets").

return {
  name = "budgets",

  -- Per million tokens. cache_read (input served from the provider's cache), cache_write and
  -- reasoning are optional: without them cached input costs as input and reasoning as output.
  price = {
    ["deepseek/deepseek-chat"] = { input = 0.27, output = 1.10, cache_read = 0.07, currency = "USD" },
    ["deepseek/deepseek-reasoner"] = { input = 0.55, output = 2.19, cache_read = 0.14, currency = "USD" },
  },

  -- session: what a policy sees of the session (its `budget`, its `routine_id` when a routine's
  -- run); usage: {tokens, cost?, currency?}; verdict: the built-in {action, scope, note, limit} or
  -- nil (no budget covers it). Return nil to leave the verdict, or an action and a note.
  budget = function(session, usage, verdict)
    if session.routine_id and verdict and (verdict.action == "finish" or verdict.action == "stop") then
      return "stop", verdict.note .. " (routines stop at 100 %: " .. rmcp.policy.file .. ")"
    end
    local b = session.budget
    if verdict and verdict.action ~= "go" and verdict.action ~= "warn" then return nil end -- (reached: the built-in stands)
    if b and b.tokens and usage.tokens >= 0.8 * b.tokens then
      return "warn", string.format("%d%% of the session's %d tokens spent", usage.tokens * 100 // b.tokens, b.tokens)
    end
    if b and b.cost and usage.cost and usage.cost >= 0.8 * b.cost then
      return "warn", string.format("%.2f of the session's %.2f %s spent", usage.cost, b.cost, usage.currency or "")
    end
  end,
}
