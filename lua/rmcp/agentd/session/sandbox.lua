-- The sandbox a session's agent starts in (rules/sandbox.lua says what each level is): whether
-- bubblewrap can make one on this machine (tried once, then known), the session's private home (the
-- agent's config copied in, its credentials shown read-only, its own state kept there across
-- resumes), and the plan of the command that wraps it (clients/bwrap.lua says whether bubblewrap works
-- here). What is enforced goes on the session's posture.
local uv = require "luv"
local json = require "rmcp.lib.json"
local log = require "rmcp.lib.log"
local files = require "rmcp.lib.files"
local async = require "rmcp.lib.async"
local command = require "rmcp.lib.command"
local config = require "rmcp.config"
local rules = require "rmcp.rules.sandbox"
local sandbox_git = require "rmcp.agentd.sandbox_git"

local M = {}

-- The error of a spawn whose sandbox cannot be had (and no fallback was allowed).
M.REFUSED = -32021

-- The port the HTTP proxy listens on inside a strict sandbox (its own network namespace: free).
M.PROXY_PORT = 3128

-- The directory holding session id's private home (kept across resumes, removed with the session).
function M.dir(d, id)
  return d.paths.home .. "/sandboxes/" .. id
end

-- The hosts the agent's own config names as its providers' endpoints (strict reaches them), read
-- from the profile's config file (sandbox.providers_from) in its real config dir.
local function provider_endpoints(profile_box, real_home)
  local out = {}
  local file = profile_box.providers_from and files.read(real_home .. "/" .. profile_box.providers_from)
  for url in (file or ""):gmatch('base_url%s*=%s*"([^"]+)"') do
    local ep = rules.endpoint_of(url)
    if ep then out[#out + 1] = ep end
  end
  return out
end

-- Makes the private home of session s under its sandbox dir: the agent's config dir (the profile's
-- sandbox.home_dir, pointed to by its home_env) with its config files copied in afresh (the agent may
-- rewrite its copy, never yours) and its credential files shown read-only. Returns the private home,
-- the read-only files ({src, dst}) and the environment to set, or nil and why.
local function private_home(d, s, profile_box, real_home, home, home_env_value)
  local dir = M.dir(d, s.id) .. "/home"
  local conf = profile_box.home_dir and (dir .. "/" .. profile_box.home_dir) or nil
  -- the agent could have left a symlink where agentd writes (its copy would land in the target)
  local path = M.dir(d, s.id)
  for part in ((conf or dir):sub(#path + 2)):gmatch("[^/]+") do
    path = path .. "/" .. part
    local st = uv.fs_lstat(path)
    if st and st.type == "link" then os.remove(path) end
  end
  local ok, err = files.mkdir_p(conf or dir, tonumber("700", 8))
  if not ok then return nil, "cannot make the sandbox home " .. dir .. ": " .. tostring(err) end
  local ro, env = {}, { HOME = home, TMPDIR = "/tmp" }
  if conf then
    env[profile_box.home_env] = home_env_value
    for _, name in ipairs(profile_box.copy or {}) do
      local text = files.read(real_home .. "/" .. name)
      for _, at in ipairs({ conf .. "/" .. name, string.format("%s/%s.tmp%d", conf, name, uv.os_getpid()) }) do
        local st = uv.fs_lstat(at)
        if st and st.type ~= "file" then os.remove(at) end
      end
      if text then
        local wok, werr = files.write_atomic(conf .. "/" .. name, text, false)
        if not wok then return nil, "cannot copy " .. name .. " into the sandbox home: " .. tostring(werr) end
      end
    end
    for _, name in ipairs(profile_box.read_only or {}) do
      if uv.fs_stat(real_home .. "/" .. name) then
        ro[#ro + 1] = { real_home .. "/" .. name, home .. "/" .. profile_box.home_dir .. "/" .. name }
      end
    end
  end
  return dir, ro, env
end

-- The homes a sandbox hides, by their real paths: the agent's (its environment's HOME), agentd's
-- and the one the password database names (an orchestrator with another HOME must not uncover
-- yours).
local function homes(env)
  local out = {}
  for _, h in ipairs({ env and env.HOME or "/", config.user_home(), uv.os_get_passwd().homedir or "/" }) do
    local real = uv.fs_realpath(h)
    if real and real ~= "/" then out[#out + 1] = real end
  end
  return out
end

-- The roots a sandbox shows empty, those that exist: /tmp (a private one), /run (sockets:
-- the session bus, docker, the user's ssh and gpg agents), $XDG_RUNTIME_DIR, the homes, the
-- reasonix-mcp home, the worktrees dir (other agents' trees) when it is elsewhere; a root under
-- another is mounted on the empty one.
local function hidden_roots(d, env)
  local out, seen = {}, {}
  local roots = { "/tmp", "/run", "/var/run", config.env_of(env, "XDG_RUNTIME_DIR") or "/", table.unpack(homes(env)) }
  roots[#roots + 1] = d.paths.home
  roots[#roots + 1] = config.env("REASONIX_MCP_WORKTREE_DIR") or "/"
  for _, p in ipairs(roots) do
    local real = uv.fs_realpath(p)
    if real and real ~= "/" and not seen[real] then
      seen[real] = true
      out[#out + 1] = real
    end
  end
  return out
end

-- Why a sandbox with writable dir cwd and write paths cannot hide roots (a writable dir holding
-- one would show it whole), or nil.
local function holds_hidden(cwd, write, roots)
  for _, dir in ipairs({ cwd, table.unpack(write) }) do
    for _, root in ipairs(roots) do
      if rules.under(root, dir) then
        return "the agent's writable dir " .. dir .. " holds " .. root .. ", which a sandbox hides; give it a project dir"
      end
    end
  end
  return nil
end

-- The directory of the npm package holding file (the nearest dir with a package.json right under a
-- node_modules dir), or nil: an agent installed by npm needs its whole package to run.
local function package_root(file)
  local dir = file:match("^(.*)/[^/]+$")
  while dir and dir ~= "" do
    if dir:match("/node_modules/[^/]+$") and uv.fs_stat(dir .. "/package.json") then return dir end
    if dir:match("/node_modules/@[^/]+/[^/]+$") and uv.fs_stat(dir .. "/package.json") then return dir end
    dir = dir:match("^(.*)/[^/]+$")
  end
  return nil
end

-- The file an executable name runs: as given when it holds a slash, else found on PATH (env's).
local function resolve(name, env)
  if name:find("/", 1, true) then return uv.fs_realpath(name) or name end
  local path = (env and env.PATH) or os.getenv("PATH") or ""
  for dir in path:gmatch("[^:]+") do
    local f = dir .. "/" .. name
    if uv.fs_access(f, "X") then return uv.fs_realpath(f) or f end
  end
  return nil
end

-- What the agent's executable bin needs readable to start: the file itself, its npm package, and the
-- interpreter its #! line names (through env too) with that one's package, each by its real path.
local function agent_files(bin, env)
  local out, file = {}, resolve(bin, env)
  for _ = 1, 2 do
    if not file then break end
    out[#out + 1] = package_root(file) or file
    local head = files.read(file, 256) or ""
    local interp, arg = head:match("^#!%s*(%S+)%s*(%S*)")
    if not interp then break end
    if interp:match("/env$") and arg ~= "" then interp = arg end
    file = resolve(interp, env)
  end
  return out
end

-- The read-only paths of a sandbox hiding roots hide: what a hidden root holds that the agent
-- needs (its binary, its package and interpreter; for strict our binary and Lua tree, which the
-- in-sandbox side of the network gate runs on; the git dirs git_read; the resolver's config), the
-- machine owner's REASONIX_MCP_SANDBOX_READ (toolchains under the home: ~/.cargo, ~/.rustup, …),
-- and the spawn's read paths.
local function readable(spec, argv, env, git_read, hide)
  local read, needed = {}, agent_files(argv[1], env)
  if spec.level == "strict" then
    local host = require "rmcp.host"
    needed[#needed + 1] = host.exe
    needed[#needed + 1] = uv.fs_realpath(host.lua_dir) or host.lua_dir
  end
  for _, path in ipairs(git_read) do needed[#needed + 1] = path end
  needed[#needed + 1] = uv.fs_realpath("/etc/resolv.conf")
  for _, path in ipairs(needed) do
    for _, root in ipairs(hide) do
      if rules.under(path, root) then read[#read + 1] = path; break end
    end
  end
  for path in (config.env_of(env, "REASONIX_MCP_SANDBOX_READ") or ""):gmatch("[^:]+") do
    local real = path:sub(1, 1) == "/" and uv.fs_realpath(path)
    if real then read[#read + 1] = real end
  end
  for _, p in ipairs(spec.read) do read[#read + 1] = p end
  return read
end

-- The plan of s's sandbox (spec: rules.spec's) around agent argv (whose binary must stay readable),
-- with the profile's sandbox data and the agent's environment env; {plan, enforced (for the
-- posture), hosts (strict: allowlist entries)} or nil and why it cannot be made. Coroutine.
function M.plan(d, s, spec, argv, profile, env)
  local box = type(profile.sandbox) == "table" and profile.sandbox or {}
  local home = env and env.HOME
  if not home or home:sub(1, 1) ~= "/" or home == "/" or not uv.fs_stat(home) then
    return nil, "the agent's HOME (" .. tostring(home) .. ") is not an existing dir: its private home would have no place"
  end
  local real_cwd = uv.fs_realpath(s.cwd) or s.cwd
  local hide = hidden_roots(d, env)
  local why = holds_hidden(real_cwd, spec.write, hide)
  if why then return nil, why end
  local real_home, home_env_value = rules.config_dir(box, env, home)
  local priv, ro, set = private_home(d, s, box, real_home or home, home, home_env_value)
  if not priv then return nil, ro end
  local git, gerr = sandbox_git.paths(M.dir(d, s.id), real_cwd)
  if not git then return nil, gerr end
  if #git.read > 0 then
    for k, v in pairs(sandbox_git.identity()) do
      if not env[k] then set[k] = v end
    end
  end
  for _, f in ipairs(git.files) do ro[#ro + 1] = f end
  local write = { table.unpack(git.write) }
  for _, p in ipairs(spec.write) do write[#write + 1] = p end
  local plan = { level = spec.level, cwd = real_cwd, hide = hide, home = home, private_home = priv, files = ro,
                 read = readable(spec, argv, env, git.read, hide), write = write, protect = git.protect, env = set }
  local hosts = {}
  if spec.level == "strict" then
    for _, e in ipairs(provider_endpoints(box, real_home or home)) do hosts[#hosts + 1] = e end
    for e in (config.env_of(env, "REASONIX_MCP_SANDBOX_HOSTS") or ""):gmatch("[^,%s]+") do hosts[#hosts + 1] = e end
    for _, e in ipairs(spec.hosts) do hosts[#hosts + 1] = e end
  end
  local enforced = { sandbox = spec.level, by = "bwrap", writable = json.array({ real_cwd, table.unpack(write) }),
                     hidden = json.array(hide), network = spec.level == "strict" and "allowlist" or "open",
                     hosts = spec.level == "strict" and json.array(hosts) or nil }
  return { plan = plan, enforced = enforced, hosts = hosts }
end

-- The dir of session id's gate socket, bound into its sandbox as NET_SOCK's dir (a gate opened
-- again after a handover is a new socket file, which a bind of the dir still shows).
local function net_dir(d, id)
  return M.dir(d, id) .. "/net"
end

-- Opens the network gate of s (s.rt.netgate): agentd listens on a socket in the session's sandbox
-- dir and lets through what hosts (allowlist entries) name. Returns the entries, or nil and why.
local function listen_gate(d, s, hosts)
  local entries = {}
  for _, e in ipairs(hosts) do
    local entry = rules.host_entry(e)
    if not entry then return nil, "sandbox host " .. e .. " is not host or host:port" end
    entries[#entries + 1] = entry
  end
  local dir = net_dir(d, s.id)
  local ok, merr = files.mkdir_p(dir, tonumber("700", 8))
  if not ok then return nil, "cannot make " .. dir .. ": " .. tostring(merr) end
  local gate, err = require("rmcp.agentd.session.netgate").open(dir .. "/net.sock", function(host, port)
    if rules.allowed(entries, host, port) then return true end
    return false, host .. ":" .. tostring(port) .. " is not in the sandbox's allowlist"
  end, s.id)
  if not gate then return nil, "cannot open the network gate: " .. tostring(err) end
  s.rt.netgate = gate
  return entries
end

-- Opens the network gate of s's strict sandbox (plan: M.plan's) and returns the argv that runs the
-- in-sandbox side (`reasonix-mcp sandbox-net`: a forward for each loopback endpoint, the proxy for
-- the rest) in front of the agent's, or nil and why. The gate is s's runtime (closed when its agent
-- exits).
function M.open_gate(d, s, p)
  local entries, err = listen_gate(d, s, p.hosts)
  if not entries then return nil, err end
  p.plan.net_dir = net_dir(d, s.id)
  local proxy = "http://127.0.0.1:" .. M.PROXY_PORT
  for _, k in ipairs({ "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy" }) do
    p.plan.env[k] = proxy
  end
  -- loopback endpoints are forwarded where they are: the agent reaches them directly
  p.plan.env.NO_PROXY, p.plan.env.no_proxy = "127.0.0.1,localhost,::1", "127.0.0.1,localhost,::1"
  local argv = { require("rmcp.host").exe, "sandbox-net", "--sock", rules.NET_SOCK, "--proxy", tostring(M.PROXY_PORT) }
  for _, e in ipairs(entries) do
    if rules.is_loopback(e.host) and e.port then
      argv[#argv + 1] = "--forward"
      argv[#argv + 1] = string.format("%d=%s:%d", e.port, e.host, e.port)
    end
  end
  argv[#argv + 1] = "--"
  return argv
end

-- Opens again the gate of s, a strict session whose agent a previous daemon image handed over (a
-- listener does not survive the exec), with the allowlist its posture states. Returns true, or nil
-- and why.
function M.reopen_gate(d, s)
  local enforced = type(s.posture) == "table" and type(s.posture.enforced) == "table" and s.posture.enforced
  if not enforced or enforced.sandbox ~= "strict" then return true end
  local entries, err = listen_gate(d, s, type(enforced.hosts) == "table" and enforced.hosts or {})
  return entries and true or nil, err
end

-- Removes session s's sandbox dir, its private home among it (the session is forgotten): a child
-- does it, write permission given back first (the agent may have taken it from its own dirs).
function M.forget(d, s)
  local dir = M.dir(d, s.id)
  if not uv.fs_stat(dir) then return end
  async.run(function()
    command.run("sh", { "-c", 'chmod -R u+rwx -- "$1" 2>/dev/null; rm -rf -- "$1"', "forget", dir }, { timeout_ms = 120000 })
  end, function(err) log.warn("session %s: cannot remove %s: %s", s.id, dir, tostring(err)) end)
end

-- True when s's sandbox holds git work to bring back (a worktree's private common dir).
function M.has_git(d, s)
  return type(s.sandbox) == "table" and s.sandbox.level ~= "none"
    and uv.fs_stat(sandbox_git.dirs(M.dir(d, s.id)).state) ~= nil
end

-- Brings s's git work back into its repository (sandbox_git.sync), if its sandbox has any.
-- Coroutine.
function M.sync_git(d, s)
  if M.has_git(d, s) then sandbox_git.sync(M.dir(d, s.id)) end
end

-- argv put into s's sandbox (the plan its agent starts with; no network gate, so in strict it
-- reaches no network), or argv itself when s has none; nil and why when that sandbox cannot be had
-- (what the agent wrote must not run outside it). For commands agentd runs on the agent's work: an
-- integration's verify. profile: its agent's (state.profile). Coroutine.
function M.command_in(d, s, argv, profile)
  local spec = s.sandbox
  if type(spec) ~= "table" or spec.level == "none" then return argv end
  local av = require("rmcp.clients.bwrap").available()
  if not av.ok then return nil, av.why end
  local env = {}
  for k, v in pairs(uv.os_environ()) do env[k] = v end
  local p, why = M.plan(d, s, spec, argv, profile, env)
  if not p then return nil, why end
  return rules.argv(av.bwrap, p.plan, argv)
end

-- Tells s's sandbox that its branch was moved outside it (an integration brought it up to date:
-- sandbox_git.follow), if its sandbox keeps a private git dir. Coroutine.
function M.branch_moved(d, s, tip)
  if M.has_git(d, s) then sandbox_git.follow(M.dir(d, s.id), tip) end
end

-- Closes s's network gate, if its sandbox has one (its agent exited).
function M.close_gate(s)
  if s.rt and s.rt.netgate then
    s.rt.netgate:close()
    s.rt.netgate = nil
  end
end

return M
