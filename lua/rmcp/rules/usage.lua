-- What agents spend, as figures: read from what each kind of agent sends, added up, priced, shown in
-- a few dozen bytes, and held against budgets. Stateless rules; the session keeps the figures
-- (agentd/session/usage.lua), the ledger keeps them by day (agentd/usage_ledger.lua).
--
-- A figure: tokens {input (every prompt token, cached ones included), cache_read, cache_write (of
-- those), output (every completion token, reasoning included), reasoning (of those), total}, and
-- cost (a number in currency) when it is known. A cost never known stays nil, never 0.
local M = {}

M.TOKEN_KEYS = { "input", "output", "reasoning", "cache_read", "cache_write", "total" }

-- Actions a budget check may take, mildest first: go on, warn (a field of the next result), finish
-- the running turn and stop, stop now.
M.ACTIONS = { go = 1, warn = 2, finish = 3, stop = 4 }

-- A non-negative integer out of v, or 0.
local function count(v)
  if math.type(v) == "integer" and v >= 0 then return v end
  if type(v) == "number" and v == v and v >= 0 and v < 2 ^ 53 then return math.floor(v) end
  return 0
end

-- A finite number out of v, or nil.
local function amount(v)
  if type(v) == "string" then v = tonumber(v) end
  if type(v) == "number" and v == v and v ~= math.huge and v ~= -math.huge then return v end
  return nil
end

-- A zero figure (cost unknown).
function M.zero()
  return { input = 0, output = 0, reasoning = 0, cache_read = 0, cache_write = 0, total = 0 }
end

-- The figure of one of reasonix's usage objects (`status.usage.turn` or `.cumulative` of its
-- `_reasonix.io/session/status_update`, event "usage"): promptTokens include the cache hits and
-- completionTokens the reasoning, as the provider counts them. Its estimatedCost is a cost only
-- when it names a currency.
function M.from_reasonix(u)
  if type(u) ~= "table" then return nil end
  local f = { input = count(u.promptTokens), output = count(u.completionTokens), reasoning = count(u.reasoningTokens),
              cache_read = count(u.cacheHitTokens), cache_write = 0, total = count(u.totalTokens) }
  if f.total == 0 then f.total = f.input + f.output end
  local cost = amount(u.estimatedCost)
  if cost and type(u.currency) == "string" and u.currency ~= "" then f.cost, f.currency = cost, u.currency end
  return f
end

-- The figure of an ACP prompt result's `usage` (one turn): inputTokens count apart from the cached
-- ones (cachedReadTokens, cachedWriteTokens), outputTokens include thoughtTokens.
function M.from_acp(u)
  if type(u) ~= "table" then return nil end
  local f = { cache_read = count(u.cachedReadTokens), cache_write = count(u.cachedWriteTokens),
              output = count(u.outputTokens), reasoning = count(u.thoughtTokens) }
  f.input = count(u.inputTokens) + f.cache_read + f.cache_write
  f.total = count(u.totalTokens)
  if f.total == 0 then f.total = f.input + f.output end
  return f
end

-- The figure of an ACP prompt result that has no `usage` but `_meta.quota.token_count`
-- ({input_tokens, output_tokens}: Gemini CLI's only report of a turn's tokens), or nil.
function M.from_acp_quota(meta)
  local tc = type(meta) == "table" and type(meta.quota) == "table" and meta.quota.token_count
  if type(tc) ~= "table" then return nil end
  local f = M.zero()
  f.input, f.output = count(tc.input_tokens), count(tc.output_tokens)
  f.total = f.input + f.output
  return f
end

-- The cumulative cost an ACP `usage_update` carries ({amount, currency}), or nil.
function M.acp_cost(update)
  local c = type(update) == "table" and update.cost
  if type(c) ~= "table" then return nil end
  local a = amount(c.amount)
  if not a or type(c.currency) ~= "string" or c.currency == "" then return nil end
  return a, c.currency
end

-- What cumulative figure now adds to the last one seen of the same agent process (nil: none yet,
-- then turn, the running turn's figure so far, is what is new). A counter that went back (the agent
-- started counting afresh) counts from zero.
function M.increment(now, seen, turn)
  local base = seen or M.zero()
  if not seen then
    if not turn then return now end
    base = M.zero()
    for _, k in ipairs(M.TOKEN_KEYS) do base[k] = math.max(0, now[k] - turn[k]) end
    if now.cost and turn.cost then base.cost = now.cost - turn.cost end
  end
  local inc = {}
  local back = now.total < base.total
  for _, k in ipairs(M.TOKEN_KEYS) do inc[k] = back and now[k] or math.max(0, now[k] - (base[k] or 0)) end
  if now.cost then
    inc.cost, inc.currency = back and now.cost or math.max(0, now.cost - (base.cost or 0)), now.currency
  end
  return inc
end

-- True when figure f counts nothing.
function M.empty(f)
  return f.total == 0 and (f.cost == nil or f.cost == 0)
end

-- Adds the cost of figure b into a: its cost and currency, or cost_unknown when some of b's tokens
-- had no cost.
function M.add_cost(a, b)
  if b.cost then
    a.cost, a.currency = (a.cost or 0) + b.cost, a.currency or b.currency
  elseif (b.total or 0) > 0 then
    a.cost_unknown = true
  end
  if b.cost_unknown then a.cost_unknown = true end
end

-- Adds figure b into a (a's cost stays unknown when either is; cost_unknown says some tokens had no
-- cost); returns a.
function M.add(a, b)
  for _, k in ipairs(M.TOKEN_KEYS) do a[k] = (a[k] or 0) + (b[k] or 0) end
  M.add_cost(a, b)
  return a
end

-- Checks a price: per million tokens {input, output, cache_read?, cache_write?, reasoning?,
-- currency}; returns it or nil and why.
function M.price_spec(p)
  if type(p) ~= "table" then return nil, "a price must be {input, output, cache_read?, cache_write?, reasoning?, currency}" end
  for _, k in ipairs({ "input", "output", "cache_read", "cache_write", "reasoning" }) do
    local v = p[k]
    if (k == "input" or k == "output") and v == nil then return nil, "price." .. k .. " is required (per million tokens)" end
    if v ~= nil and (type(v) ~= "number" or v < 0 or v ~= v or v == math.huge) then
      return nil, "price." .. k .. " must be a number >= 0 (per million tokens)"
    end
  end
  if type(p.currency) ~= "string" or not p.currency:match("^%u%u%u$") then return nil, "price.currency must be a code such as USD" end
  return p
end

-- The cost of figure f at price p (price_spec's): cached input at cache_read (else input), written
-- cache at cache_write (else input), reasoning at reasoning (else output).
function M.cost_at(f, p)
  local uncached = math.max(0, f.input - f.cache_read - f.cache_write)
  local plain_out = math.max(0, f.output - f.reasoning)
  local sum = uncached * p.input + f.cache_read * (p.cache_read or p.input) + f.cache_write * (p.cache_write or p.input)
    + plain_out * p.output + f.reasoning * (p.reasoning or p.output)
  return sum / 1e6, p.currency
end

-- Checks a budget option: a number (tokens) or {tokens?, cost?, currency?, warn_at? (a fraction,
-- default 0.8; 0 = no warning), on_exceed? ("finish" the turn, the default, or "stop" now)}.
-- Returns the budget table or nil and why; nil stays nil (no budget).
function M.budget_spec(v, what)
  what = what or "budget"
  if v == nil then return nil end
  if type(v) == "number" then v = { tokens = v } end
  if type(v) ~= "table" then return nil, what .. " must be a number of tokens or {tokens?, cost?, warn_at?, on_exceed?}" end
  local known = { tokens = true, cost = true, currency = true, warn_at = true, on_exceed = true }
  for k in pairs(v) do
    if not known[k] then return nil, what .. ": unknown field " .. tostring(k) .. " (tokens, cost, currency, warn_at, on_exceed)" end
  end
  if v.tokens == nil and v.cost == nil then return nil, what .. " needs tokens or cost" end
  if v.tokens ~= nil and (math.type(v.tokens) ~= "integer" and not (type(v.tokens) == "number" and v.tokens == math.floor(v.tokens)) or v.tokens < 1) then
    return nil, what .. ".tokens must be a whole number >= 1"
  end
  if v.cost ~= nil and (type(v.cost) ~= "number" or v.cost <= 0 or v.cost ~= v.cost or v.cost == math.huge) then
    return nil, what .. ".cost must be a number > 0"
  end
  if v.currency ~= nil and (type(v.currency) ~= "string" or not v.currency:match("^%u%u%u$")) then
    return nil, what .. ".currency must be a code such as USD"
  end
  if v.warn_at ~= nil and (type(v.warn_at) ~= "number" or v.warn_at < 0 or v.warn_at >= 1) then
    return nil, what .. ".warn_at must be a fraction from 0 to below 1"
  end
  if v.on_exceed ~= nil and v.on_exceed ~= "finish" and v.on_exceed ~= "stop" then
    return nil, what .. ".on_exceed must be finish (the running turn, then stop) or stop (now)"
  end
  return { tokens = v.tokens and math.floor(v.tokens), cost = v.cost, currency = v.currency, warn_at = v.warn_at,
           on_exceed = v.on_exceed }
end

-- A budget from an environment's two variables (tokens, cost), or nil and why.
function M.budget_from_env(tokens, cost, what)
  if (tokens == nil or tokens == "") and (cost == nil or cost == "") then return nil end
  local b = { tokens = tonumber(tokens ~= "" and tokens or nil), cost = tonumber(cost ~= "" and cost or nil) }
  if (tokens and tokens ~= "" and not b.tokens) or (cost and cost ~= "" and not b.cost) then
    return nil, what .. ": not a number"
  end
  return M.budget_spec(b, what)
end

-- The verdict of budget b (budget_spec's) on spent ({tokens, cost?, cost_unknown?}) for scope (the
-- words naming it: "session budget", "daily budget of orch-a", …): {action, scope, note, spent,
-- limit} — go, warn (at warn_at), or on_exceed once a limit is reached. A cost limit on spending
-- whose cost is unknown warns: it cannot be held.
function M.verdict(b, spent, scope)
  local v = { action = "go", scope = scope }
  local function over(kind, used, limit)
    if not limit or not used then return end
    local frac = used / limit
    if frac >= 1 then
      v.action = b.on_exceed or "finish"
      v.note = string.format("%s reached: %s %s of %s", scope, kind, M.show(used), M.show(limit))
    elseif frac >= (b.warn_at or 0.8) and (b.warn_at or 0.8) > 0 and M.ACTIONS[v.action] < M.ACTIONS.warn then
      v.action = "warn"
      v.note = string.format("%d%% of the %s: %s %s of %s", math.floor(frac * 100), scope, kind, M.show(used), M.show(limit))
    end
  end
  over("tokens", spent.tokens, b.tokens)
  if M.ACTIONS[v.action] < M.ACTIONS.finish then
    if b.cost and spent.cost_unknown then
      v.action = "warn"
      v.note = string.format("the %s has a cost limit, but some of its spending has no known price", scope)
    else
      over("cost", spent.cost or 0, b.cost)
    end
  end
  v.spent, v.limit = spent, b
  return v
end

-- The harsher of two verdicts.
function M.harsher(a, b)
  if not a then return b end
  if not b then return a end
  return M.ACTIONS[b.action] > M.ACTIONS[a.action] and b or a
end

-- A number in a few characters: integers as they are, costs to 4 significant digits.
function M.show(n)
  if math.type(n) == "integer" or n == math.floor(n) and math.abs(n) < 2 ^ 53 then return string.format("%d", n) end
  return string.format("%.4g", n)
end

-- The compact usage of a turn result: {turn = tokens, total = tokens, cost? (the session's, known
-- part), currency?, estimated? (a turn reported no usage), warning? (a budget's), budget? (the note
-- of the budget that stops it)} — a few dozen bytes, one table made at its size.
function M.line(turn, total, warning, budget)
  local cost = total.cost
  return { turn = turn and turn.total or 0, total = total.total, cost = cost and tonumber(string.format("%.6g", cost)),
    currency = cost and total.currency, cost_partial = cost and total.cost_unknown and true or nil,
    estimated = (total.unreported or 0) > 0 or nil, warning = warning, budget = budget }
end

return M
