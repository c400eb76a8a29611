-- What git needs in an agent's sandbox, and what must stay out of the agent's reach there. An agent
-- in a checkout or a worktree commits: its repository's git dir (for a worktree: the worktree's own
-- git dir, the shared object store and the directory of its branch's ref) is writable. What git
-- would run or follow later, outside the sandbox, for you or for agentd (the repository's config and
-- hooks, a worktree's `.git` file and the pointers of its git dir), stays read-only, so nothing the
-- agent writes runs outside it. Read from the files git keeps (`.git`, `commondir`, `HEAD`); git
-- runs only to read your identity (the sandbox's home has no git config of yours).
local uv = require "luv"
local files = require "rmcp.lib.files"
local command = require "rmcp.lib.command"

local M = {}

-- The directory holding path's `.git` entry, walking up from path (a realpath): that dir, the
-- entry's path and its type ("directory" or "file"), or nil.
local function find_dot_git(path)
  local dir = path
  while dir and dir ~= "" do
    local st = uv.fs_stat(dir .. "/.git")
    if st then return dir, dir .. "/.git", st.type end
    dir = dir:match("^(.*)/[^/]+$")
  end
  local st = uv.fs_stat("/.git")
  if st then return "/", "/.git", st.type end
  return nil
end

-- A path written in a git pointer file, relative to base when not absolute, by its real path.
local function pointed(text, base)
  if not text then return nil end
  text = text:gsub("%s+$", "")
  if text == "" then return nil end
  local p = text:sub(1, 1) == "/" and text or (base .. "/" .. text)
  return uv.fs_realpath(p)
end

-- The directory of the ref HEAD names in git dir gitdir ("refs/heads/reasonix" for a HEAD of
-- "ref: refs/heads/reasonix/rx-1"), or nil when HEAD is detached or unreadable.
local function branch_ref_dir(gitdir)
  local ref = (files.read(gitdir .. "/HEAD", 512) or ""):match("^ref:%s*(refs/heads/%S+)")
  return ref and ref:match("^(.*)/[^/]+$") or nil
end

-- True when path is root or under it.
local function under(path, root)
  return path == root or path:sub(1, #root + 1) == (root == "/" and "/" or root .. "/")
end

-- Makes sure file exists (empty when it did not), so it can be shown read-only: a file git reads
-- when present (config.worktree) must not be creatable by the agent.
local function ensure_file(path)
  if uv.fs_stat(path) then return true end
  local fd = uv.fs_open(path, "a", tonumber("644", 8))
  if not fd then return false end
  uv.fs_close(fd)
  return true
end

-- The git parts of the sandbox of an agent whose writable dir is cwd (a realpath): {read (dirs to
-- show read-only), write (dirs to make writable), protect (paths shown read-only over anything
-- writable)}; all empty when cwd is in no repository. A linked worktree's git dir is its checkout's
-- own, so an agent anywhere in that checkout commits; a main checkout's `.git` is the whole
-- repository's, writable only to an agent whose cwd holds the checkout whole.
function M.paths(cwd)
  local out = { read = {}, write = {}, protect = {} }
  local top, entry, kind = find_dot_git(cwd)
  if not top then return out end
  local gitdir, common
  if kind == "directory" then
    gitdir = uv.fs_realpath(entry) or entry
    common = gitdir
  else
    gitdir = pointed((files.read(entry, 4096) or ""):match("^gitdir:%s*([^\n]+)"), top)
    if not gitdir then return out end
    common = pointed(files.read(gitdir .. "/commondir", 4096), gitdir) or gitdir
    out.protect[#out.protect + 1] = entry
  end
  out.read[#out.read + 1] = common
  if gitdir ~= common then out.read[#out.read + 1] = gitdir end
  if not (under(top, cwd) or kind == "file") then return out end
  local function protect(path) out.protect[#out.protect + 1] = path end
  if gitdir == common then
    -- a checkout's own git dir: all of it, but what git runs or reads as settings
    if not under(common, cwd) then out.write[#out.write + 1] = common end
    files.mkdir_p(common .. "/hooks", tonumber("755", 8))
    for _, name in ipairs({ "config", "hooks", "modules" }) do
      if uv.fs_stat(common .. "/" .. name) then protect(common .. "/" .. name) end
    end
    if ensure_file(common .. "/config.worktree") then protect(common .. "/config.worktree") end
    return out
  end
  -- a linked worktree: its git dir, the shared object store and its branch's ref dir; the pointers
  -- of its git dir and the shared settings (read-only with the rest of the common dir) stay
  out.write[#out.write + 1] = gitdir
  out.write[#out.write + 1] = common .. "/objects"
  local refdir = branch_ref_dir(gitdir)
  if refdir then
    for _, base in ipairs({ common .. "/", common .. "/logs/" }) do
      if files.mkdir_p(base .. refdir, tonumber("755", 8)) then out.write[#out.write + 1] = base .. refdir end
    end
  end
  for _, name in ipairs({ "commondir", "gitdir" }) do
    if uv.fs_stat(gitdir .. "/" .. name) then protect(gitdir .. "/" .. name) end
  end
  if ensure_file(gitdir .. "/config.worktree") then protect(gitdir .. "/config.worktree") end
  return out
end

-- The environment that makes commits in a sandbox yours (its home hides your git config):
-- GIT_AUTHOR_*/GIT_COMMITTER_* from your global user.name and user.email, those you have; never
-- the rest of that config (it may hold tokens). Coroutine.
function M.identity()
  local r = command.run("git", { "config", "--global", "--get-regexp", "^user\\.(name|email)$" }, { timeout_ms = 5000 })
  local env = {}
  for key, value in ((r and r.code == 0 and r.stdout) or ""):gmatch("user%.(%a+) ([^\n]+)") do
    local what = key:upper()
    env["GIT_AUTHOR_" .. what], env["GIT_COMMITTER_" .. what] = value, value
  end
  return env
end

return M
