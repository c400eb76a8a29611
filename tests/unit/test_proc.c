/* test_proc.c: rmcp.proc through its C API on a real loop: lines, stderr, exit code and signal,
 * exit only after EOF, synchronous exec failures, cwd, env, group kill, fd hygiene, PDEATHSIG,
 * a last line cut by the child's death, the drain of a child's stdin queue, that children spawned
 * by plain uv_spawn on the same loop keep their exit callbacks, adoption of a child this image did
 * not fork (what an agentd that re-executes itself does), and a child started untracked and
 * adopted later (the launcher's first server). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <valgrind/valgrind.h>

#include "proc.h"
#include "testloop.h"

typedef struct {
  char lines[4096];    /* each line followed by '|' */
  char err[1024];
  int nlines;
  int exited, code, sig;
  int lines_at_exit;
} result;

/* Append s to buf (bounded). */
static void append(char *buf, size_t cap, const char *s, size_t n)
{
  size_t used = strlen(buf);
  if (used + n + 2 > cap) n = cap - used - 2;
  memcpy(buf + used, s, n);
  buf[used + n] = '\0';
}

/* on_line: collect. */
static void on_line(proc_t *p, const char *s, size_t n)
{
  result *r = proc_data(p);
  append(r->lines, sizeof(r->lines), s, n);
  append(r->lines, sizeof(r->lines), "|", 1);
  r->nlines++;
}

/* on_stderr: collect. */
static void on_stderr(proc_t *p, const char *s, size_t n)
{
  result *r = proc_data(p);
  append(r->err, sizeof(r->err), s, n);
}

/* on_exit: record, and close like the Lua binding does. */
static void on_exit_cb(proc_t *p, int code, int sig)
{
  result *r = proc_data(p);
  r->exited++;
  r->code = code;
  r->sig = sig;
  r->lines_at_exit = r->nlines;
  proc_close(p);
}

static const proc_cbs cbs = {on_line, NULL, NULL, on_stderr, on_exit_cb, NULL};

/* on_exit that leaves p open, to probe it after reaping. */
static void on_exit_keep(proc_t *p, int code, int sig)
{
  result *r = proc_data(p);
  r->exited++;
  r->code = code;
  r->sig = sig;
}

/* Options for /bin/sh -c script. */
static proc_opts sh_opts(char **argv, const char *script, result *r)
{
  argv[0] = "sh";
  argv[1] = "-c";
  argv[2] = (char *)script;
  argv[3] = NULL;
  proc_opts o;
  memset(&o, 0, sizeof(o));
  o.file = "/bin/sh";
  o.argv = argv;
  o.pdeathsig = SIGKILL;
  o.io[0].kind = PROC_IO_NULL;
  o.cbs = &cbs;
  o.data = r;
  memset(r, 0, sizeof(*r));
  return o;
}

/* Spawn sh -c script and run to exit. */
static proc_t *run_sh(uv_loop_t *loop, const char *script, result *r)
{
  char *argv[4];
  proc_opts o = sh_opts(argv, script, r);
  proc_t *p = NULL;
  REQUIRE(proc_spawn(loop, &o, &p, NULL) == 0);
  CHECK(run_until(loop, &r->exited, 10000));
  return p;
}

/* Fallback without pidfds: watch /proc/PID/stat until it is gone or a zombie. */
static int pid_gone_proc(pid_t pid, int ms)
{
  char path[64], buf[256];
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  for (int waited = 0; waited <= ms; waited += 5) {
    FILE *f = fopen(path, "r");
    if (f == NULL) return 1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *rp = strrchr(buf, ')');
    if (rp && (rp[2] == 'Z' || rp[2] == 'X')) return 1;
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return 0;
}

/* Wait up to ms for pid (not our child) to terminate: a pidfd turns readable when it exits. */
static int pid_gone(pid_t pid, int ms)
{
  int fd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (fd < 0 && errno == ENOSYS) return pid_gone_proc(pid, ms);  /* e.g. under valgrind */
  if (fd < 0) return errno == ESRCH;
  struct pollfd pfd = {fd, POLLIN, 0};
  int r;
  do
    r = poll(&pfd, 1, ms);
  while (r < 0 && errno == EINTR);
  close(fd);
  return r == 1;
}

static void test_basic(uv_loop_t *loop)
{
  result r;
  TEST("stdout lines (CRLF too), stderr chunks, exit code");
  run_sh(loop, "printf 'a\\nb\\r\\n\\n{\"x\":1}\\n'; printf err >&2; exit 3", &r);
  CHECKF(strcmp(r.lines, "a|b|{\"x\":1}|") == 0, "%s", r.lines);
  CHECKF(strcmp(r.err, "err") == 0, "%s", r.err);
  CHECK(r.exited == 1 && r.code == 3 && r.sig == 0);

  TEST("killed by a signal: code 128+sig, signal reported");
  run_sh(loop, "kill -9 $$", &r);
  CHECK(r.exited == 1 && r.code == 137 && r.sig == SIGKILL);

  TEST("stderr merged into stdout");
  char *argv[4];
  proc_opts o = sh_opts(argv, "echo one; echo two >&2", &r);
  o.io[2].kind = PROC_IO_STDOUT;
  proc_t *p;
  REQUIRE(proc_spawn(loop, &o, &p, NULL) == 0);
  CHECK(run_until(loop, &r.exited, 10000));
  CHECKF(strcmp(r.lines, "one|two|") == 0, "%s", r.lines);

  TEST("a last line without its newline is delivered, or dropped with drop_partial_line");
  run_sh(loop, "printf 'whole\\npart'", &r);
  CHECKF(strcmp(r.lines, "whole|part|") == 0, "%s", r.lines);
  o = sh_opts(argv, "printf 'whole\\npart'; kill -9 $$", &r);
  o.drop_partial_line = 1;
  REQUIRE(proc_spawn(loop, &o, &p, NULL) == 0);
  CHECK(run_until(loop, &r.exited, 10000));
  CHECKF(strcmp(r.lines, "whole|") == 0, "%s", r.lines);
  CHECK(r.sig == SIGKILL);
}

/* State for the grandchild test. */
typedef struct {
  result r;
  proc_t *p;
  const char *fifo;
  int released;
  uv_check_t check;
} gc_state;

/* Once the shell is reaped (but a grandchild still holds stdout), let the grandchild finish. */
static void gc_check(uv_check_t *c)
{
  gc_state *s = c->data;
  if (s->released || s->r.nlines < 1 || proc_running(s->p)) return;
  CHECKF(s->r.exited == 0, "on_exit fired while a grandchild still held stdout");
  s->released = 1;
  int fd = open(s->fifo, O_WRONLY);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, "go\n", 3) == 3);
  close(fd);
  uv_check_stop(c);
}

static void test_exit_after_eof(uv_loop_t *loop, const char *tmp)
{
  TEST("on_exit waits for EOF when a grandchild holds the pipe after the child is reaped");
  gc_state s;
  char fifo[PATH_MAX + 16], script[PATH_MAX + 160];
  snprintf(fifo, sizeof(fifo), "%s/fifo", tmp);
  REQUIRE(mkfifo(fifo, 0600) == 0);
  snprintf(script, sizeof(script), "(read x < %s; echo late) & echo early", fifo);
  char *argv[4];
  proc_opts o = sh_opts(argv, script, &s.r);
  s.fifo = fifo;
  s.released = 0;
  REQUIRE(proc_spawn(loop, &o, &s.p, NULL) == 0);
  uv_check_init(loop, &s.check);
  s.check.data = &s;
  uv_check_start(&s.check, gc_check);
  CHECK(run_until(loop, &s.r.exited, 10000));
  close_now((uv_handle_t *)&s.check);
  CHECK(s.released);
  CHECKF(strcmp(s.r.lines, "early|late|") == 0, "%s", s.r.lines);
  CHECK(s.r.lines_at_exit == 2 && s.r.code == 0);
  unlink(fifo);
}

static void test_exec_failures(uv_loop_t *loop, const char *tmp)
{
  result r;
  char *argv[4];
  proc_t *p = NULL;
  const char *step = NULL;
  TEST("exec failure is synchronous: ENOENT, EACCES, bad cwd");
  proc_opts o = sh_opts(argv, "true", &r);
  o.file = "/no/such/binary";
  CHECK(proc_spawn(loop, &o, &p, &step) == UV_ENOENT && step && strcmp(step, "exec") == 0);
  o.file = "no-such-binary-on-path-xyz";
  CHECK(proc_spawn(loop, &o, &p, &step) == UV_ENOENT);
  char noexec[PATH_MAX + 16];
  snprintf(noexec, sizeof(noexec), "%s/noexec", tmp);
  int fd = open(noexec, O_WRONLY | O_CREAT, 0644);
  REQUIRE(fd >= 0);
  close(fd);
  o.file = noexec;
  CHECK(proc_spawn(loop, &o, &p, &step) == UV_EACCES);
  o.file = "/bin/sh";
  o.cwd = "/no/such/dir";
  CHECK(proc_spawn(loop, &o, &p, &step) == UV_ENOENT && step && strcmp(step, "chdir") == 0);
  o.cwd = NULL;
  o.io[1].kind = PROC_IO_FILE;
  o.io[1].path = "/no/such/dir/out.log";
  CHECK(proc_spawn(loop, &o, &p, &step) == UV_ENOENT && step && strcmp(step, "stdout") == 0);
  CHECK(r.exited == 0);
}

static void test_cwd_env_files(uv_loop_t *loop, const char *tmp)
{
  result r;
  char *argv[4];
  proc_t *p;
  TEST("cwd is applied");
  proc_opts o = sh_opts(argv, "pwd", &r);
  o.cwd = tmp;
  REQUIRE(proc_spawn(loop, &o, &p, NULL) == 0);
  CHECK(run_until(loop, &r.exited, 10000));
  char want[PATH_MAX + 2];
  snprintf(want, sizeof(want), "%s|", tmp);
  CHECKF(strcmp(r.lines, want) == 0, "%s vs %s", r.lines, want);

  TEST("env replaces the environment");
  char *env[] = {"FOO=bar baz", "PATH=/usr/bin:/bin", NULL};
  o = sh_opts(argv, "echo \"$FOO-$HOME\"", &r);
  o.env = env;
  REQUIRE(proc_spawn(loop, &o, &p, NULL) == 0);
  CHECK(run_until(loop, &r.exited, 10000));
  CHECKF(strcmp(r.lines, "bar baz-|") == 0, "%s", r.lines);

  TEST("stdout to a file (truncate, then append)");
  char path[PATH_MAX + 16];
  snprintf(path, sizeof(path), "%s/out.log", tmp);
  for (int i = 0; i < 2; i++) {
    o = sh_opts(argv, "echo hi", &r);
    o.io[1].kind = PROC_IO_FILE;
    o.io[1].path = path;
    o.io[1].append = i == 1;
    REQUIRE(proc_spawn(loop, &o, &p, NULL) == 0);
    CHECK(run_until(loop, &r.exited, 10000));
  }
  char buf[64] = {0};
  int fd = open(path, O_RDONLY);
  REQUIRE(fd >= 0);
  CHECK(read(fd, buf, sizeof(buf) - 1) == 6 && strcmp(buf, "hi\nhi\n") == 0);
  close(fd);
  struct stat st;
  CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
}

/* raise_nofile lifts our soft RLIMIT_NOFILE to the hard one; a child still starts with the old one. */
static void test_raise_nofile(uv_loop_t *loop)
{
  result r;
  char *argv[4];
  proc_t *p;
  TEST("raise_nofile: ours up to the hard limit, a child's as it was");
  struct rlimit rl, before, after;
  REQUIRE(getrlimit(RLIMIT_NOFILE, &rl) == 0);
  if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max < 512) {
    CHECKF(0, "this test needs a finite hard RLIMIT_NOFILE of at least 512 (have %llu)", (unsigned long long)rl.rlim_max);
    return;
  }
  struct rlimit low = {.rlim_cur = 256, .rlim_max = rl.rlim_max};
  REQUIRE(setrlimit(RLIMIT_NOFILE, &low) == 0);
  REQUIRE(proc_raise_nofile(NULL, &before, &after) == 0);
  CHECK(before.rlim_cur == 256 && after.rlim_cur == rl.rlim_max && after.rlim_max == rl.rlim_max);
  struct rlimit now;
  CHECK(getrlimit(RLIMIT_NOFILE, &now) == 0 && now.rlim_cur == rl.rlim_max);
  if (RUNNING_ON_VALGRIND) { /* valgrind keeps RLIMIT_NOFILE to itself: the kernel, and so a child, never sees it */
    printf("  (under valgrind: the child's limit is checked by unit.proc)\n");
    return;
  }
  proc_opts o = sh_opts(argv, "ulimit -Sn", &r);
  REQUIRE(proc_spawn(loop, &o, &p, NULL) == 0);
  CHECK(run_until(loop, &r.exited, 10000));
  CHECKF(strcmp(r.lines, "256|") == 0, "%s", r.lines);

  TEST("raise_nofile after an exec: children get the soft limit the earlier image started with");
  rlim_t earlier = 300, soft;
  REQUIRE(proc_raise_nofile(&earlier, &before, &after) == 0); /* ours is already at the hard limit */
  CHECK(before.rlim_cur == rl.rlim_max && after.rlim_cur == rl.rlim_max);
  CHECK(proc_children_nofile(&soft) == 1 && soft == 300);
  o = sh_opts(argv, "ulimit -Sn", &r);
  REQUIRE(proc_spawn(loop, &o, &p, NULL) == 0);
  CHECK(run_until(loop, &r.exited, 10000));
  CHECKF(strcmp(r.lines, "300|") == 0, "%s", r.lines);
}

static void test_stdin_and_fds(uv_loop_t *loop)
{
  result r;
  char *argv[4];
  proc_t *p;
  TEST("stdin pipe: lines written come back, shutting the stdin channel ends the child");
  proc_opts o = sh_opts(argv, "cat", &r);
  o.io[0].kind = PROC_IO_PIPE;
  REQUIRE(proc_spawn(loop, &o, &p, NULL) == 0);
  CHECK(channel_write(proc_stdio(p, 0), "one", 3) == 0);
  CHECK(channel_write(proc_stdio(p, 0), "two", 3) == 0);
  CHECK(channel_shutdown(proc_stdio(p, 0)) == 0);
  CHECK(run_until(loop, &r.exited, 10000));
  CHECKF(strcmp(r.lines, "one|two|") == 0, "%s", r.lines);
  CHECK(r.code == 0);

  TEST("the child inherits no fd of ours beyond 0..2 (no socket leaks into an agent)");
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  REQUIRE(dup2(sv[0], 57) == 57 && dup2(sv[1], 58) == 58);  /* no CLOEXEC on purpose */
  run_sh(loop,
         "n=0; for f in /proc/$$/fd/*; do case $(readlink $f) in socket:*) n=$((n+1));; esac; done; "
         "[ -e /proc/$$/fd/57 ] && n=leak; echo $n",
         &r);
  CHECKF(strcmp(r.lines, "0|") == 0, "sockets in the child: %s", r.lines);
  close(57);
  close(58);
  close(sv[0]);
  close(sv[1]);
}

static int stdin_drains;

/* on_stdin_drain: count. */
static void on_stdin_drain(proc_t *p)
{
  (void)p;
  stdin_drains++;
}

static void test_stdin_drain(uv_loop_t *loop)
{
  TEST("on_stdin_drain: a stdin queue over the high-water mark fires once the child has read it");
  static const proc_cbs dcbs = {on_line, NULL, NULL, on_stderr, on_exit_cb, on_stdin_drain};
  result r;
  char *argv[4];
  proc_opts o = sh_opts(argv, "cat >/dev/null", &r);
  o.io[0].kind = PROC_IO_PIPE;
  o.cbs = &dcbs;
  proc_t *p;
  REQUIRE(proc_spawn(loop, &o, &p, NULL) == 0);
  size_t n = 2 * CHANNEL_HIGH_WATER;
  char *big = malloc(n);
  REQUIRE(big != NULL);
  memset(big, 'x', n);
  stdin_drains = 0;
  CHECK(channel_write(proc_stdio(p, 0), big, n) == 0);
  CHECK(channel_queued(proc_stdio(p, 0)) >= CHANNEL_HIGH_WATER);
  CHECK(run_until(loop, &stdin_drains, 10000));
  CHECK(stdin_drains == 1);
  CHECK(channel_shutdown(proc_stdio(p, 0)) == 0);
  CHECK(run_until(loop, &r.exited, 10000));
  CHECK(r.code == 0 && stdin_drains == 1);
  free(big);
}

static void test_stdio_closed_by_holder(uv_loop_t *loop)
{
  TEST("proc_stdio: the pipes as channels; one its holder closes counts as EOF, so on_exit still fires");
  result r;
  char *argv[4];
  proc_opts o = sh_opts(argv, "read x; echo late; exit 3", &r);
  o.io[0].kind = PROC_IO_PIPE;
  proc_t *p;
  REQUIRE(proc_spawn(loop, &o, &p, NULL) == 0);
  CHECK(proc_stdio(p, 0) && proc_stdio(p, 1) && proc_stdio(p, 2) && proc_stdio(p, 3) == NULL);
  channel_close(proc_stdio(p, 1));
  channel_close(proc_stdio(p, 2));
  CHECK(channel_write(proc_stdio(p, 0), "go", 2) == 0);
  CHECK(channel_shutdown(proc_stdio(p, 0)) == 0);
  CHECK(run_until(loop, &r.exited, 10000));
  CHECK(r.exited == 1 && r.nlines == 0);
}

/* Kill-test state: the grandchild's pid arrives as the first line. */
static void kill_on_line(proc_t *p, const char *s, size_t n)
{
  on_line(p, s, n);
  proc_kill(p, SIGTERM);
}

static void test_kill_group(uv_loop_t *loop)
{
  TEST("kill signals the whole process group: a grandchild dies too");
  static const proc_cbs kcbs = {kill_on_line, NULL, NULL, on_stderr, on_exit_cb, NULL};
  result r;
  char *argv[4];
  proc_opts o = sh_opts(argv, "sleep 300 & echo $!; wait", &r);
  o.cbs = &kcbs;
  proc_t *p;
  REQUIRE(proc_spawn(loop, &o, &p, NULL) == 0);
  pid_t pid = proc_pid(p);
  CHECK(run_until(loop, &r.exited, 10000));
  CHECK(r.sig == SIGTERM && r.code == 128 + SIGTERM);
  pid_t gpid = (pid_t)atoi(r.lines);
  CHECK(gpid > 1);
  /* the grandchild held stdout, so EOF means it is exiting; its pidfd says when it is done */
  CHECKF(gpid > 1 && pid_gone(gpid, 2000), "grandchild %d still alive", (int)gpid);
  CHECK(pid_gone(pid, 2000));

  TEST("kill after reaping is a no-op");
  static const proc_cbs keep = {on_line, NULL, NULL, on_stderr, on_exit_keep, NULL};
  o = sh_opts(argv, "cat", &r);
  o.io[0].kind = PROC_IO_PIPE;
  o.cbs = &keep;
  REQUIRE(proc_spawn(loop, &o, &p, NULL) == 0);
  CHECK(proc_running(p));
  CHECK(proc_kill(p, 0) == 0);
  channel_shutdown(proc_stdio(p, 0));
  CHECK(run_until(loop, &r.exited, 10000));
  CHECK(!proc_running(p));
  CHECK(proc_kill(p, SIGKILL) == 1);
  proc_close(p);
}

/* uv_spawn exit callback. */
static void foreign_exit_cb(uv_process_t *h, int64_t status, int sig)
{
  int *st = h->data;
  st[0] = 1;
  st[1] = (int)status;
  st[2] = sig;
  uv_close((uv_handle_t *)h, NULL);
}

/* Our child ends when the uv child has been seen exiting. */
static void foreign_on_exit_check(uv_check_t *c)
{
  void **ctx = c->data;
  int *st = ctx[0];
  proc_t *p = ctx[1];
  if (st[0] && ctx[2] == NULL) {
    ctx[2] = p;
    channel_shutdown(proc_stdio(p, 0));
    uv_check_stop(c);
  }
}

static void test_foreign_children(uv_loop_t *loop)
{
  TEST("a child spawned by plain uv_spawn on the same loop keeps its exit callback");
  result r;
  char *argv[4];
  proc_opts o = sh_opts(argv, "read x; exit 4", &r);
  o.io[0].kind = PROC_IO_PIPE;
  proc_t *p;
  REQUIRE(proc_spawn(loop, &o, &p, NULL) == 0);

  int st[3] = {0, 0, 0};
  uv_process_t h;
  char *uargv[] = {"sh", "-c", "exit 5", NULL};
  uv_process_options_t uo;
  memset(&uo, 0, sizeof(uo));
  uo.file = "/bin/sh";
  uo.args = uargv;
  uo.exit_cb = foreign_exit_cb;
  h.data = st;
  REQUIRE(uv_spawn(loop, &h, &uo) == 0);
  void *ctx[3] = {st, p, NULL};
  uv_check_t c;
  uv_check_init(loop, &c);
  c.data = ctx;
  uv_check_start(&c, foreign_on_exit_check);
  CHECK(run_until(loop, &r.exited, 10000));
  close_now((uv_handle_t *)&c);
  CHECK(st[0] == 1 && st[1] == 5 && st[2] == 0);
  CHECK(r.code == 4);
}

static void test_close_detached(uv_loop_t *loop)
{
  TEST("proc_close before exit: no callbacks, the loop is not held, teardown frees it");
  result r;
  char *argv[4];
  proc_opts o = sh_opts(argv, "exec sleep 300", &r);
  proc_t *p;
  REQUIRE(proc_spawn(loop, &o, &p, NULL) == 0);
  pid_t pid = proc_pid(p);
  proc_close(p);
  CHECK(uv_run(loop, UV_RUN_DEFAULT) == 0);  /* returns: nothing keeps the loop alive */
  CHECK(r.exited == 0);
  proc_teardown();
  uv_run(loop, UV_RUN_DEFAULT);
  kill(pid, SIGKILL);
  CHECK(waitpid(pid, NULL, 0) == pid);
}

/* Intermediate process of the PDEATHSIG test: spawn `sleep` with pdeathsig, report its pid,
 * then wait to be killed. */
static void pdeath_intermediate(int wfd)
{
  uv_loop_t loop;
  uv_loop_init(&loop);
  char *argv[] = {"sleep", "300", NULL};
  proc_opts o;
  memset(&o, 0, sizeof(o));
  o.file = "sleep";
  o.argv = argv;
  o.pdeathsig = SIGKILL;
  o.io[0].kind = o.io[1].kind = o.io[2].kind = PROC_IO_NULL;
  static const proc_cbs none;
  o.cbs = &none;
  proc_t *p;
  if (proc_spawn(&loop, &o, &p, NULL) != 0) _exit(2);
  pid_t pid = proc_pid(p);
  if (write(wfd, &pid, sizeof(pid)) != sizeof(pid)) _exit(3);
  for (;;) pause();
}

/* Harness (its own process, a child subreaper): kill -9 the intermediate, then the grandchild
 * must die of SIGKILL within 1 s and come back to us to be reaped. */
static void pdeath_harness(void)
{
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  sigset_t chld, old;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &old);
  int pfd[2];
  if (pipe(pfd) < 0) _exit(10);
  pid_t mid = fork();
  if (mid == 0) {
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(pfd[0]);
    pdeath_intermediate(pfd[1]);
  }
  close(pfd[1]);
  pid_t child;
  if (read(pfd[0], &child, sizeof(child)) != sizeof(child)) _exit(11);
  if (kill(child, 0) != 0) _exit(12);
  kill(mid, SIGKILL);
  if (waitpid(mid, NULL, 0) != mid) _exit(13);
  struct timespec deadline, now;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += 1;
  for (;;) {
    int st;
    pid_t r = waitpid(child, &st, WNOHANG);
    if (r == child) _exit(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL ? 0 : 14);
    clock_gettime(CLOCK_MONOTONIC, &now);
    long left_ns = (deadline.tv_sec - now.tv_sec) * 1000000000L + (deadline.tv_nsec - now.tv_nsec);
    if (left_ns <= 0) {
      kill(child, SIGKILL);
      waitpid(child, NULL, 0);
      _exit(15);
    }
    struct timespec ts = {left_ns / 1000000000L, left_ns % 1000000000L};
    sigtimedwait(&chld, NULL, &ts);  /* woken by the orphan's death */
  }
}

/* A child forked by hand with three pipes (what a previous image leaves us): fds[] get our ends. */
static pid_t fork_sh(const char *script, int fds[3])
{
  int in[2], out[2], err[2];
  REQUIRE(pipe(in) == 0 && pipe(out) == 0 && pipe(err) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (int fd = 3; fd < 64; fd++) close(fd);
    execl("/bin/sh", "sh", "-c", script, (char *)NULL);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  fds[0] = in[1];
  fds[1] = out[0];
  fds[2] = err[0];
  return pid;
}

static void test_adopt(uv_loop_t *loop)
{
  TEST("adopt: a child we did not spawn is watched through its pipes and reaped; fds, pause, buffered");
  channel_t *ch[3];
  int fds[3];
  pid_t pid = fork_sh("echo first; printf part; read x; echo \"al $x\"; echo oops >&2; exit 7", fds);
  result r;
  memset(&r, 0, sizeof(r));
  proc_opts o;
  memset(&o, 0, sizeof(o));
  o.cbs = &cbs;
  o.data = &r;
  proc_t *p = NULL;
  REQUIRE(proc_adopt(loop, pid, fds, &o, &p) == 0);
  CHECK(proc_pid(p) == pid);
  for (int i = 0; i < 3; i++) {
    ch[i] = proc_stdio(p, i);
    CHECK(ch[i] && channel_fileno(ch[i]) == fds[i]);
    CHECK(fcntl(fds[i], F_GETFD) & FD_CLOEXEC);
  }
  CHECK(run_until(loop, &r.nlines, 5000));
  /* the partial "part" arrives without a newline: held, and reported as buffered */
  uint64_t deadline = uv_now(loop) + 5000;
  while (channel_buffered(ch[1]) == 0 && uv_now(loop) < deadline) uv_run(loop, UV_RUN_NOWAIT), uv_update_time(loop);
  CHECK(channel_buffered(ch[1]) > 0);
  channel_pause(ch[1]);
  channel_pause(ch[2]);
  CHECK(channel_write(ch[0], "now", 3) >= 0);
  /* paused: nothing is delivered until resumed (the child answers at once) */
  int never = 0;
  CHECK(!run_until(loop, &never, 300));
  CHECK(r.nlines == 1);
  channel_resume(ch[1]);
  channel_resume(ch[2]);
  CHECK(run_until(loop, &r.exited, 5000));
  CHECKF(strcmp(r.lines, "first|partal now|") == 0, "lines: %s", r.lines);
  CHECK(strstr(r.err, "oops") != NULL);
  CHECK(r.code == 7 && r.sig == 0);
  TEST("adopt: a pid that is not our child is ECHILD");
  int none[3] = {-1, -1, -1};
  CHECK(proc_adopt(loop, getppid(), none, &o, &p) == -ECHILD);
}

/* How many fds this process has open. */
static int open_fds(void)
{
  int n = 0;
  for (int fd = 0; fd < 1024; fd++)
    if (fcntl(fd, F_GETFD) >= 0) n++;
  return n;
}

static void test_start_then_adopt(uv_loop_t *loop)
{
  TEST("proc_start: an untracked child with pipes, adopted later: its lines, its stdin, its exit");
  char *argv[4];
  result r;
  proc_opts o = sh_opts(argv, "read x; echo \"got $x\"; exit 3", &r);
  o.io[0].kind = PROC_IO_PIPE;
  o.io[2].kind = PROC_IO_INHERIT;
  int fds[3];
  pid_t pid = -1;
  REQUIRE(proc_start(&o, &pid, fds, NULL) == 0);
  CHECK(pid > 0 && fds[0] >= 0 && fds[1] >= 0 && fds[2] == -1);
  CHECK(fcntl(fds[0], F_GETFD) & FD_CLOEXEC);
  /* the child runs before anyone tracks it: it waits on its stdin */
  CHECK(kill(pid, 0) == 0);
  proc_t *p = NULL;
  REQUIRE(proc_adopt(loop, pid, fds, &o, &p) == 0);
  CHECK(channel_write(proc_stdio(p, 0), "hello", 5) >= 0);
  CHECK(run_until(loop, &r.exited, 5000));
  CHECKF(strcmp(r.lines, "got hello|") == 0, "lines: %s", r.lines);
  CHECK(r.code == 3);

  TEST("proc_start: an exec failure comes back at once and leaves no fd open");
  int before = open_fds();
  o = sh_opts(argv, "exit 0", &r);
  o.file = "/nonexistent/rmcp-no-such-binary";
  o.io[0].kind = PROC_IO_PIPE;
  const char *step = NULL;
  CHECK(proc_start(&o, &pid, fds, &step) == -ENOENT);
  CHECK(step && strcmp(step, "exec") == 0);
  CHECK(fds[0] == -1 && fds[1] == -1 && fds[2] == -1);
  CHECK(open_fds() == before);
}

static void test_pdeathsig(void)
{
  TEST("PDEATHSIG: kill -9 of the spawning process kills its child within 1 s");
  fflush(NULL);
  pid_t h = fork();
  REQUIRE(h >= 0);
  if (h == 0) pdeath_harness();
  int st;
  REQUIRE(waitpid(h, &st, 0) == h);
  CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "harness status %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

int main(void)
{
  printf("test_proc\n");
  signal(SIGPIPE, SIG_IGN);
  char tmpl[] = "/tmp/rmcp-test-proc-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != NULL);
  char tmp[PATH_MAX];
  REQUIRE(realpath(tmpl, tmp) != NULL);
  test_pdeathsig();
  uv_loop_t loop;
  uv_loop_init(&loop);
  test_basic(&loop);
  test_exit_after_eof(&loop, tmp);
  test_exec_failures(&loop, tmp);
  test_cwd_env_files(&loop, tmp);
  test_stdin_and_fds(&loop);
  test_stdin_drain(&loop);
  test_stdio_closed_by_holder(&loop);
  test_kill_group(&loop);
  test_foreign_children(&loop);
  test_close_detached(&loop);
  test_adopt(&loop);
  test_start_then_adopt(&loop);
  test_raise_nofile(&loop);
  proc_teardown();
  loop_finish(&loop);
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", tmp);
  return check_done();
}
