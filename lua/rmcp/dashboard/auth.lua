-- Who may use the dashboard: one password (REASONIX_MCP_DASHBOARD_PASSWORD, else one generated
-- into $REASONIX_MCP_HOME/dashboard.password, 0600 — no well-known default), compared in constant
-- time, login attempts rate-limited; a login gives a random session cookie (HttpOnly,
-- SameSite=Strict); every request must name our host (DNS rebinding), and every state-changing
-- request and event stream must come from our origin (CSRF).
local uv = require "luv"
local config = require "rmcp.config"

local M = {}

M.cookie = "rmcp_dash"
M.max_failures = 5      -- failed logins allowed per window
M.window_s = 60

-- n random bytes as hex, from the kernel.
function M.random_hex(n)
  local f = assert(io.open("/dev/urandom", "rb"))
  local bytes = f:read(n)
  f:close()
  return (bytes:gsub(".", function(c) return string.format("%02x", c:byte()) end))
end

-- The password and where it comes from: the environment, or the 0600 file under the runtime dir
-- (created on first use). Returns password, source.
function M.password()
  local env = os.getenv("REASONIX_MCP_DASHBOARD_PASSWORD")
  if env and env ~= "" then return env, "REASONIX_MCP_DASHBOARD_PASSWORD" end
  local path = config.home() .. "/dashboard.password"
  local f = io.open(path, "r")
  if f then
    local text = (f:read("a") or ""):match("^%s*(.-)%s*$")
    f:close()
    if text ~= "" then return text, path end
  end
  local pw = M.random_hex(16)
  local fd = assert(uv.fs_open(path, "w", 384)) -- 0600
  uv.fs_write(fd, pw .. "\n")
  uv.fs_close(fd)
  uv.fs_chmod(path, 384)
  return pw, path
end

-- True when a equals b, taking the same time for any a of b's length.
function M.equal(a, b)
  if type(a) ~= "string" or type(b) ~= "string" then return false end
  local diff = #a ~ #b
  for i = 1, #b do
    diff = diff | ((a:byte(i) or 0) ~ b:byte(i))
  end
  return diff == 0
end

-- A gate: the password, the live session tokens, the failed-login window.
function M.new(password, port)
  local self = { password = password, tokens = {}, failures = {}, port = port }
  self.origins = { ["http://127.0.0.1:" .. port] = true, ["http://localhost:" .. port] = true, ["http://[::1]:" .. port] = true }
  self.hosts = { ["127.0.0.1:" .. port] = true, ["localhost:" .. port] = true, ["[::1]:" .. port] = true }
  return setmetatable(self, { __index = M })
end

-- True when req names our host (a page served to another name is a DNS-rebinding attempt).
function M:host_ok(req)
  return self.hosts[req.headers.host or ""] == true
end

-- True when req may change state or open a stream: its Origin, when the browser sent one, is ours;
-- a POST must carry one.
function M:origin_ok(req)
  local origin = req.headers.origin
  if origin == nil then return req.method == "GET" end
  return self.origins[origin] == true
end

-- The session token of req's cookie when it is a live one, else nil.
function M:session(req)
  local cookies = req.headers.cookie or ""
  for name, value in cookies:gmatch("([^=;%s]+)=([^;]*)") do
    if name == M.cookie and self.tokens[value] then return value end
  end
  return nil
end

-- Seconds until another login may be tried, or nil when one may be now.
function M:throttled()
  local now, recent = os.time(), {}
  for _, t in ipairs(self.failures) do
    if now - t < M.window_s then recent[#recent + 1] = t end
  end
  self.failures = recent
  if #recent >= M.max_failures then return M.window_s - (now - recent[1]) end
  return nil
end

-- Checks a login: returns a new session token, or nil and "wrong" / "throttled".
function M:login(password)
  if self:throttled() then return nil, "throttled" end
  if not M.equal(password, self.password) then
    self.failures[#self.failures + 1] = os.time()
    return nil, "wrong"
  end
  local token = M.random_hex(32)
  self.tokens[token] = os.time()
  return token
end

-- Ends the session of token.
function M:logout(token)
  self.tokens[token] = nil
end

-- The Set-Cookie value that gives the browser token.
function M.set_cookie(token)
  return string.format("%s=%s; HttpOnly; SameSite=Strict; Path=/", M.cookie, token)
end

return M
