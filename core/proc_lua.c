/* proc_lua.c: the Lua binding of rmcp.proc (spawn, adopt, the launcher's first server started
 * from C, and the process object, which hands out
 * its pipes as rmcp.channel objects: p.stdin, p.stdout, p.stderr). The process machinery itself
 * is proc.c. */
#include <lauxlib.h>
#include <signal.h>
#include <string.h>

#include "channel_lua.h"
#include "proc_lua.h"
#include "first_server.h"
#include "lua_host.h"
#include "modules.h"
#include "proc.h"

/* ---- Lua binding: rmcp.proc ---- */

#define LPROC_MT "rmcp.proc"

typedef struct {
  proc_t *p;         /* NULL once exited or closed */
  lua_State *L;
  pid_t pid;
  int self, on_line, on_oversize, on_stdout, on_stderr, on_exit, on_stdin_drain;
  lchannel_t *stdio[3];  /* the pipes as channel objects (also user values 1..3), or NULL */
  line_filter_fn filter; /* sees each stdout line first (proc_lua_set_filter), or NULL */
  void *filter_data;
  int filter_tag;
} lproc_t;

static const char *const lproc_slots[3] = {"stdin", "stdout", "stderr"};

/* Drop callback refs and the keep-alive. */
static void lproc_drop(lua_State *L, lproc_t *u)
{
  lua_host_unref(L, &u->on_line);
  lua_host_unref(L, &u->on_oversize);
  lua_host_unref(L, &u->on_stdout);
  lua_host_unref(L, &u->on_stderr);
  lua_host_unref(L, &u->on_exit);
  lua_host_unref(L, &u->on_stdin_drain);
  lua_host_release(L, &u->self);
}

/* Close the C side and drop the Lua side; idempotent. The pipe objects read as closed after it. */
static void lproc_close_ud(lua_State *L, lproc_t *u)
{
  if (u->p == NULL) return;
  proc_t *p = u->p;
  u->p = NULL;
  for (int i = 0; i < 3; i++)
    if (u->stdio[i]) channel_lua_detach(u->stdio[i]);
  proc_close(p);
  lproc_drop(L, u);
}

/* Give the new process object at the top of the stack its pipes, as borrowed channel objects. */
static void lproc_push_stdio(lua_State *L, lproc_t *u)
{
  for (int i = 0; i < 3; i++) {
    channel_t *ch = proc_stdio(u->p, i);
    if (ch == NULL) continue;
    u->stdio[i] = channel_lua_push(L, ch);
    lua_setiuservalue(L, -2, i + 1);
  }
}

/* Push a string argument and call the callback ref. */
static void lproc_call_str(proc_t *p, int ref, const char *s, size_t n)
{
  lproc_t *u = proc_data(p);
  lua_pushlstring(u->L, s, n);
  lua_host_call_ref(u->L, ref, 1);
}

/* stdout line. */
static void lproc_on_line(proc_t *p, const char *s, size_t n)
{
  lproc_t *u = proc_data(p);
  if (u->filter && u->filter(u->filter_data, u->filter_tag, s, n)) return;
  lproc_call_str(p, u->on_line, s, n);
}

/* stdout raw chunk. */
static void lproc_on_stdout(proc_t *p, const char *s, size_t n)
{
  lproc_call_str(p, ((lproc_t *)proc_data(p))->on_stdout, s, n);
}

/* stderr chunk. */
static void lproc_on_stderr(proc_t *p, const char *s, size_t n)
{
  lproc_call_str(p, ((lproc_t *)proc_data(p))->on_stderr, s, n);
}

/* stdout line over max_line. */
static void lproc_on_oversize(proc_t *p, size_t n)
{
  lproc_t *u = proc_data(p);
  lua_pushinteger(u->L, (lua_Integer)n);
  lua_host_call_ref(u->L, u->on_oversize, 1);
}

/* Exit after EOF: call on_exit(code, signal), then release everything. */
static void lproc_on_exit(proc_t *p, int code, int sig)
{
  lproc_t *u = proc_data(p);
  lua_State *L = u->L;
  lua_pushinteger(L, code);
  lua_pushinteger(L, sig);
  lua_host_call_ref(L, u->on_exit, 2);
  if (u->p == p) lproc_close_ud(L, u);
}

/* stdin's queue fell back under the high-water mark. */
static void lproc_on_stdin_drain(proc_t *p)
{
  lproc_t *u = proc_data(p);
  lua_host_call_ref(u->L, u->on_stdin_drain, 0);
}

static const proc_cbs lproc_cbs = {
  lproc_on_line, lproc_on_oversize, lproc_on_stdout, lproc_on_stderr, lproc_on_exit, lproc_on_stdin_drain,
};

/* Parse a stdio option: "pipe" | "null" | "inherit" | "stdout" | {file=, append=}. */
static void lproc_stdio(lua_State *L, int opts, const char *field, proc_io *io)
{
  int t = lua_getfield(L, opts, field);
  io->kind = PROC_IO_PIPE;
  if (t == LUA_TTABLE) {
    io->kind = PROC_IO_FILE;
    if (lua_getfield(L, -1, "file") != LUA_TSTRING) luaL_error(L, "%s.file must be a path", field);
    io->path = lua_tostring(L, -1);
    lua_pop(L, 1);  /* the string stays alive in the opts table */
    lua_getfield(L, -1, "append");
    io->append = lua_toboolean(L, -1);
    lua_pop(L, 1);
  } else if (t != LUA_TNIL) {
    const char *s = luaL_checkstring(L, -1);
    if (strcmp(s, "pipe") == 0)
      io->kind = PROC_IO_PIPE;
    else if (strcmp(s, "null") == 0)
      io->kind = PROC_IO_NULL;
    else if (strcmp(s, "inherit") == 0)
      io->kind = PROC_IO_INHERIT;
    else if (strcmp(s, "stdout") == 0 && strcmp(field, "stderr") == 0)
      io->kind = PROC_IO_STDOUT;
    else
      luaL_error(L, "bad %s \"%s\" (pipe, null, inherit%s or {file=...})", field, s,
                 strcmp(field, "stderr") == 0 ? ", stdout" : "");
  }
  lua_pop(L, 1);
}

/* Build a NULL-terminated char* array (GC-owned userdata) from opts[field] with a prefix. */
static char **lproc_strv(lua_State *L, int opts, const char *field, const char *first)
{
  if (lua_getfield(L, opts, field) == LUA_TNIL) {
    lua_pop(L, 1);
    if (first == NULL) return NULL;
    lua_newtable(L);
  }
  luaL_checktype(L, -1, LUA_TTABLE);
  int tbl = lua_gettop(L);
  lua_Integer n = (lua_Integer)luaL_len(L, tbl);
  int extra = first ? 1 : 0;
  char **v = lua_newuserdatauv(L, sizeof(char *) * (size_t)(n + extra + 1), 0);
  if (first) v[0] = (char *)first;
  for (lua_Integer i = 1; i <= n; i++) {
    if (lua_rawgeti(L, tbl, i) != LUA_TSTRING) luaL_error(L, "%s[%d] must be a string", field, (int)i);
    v[i - 1 + extra] = (char *)lua_tostring(L, -1);  /* alive: the table holds it */
    lua_pop(L, 1);
  }
  v[n + extra] = NULL;
  lua_remove(L, tbl);  /* leave the userdata on the stack; the table stays in opts */
  return v;
}

/* stdout_mode, max_line and drop_partial_line of opts (arg 1) into o. */
static void lproc_framing(lua_State *L, proc_opts *o)
{
  lua_getfield(L, 1, "stdout_mode");
  const char *mode = luaL_optstring(L, -1, "ndjson");
  if (strcmp(mode, "raw") == 0)
    o->stdout_raw = 1;
  else if (strcmp(mode, "ndjson") != 0)
    luaL_error(L, "stdout_mode must be \"ndjson\" or \"raw\"");
  lua_pop(L, 1);
  lua_getfield(L, 1, "max_line");
  lua_Integer max = luaL_optinteger(L, -1, 0);
  if (max < 0) luaL_error(L, "max_line must be positive");
  o->max_line = (size_t)max;
  lua_pop(L, 1);
  o->drop_partial_line = lua_host_optbool(L, 1, "drop_partial_line", 0);
}

/* Push a new proc userdata with the callbacks of opts (arg 1); o gets cbs and data. */
static lproc_t *lproc_new(lua_State *L, lua_host_t *h, proc_opts *o)
{
  lproc_t *u = lua_newuserdatauv(L, sizeof(*u), 3);
  memset(u, 0, sizeof(*u));
  u->L = h->L;
  u->self = u->on_line = u->on_oversize = u->on_stdout = u->on_stderr = u->on_exit = u->on_stdin_drain = LUA_NOREF;
  luaL_setmetatable(L, LPROC_MT);
  u->on_line = lua_host_checkref(L, 1, "on_line");
  u->on_oversize = lua_host_checkref(L, 1, "on_oversize");
  u->on_stdout = lua_host_checkref(L, 1, "on_stdout");
  u->on_stderr = lua_host_checkref(L, 1, "on_stderr");
  u->on_exit = lua_host_checkref(L, 1, "on_exit");
  u->on_stdin_drain = lua_host_checkref(L, 1, "on_stdin_drain");
  o->cbs = &lproc_cbs;
  o->data = u;
  return u;
}

static int lproc_signum(lua_State *L, int idx);

/* The pdeathsig option of the spawn options at idx: absent or true SIGKILL, false none, else a
 * signal name or number (the child gets it when we die). */
static int lproc_pdeathsig(lua_State *L, int idx)
{
  int t = lua_getfield(L, idx, "pdeathsig");
  int sig = t == LUA_TNIL || (t == LUA_TBOOLEAN && lua_toboolean(L, -1)) ? SIGKILL
            : t == LUA_TBOOLEAN                                           ? 0
                                                                          : lproc_signum(L, lua_gettop(L));
  lua_pop(L, 1);
  return sig;
}

/* proc.spawn(opts) -> proc | nil, err, code */
static int lproc_spawn(lua_State *L)
{
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_host_t *h = lua_host_get(L);
  if (h == NULL) return luaL_error(L, "rmcp.proc needs the reasonix-mcp host");
  proc_opts o;
  memset(&o, 0, sizeof(o));
  if (lua_getfield(L, 1, "file") != LUA_TSTRING) return luaL_error(L, "spawn: file must be a string");
  o.file = lua_tostring(L, -1);
  lua_pop(L, 1);  /* strings stay alive in the opts table */
  int t = lua_getfield(L, 1, "cwd");
  if (t != LUA_TNIL && t != LUA_TSTRING) return luaL_error(L, "spawn: cwd must be a string");
  o.cwd = lua_tostring(L, -1);
  lua_pop(L, 1);
  o.argv = lproc_strv(L, 1, "args", o.file);
  o.env = lproc_strv(L, 1, "env", NULL);
  o.pdeathsig = lproc_pdeathsig(L, 1);
  o.setsid = lua_host_optbool(L, 1, "setsid", 0);
  lproc_stdio(L, 1, "stdin", &o.io[0]);
  lproc_stdio(L, 1, "stdout", &o.io[1]);
  lproc_stdio(L, 1, "stderr", &o.io[2]);
  if (o.io[0].kind == PROC_IO_FILE && o.io[0].append) return luaL_error(L, "stdin cannot append");
  lproc_framing(L, &o);

  lproc_t *u = lproc_new(L, h, &o);
  const char *step = NULL;
  int r = proc_spawn(h->loop, &o, &u->p, &step);
  if (r < 0) {
    u->p = NULL;
    lproc_drop(L, u);
    const char *what = o.file;
    if (step && strcmp(step, "chdir") == 0)
      what = lua_pushfstring(L, "chdir %s", o.cwd);
    else if (step && strcmp(step, "exec") != 0)
      what = lua_pushfstring(L, "%s (%s)", step, o.file);
    return lua_host_fail(L, r, what);
  }
  u->pid = proc_pid(u->p);
  lproc_push_stdio(L, u);
  u->self = lua_host_retain(L, -1);
  return 1;
}

/* proc.adopt{pid=, stdin=fd, stdout=fd, stderr=fd, stdout_mode=, max_line=, on_*=} -> proc |
 * nil, err, code: a child this image did not fork (kept across exec) and our ends of its pipes. */
static int lproc_adopt(lua_State *L)
{
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_host_t *h = lua_host_get(L);
  if (h == NULL) return luaL_error(L, "rmcp.proc needs the reasonix-mcp host");
  proc_opts o;
  memset(&o, 0, sizeof(o));
  int fds[3];
  for (int i = 0; i < 3; i++) {
    lua_getfield(L, 1, lproc_slots[i]);
    fds[i] = (int)luaL_optinteger(L, -1, -1);
    lua_pop(L, 1);
  }
  lua_getfield(L, 1, "pid");
  pid_t pid = (pid_t)luaL_checkinteger(L, -1);
  lua_pop(L, 1);
  if (pid <= 0) return luaL_error(L, "adopt: pid must be positive");
  lproc_framing(L, &o);
  lproc_t *u = lproc_new(L, h, &o);
  int r = proc_adopt(h->loop, pid, fds, &o, &u->p);
  if (r < 0) {
    u->p = NULL;
    lproc_drop(L, u);
    return lua_host_fail(L, r, lua_pushfstring(L, "adopt pid %d", (int)pid));
  }
  u->pid = pid;
  lproc_push_stdio(L, u);
  u->self = lua_host_retain(L, -1);
  return 1;
}

/* A limit for Lua: -1 stands for RLIM_INFINITY. */
static lua_Integer lproc_limit(rlim_t v)
{
  return v == RLIM_INFINITY ? -1 : (lua_Integer)v;
}

/* proc.raise_nofile([children_soft]) -> soft before, soft now, hard (RLIMIT_NOFILE; children keep the
 * one before, or children_soft: what an earlier image of ours started with), or nil, message when
 * the limit cannot be read or raised. */
static int lproc_raise_nofile(lua_State *L)
{
  struct rlimit before, after;
  int given = !lua_isnoneornil(L, 1);
  lua_Integer v = given ? luaL_checkinteger(L, 1) : 0;
  rlim_t children_soft = v < 0 ? RLIM_INFINITY : (rlim_t)v;
  int r = proc_raise_nofile(given ? &children_soft : NULL, &before, &after);
  if (r < 0) {
    lua_pushnil(L);
    lua_pushstring(L, strerror(-r));
    return 2;
  }
  lua_pushinteger(L, lproc_limit(before.rlim_cur));
  lua_pushinteger(L, lproc_limit(after.rlim_cur));
  lua_pushinteger(L, lproc_limit(after.rlim_max));
  return 3;
}

/* proc.children_nofile() -> the soft RLIMIT_NOFILE children start with when raise_nofile raised ours
 * above it, else nil (they get ours). */
static int lproc_children_nofile(lua_State *L)
{
  rlim_t soft;
  if (proc_children_nofile(&soft))
    lua_pushinteger(L, lproc_limit(soft));
  else
    lua_pushnil(L);
  return 1;
}

/* proc.take_first_server() -> pid, stdin fd, stdout fd | nil: the launcher's first server, started
 * from C before Lua (first_server.c), handed over once; adopt it with proc.adopt. */
static int lproc_take_first_server(lua_State *L)
{
  pid_t pid;
  int in, out;
  if (first_server_take(&pid, &in, &out) < 0) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushinteger(L, pid);
  lua_pushinteger(L, in);
  lua_pushinteger(L, out);
  return 3;
}

/* Check arg 1 is a proc userdata. */
static lproc_t *lproc_check(lua_State *L)
{
  return luaL_checkudata(L, 1, LPROC_MT);
}

/* p:pid() */
static int lproc_pid(lua_State *L)
{
  lua_pushinteger(L, lproc_check(L)->pid);
  return 1;
}

/* Map "TERM" / "SIGTERM" / a number to a signal number. */
static int lproc_signum(lua_State *L, int idx)
{
  static const struct { const char *name; int sig; } names[] = {
    {"TERM", SIGTERM}, {"KILL", SIGKILL}, {"INT", SIGINT}, {"HUP", SIGHUP}, {"QUIT", SIGQUIT},
    {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"STOP", SIGSTOP}, {"CONT", SIGCONT}, {NULL, 0},
  };
  if (lua_isnoneornil(L, idx)) return SIGTERM;
  if (lua_type(L, idx) == LUA_TNUMBER) return (int)luaL_checkinteger(L, idx);
  const char *s = luaL_checkstring(L, idx);
  if (strncmp(s, "SIG", 3) == 0) s += 3;
  for (int i = 0; names[i].name; i++)
    if (strcmp(s, names[i].name) == 0) return names[i].sig;
  return luaL_error(L, "unknown signal \"%s\"", s);
}

/* p:kill(sig) -> true (sent) | false (already reaped) | nil, err, code */
static int lproc_kill(lua_State *L)
{
  lproc_t *u = lproc_check(L);
  int sig = lproc_signum(L, 2);
  if (u->p == NULL) {
    lua_pushboolean(L, 0);
    return 1;
  }
  int r = proc_kill(u->p, sig);
  if (r < 0) return lua_host_fail(L, r, "kill");
  lua_pushboolean(L, r == 0);
  return 1;
}

/* p:running() -> true until reaped */
static int lproc_running(lua_State *L)
{
  lproc_t *u = lproc_check(L);
  lua_pushboolean(L, u->p && proc_running(u->p));
  return 1;
}

/* p:close(): stop watching; no callbacks after it (the child keeps running). */
static int lproc_close(lua_State *L)
{
  lproc_close_ud(L, lproc_check(L));
  return 0;
}

/* __index: p.stdin, p.stdout, p.stderr are the pipes (nil when not a pipe); else the methods. */
static int lproc_index(lua_State *L)
{
  lproc_check(L);
  const char *key = lua_tostring(L, 2);
  for (int i = 0; key && i < 3; i++) {
    if (strcmp(key, lproc_slots[i]) == 0) {
      lua_getiuservalue(L, 1, i + 1);
      return 1;
    }
  }
  lua_pushvalue(L, 2);
  lua_gettable(L, lua_upvalueindex(1));
  return 1;
}

/* __tostring */
static int lproc_tostring(lua_State *L)
{
  lproc_t *u = lproc_check(L);
  lua_pushfstring(L, "rmcp.proc: pid %d%s", (int)u->pid, u->p ? "" : " (done)");
  return 1;
}

/* Lets fn see each stdout line of the process object at idx before its on_line (fastlane.h). */
void proc_lua_set_filter(lua_State *L, int idx, line_filter_fn fn, void *data, int tag)
{
  lproc_t *u = luaL_checkudata(L, idx, LPROC_MT);
  u->filter = fn;
  u->filter_data = data;
  u->filter_tag = tag;
}

/* Module loader: require "rmcp.proc". */
int luaopen_rmcp_proc(lua_State *L)
{
  static const luaL_Reg methods[] = {
    {"pid", lproc_pid}, {"kill", lproc_kill}, {"running", lproc_running}, {"close", lproc_close},
    {NULL, NULL},
  };
  static const luaL_Reg meta[] = {
    {"__gc", lproc_close}, {"__tostring", lproc_tostring},
    {LUA_HOST_TEARDOWN, lproc_close}, {LUA_HOST_CLOSE, lproc_close}, {NULL, NULL},
  };
  if (luaL_newmetatable(L, LPROC_MT)) {
    luaL_setfuncs(L, meta, 0);
    luaL_newlib(L, methods);
    lua_pushcclosure(L, lproc_index, 1);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  lua_newtable(L);
  lua_pushcfunction(L, lproc_spawn);
  lua_setfield(L, -2, "spawn");
  lua_pushcfunction(L, lproc_adopt);
  lua_setfield(L, -2, "adopt");
  lua_pushcfunction(L, lproc_take_first_server);
  lua_setfield(L, -2, "take_first_server");
  lua_pushcfunction(L, lproc_raise_nofile);
  lua_setfield(L, -2, "raise_nofile");
  lua_pushcfunction(L, lproc_children_nofile);
  lua_setfield(L, -2, "children_nofile");
  return 1;
}
