/* sys.c: rmcp.sys, the few process services luv does not cover: an exclusive lock file (one
 * agentd, no start race), the effective uid, pointing stdout/stderr at a (rotated) log file,
 * replacing the process image (an agentd upgrade that keeps its pid, children and chosen fds), and
 * stopping the loop with an exit code. */
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "lua_host.h"
#include "modules.h"

/* Open (creating 0600) and take an exclusive, non-blocking flock; UV_EAGAIN when held. */
int sys_flock(const char *path, int *fdp)
{
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return -errno;
  while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
    if (errno == EINTR) continue;
    int e = errno;
    close(fd);
    return -e;
  }
  *fdp = fd;
  return 0;
}

/* Release a lock taken by sys_flock. */
void sys_unlock(int fd)
{
  flock(fd, LOCK_UN);
  close(fd);
}

/* Point fds 1 and 2 at path (opened O_APPEND, created 0600), so C-level stderr follows a log
 * that was rotated away under it; on failure 1 and 2 are left as they were. */
int sys_redirect_stdio(const char *path)
{
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return -errno;
  fflush(stdout);
  fflush(stderr);
  int r = 0;
  if (dup2(fd, 1) < 0 || dup2(fd, 2) < 0) r = -errno;
  close(fd);
  return r;
}

/* Set (on = 1) or clear FD_CLOEXEC on fd: a cleared fd survives sys_exec. */
int sys_cloexec(int fd, int on)
{
  int flags = fcntl(fd, F_GETFD);
  if (flags < 0) return -errno;
  flags = on ? flags | FD_CLOEXEC : flags & ~FD_CLOEXEC;
  return fcntl(fd, F_SETFD, flags) < 0 ? -errno : 0;
}

/* Replace this process image (same pid, children and non-CLOEXEC fds); returns only on failure. */
int sys_exec(const char *file, char *const argv[], char *const envp[])
{
  fflush(stdout);
  fflush(stderr);
  if (envp)
    execve(file, argv, envp);
  else
    execv(file, argv);
  return -errno;
}

/* sys.flock(path) -> fd | nil, err, code ("locked", "EWOULDBLOCK" when another holds it) */
static int lsys_flock(lua_State *L)
{
  const char *path = luaL_checkstring(L, 1);
  int fd;
  int r = sys_flock(path, &fd);
  if (r == -EWOULDBLOCK) {
    lua_pushnil(L);
    lua_pushliteral(L, "locked");
    lua_pushliteral(L, "EWOULDBLOCK");
    return 3;
  }
  if (r < 0) return lua_host_fail(L, r, path);
  lua_pushinteger(L, fd);
  return 1;
}

/* sys.unlock(fd) */
static int lsys_unlock(lua_State *L)
{
  sys_unlock((int)luaL_checkinteger(L, 1));
  return 0;
}

/* sys.redirect_stdio(path) -> true | nil, err, code */
static int lsys_redirect_stdio(lua_State *L)
{
  const char *path = luaL_checkstring(L, 1);
  int r = sys_redirect_stdio(path);
  if (r < 0) return lua_host_fail(L, r, path);
  lua_pushboolean(L, 1);
  return 1;
}

/* sys.cloexec(fd, on) -> true | nil, err, code */
static int lsys_cloexec(lua_State *L)
{
  int fd = (int)luaL_checkinteger(L, 1);
  luaL_checktype(L, 2, LUA_TBOOLEAN);
  int r = sys_cloexec(fd, lua_toboolean(L, 2));
  if (r < 0) return lua_host_fail(L, r, "fcntl");
  lua_pushboolean(L, 1);
  return 1;
}

/* Copy the strings of table idx into a NULL-terminated array (GC-owned), first as element 0. */
static char **lsys_strv(lua_State *L, int idx, const char *first)
{
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_Integer n = (lua_Integer)luaL_len(L, idx);
  int extra = first ? 1 : 0;
  char **v = lua_newuserdatauv(L, sizeof(char *) * (size_t)(n + extra + 1), 0);
  if (first) v[0] = (char *)first;
  for (lua_Integer i = 1; i <= n; i++) {
    if (lua_rawgeti(L, idx, i) != LUA_TSTRING) luaL_error(L, "exec: element %d must be a string", (int)i);
    v[i - 1 + extra] = (char *)lua_tostring(L, -1);  /* alive: the table holds it */
    lua_pop(L, 1);
  }
  v[n + extra] = NULL;
  return v;
}

/* sys.exec(file, args[, env]) -> only on failure: nil, err, code. argv[0] is file; env is a list
 * of "K=V" (default: ours). fds without FD_CLOEXEC, the pid and the children are kept. */
static int lsys_exec(lua_State *L)
{
  const char *file = luaL_checkstring(L, 1);
  char **argv = lsys_strv(L, 2, file);
  char **envp = lua_isnoneornil(L, 3) ? NULL : lsys_strv(L, 3, NULL);
  return lua_host_fail(L, sys_exec(file, argv, envp), file);
}

/* sys.geteuid() */
static int lsys_geteuid(lua_State *L)
{
  lua_pushinteger(L, (lua_Integer)geteuid());
  return 1;
}

/* sys.stop(code): stop the loop; main tears down and exits with code. */
static int lsys_stop(lua_State *L)
{
  int code = (int)luaL_optinteger(L, 1, 0);
  lua_host_t *h = lua_host_get(L);
  if (h == NULL) return luaL_error(L, "rmcp.sys needs the reasonix-mcp host");
  h->exit_code = code;
  h->stopped = 1;
  uv_stop(h->loop);
  return 0;
}

/* Module loader: require "rmcp.sys". */
int luaopen_rmcp_sys(lua_State *L)
{
  static const luaL_Reg funcs[] = {
    {"flock", lsys_flock}, {"unlock", lsys_unlock}, {"geteuid", lsys_geteuid}, {"stop", lsys_stop},
    {"redirect_stdio", lsys_redirect_stdio}, {"cloexec", lsys_cloexec}, {"exec", lsys_exec}, {NULL, NULL},
  };
  luaL_newlib(L, funcs);
  return 1;
}
