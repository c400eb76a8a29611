-- The socket method that takes worktree sessions' branches into a target branch (PROTOCOL.md
-- "Integration"): checks who asks and what, then hands the work to the merge queue
-- (agentd/integrate/queue.lua), which reports each step on the sessions (their watches wake).
local jsonrpc = require "rmcp.lib.jsonrpc"
local async = require "rmcp.lib.async"
local config = require "rmcp.config"
local hooks = require "rmcp.policy.hooks"
local ownership = require "rmcp.agentd.ownership"
local params = require "rmcp.agentd.methods.params"
local rules = require "rmcp.rules.integrate"
local queue = require "rmcp.agentd.integrate.queue"
local steps = require "rmcp.agentd.integrate.steps"

local M = {}

local bad = params.bad

-- The caller's worktree sessions named by ids (one repository), and the target (target, else the
-- branch they were all spawned from); or nil and the error.
local function sessions_and_target(d, conn, ids, target)
  if type(ids) ~= "table" or #ids == 0 then return nil, bad("session_ids must name at least one worktree session") end
  local out, repo, head = {}, nil, nil
  for _, id in ipairs(ids) do
    local s, err = ownership.lookup(d.sessions, conn.orch, id)
    if not s then return nil, err end
    if type(s.worktree) ~= "table" or s.worktree.state ~= "ready" then
      return nil, bad("session " .. s.id .. " has no worktree (spawn it with isolate=\"worktree\")")
    end
    if repo and s.worktree.repo ~= repo then return nil, bad("the sessions' worktrees belong to different repositories") end
    repo = s.worktree.repo
    if head ~= nil and s.worktree.head ~= head then head = false else head = head == nil and s.worktree.head or head end
    out[#out + 1] = s
  end
  if target ~= nil and (type(target) ~= "string" or target == "" or target:sub(1, 1) == "-") then
    return nil, bad("target must be a branch name")
  end
  target = target or head
  if not target then return nil, bad("the sessions started from different branches (or a detached HEAD): name the target") end
  return out, repo, target
end

-- worktree_integrate: starts a merge queue; answers at once with its id, order and options (each
-- step then comes as the session's integration in its watch result).
function M.worktree_integrate(d, conn, p, reply)
  local sessions, repo, target = sessions_and_target(d, conn, p.session_ids, p.target)
  if not sessions then return reply(nil, repo) end
  local with, werr = rules.check_options(p.with)
  if not with then return reply(nil, bad(werr)) end
  if with.verify == nil then with.verify = config.env_of(conn.env, "REASONIX_MCP_VERIFY") end
  local ids = {}
  for _, s in ipairs(sessions) do ids[#ids + 1] = s.id end
  with.verify = hooks.verify({ repo = repo, target = target, session_ids = ids, orchestrator_id = conn.orch }, with.verify)
  async.run(function()
    if not steps.tip(repo, "refs/heads/" .. target) then return reply(nil, bad("no branch " .. target .. " in " .. repo)) end
    local checkout = steps.checkout_of(repo, target)
    local dirt = checkout and steps.dirt(checkout)
    if dirt and dirt ~= "" then
      return reply(nil, bad(target .. " is checked out at " .. checkout .. " with local changes; commit or stash them "
        .. "first (integration never forces)"))
    end
    if with.order == "forecast" and #sessions > 1 then
      local fc = require("rmcp.agentd.integrate.forecast").run(sessions, target)
      if fc then sessions = rules.reorder(sessions, fc.order) end
    end
    local q = queue.start(d, conn.orch, repo, target, sessions, with)
    local order = {}
    for _, item in ipairs(q.items) do order[#order + 1] = item.session_id end
    reply({ integration_id = q.id, target = target, repo = repo, order = order, with = with, status = q.status })
  end, function(e) reply(nil, jsonrpc.error(jsonrpc.INTERNAL_ERROR, "integrate failed: " .. tostring(e))) end)
end

return M
