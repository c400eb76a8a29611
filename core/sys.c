/* sys.c: rmcp.sys, the few process services luv does not cover: an exclusive lock file (one
 * agentd, no start race), the effective uid, pointing stdout/stderr at a (rotated) log file,
 * replacing the process image (an agentd upgrade that keeps its pid, children and chosen fds),
 * local time in a named IANA zone (the C library reads the system zoneinfo, DST included), a
 * deadline that a hangup arms (a server whose launcher died finishes what its stdin holds, within
 * bounds), and stopping the loop with an exit code. */
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
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
    int e = errno ? errno : EIO;
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

/* Runs the C library's time functions in zone (TZ=":zone" while it runs, the old TZ put back). */
static char *sys_tz_enter(const char *zone)
{
  const char *old = getenv("TZ");
  char *saved = old ? strdup(old) : NULL;
  char buf[256];
  snprintf(buf, sizeof(buf), ":%s", zone);
  setenv("TZ", buf, 1);
  tzset();
  return saved;
}

/* Puts back the TZ sys_tz_enter replaced. */
static void sys_tz_leave(char *saved)
{
  if (saved) {
    setenv("TZ", saved, 1);
    free(saved);
  } else {
    unsetenv("TZ");
  }
  tzset();
}

/* The local time of t in zone; 0 or -errno. */
int sys_tz_local(const char *zone, time_t t, struct tm *out)
{
  char *saved = sys_tz_enter(zone);
  struct tm *r = localtime_r(&t, out);
  sys_tz_leave(saved);
  return r ? 0 : -EOVERFLOW;
}

/* The time of local fields tm in zone (tm_isdst -1: the C library decides; a time a DST change
 * skips comes out moved forward by the change); 0 or -errno. */
int sys_tz_time(const char *zone, struct tm *tm, time_t *out)
{
  char *saved = sys_tz_enter(zone);
  tm->tm_isdst = -1;
  errno = 0;
  time_t t = mktime(tm);
  int e = errno;
  sys_tz_leave(saved);
  if (t == (time_t)-1 && e) return -e;
  *out = t;
  return 0;
}

/* Fills the table at the top of the stack with tm's fields. */
static void lsys_push_tm(lua_State *L, const struct tm *tm)
{
  lua_createtable(L, 0, 9);
  lua_pushinteger(L, tm->tm_year + 1900); lua_setfield(L, -2, "year");
  lua_pushinteger(L, tm->tm_mon + 1); lua_setfield(L, -2, "month");
  lua_pushinteger(L, tm->tm_mday); lua_setfield(L, -2, "day");
  lua_pushinteger(L, tm->tm_hour); lua_setfield(L, -2, "hour");
  lua_pushinteger(L, tm->tm_min); lua_setfield(L, -2, "min");
  lua_pushinteger(L, tm->tm_sec); lua_setfield(L, -2, "sec");
  lua_pushinteger(L, tm->tm_wday); lua_setfield(L, -2, "wday");
  lua_pushboolean(L, tm->tm_isdst > 0); lua_setfield(L, -2, "isdst");
  lua_pushinteger(L, tm->tm_gmtoff); lua_setfield(L, -2, "utc_offset");
}

/* sys.tz_local(zone, t) -> {year, month, day, hour, min, sec, wday, isdst, utc_offset} | nil, err */
static int lsys_tz_local(lua_State *L)
{
  const char *zone = luaL_checkstring(L, 1);
  time_t t = (time_t)luaL_checkinteger(L, 2);
  struct tm tm;
  int r = sys_tz_local(zone, t, &tm);
  if (r < 0) return lua_host_fail(L, r, "tz_local");
  lsys_push_tm(L, &tm);
  return 1;
}

/* Reads integer field name of the table at idx (def when absent). */
static int lsys_field(lua_State *L, int idx, const char *name, int def)
{
  lua_getfield(L, idx, name);
  int v = lua_isnil(L, -1) ? def : (int)luaL_checkinteger(L, -1);
  lua_pop(L, 1);
  return v;
}

/* sys.tz_time(zone, {year, month, day, hour?, min?, sec?}) -> t (fields out of range roll over,
 * as mktime does) | nil, err */
static int lsys_tz_time(lua_State *L)
{
  const char *zone = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  struct tm tm;
  memset(&tm, 0, sizeof(tm));
  tm.tm_year = lsys_field(L, 2, "year", 1970) - 1900;
  tm.tm_mon = lsys_field(L, 2, "month", 1) - 1;
  tm.tm_mday = lsys_field(L, 2, "day", 1);
  tm.tm_hour = lsys_field(L, 2, "hour", 0);
  tm.tm_min = lsys_field(L, 2, "min", 0);
  tm.tm_sec = lsys_field(L, 2, "sec", 0);
  time_t t;
  int r = sys_tz_time(zone, &tm, &t);
  if (r < 0) return lua_host_fail(L, r, "tz_time");
  lua_pushinteger(L, (lua_Integer)t);
  return 1;
}

/* sys.flock(path) -> fd | nil, err, code ("locked", "EWOULDBLOCK" when another holds it) */
static int lsys_flock(lua_State *L)
{
  const char *path = luaL_checkstring(L, 1);
  int fd = -1;
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

/* Seconds the process has after a SIGHUP before SIGALRM ends it (sys.hangup_deadline). */
static volatile sig_atomic_t hangup_grace_s;
static volatile sig_atomic_t hangup_armed;

/* SIGHUP: arm the deadline once (alarm is async-signal-safe; a wedged loop cannot delay it, and a
 * later SIGHUP does not push it back). */
static void on_hangup(int sig)
{
  (void)sig;
  if (hangup_armed) return;
  hangup_armed = 1;
  alarm((unsigned)hangup_grace_s);
}

/* sys.hangup_deadline(seconds): a SIGHUP no longer ends the process at once; it has seconds to
 * finish on its own, then SIGALRM (its default action) ends it. true, or nil and a message. */
static int lsys_hangup_deadline(lua_State *L)
{
  lua_Integer s = luaL_checkinteger(L, 1);
  luaL_argcheck(L, s >= 1 && s <= 3600, 1, "seconds must be 1..3600");
  hangup_grace_s = (sig_atomic_t)s;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, SIGALRM);
  sigaddset(&unblock, SIGHUP);
  int r = sigaction(SIGALRM, &sa, NULL);
  sa.sa_handler = on_hangup;
  sa.sa_flags = SA_RESTART;
  if (r == 0) r = sigaction(SIGHUP, &sa, NULL);
  if (r == 0) r = sigprocmask(SIG_UNBLOCK, &unblock, NULL);
  if (r < 0) {
    lua_pushnil(L);
    lua_pushstring(L, strerror(errno));
    return 2;
  }
  lua_pushboolean(L, 1);
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
    {"redirect_stdio", lsys_redirect_stdio}, {"cloexec", lsys_cloexec}, {"exec", lsys_exec},
    {"tz_local", lsys_tz_local}, {"tz_time", lsys_tz_time}, {"hangup_deadline", lsys_hangup_deadline},
    {NULL, NULL},
  };
  luaL_newlib(L, funcs);
  return 1;
}
