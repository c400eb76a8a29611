-- The sandbox agentd starts an agent in (sandbox = none | workspace | strict): what a spawn may ask
-- for, and the bubblewrap command line that makes it — the agent's cwd writable, the rest of the
-- filesystem read-only, the user's home and the reasonix-mcp home hidden behind empty ones (a private
-- home in their place holds the agent's own config), a private /tmp, its own pid, ipc and uts
-- namespaces, no capabilities, and for strict its own network namespace (agentd's network gate, through
-- a unix socket, is the only way out: agentd/session/netgate.lua). Stateless (reloadable).
local M = {}

M.LEVELS = { none = 0, workspace = 1, strict = 2 }
M.NAMES = "none, workspace or strict"

-- Where the network gate's socket is inside a strict sandbox (in its private /tmp: a mount point
-- the agent cannot unlink).
M.NET_SOCK = "/tmp/.reasonix-mcp/net.sock"

-- True when v is a list of non-empty strings (nil counts as empty).
local function strings(v)
  if v == nil then return true end
  if type(v) ~= "table" then return false end
  for k, x in pairs(v) do
    if type(k) ~= "number" or type(x) ~= "string" or x == "" then return false end
  end
  return true
end

-- Reads a spawn's sandbox option v (a level name, or {level, read, write, hosts, fallback}) over the
-- default level (REASONIX_MCP_DEFAULT_SANDBOX, else none). Returns {level, read, write, hosts,
-- fallback, explicit}, or nil and what is wrong (naming the field).
function M.spec(v, default)
  if v == nil then v = default or "none" end
  if type(v) == "string" then v = { level = v } end
  if type(v) ~= "table" then return nil, "sandbox must be " .. M.NAMES .. ", or {level, read, write, hosts, fallback}" end
  for k in pairs(v) do
    if k ~= "level" and k ~= "read" and k ~= "write" and k ~= "hosts" and k ~= "fallback" then
      return nil, "sandbox: unknown field " .. tostring(k) .. " (fields: level, read, write, hosts, fallback)"
    end
  end
  local level = v.level or default or "none"
  if not M.LEVELS[level] then return nil, "sandbox level must be " .. M.NAMES .. " (got " .. tostring(level) .. ")" end
  for _, k in ipairs({ "read", "write", "hosts" }) do
    if not strings(v[k]) then return nil, "sandbox." .. k .. " must be a list of strings" end
  end
  if v.fallback ~= nil and type(v.fallback) ~= "boolean" then return nil, "sandbox.fallback must be true or false" end
  if level == "none" and (v.read or v.write or v.hosts) then
    return nil, "sandbox: read, write and hosts need a level (workspace or strict)"
  end
  if v.hosts and level ~= "strict" then return nil, "sandbox.hosts limit the network of a strict sandbox only" end
  return { level = level, read = v.read or {}, write = v.write or {}, hosts = v.hosts or {}, fallback = v.fallback == true }
end

-- A host allowlist entry ("host", "host:port", "[v6]:port") as {host, port (nil: any)}, or nil.
function M.host_entry(e)
  local host, port = e:match("^%[([^%]]+)%]:(%d+)$")
  if not host then host, port = e:match("^([^:]+):(%d+)$") end
  if not host then host = e:match("^%[([^%]]+)%]$") or (not e:find(":", 1, true) and e) or nil end
  if not host or host == "" then return nil end
  port = tonumber(port)
  if port and (port < 1 or port > 65535) then return nil end
  return { host = host:lower(), port = port }
end

-- True when host:port is one of the entries (from host_entry).
function M.allowed(entries, host, port)
  host = tostring(host):lower()
  for _, e in ipairs(entries) do
    if e.host == host and (e.port == nil or e.port == port) then return true end
  end
  return false
end

-- True for a loopback host (an agent connects to it directly, never through a proxy).
function M.is_loopback(host)
  host = tostring(host):lower()
  return host == "localhost" or host == "::1" or host:match("^127%.%d+%.%d+%.%d+$") ~= nil
end

-- The endpoints a provider base URL names ("http://127.0.0.1:8080/v1" -> "127.0.0.1:8080"), or nil.
function M.endpoint_of(url)
  local scheme, rest = tostring(url):match("^(%a[%w+.-]*)://([^/?#]+)")
  if not scheme then return nil end
  rest = rest:gsub("^.*@", "") -- (no credentials in a host)
  local host, port = rest:match("^%[([^%]]+)%]:?(%d*)$")
  if not host then host, port = rest:match("^([^:]+):?(%d*)$") end
  if not host then return nil end
  port = tonumber(port) or (scheme:lower() == "https" and 443 or 80)
  return (host:find(":", 1, true) and "[" .. host .. "]" or host) .. ":" .. port
end

-- The bwrap argv (a list) that runs inner (a list) in the sandbox plan describes: {level, cwd,
-- hide (roots mounted empty, /tmp among them), home (the path the agent sees as its home) and private_home (what is
-- there), write (writable paths), read (read-only paths shown again inside hidden roots), protect
-- (paths shown read-only over writable ones), files ({src, dst} read-only files), env (NAME -> value set inside), net_dir (strict: the dir of the gate's socket)}.
function M.argv(bwrap, plan, inner)
  local a = { bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
              "--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc" }
  local function add(...) for _, x in ipairs({ ... }) do a[#a + 1] = x end end
  for _, root in ipairs(plan.hide) do add("--tmpfs", root) end
  if plan.home and plan.private_home then add("--bind", plan.private_home, plan.home) end
  for _, p in ipairs(plan.read or {}) do add("--ro-bind", p, p) end
  for _, p in ipairs(plan.write or {}) do add("--bind", p, p) end
  add("--bind", plan.cwd, plan.cwd, "--chdir", plan.cwd)
  -- over what is writable: files shown read-only at a path of their own, then paths kept read-only
  for _, f in ipairs(plan.files or {}) do add("--ro-bind", f[1], f[2]) end
  for _, p in ipairs(plan.protect or {}) do add("--ro-bind", p, p) end
  if plan.level == "strict" then
    add("--unshare-net")
    -- (read-only: the agent may connect to the gate, never swap its socket for a file)
    if plan.net_dir then add("--ro-bind", plan.net_dir, M.NET_SOCK:match("^(.*)/[^/]+$")) end
  end
  local names = {}
  for k in pairs(plan.env or {}) do names[#names + 1] = k end
  table.sort(names)
  for _, k in ipairs(names) do add("--setenv", k, plan.env[k]) end
  add("--")
  for _, x in ipairs(inner) do a[#a + 1] = x end
  return a
end

-- True when path is root or under it (both absolute and normalized).
function M.under(path, root)
  return path == root or path:sub(1, #root + 1) == (root == "/" and "/" or root .. "/")
end

-- Where an agent's config dir is, by its profile's sandbox box ({home_env, home_dir,
-- home_env_is_parent}) in environment map env with HOME home: the dir home_env names (or that dir's
-- home_dir, when home_env_is_parent: Gemini CLI's GEMINI_CLI_HOME holds .gemini), else home's
-- home_dir; nil without a home_env. And the value home_env takes in a sandbox whose private home is
-- seen at home.
function M.config_dir(box, env, home)
  if not box.home_env then return nil end
  local set = env[box.home_env]
  if set and box.home_env_is_parent then return set .. "/" .. box.home_dir, home end
  return set or (home .. "/" .. box.home_dir), box.home_env_is_parent and home or (home .. "/" .. box.home_dir)
end

return M
