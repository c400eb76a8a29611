/* proc.c: the process machinery behind rmcp.proc (the binding is proc_lua.c). We start children
 * ourselves because uv_spawn has no pre-exec hook for PR_SET_PDEATHSIG: clone(CLONE_VM |
 * CLONE_VFORK) on a stack of its own, like posix_spawn, so a spawn costs no copy of our address
 * space (a fork of agentd grew with its heap and held its loop for milliseconds); we reap with
 * waitpid(pid, WNOHANG) for our own pids only, never waitpid(-1), so children that libuv/luv
 * spawned on the same loop keep their exit callbacks. */
#define _GNU_SOURCE
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "channel.h"

struct proc {
  pid_t pid;
  int reaped, code, sig;
  int exit_fired, closed, detached;
  int open_pipes;          /* read pipes that have not reached EOF */
  int eof_seen;            /* bit i: stdio slot i reached EOF (or was closed before it) */
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

/* Record the wait status st of p, just reaped. */
static void proc_reaped(proc_t *p, int st)
{
  p->reaped = 1;
  if (WIFSIGNALED(st)) {
    p->sig = WTERMSIG(st);
    p->code = 128 + p->sig;
  } else {
    p->code = WEXITSTATUS(st);
  }
}

/* Reap the children of ours that have exited, one at a time as the kernel names them
 * (waitid(P_ALL, WNOWAIT) peeks without reaping), so a SIGCHLD costs a few system calls however
 * many children we track (a waitpid per child made spawning a fleet of n agents cost n^2 of them).
 * Returns 0 once no exited child is left, or -1 when the kernel names one that is not ours (a child
 * libuv or luv started, theirs to reap) or has no child to name (ECHILD). */
static int proc_reap_named(void)
{
  for (;;) {
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (si.si_pid == 0) return 0;
    proc_t *p = tracked;
    while (p && (p->reaped || p->pid != si.si_pid)) p = p->next;
    if (p == NULL) return -1;
    int st;
    pid_t r;
    do
      r = waitpid(p->pid, &st, WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r != p->pid) return -1;
    proc_reaped(p, st);
  }
}

/* Reap what exited: as the kernel names it; else (a child not ours in the way, or no child left
 * at all: one of ours was reaped by someone else) waitpid each tracked, unreaped pid without
 * blocking. */
static void proc_sweep(void)
{
  if (proc_reap_named() >= 0) {
    proc_finish_all();
    return;
  }
  for (proc_t *p = tracked; p; p = p->next) {
    if (p->reaped) continue;
    int st;
    pid_t r;
    do
      r = waitpid(p->pid, &st, WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == p->pid) {
      proc_reaped(p, st);
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

/* ---- the child side (between clone and exec: it shares our memory, so it writes only its own
 * stack and calls only async-signal-safe functions; errno is the one thing it shares) ---- */

/* The child's functions never return (exec or _exit), so AddressSanitizer would leave their frames'
 * redzones poisoned on a stack that the next spawn maps again: they are not instrumented. */
#define CHILD_CODE __attribute__((no_sanitize("address")))

/* Tell the parent which step failed and with which errno, then die. */
CHILD_CODE static void child_fail(int errfd, int step)
{
  int msg[2] = {step, errno};
  ssize_t w;
  do
    w = write(errfd, msg, sizeof(msg));
  while (w < 0 && errno == EINTR);
  _exit(127);
}

/* What the child needs, read-only: it lives on the parent's stack for the clone. */
typedef struct {
  const proc_opts *o;
  int fds[3];    /* what becomes fd i (-1: keep ours, -2: stderr to stdout) */
  int errfd;     /* CLOEXEC pipe to the parent: a failed step and its errno */
  pid_t parent;
  int maxfd;
} child_args;

/* The RLIMIT_NOFILE we were started with, once proc_raise_nofile raised ours: children get it back
 * (a program that uses select() or sizes tables by the soft limit expects the usual one). */
static struct rlimit proc_inherited_nofile;
static int proc_nofile_raised;

/* Raise our soft RLIMIT_NOFILE to the hard limit (a daemon with a thousand agents holds several
 * thousand pipes; the usual soft limit is 1024); children still start with the limit we had, or with
 * soft *children_soft when given: what an earlier image of this process started with (exec keeps
 * the raised one). */
int proc_raise_nofile(const rlim_t *children_soft, struct rlimit *before, struct rlimit *after)
{
  if (getrlimit(RLIMIT_NOFILE, before) < 0) return -errno;
  if (children_soft) {
    proc_inherited_nofile = *before;
    if (*children_soft < before->rlim_max) proc_inherited_nofile.rlim_cur = *children_soft;
  } else if (!proc_nofile_raised) {
    proc_inherited_nofile = *before;
  }
  *after = *before;
  if (before->rlim_cur != before->rlim_max) {
    after->rlim_cur = before->rlim_max;
    if (setrlimit(RLIMIT_NOFILE, after) < 0) {
      int e = errno;
      *after = *before;
      return -e;
    }
  }
  proc_nofile_raised = proc_inherited_nofile.rlim_cur != after->rlim_cur;
  return 0;
}

/* The soft RLIMIT_NOFILE children start with when it is not ours (proc_raise_nofile raised ours):
 * 1 and *soft, else 0 (a handover passes it to the next image). */
int proc_children_nofile(rlim_t *soft)
{
  if (!proc_nofile_raised) return 0;
  *soft = proc_inherited_nofile.rlim_cur;
  return 1;
}

/* Set up the child and exec; never returns (clone's entry point). */
CHILD_CODE static int child_exec(void *arg)
{
  const child_args *a = arg;
  const proc_opts *o = a->o;
  int fds[3] = {a->fds[0], a->fds[1], a->fds[2]};
  int errfd = a->errfd;
  /* every handler back to the default, by the system call: a libc or sanitizer wrapper could
   * touch state we share with the parent (a zeroed kernel sigaction is SIG_DFL, no flags) */
  unsigned long dfl[4] = {0, 0, 0, 0};
  for (int s = 1; s < NSIG; s++)
    if (s != SIGKILL && s != SIGSTOP) syscall(SYS_rt_sigaction, s, dfl, NULL, 8); /* 8: the kernel's sigset */

  if (o->setsid ? setsid() < 0 : setpgid(0, 0) < 0) child_fail(errfd, STEP_PGID);
  if (o->pdeathsig) {
    if (syscall(SYS_prctl, PR_SET_PDEATHSIG, o->pdeathsig, 0, 0, 0) < 0) child_fail(errfd, STEP_PRCTL);
    if (getppid() != a->parent) _exit(127);  /* the parent died before prctl took effect */
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
    for (int fd = 3; fd < a->maxfd; fd++)
      if (fd != errfd) close(fd);
  }
  if (proc_nofile_raised) syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &proc_inherited_nofile, NULL);
  if (o->cwd && chdir(o->cwd) < 0) child_fail(errfd, STEP_CHDIR);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  if (o->env)
    execvpe(o->file, o->argv, o->env);
  else
    execvp(o->file, o->argv);
  child_fail(errfd, STEP_EXEC);
  return 127;
}

/* ---- the parent side ---- */

/* Count the EOF of read slot i once; on_exit may be due. */
static void proc_slot_done(proc_t *p, int i)
{
  if (p->eof_seen & (1 << i)) return;
  p->eof_seen |= 1 << i;
  p->open_pipes--;
  proc_finish_all();
}

/* A read pipe reached EOF (or failed): count it, maybe report exit. */
static void proc_pipe_eof(channel_t *ch, int err)
{
  proc_t *p = channel_data(ch);
  (void)err;
  proc_slot_done(p, ch == p->out ? 1 : 2);
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

/* One of our channels is freed. One its holder closed (proc_stdio) is forgotten, and a read pipe
 * closed before EOF counts as its EOF, so on_exit still fires. */
static void proc_channel_closed(channel_t *ch)
{
  proc_t *p = channel_data(ch);
  channel_t **slots[3] = {&p->in, &p->out, &p->err};
  for (int i = 0; i < 3; i++) {
    if (*slots[i] != ch) continue;
    *slots[i] = NULL;
    if (i > 0) proc_slot_done(p, i);
  }
  p->handles--;
  proc_maybe_free(p);
}

/* Our queue to the child's stdin fell back under the high-water mark (a writer that waited may go on). */
static void proc_in_drain(channel_t *ch)
{
  proc_t *p = channel_data(ch);
  if (p->cbs->on_stdin_drain) p->cbs->on_stdin_drain(p);
}

static const channel_cbs proc_out_cbs = {
  proc_out_line, proc_out_data, proc_out_oversize, proc_pipe_eof, NULL, proc_channel_closed, NULL,
};
static const channel_cbs proc_err_cbs = {
  NULL, proc_err_data, NULL, proc_pipe_eof, NULL, proc_channel_closed, NULL,
};
static const channel_cbs proc_in_cbs = {
  NULL, NULL, NULL, NULL, proc_in_drain, proc_channel_closed, NULL,
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

/* The child's own stack: what exec needs beside the argv it may copy (a script's interpreter). */
#define CHILD_STACK_BYTES (256 * 1024)

/* Start the child (clone(CLONE_VM | CLONE_VFORK): we are suspended until it execs or dies), read
 * its exec failure from a CLOEXEC pipe, if any. */
static int proc_fork(const proc_opts *o, int child[3], pid_t *pidp, const char **step)
{
  int ep[2];
  if (pipe2(ep, O_CLOEXEC) < 0) return -errno;
  struct rlimit rl;
  child_args args = {.o = o, .fds = {child[0], child[1], child[2]}, .errfd = ep[1], .parent = getpid()};
  args.maxfd = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (int)rl.rlim_cur : 65536;
  size_t stack_bytes = CHILD_STACK_BYTES;
  for (char *const *a = o->argv; a && *a; a++) stack_bytes += sizeof(char *);
  char *stack = mmap(NULL, stack_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) {
    int e = errno;
    close(ep[0]);
    close(ep[1]);
    *step = "fork";
    return -e;
  }
  sigset_t all, old;
  sigfillset(&all);
  /* no signal handler (libuv's writes to a pipe shared with us) may run in the child */
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = clone(child_exec, stack + stack_bytes, CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
  int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  munmap(stack, stack_bytes);
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

static int proc_track(uv_loop_t *loop, pid_t pid, int parent[3], const proc_opts *o, proc_t **out);

/* Start a child without tracking it: *pidp, and our ends of its pipes in parent[i] (-1: none),
 * go to the caller, who must hand them to proc_adopt (or close them). Exec failures come back
 * synchronously (negative errno, *failed_step set). */
int proc_start(const proc_opts *o, pid_t *pidp, int parent[3], const char **failed_step)
{
  static const char *const stdio_names[] = {"stdin", "stdout", "stderr"};
  const char *step_dummy;
  const char **step = failed_step ? failed_step : &step_dummy;
  int child[3] = {-1, -1, -1};
  int r = 0;
  for (int i = 0; i < 3; i++) parent[i] = -1;
  for (int i = 0; i < 3; i++) {
    r = proc_stdio_open(&o->io[i], i, &child[i], &parent[i]);
    if (r < 0) {
      *step = stdio_names[i];
      break;
    }
  }
  if (r == 0) r = proc_fork(o, child, pidp, step);
  proc_close_fds(child, 3);
  if (r < 0) proc_close_fds(parent, 3);
  return r;
}

/* Spawn a child; exec failures come back synchronously (negative errno, *failed_step set). */
int proc_spawn(uv_loop_t *loop, const proc_opts *o, proc_t **out, const char **failed_step)
{
  const char *step_dummy;
  const char **step = failed_step ? failed_step : &step_dummy;
  int parent[3];
  pid_t pid = -1;
  int r = reaper_get(loop);
  *step = "spawn";
  if (r < 0) return r;
  r = proc_start(o, &pid, parent, step);
  if (r < 0) {
    reaper_update();
    return r;
  }
  r = proc_track(loop, pid, parent, o, out);
  if (r < 0) {
    kill(pid, SIGKILL);  /* cannot track it: do not leave it behind */
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
    proc_close_fds(parent, 3);
    reaper_update();
  }
  return r;
}

/* Track child pid and wrap our ends of its stdio (parent[i] < 0: none) in channels; the fds are
 * taken (set to -1) once tracked. */
static int proc_track(uv_loop_t *loop, pid_t pid, int parent[3], const proc_opts *o, proc_t **out)
{
  proc_t *p = calloc(1, sizeof(*p));
  if (p == NULL) return UV_ENOMEM;
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
    co.drop_partial = i == 1 && o->drop_partial_line;
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
}

/* Take over child pid that this image did not fork (exec keeps children and their pipes, e.g. a
 * daemon that re-executed itself): wrap the fds (ours from now on; < 0: none) and reap it.
 * -ECHILD when pid is not our child. */
int proc_adopt(uv_loop_t *loop, pid_t pid, const int fds[3], const proc_opts *o, proc_t **out)
{
  siginfo_t si;
  memset(&si, 0, sizeof(si));
  if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0) return -errno;
  int r = reaper_get(loop);
  if (r < 0) return r;
  int parent[3] = {fds[0], fds[1], fds[2]};
  for (int i = 0; i < 3; i++)
    if (parent[i] >= 0) fcntl(parent[i], F_SETFD, FD_CLOEXEC);
  r = proc_track(loop, pid, parent, o, out);
  reaper_update();
  return r;
}

/* The channel of stdio slot i (0 stdin, 1 stdout, 2 stderr): our end of the pipe, NULL when there
 * is none or p is closed. p owns it and frees it; its holder may use it and close it (the child
 * then sees EPIPE or EOF, and a read pipe closed counts as its EOF). */
channel_t *proc_stdio(const proc_t *p, int i)
{
  if (p->closed || i < 0 || i > 2) return NULL;
  return i == 0 ? p->in : i == 1 ? p->out : p->err;
}

/* The child's pid (also its process group id). */
pid_t proc_pid(const proc_t *p)
{
  return p->pid;
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

/* Process exit: forget detached children (they outlive us) and drop the reaper. Each is untracked
 * first, then closed (which frees an untracked proc with no handle left) or, closed already, freed:
 * nothing touches it after that. */
void proc_teardown(void)
{
  while (tracked) {
    proc_t *p = tracked;
    proc_untrack(p);
    if (p->closed)
      proc_maybe_free(p);
    else
      proc_close(p);
  }
  reaper_update();
}
