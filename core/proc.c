/* proc.c: rmcp.proc. We fork and exec ourselves because uv_spawn has no pre-exec hook for
 * PR_SET_PDEATHSIG; we reap with waitpid(pid, WNOHANG) for our own pids only, never
 * waitpid(-1), so children that libuv/luv spawned on the same loop keep their exit callbacks. */
#define _GNU_SOURCE
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "channel.h"
#include "lua_host.h"

struct proc {
  pid_t pid;
  int reaped, code, sig;
  int exit_fired, closed, detached;
  int open_pipes;          /* read pipes that have not reached EOF */
  int handles;             /* channels not yet freed */
  channel_t *in, *out, *err;
  const proc_cbs *cbs;
  void *data;
  proc_t *next, **pprev;   /* tracked: waiting to be reaped or to report exit */
};

/* One SIGCHLD watcher per process (on one loop), alive while we track children. */
typedef struct {
  uv_signal_t sig;
  uv_timer_t kick;         /* a sweep right after spawn, in case SIGCHLD raced us */
  uv_loop_t *loop;
  int handles;
} proc_reaper;

static proc_reaper *reaper;
static proc_t *tracked;

static const char *const step_names[] = {"exec", "chdir", "stdio", "setpgid", "prctl"};
enum { STEP_EXEC, STEP_CHDIR, STEP_STDIO, STEP_PGID, STEP_PRCTL };

/* ---- reaping ---- */

/* Close callback for the reaper's two handles. */
static void reaper_closed(uv_handle_t *handle)
{
  proc_reaper *r = handle->data;
  if (--r->handles == 0) free(r);
}

/* Drop the reaper when nothing is tracked; let the loop end when only detached children remain. */
static void reaper_update(void)
{
  if (reaper == NULL) return;
  if (tracked == NULL) {
    uv_close((uv_handle_t *)&reaper->sig, reaper_closed);
    uv_close((uv_handle_t *)&reaper->kick, reaper_closed);
    reaper = NULL;
    return;
  }
  int attached = 0;
  for (proc_t *p = tracked; p; p = p->next) attached |= !p->detached;
  if (attached)
    uv_ref((uv_handle_t *)&reaper->sig);
  else
    uv_unref((uv_handle_t *)&reaper->sig);
}

/* Stop tracking p. */
static void proc_untrack(proc_t *p)
{
  if (p->pprev == NULL) return;
  if (p->next) p->next->pprev = p->pprev;
  *p->pprev = p->next;
  p->next = NULL;
  p->pprev = NULL;
}

/* Free p once it is closed and its channels are gone. */
static void proc_maybe_free(proc_t *p)
{
  if (p->closed && p->handles == 0 && p->pprev == NULL) free(p);
}

/* Fire on_exit for every child that is reaped and whose pipes all hit EOF ("exit is not EOF"). */
static void proc_finish_all(void)
{
restart:
  for (proc_t *p = tracked; p; p = p->next) {
    if (!p->reaped) continue;
    if (p->detached) {
      proc_untrack(p);
      proc_maybe_free(p);
      goto restart;
    }
    if (p->open_pipes > 0 || p->exit_fired) continue;
    p->exit_fired = 1;
    proc_untrack(p);
    if (p->cbs->on_exit) p->cbs->on_exit(p, p->code, p->sig);
    goto restart;  /* the callback may have closed or spawned anything */
  }
  reaper_update();
}

/* waitpid each tracked, unreaped pid without blocking. */
static void proc_sweep(void)
{
  for (proc_t *p = tracked; p; p = p->next) {
    if (p->reaped) continue;
    int st;
    pid_t r;
    do
      r = waitpid(p->pid, &st, WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == p->pid) {
      p->reaped = 1;
      if (WIFSIGNALED(st)) {
        p->sig = WTERMSIG(st);
        p->code = 128 + p->sig;
      } else {
        p->code = WEXITSTATUS(st);
      }
    } else if (r < 0 && errno == ECHILD) {
      p->reaped = 1;  /* someone else reaped it: status unknown */
      p->code = -1;
    }
  }
  proc_finish_all();
}

/* SIGCHLD from libuv's signal pipe. */
static void reaper_signal_cb(uv_signal_t *sig, int signum)
{
  (void)sig;
  (void)signum;
  proc_sweep();
}

/* Post-spawn sweep. */
static void reaper_kick_cb(uv_timer_t *t)
{
  (void)t;
  proc_sweep();
}

/* The reaper for loop, started before the fork so no SIGCHLD is missed. */
static int reaper_get(uv_loop_t *loop)
{
  if (reaper) return reaper->loop == loop ? 0 : UV_EINVAL;
  proc_reaper *r = calloc(1, sizeof(*r));
  if (r == NULL) return UV_ENOMEM;
  r->loop = loop;
  uv_signal_init(loop, &r->sig);
  uv_timer_init(loop, &r->kick);
  r->sig.data = r->kick.data = r;
  r->handles = 2;
  int e = uv_signal_start(&r->sig, reaper_signal_cb, SIGCHLD);
  if (e < 0) {
    uv_close((uv_handle_t *)&r->sig, reaper_closed);
    uv_close((uv_handle_t *)&r->kick, reaper_closed);
    return e;
  }
  reaper = r;
  return 0;
}

/* ---- the child side (between fork and exec: async-signal-safe calls only) ---- */

/* Tell the parent which step failed and with which errno, then die. */
static void child_fail(int errfd, int step)
{
  int msg[2] = {step, errno};
  ssize_t w;
  do
    w = write(errfd, msg, sizeof(msg));
  while (w < 0 && errno == EINTR);
  _exit(127);
}

/* Set up the child and exec; never returns. fds[i] is what becomes fd i (-1: keep ours). */
static void child_exec(const proc_opts *o, int fds[3], int errfd, pid_t parent, int maxfd)
{
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; s++)
    if (s != SIGKILL && s != SIGSTOP) sigaction(s, &sa, NULL);

  if (o->setsid ? setsid() < 0 : setpgid(0, 0) < 0) child_fail(errfd, STEP_PGID);
  if (o->pdeathsig) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) child_fail(errfd, STEP_PRCTL);
    if (getppid() != parent) _exit(127);  /* the parent died before prctl took effect */
  }

  /* lift every source fd above 2 first so dup2 onto 0..2 cannot clobber another source */
  if (errfd < 3 && (errfd = fcntl(errfd, F_DUPFD_CLOEXEC, 3)) < 0) _exit(127);
  for (int i = 0; i < 3; i++)
    if (fds[i] >= 0 && fds[i] < 3 && (fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3)) < 0)
      child_fail(errfd, STEP_STDIO);
  for (int i = 0; i < 3; i++) {
    if (fds[i] == -2) {
      if (dup2(1, 2) < 0) child_fail(errfd, STEP_STDIO);
    } else if (fds[i] >= 0) {
      if (dup2(fds[i], i) < 0) child_fail(errfd, STEP_STDIO);
    } else if (fcntl(i, F_GETFD) >= 0) {
      fcntl(i, F_SETFD, 0);
    }
  }
  /* agents must not inherit our sockets: everything above 2 closes at exec */
  if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
    for (int fd = 3; fd < maxfd; fd++)
      if (fd != errfd) close(fd);
  }
  if (o->cwd && chdir(o->cwd) < 0) child_fail(errfd, STEP_CHDIR);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  if (o->env)
    execvpe(o->file, o->argv, o->env);
  else
    execvp(o->file, o->argv);
  child_fail(errfd, STEP_EXEC);
}

/* ---- the parent side ---- */

/* A read pipe reached EOF (or failed): count it, maybe report exit. */
static void proc_pipe_eof(channel_t *ch, int err)
{
  proc_t *p = channel_data(ch);
  (void)err;
  p->open_pipes--;
  proc_finish_all();
}

/* stdout line. */
static void proc_out_line(channel_t *ch, const char *line, size_t n)
{
  proc_t *p = channel_data(ch);
  if (p->cbs->on_line) p->cbs->on_line(p, line, n);
}

/* stdout line over max_line. */
static void proc_out_oversize(channel_t *ch, size_t n)
{
  proc_t *p = channel_data(ch);
  if (p->cbs->on_oversize) p->cbs->on_oversize(p, n);
}

/* stdout raw chunk. */
static void proc_out_data(channel_t *ch, const char *chunk, size_t n)
{
  proc_t *p = channel_data(ch);
  if (p->cbs->on_stdout) p->cbs->on_stdout(p, chunk, n);
}

/* stderr chunk. */
static void proc_err_data(channel_t *ch, const char *chunk, size_t n)
{
  proc_t *p = channel_data(ch);
  if (p->cbs->on_stderr) p->cbs->on_stderr(p, chunk, n);
}

/* One of our channels is freed. */
static void proc_channel_closed(channel_t *ch)
{
  proc_t *p = channel_data(ch);
  p->handles--;
  proc_maybe_free(p);
}

static const channel_cbs proc_out_cbs = {
  proc_out_line, proc_out_data, proc_out_oversize, proc_pipe_eof, NULL, proc_channel_closed,
};
static const channel_cbs proc_err_cbs = {
  NULL, proc_err_data, NULL, proc_pipe_eof, NULL, proc_channel_closed,
};
static const channel_cbs proc_in_cbs = {
  NULL, NULL, NULL, NULL, NULL, proc_channel_closed,
};

/* Open the fd the child gets for stdio slot i; *parent gets our end of a pipe. */
static int proc_stdio_open(const proc_io *io, int i, int *child, int *parent)
{
  int p[2];
  switch (io->kind) {
  case PROC_IO_PIPE:
    if (pipe2(p, O_CLOEXEC) < 0) return -errno;
    *child = i == 0 ? p[0] : p[1];
    *parent = i == 0 ? p[1] : p[0];
    return 0;
  case PROC_IO_NULL:
    *child = open("/dev/null", (i == 0 ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
    return *child < 0 ? -errno : 0;
  case PROC_IO_FILE:
    if (io->path == NULL) return UV_EINVAL;
    if (i == 0)
      *child = open(io->path, O_RDONLY | O_CLOEXEC);
    else
      *child = open(io->path, O_WRONLY | O_CREAT | O_CLOEXEC | (io->append ? O_APPEND : O_TRUNC), 0600);
    return *child < 0 ? -errno : 0;
  case PROC_IO_STDOUT:
    if (i != 2) return UV_EINVAL;
    *child = -2;
    return 0;
  case PROC_IO_INHERIT:
    return 0;
  }
  return UV_EINVAL;
}

/* Close the fds in a; entries < 0 are skipped. */
static void proc_close_fds(int *a, int n)
{
  for (int i = 0; i < n; i++)
    if (a[i] >= 0) {
      close(a[i]);
      a[i] = -1;
    }
}

/* Fork, wait for exec (or its failure, reported through a CLOEXEC pipe), wrap the pipes. */
static int proc_fork(const proc_opts *o, int child[3], pid_t *pidp, const char **step)
{
  int ep[2];
  if (pipe2(ep, O_CLOEXEC) < 0) return -errno;
  struct rlimit rl;
  int maxfd = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (int)rl.rlim_cur : 65536;
  pid_t parent = getpid();
  sigset_t all, old;
  sigfillset(&all);
  /* no signal handler (libuv's writes to a pipe shared with us) may run in the child */
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = fork();
  if (pid == 0) child_exec(o, child, ep[1], parent, maxfd);
  int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  close(ep[1]);
  if (pid < 0) {
    close(ep[0]);
    *step = "fork";
    return -fork_errno;
  }
  int msg[2];
  ssize_t n;
  do
    n = read(ep[0], msg, sizeof(msg));
  while (n < 0 && errno == EINTR);
  close(ep[0]);
  if (n == (ssize_t)sizeof(msg)) {
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    *step = step_names[msg[0]];
    return -msg[1];
  }
  *pidp = pid;
  return 0;
}

/* Spawn a child; exec failures come back synchronously (negative errno, *failed_step set). */
int proc_spawn(uv_loop_t *loop, const proc_opts *o, proc_t **out, const char **failed_step)
{
  static const char *const stdio_names[] = {"stdin", "stdout", "stderr"};
  const char *step_dummy;
  const char **step = failed_step ? failed_step : &step_dummy;
  int child[3] = {-1, -1, -1}, parent[3] = {-1, -1, -1};
  int r = reaper_get(loop);
  *step = "spawn";
  if (r < 0) return r;
  for (int i = 0; i < 3; i++) {
    r = proc_stdio_open(&o->io[i], i, &child[i], &parent[i]);
    if (r < 0) {
      *step = stdio_names[i];
      goto fail;
    }
  }
  pid_t pid = -1;
  r = proc_fork(o, child, &pid, step);
  proc_close_fds(child, 3);
  if (r < 0) goto fail;

  proc_t *p = calloc(1, sizeof(*p));
  if (p == NULL) {
    kill(pid, SIGKILL);  /* cannot track it: do not leave it behind */
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
    r = UV_ENOMEM;
    goto fail;
  }
  p->pid = pid;
  p->cbs = o->cbs;
  p->data = o->data;
  p->next = tracked;
  p->pprev = &tracked;
  if (tracked) tracked->pprev = &p->next;
  tracked = p;
  channel_t **slots[3] = {&p->in, &p->out, &p->err};
  for (int i = 0; i < 3; i++) {
    if (parent[i] < 0) continue;
    channel_opts co = {0};
    co.raw = i == 2 || o->stdout_raw;
    co.max_line = o->max_line;
    co.read = i != 0;
    co.write = i == 0;
    co.cbs = i == 0 ? &proc_in_cbs : i == 1 ? &proc_out_cbs : &proc_err_cbs;
    co.data = p;
    if (channel_open(loop, parent[i], &co, slots[i]) == 0) {
      p->handles++;
      if (i != 0) p->open_pipes++;
    } else {
      close(parent[i]);  /* the child sees EOF/EPIPE on it */
    }
    parent[i] = -1;
  }
  uv_timer_start(&reaper->kick, reaper_kick_cb, 0, 0);
  reaper_update();
  *out = p;
  return 0;

fail:
  proc_close_fds(child, 3);
  proc_close_fds(parent, 3);
  reaper_update();
  return r;
}

/* The child's pid (also its process group id). */
pid_t proc_pid(const proc_t *p)
{
  return p->pid;
}

/* Write to the child's stdin pipe. */
int proc_write(proc_t *p, const char *data, size_t len)
{
  if (p->closed || p->in == NULL) return UV_EPIPE;
  return channel_write(p->in, data, len);
}

/* Bytes queued for the child's stdin. */
size_t proc_queued(const proc_t *p)
{
  return p->in ? channel_queued(p->in) : 0;
}

/* Close the child's stdin after queued writes are flushed. */
int proc_close_stdin(proc_t *p)
{
  if (p->closed || p->in == NULL) return 0;
  return channel_shutdown(p->in);
}

/* Signal the whole process group; 1 when already reaped (nothing sent). */
int proc_kill(proc_t *p, int sig)
{
  if (p->reaped || p->closed) return 1;
  if (kill(-p->pid, sig) == 0) return 0;
  if (errno == ESRCH && kill(p->pid, sig) == 0) return 0;  /* it left its group */
  return -errno;
}

/* True until reaped. */
int proc_running(const proc_t *p)
{
  return !p->reaped && !p->closed;
}

/* Stop watching: close our pipe ends, no more callbacks; an unreaped child is still reaped
 * quietly (no zombie) but no longer keeps the loop alive. */
void proc_close(proc_t *p)
{
  if (p->closed) return;
  p->closed = 1;
  if (p->pprev) {
    if (p->reaped)
      proc_untrack(p);
    else
      p->detached = 1;
  }
  channel_t *chans[3] = {p->in, p->out, p->err};
  p->in = p->out = p->err = NULL;
  for (int i = 0; i < 3; i++)
    if (chans[i]) channel_close(chans[i]);
  reaper_update();
  proc_maybe_free(p);
}

/* The owner pointer given at spawn. */
void *proc_data(const proc_t *p)
{
  return p->data;
}

/* Process exit: forget detached children (they outlive us) and drop the reaper. */
void proc_teardown(void)
{
  while (tracked) {
    proc_t *p = tracked;
    proc_close(p);
    proc_untrack(p);
    proc_maybe_free(p);
  }
  reaper_update();
}

/* ---- Lua binding: rmcp.proc ---- */

#define LPROC_MT "rmcp.proc"

typedef struct {
  proc_t *p;         /* NULL once exited or closed */
  lua_State *L;
  pid_t pid;
  int raw;           /* stdin takes raw bytes, not lines */
  int self, on_line, on_oversize, on_stdout, on_stderr, on_exit;
} lproc_t;

/* Drop callback refs and the keep-alive. */
static void lproc_drop(lua_State *L, lproc_t *u)
{
  lua_host_unref(L, &u->on_line);
  lua_host_unref(L, &u->on_oversize);
  lua_host_unref(L, &u->on_stdout);
  lua_host_unref(L, &u->on_stderr);
  lua_host_unref(L, &u->on_exit);
  lua_host_release(L, &u->self);
}

/* Close the C side and drop the Lua side; idempotent. */
static void lproc_close_ud(lua_State *L, lproc_t *u)
{
  if (u->p == NULL) return;
  proc_t *p = u->p;
  u->p = NULL;
  proc_close(p);
  lproc_drop(L, u);
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
  lproc_call_str(p, ((lproc_t *)proc_data(p))->on_line, s, n);
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

static const proc_cbs lproc_cbs = {
  lproc_on_line, lproc_on_oversize, lproc_on_stdout, lproc_on_stderr, lproc_on_exit,
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
  o.pdeathsig = lua_host_optbool(L, 1, "pdeathsig", 1);
  o.setsid = lua_host_optbool(L, 1, "setsid", 0);
  lproc_stdio(L, 1, "stdin", &o.io[0]);
  lproc_stdio(L, 1, "stdout", &o.io[1]);
  lproc_stdio(L, 1, "stderr", &o.io[2]);
  if (o.io[0].kind == PROC_IO_FILE && o.io[0].append) return luaL_error(L, "stdin cannot append");
  lua_getfield(L, 1, "stdout_mode");
  const char *mode = luaL_optstring(L, -1, "ndjson");
  if (strcmp(mode, "raw") == 0)
    o.stdout_raw = 1;
  else if (strcmp(mode, "ndjson") != 0)
    return luaL_error(L, "stdout_mode must be \"ndjson\" or \"raw\"");
  lua_pop(L, 1);
  lua_getfield(L, 1, "max_line");
  lua_Integer max = luaL_optinteger(L, -1, 0);
  if (max < 0) return luaL_error(L, "max_line must be positive");
  o.max_line = (size_t)max;
  lua_pop(L, 1);

  lproc_t *u = lua_newuserdatauv(L, sizeof(*u), 0);
  memset(u, 0, sizeof(*u));
  u->L = h->L;
  u->self = u->on_line = u->on_oversize = u->on_stdout = u->on_stderr = u->on_exit = LUA_NOREF;
  luaL_setmetatable(L, LPROC_MT);
  u->on_line = lua_host_checkref(L, 1, "on_line");
  u->on_oversize = lua_host_checkref(L, 1, "on_oversize");
  u->on_stdout = lua_host_checkref(L, 1, "on_stdout");
  u->on_stderr = lua_host_checkref(L, 1, "on_stderr");
  u->on_exit = lua_host_checkref(L, 1, "on_exit");
  o.cbs = &lproc_cbs;
  o.data = u;
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
  u->raw = o.stdout_raw;
  u->self = lua_host_retain(L, -1);
  return 1;
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

/* p:write(data) -> queued | nil, err, code */
static int lproc_write(lua_State *L)
{
  lproc_t *u = lproc_check(L);
  size_t n;
  const char *s = luaL_checklstring(L, 2, &n);
  if (!u->raw && memchr(s, '\n', n)) return luaL_error(L, "ndjson line contains a newline");
  if (u->p == NULL) return lua_host_fail(L, UV_EPIPE, "process has exited");
  int r = proc_write(u->p, s, n);
  if (r < 0) return lua_host_fail(L, r, "stdin");
  lua_pushinteger(L, (lua_Integer)proc_queued(u->p));
  return 1;
}

/* p:queued() */
static int lproc_queued(lua_State *L)
{
  lproc_t *u = lproc_check(L);
  lua_pushinteger(L, u->p ? (lua_Integer)proc_queued(u->p) : 0);
  return 1;
}

/* p:close_stdin() */
static int lproc_close_stdin(lua_State *L)
{
  lproc_t *u = lproc_check(L);
  if (u->p) proc_close_stdin(u->p);
  return 0;
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

/* __tostring */
static int lproc_tostring(lua_State *L)
{
  lproc_t *u = lproc_check(L);
  lua_pushfstring(L, "rmcp.proc: pid %d%s", (int)u->pid, u->p ? "" : " (done)");
  return 1;
}

/* Module loader: require "rmcp.proc". */
int luaopen_rmcp_proc(lua_State *L)
{
  static const luaL_Reg methods[] = {
    {"pid", lproc_pid}, {"write", lproc_write}, {"queued", lproc_queued},
    {"close_stdin", lproc_close_stdin}, {"kill", lproc_kill}, {"running", lproc_running},
    {"close", lproc_close}, {NULL, NULL},
  };
  static const luaL_Reg meta[] = {
    {"__gc", lproc_close}, {"__tostring", lproc_tostring},
    {"__rmcp_teardown", lproc_close}, {"__rmcp_close", lproc_close}, {NULL, NULL},
  };
  if (luaL_newmetatable(L, LPROC_MT)) {
    luaL_setfuncs(L, meta, 0);
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  lua_newtable(L);
  lua_pushcfunction(L, lproc_spawn);
  lua_setfield(L, -2, "spawn");
  return 1;
}
