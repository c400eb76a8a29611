-- What a user policy file may return (docs/policies.md), and the check a loaded one passes before it
-- runs: the hooks it may define, its other fields, the caps and the spawn options its hooks may set.
-- Stateless: policy/loader.lua runs the check on each file it loads, policy/hooks.lua asks the hooks.
local M = {}

-- The hooks a policy may define, and the other fields a policy table may carry.
M.hooks = { tools = true, permission = true, spawn_defaults = true, cleanup = true, caps = true, agent_command = true,
            retain = true, sandbox = true, price = true, budget = true, verify = true,
            agents = true }
M.fields = { name = "string", description = "string", selfcheck = "function" }

-- The limits the caps hook may change (poll/watch shaping; agentd's buffers stay as configured).
M.caps = { max_events = true, max_events_cap = true, max_delta_text = true, max_watch_message = true, max_full_text = true,
           max_result_bytes = true }

-- The spawn options spawn_defaults may set, with their types.
M.spawn_fields = { model = "string", effort = "string", work_mode = "string", tool_approval = "string",
                   keep_alive = "boolean", idle_timeout = "number", isolate = "string", sandbox = "string" }

-- Sorted names of a set, for messages.
function M.names(set)
  local out = {}
  for k in pairs(set) do out[#out + 1] = k end
  table.sort(out)
  return table.concat(out, ", ")
end

-- Checks a policy table loaded from path and runs its selfcheck(); raises with what is wrong.
function M.policy(policy, path)
  local function bad(msg) error(path .. ": " .. msg, 0) end
  if type(policy) ~= "table" then bad("a policy file must return a table of hooks, got " .. type(policy)) end
  for k, v in pairs(policy) do
    if type(k) ~= "string" then
      bad("policy keys must be hook names, got " .. tostring(k))
    elseif k:sub(1, 1) == "_" then
      -- private helpers of the policy
    elseif M.fields[k] then
      if type(v) ~= M.fields[k] then bad(k .. " must be a " .. M.fields[k]) end
    elseif k == "tools" then
      if type(v) ~= "table" then bad("tools must be a list of tool tables") end
      local seen = {}
      for i, t in ipairs(v) do
        require("rmcp.lib.tool_shape").check(t, path .. ": tools[" .. i .. "]")
        if seen[t.name] then bad("tool " .. t.name .. " is defined twice") end
        seen[t.name] = true
      end
    elseif k == "caps" then
      if type(v) == "table" then
        for name, n in pairs(v) do
          if not M.caps[name] then bad("caps." .. tostring(name) .. " is not a cap (caps: " .. M.names(M.caps) .. ")") end
          if type(n) ~= "number" or n < 0 then bad("caps." .. name .. " must be a number >= 0") end
        end
      elseif type(v) ~= "function" then
        bad("caps must be a table {name = value} or a function(name, value)")
      end
    elseif k == "agents" then
      if type(v) ~= "table" then bad("agents must be a table {name = {argv = {…}, profile = …?}}") end
    elseif k == "price" and type(v) == "table" then
      -- a table by model, or (below) a function of the model
      -- (each price is checked when it is asked for: rules/usage.lua price_spec, a mistake reported then)
      for model, p in pairs(v) do
        if type(model) ~= "string" or type(p) ~= "table" then bad("price must be a table {model = {input, output, …, currency}} or a function(model)") end
      end
    elseif M.hooks[k] then
      if type(v) ~= "function" then bad(k .. " must be a function") end
    else
      bad("unknown hook '" .. k .. "' (hooks: " .. M.names(M.hooks) .. ")")
    end
  end
  if policy.selfcheck then
    local ok, why = policy.selfcheck()
    if ok == false then bad("selfcheck failed: " .. tostring(why or "returned false")) end
  end
end

return M
