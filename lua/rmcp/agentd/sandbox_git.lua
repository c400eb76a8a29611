-- Git in an agent's sandbox: the agent commits, your repository takes only what git itself checks.
-- - A linked worktree (isolate=worktree): inside the sandbox its git dir's `commondir` names a
--   private common dir (<sandbox>/git/common: a copy of the repository's refs, config, hooks and
--   info, and an object store of its own that reads yours through `alternates`). The agent commits,
--   branches, rebases there; your object store, refs, config and hooks are read-only to it. agentd
--   brings the work back (sync): the new objects re-hashed by `git unpack-objects` into your store,
--   then its own branch moved to its new tip; nothing else of the copy is read.
-- - A main checkout (cwd holding `.git`): `.git` read-only whole (a mount: it cannot be renamed
--   either) and so the `.git` of each submodule; to commit, an agent gets a worktree.
-- What your git or agentd's would follow later outside (a worktree's `.git` file, its git dir's
-- `commondir` and `gitdir`, symlinks the agent leaves in its git dir) stays read-only or is removed.
-- agentd's own git calls here and in worktree.lua run with worktree.SAFE (no hooks, fsmonitor or
-- submodule descent), so nothing the agent wrote runs as you.
local uv = require "luv"
local log = require "rmcp.lib.log"
local json = require "rmcp.lib.json"
local files = require "rmcp.lib.files"
local command = require "rmcp.lib.command"
local worktree = require "rmcp.agentd.worktree"
local reload = require "rmcp.lib.reload" -- (stamp: a file's identity for change detection)

local M = {}

-- Our environment as a list (NAME=value) with the additions adds (a list of NAME=value).
local function env_list(adds)
  local out = {}
  for k, v in pairs(uv.os_environ()) do out[#out + 1] = k .. "=" .. v end
  for _, kv in ipairs(adds or {}) do out[#out + 1] = kv end
  return out
end

-- Runs git with worktree.SAFE and args, in our environment plus adds; returns the result or nil,
-- why. Coroutine.
local function git(args, adds)
  local argv = { table.unpack(worktree.SAFE) }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  local r, err = command.run("git", argv, { env = env_list(adds), timeout_ms = 120000 })
  if not r then return nil, "cannot run git: " .. tostring(err) end
  if r.code ~= 0 then return nil, (r.stderr or ""):gsub("%s+$", "") end
  return r
end

-- The directory holding path's `.git` entry, walking up from path (a realpath): that dir, the
-- entry's path and its type ("directory" or "file"), or nil.
local function find_dot_git(path)
  local dir = path
  while dir and dir ~= "" do
    local st = uv.fs_stat(dir .. "/.git")
    if st then return dir, dir .. "/.git", st.type end
    dir = dir:match("^(.*)/[^/]+$")
  end
  return nil
end

-- A path written in a git pointer file, relative to base when not absolute, by its real path.
local function pointed(text, base)
  text = (text or ""):gsub("%s+$", "")
  if text == "" then return nil end
  return uv.fs_realpath(text:sub(1, 1) == "/" and text or (base .. "/" .. text))
end

-- True when path is root or under it.
local function under(path, root)
  return path == root or path:sub(1, #root + 1) == (root == "/" and "/" or root .. "/")
end

-- Iterates the entries of dir: name, kind ("file", "directory", "link", …); nothing when it
-- cannot be read.
local function dir_entries(dir)
  local it = uv.fs_scandir(dir)
  return function()
    if not it then return nil end
    return uv.fs_scandir_next(it)
  end
end

-- The text of regular file path (never through a symlink), or nil.
local function read_regular(path, max)
  local st = uv.fs_lstat(path)
  if not st or st.type ~= "file" then return nil end
  return files.read(path, max)
end

-- Copies the regular files of dir src into dst (made), recursing into dirs; symlinks are skipped.
local function copy_tree(src, dst)
  files.mkdir_p(dst, tonumber("755", 8))
  for name, kind in dir_entries(src) do
    if kind == "directory" then
      copy_tree(src .. "/" .. name, dst .. "/" .. name)
    elseif kind == "file" then
      local st = uv.fs_stat(src .. "/" .. name)
      local text = files.read(src .. "/" .. name)
      local f = text and io.open(dst .. "/" .. name, "wb")
      if f then
        f:write(text)
        f:close()
        uv.fs_chmod(dst .. "/" .. name, st and (st.mode & tonumber("777", 8)) or tonumber("644", 8))
      end
    end
  end
end

-- Removes path and everything under it (ours: no symlink is followed).
local function remove_tree(path)
  local st = uv.fs_lstat(path)
  if not st then return end
  if st.type == "directory" then
    for name in dir_entries(path) do remove_tree(path .. "/" .. name) end
    uv.fs_rmdir(path)
  else
    os.remove(path)
  end
end

-- Removes every symlink under dir (the agent's git dir: your git would follow one, to write a
-- reflog line into any file, say).
local function drop_symlinks(dir)
  for name, kind in dir_entries(dir) do
    if kind == "link" then os.remove(dir .. "/" .. name)
    elseif kind == "directory" then drop_symlinks(dir .. "/" .. name) end
  end
end

-- Where the git state of session id's sandbox lives: {root, common (bound inside), commondir (the
-- pointer file shown over the worktree's), state (what sync needs: not shown), staging}.
function M.dirs(sandbox_dir)
  local root = sandbox_dir .. "/git"
  return { root = root, common = root .. "/common", commondir = root .. "/commondir", state = root .. "/state.json",
           staging = root .. "/staging" }
end

-- Makes the private common dir of a linked worktree whose git dir is gitdir and whose repository's
-- common dir is common; returns its state {common, gitdir, branch, tip} (saved for sync), or nil, why.
local function seed(dirs, common, gitdir)
  remove_tree(dirs.common)
  local p = dirs.common
  for _, sub in ipairs({ "objects/info", "objects/pack", "hooks", "info" }) do files.mkdir_p(p .. "/" .. sub, tonumber("755", 8)) end
  local f = io.open(p .. "/objects/info/alternates", "w")
  if not f then return nil, "cannot write " .. p .. "/objects/info/alternates" end
  f:write(common, "/objects\n")
  f:close()
  for _, name in ipairs({ "config", "HEAD", "packed-refs", "shallow" }) do
    local text = read_regular(common .. "/" .. name)
    if text then
      local out = io.open(p .. "/" .. name, "wb")
      if out then out:write(text); out:close() end
    end
  end
  for _, sub in ipairs({ "refs", "hooks", "info" }) do
    if uv.fs_stat(common .. "/" .. sub) then copy_tree(common .. "/" .. sub, p .. "/" .. sub) end
  end
  local ref = (read_regular(gitdir .. "/HEAD", 512) or ""):match("^ref:%s*(refs/heads/%S+)")
  local tip = ref and (read_regular(p .. "/" .. ref, 200) or ""):match("^(%x+)") or nil
  local state = { common = common, gitdir = gitdir, branch = ref, tip = tip }
  local ok, err = files.write_atomic(dirs.state, json.encode(state), false)
  if not ok then return nil, err end
  ok, err = files.write_atomic(dirs.commondir, p .. "\n", false)
  if not ok then return nil, err end
  return state
end

-- The submodule paths of a checkout's index as `git ls-files` last read them, by checkout top:
-- {index = the index file's stamp, paths}. A fleet spawned in one checkout runs git once; any write
-- of the index (a new inode, or another size or mtime) reads it again.
local gitlinks_seen, gitlinks_n = {}, 0
local MAX_GITLINKS_SEEN = 64

-- The paths (relative to top) of the submodules in the index of the checkout at top, whose git
-- dir is gitdir. Coroutine.
local function gitlinks(top, gitdir)
  local index = reload.stamp(os.getenv("GIT_INDEX_FILE") or (gitdir .. "/index")) or "-"
  local seen = gitlinks_seen[top]
  if seen and seen.index == index then return seen.paths end
  local paths = {}
  local r = git({ "-C", top, "ls-files", "--stage", "-z" })
  for mode, path in ((r and r.stdout) or ""):gmatch("(%d+) %x+ %d+\t([^%z]+)") do
    if mode == "160000" then paths[#paths + 1] = path end
  end
  if not r then return paths end -- (not kept: the next spawn tries again)
  if not seen then
    if gitlinks_n >= MAX_GITLINKS_SEEN then gitlinks_seen, gitlinks_n = {}, 0 end
    gitlinks_n = gitlinks_n + 1
  end
  gitlinks_seen[top] = { index = index, paths = paths }
  return paths
end

-- The submodules of the checkout at top (git dir gitdir) whose `.git` sits under cwd: those paths
-- (they are shown read-only: your git status descends into each). Coroutine.
local function submodule_dot_gits(top, gitdir, cwd)
  local out = {}
  for _, path in ipairs(gitlinks(top, gitdir)) do
    local entry = top .. "/" .. path .. "/.git"
    if under(entry, cwd) and uv.fs_lstat(entry) then out[#out + 1] = entry end
  end
  return out
end

-- The git parts of the sandbox (in sandbox_dir) of an agent whose writable dir is cwd (a
-- realpath): {read (shown read-only), write (writable), files ({src, dst} shown read-only),
-- protect (read-only over anything writable)}; all empty when cwd is in no repository, or nil and
-- why. A worktree's earlier private state is brought back first (a daemon that died before its
-- sync). Coroutine.
function M.paths(sandbox_dir, cwd)
  local out = { read = {}, write = {}, files = {}, protect = {} }
  local top, entry, kind = find_dot_git(cwd)
  if not top then return out end
  local gitdir = kind == "directory" and (uv.fs_realpath(entry) or entry)
    or pointed((read_regular(entry, 4096) or ""):match("^gitdir:%s*([^\n]+)"), top)
  if not gitdir then return out end
  local common = pointed(read_regular(gitdir .. "/commondir", 4096), gitdir) or gitdir
  if under(entry, cwd) then out.protect[#out.protect + 1] = entry end
  if common == gitdir then
    -- a main checkout (or a submodule's): its git dir read-only, and each submodule's `.git`
    out.read[#out.read + 1] = gitdir
    if gitdir ~= entry and under(gitdir, cwd) then out.protect[#out.protect + 1] = gitdir end
    if under(top, cwd) then
      for _, sub in ipairs(submodule_dot_gits(top, gitdir, cwd)) do out.protect[#out.protect + 1] = sub end
    end
    return out
  end
  local dirs = M.dirs(sandbox_dir)
  M.sync(sandbox_dir)
  local state, err = seed(dirs, common, gitdir)
  if not state then return nil, "cannot prepare git for the sandbox: " .. tostring(err) end
  out.read[#out.read + 1] = common .. "/objects"
  out.write[#out.write + 1] = gitdir
  out.write[#out.write + 1] = dirs.common
  out.files[#out.files + 1] = { dirs.commondir, gitdir .. "/commondir" }
  for _, name in ipairs({ "gitdir", "config.worktree" }) do
    local path = gitdir .. "/" .. name
    if not uv.fs_lstat(path) then
      local f = io.open(path, "a")
      if f then f:close() end
    end
    if uv.fs_lstat(path) then out.protect[#out.protect + 1] = path end
  end
  return out
end

-- Moves what the agent's private object store holds (its loose object dirs and packs) into
-- staging, where the agent cannot reach them nor swap a file for a symlink meanwhile. Returns the
-- ids of the regular loose objects and the staged packs' index files.
local function stage_objects(dirs)
  remove_tree(dirs.staging)
  files.mkdir_p(dirs.staging .. "/pack", tonumber("700", 8))
  files.mkdir_p(dirs.staging .. "/info", tonumber("700", 8))
  local ids, idx, objects = {}, {}, dirs.common .. "/objects"
  for name, kind in dir_entries(objects) do
    if kind == "directory" and name:match("^%x%x$") then
      local staged = dirs.staging .. "/" .. name
      uv.fs_rename(objects .. "/" .. name, staged)
      for file, fkind in dir_entries(staged) do
        if fkind == "file" and file:match("^%x+$") then ids[#ids + 1] = name .. file else os.remove(staged .. "/" .. file) end
      end
    end
  end
  for file, kind in dir_entries(objects .. "/pack") do
    if kind == "file" and file:match("^pack%-%x+%.%a+$") then
      uv.fs_rename(objects .. "/pack/" .. file, dirs.staging .. "/pack/" .. file)
      if file:match("%.idx$") then idx[#idx + 1] = dirs.staging .. "/pack/" .. file end
    end
  end
  return ids, idx
end

-- Puts staged objects back into the agent's store (an import that failed loses nothing).
local function unstage_objects(dirs)
  local objects = dirs.common .. "/objects"
  for name, kind in dir_entries(dirs.staging) do
    if kind == "directory" and name:match("^%x%x$") then uv.fs_rename(dirs.staging .. "/" .. name, objects .. "/" .. name) end
  end
  for file in dir_entries(dirs.staging .. "/pack") do uv.fs_rename(dirs.staging .. "/pack/" .. file, objects .. "/pack/" .. file) end
end

-- Imports the staged objects (ids, plus those the staged pack indexes idx list) into the store of
-- common: packed from the staging store, unpacked by your repository's git, which names each by
-- the hash of what it holds. Returns true or nil, why. Coroutine.
local function import_objects(dirs, common, ids, idx)
  for _, file in ipairs(idx) do
    local r = command.run("sh", { "-c", 'git show-index < "$1"', "show-index", file })
    for id in ((r and r.stdout) or ""):gmatch("%d+ (%x+)") do ids[#ids + 1] = id end
  end
  if #ids == 0 then return true end
  local list = dirs.root .. "/ids"
  local f = io.open(list, "w")
  if not f then return nil, "cannot write " .. list end
  f:write(table.concat(ids, "\n"), "\n")
  f:close()
  f = io.open(dirs.staging .. "/info/alternates", "w") -- (pack-objects may need what the commits build on)
  if f then f:write(common, "/objects\n"); f:close() end
  local r, err = command.run("sh", { "-c", 'GIT_OBJECT_DIRECTORY="$1" git pack-objects -q --stdout < "$2" | git unpack-objects -q',
    "sync", dirs.staging, list }, { env = env_list({ "GIT_DIR=" .. common }), timeout_ms = 300000 })
  os.remove(list)
  if not r then return nil, tostring(err) end
  if r.code ~= 0 then return nil, (r.stderr or ""):gsub("%s+$", "") end
  return true
end

-- The tip the agent gave its branch in its private common dir (loose or packed), or nil.
local function private_tip(dirs, branch)
  local loose = (read_regular(dirs.common .. "/" .. branch, 200) or ""):match("^(%x+)%s*$")
  if loose then return loose end
  local packed = "\n" .. (read_regular(dirs.common .. "/packed-refs") or "")
  for sha, name in packed:gmatch("\n(%x+) ([^\n]+)") do
    if name == branch then return sha end
  end
  return nil
end

-- Brings back the work of the sandbox in sandbox_dir into your repository: the objects its agent
-- made (re-hashed by git on the way in: a forged one lands under its true name or not at all), and
-- its own branch moved to the tip it committed once that commit is in your store; its git dir
-- loses any symlink. One sync of a sandbox at a time. Returns true, or nil and why (logged).
-- Coroutine.
function M.sync(sandbox_dir)
  return worktree.take_turns("sandbox-git " .. sandbox_dir, function()
    local dirs = M.dirs(sandbox_dir)
    local state = json.decode(files.read(dirs.state) or "")
    if type(state) ~= "table" or type(state.common) ~= "string" or not uv.fs_stat(dirs.common) then return true end
    local ids, idx = stage_objects(dirs)
    local ok, err = import_objects(dirs, state.common, ids, idx)
    if not ok then
      unstage_objects(dirs)
      log.warn("sandbox git: the objects of %s did not come back into %s: %s", sandbox_dir, state.common, tostring(err))
      return nil, err
    end
    remove_tree(dirs.staging)
    local tip = type(state.branch) == "string" and private_tip(dirs, state.branch)
    if tip and tip ~= state.tip then
      local env = { "GIT_DIR=" .. state.common }
      ok, err = git({ "cat-file", "-e", tip .. "^{commit}" }, env)
      if ok then ok, err = git({ "update-ref", state.branch, tip }, env) end
      if not ok then
        log.warn("sandbox git: %s not moved to %s: %s", state.branch, tip, tostring(err))
      else
        state.tip = tip
        files.write_atomic(dirs.state, json.encode(state), false)
      end
    end
    if type(state.gitdir) == "string" then drop_symlinks(state.gitdir) end
    return true
  end)
end

-- Points the private copy's branch of the sandbox in sandbox_dir at tip, which it was moved to in
-- your repository (an integration rebased or merged it): the agent goes on from there, and the next
-- sync moves nothing back. Coroutine.
function M.follow(sandbox_dir, tip)
  return worktree.take_turns("sandbox-git " .. sandbox_dir, function()
    local dirs = M.dirs(sandbox_dir)
    local state = json.decode(files.read(dirs.state) or "")
    if type(state) ~= "table" or type(state.branch) ~= "string" or not tip:match("^%x+$") then return true end
    local ok, err = files.write_atomic(dirs.common .. "/" .. state.branch, tip .. "\n", false)
    if not ok then return nil, err end
    state.tip = tip
    return files.write_atomic(dirs.state, json.encode(state), false)
  end)
end

-- The files `git config --global` reads in our environment, with their stamps: what identity()'s
-- answer is kept for.
local function global_config_key()
  local paths = { os.getenv("GIT_CONFIG_GLOBAL") }
  if not paths[1] then
    local home, xdg = os.getenv("HOME") or "", os.getenv("XDG_CONFIG_HOME")
    paths = { ((xdg and xdg ~= "") and xdg or (home .. "/.config")) .. "/git/config", home .. "/.gitconfig" }
  end
  for i, path in ipairs(paths) do paths[i] = path .. "=" .. (reload.stamp(path) or "-") end
  return table.concat(paths, "\0")
end

-- identity()'s last answer: {key = global_config_key(), at = uv.now(), env}. It is asked again when
-- a global config file changes, and after IDENTITY_MS in any case (a file they include may change
-- unseen): a fleet of sandboxed spawns runs git once.
local identity_seen
M.IDENTITY_MS = 30000

-- The environment that makes commits in a sandbox yours (its home hides your git config):
-- GIT_AUTHOR_*/GIT_COMMITTER_* from your global user.name and user.email, those you have; never
-- the rest of that config (it may hold tokens). A new table each call. Coroutine.
function M.identity()
  local key = global_config_key()
  local seen = identity_seen
  if not (seen and seen.key == key and uv.now() - seen.at <= M.IDENTITY_MS) then
    local r = command.run("git", { "config", "--global", "--get-regexp", "^user\\.(name|email)$" }, { timeout_ms = 5000 })
    local env = {}
    for name, value in ((r and r.code == 0 and r.stdout) or ""):gmatch("user%.(%a+) ([^\n]+)") do
      local what = name:upper()
      env["GIT_AUTHOR_" .. what], env["GIT_COMMITTER_" .. what] = value, value
    end
    seen = { key = key, at = uv.now(), env = env }
    if r then identity_seen = seen end -- (git that could not run is asked again)
  end
  local env = {}
  for k, v in pairs(seen.env) do env[k] = v end
  return env
end

return M
