/* test_sys.c: rmcp.sys: the exclusive lock (a second taker is refused until unlock), stdio
 * redirection (fds 1 and 2 follow a rotated log: appended, created 0600, unchanged on failure),
 * and exec (same pid; fds with CLOEXEC cleared survive, the others do not), through the C API and
 * the Lua binding, and local time in a named zone across Europe/Athens's 2026 DST changes (the
 * caller's TZ left as it was). Redirections run in forked children so the test's own
 * stdout stays where ctest reads it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "lua_host.h"
#include "modules.h"
#include "sys.h"

static char tmp[PATH_MAX];

/* Reads a whole (small) file into a static buffer; "" when missing. */
static const char *slurp(const char *path)
{
  static char buf[8192];
  buf[0] = '\0';
  int fd = open(path, O_RDONLY);
  if (fd < 0) return buf;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  buf[n > 0 ? n : 0] = '\0';
  close(fd);
  return buf;
}

/* Writes text to path (truncating). */
static void spit(const char *path, const char *text)
{
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  close(fd);
}

/* Runs fn in a child and returns its exit status (0 = its checks held). */
static int in_child(int (*fn)(void))
{
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) _exit(fn());
  int st;
  REQUIRE(waitpid(pid, &st, 0) == pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

static void test_flock(void)
{
  TEST("flock: exclusive until unlock, file created 0600");
  char path[PATH_MAX + 16];
  snprintf(path, sizeof(path), "%s/x.lock", tmp);
  int a, b;
  CHECK(sys_flock(path, &a) == 0);
  CHECK(sys_flock(path, &b) == -EWOULDBLOCK);
  struct stat st;
  CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
  sys_unlock(a);
  CHECK(sys_flock(path, &b) == 0);
  sys_unlock(b);
}

static char log_path[PATH_MAX + 16], rotated_path[PATH_MAX + 16];

/* Child: stderr on the log, the log rotated away, then redirected back onto a fresh log. */
static int child_rotate(void)
{
  int fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT, 0600);
  if (fd < 0 || dup2(fd, 2) < 0 || dup2(fd, 1) < 0) return 2;
  close(fd);
  fprintf(stderr, "before rotation\n");
  if (rename(log_path, rotated_path) != 0) return 3;
  fprintf(stderr, "after rotation, before redirect\n");
  if (sys_redirect_stdio(log_path) != 0) return 4;
  if (!(fcntl(1, F_GETFL) & O_APPEND) || !(fcntl(2, F_GETFL) & O_APPEND)) return 5;
  if (fcntl(1, F_GETFD) & FD_CLOEXEC) return 6; /* must survive exec like any stdio */
  fprintf(stderr, "stderr after redirect\n");
  printf("stdout after redirect\n");
  fflush(stdout);
  if (write(2, "raw fd 2\n", 9) != 9) return 7;
  return 0;
}

static void test_redirect_follows_rotation(void)
{
  TEST("redirect_stdio: after a rotation, fds 1 and 2 write to the fresh log, appended, 0600");
  snprintf(log_path, sizeof(log_path), "%s/agentd.log", tmp);
  snprintf(rotated_path, sizeof(rotated_path), "%s/agentd.log.1", tmp);
  CHECK(in_child(child_rotate) == 0);
  CHECK(strcmp(slurp(rotated_path), "before rotation\nafter rotation, before redirect\n") == 0);
  CHECKF(strcmp(slurp(log_path), "stderr after redirect\nstdout after redirect\nraw fd 2\n") == 0, "log: %s", slurp(log_path));
  struct stat st;
  CHECK(stat(log_path, &st) == 0 && (st.st_mode & 0777) == 0600);
}

/* Child: appends to an existing file; a bad path fails and leaves 1 and 2 alone. */
static int child_append_and_fail(void)
{
  if (sys_redirect_stdio(log_path) != 0) return 2;
  struct stat before, after;
  if (fstat(2, &before) != 0) return 3;
  char bad[PATH_MAX + 32];
  snprintf(bad, sizeof(bad), "%s/no/such/dir/log", tmp);
  if (sys_redirect_stdio(bad) != -ENOENT) return 4;
  if (fstat(2, &after) != 0 || after.st_ino != before.st_ino) return 5;
  fprintf(stderr, "appended\n");
  return 0;
}

static void test_redirect_appends_and_fails_cleanly(void)
{
  TEST("redirect_stdio: appends to what is there; ENOENT leaves fds 1 and 2 as they were");
  spit(log_path, "old line\n");
  CHECK(in_child(child_append_and_fail) == 0);
  CHECK(strcmp(slurp(log_path), "old line\nappended\n") == 0);
}

/* Child: the Lua binding, success and a luv-style failure (paths passed as globals LOG, TMP). */
static int child_lua(void)
{
  static const char chunk[] =
    "local sys = require 'rmcp.sys'\n"
    "assert(sys.redirect_stdio(LOG) == true)\n"
    "io.stderr:write('from lua\\n')\n"
    "local r, err, code = sys.redirect_stdio(TMP .. '/missing/x')\n"
    "assert(r == nil and code == 'ENOENT' and err:find('missing', 1, true), tostring(err))\n"
    "assert(not pcall(sys.redirect_stdio))\n";
  uv_loop_t loop;
  uv_loop_init(&loop);
  static const luaL_Reg modules[] = {{"rmcp.sys", luaopen_rmcp_sys}, {NULL, NULL}};
  lua_host_t *h = lua_host_new(&loop, tmp, NULL, NULL, modules);
  if (h == NULL) return 2;
  lua_pushstring(h->L, log_path);
  lua_setglobal(h->L, "LOG");
  lua_pushstring(h->L, tmp);
  lua_setglobal(h->L, "TMP");
  int r = luaL_loadstring(h->L, chunk) == LUA_OK && lua_host_pcall(h->L, 0, 0) == LUA_OK ? 0 : 3;
  lua_host_free(h);
  uv_loop_close(&loop);
  return r;
}

static void test_redirect_lua(void)
{
  TEST("sys.redirect_stdio(path) -> true | nil, err, code; wrong type raises");
  spit(log_path, "");
  CHECK(in_child(child_lua) == 0);
  CHECKF(strstr(slurp(log_path), "from lua\n") != NULL, "log: %s", slurp(log_path));
}

static int exec_pipe[2];

/* Child: keep the pipe's write end across exec, not a CLOEXEC fd; the new image reports. */
static int child_exec(void)
{
  int gone = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (gone < 0 || sys_cloexec(exec_pipe[1], 0) != 0) return 2;
  char script[256];
  snprintf(script, sizeof(script), "echo \"pid $$\" >&%d; [ -e /proc/self/fd/%d ] && echo leaked >&%d; exit 0",
           exec_pipe[1], gone, exec_pipe[1]);
  char *argv[] = {"/bin/sh", "-c", script, NULL};
  char nofile[] = "/no/such/binary";
  char *bad[] = {nofile, NULL};
  if (sys_exec(nofile, bad, NULL) != -ENOENT) return 3;
  sys_exec("/bin/sh", argv, NULL);
  return 4;
}

static void test_exec(void)
{
  TEST("exec: same pid, an fd with CLOEXEC cleared survives, a CLOEXEC one does not; ENOENT returns");
  REQUIRE(pipe2(exec_pipe, O_CLOEXEC) == 0);
  fflush(stdout);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) _exit(child_exec());
  close(exec_pipe[1]);
  char buf[256] = {0};
  ssize_t n, got = 0;
  while ((n = read(exec_pipe[0], buf + got, sizeof(buf) - 1 - (size_t)got)) > 0) got += n;
  close(exec_pipe[0]);
  int st;
  REQUIRE(waitpid(pid, &st, 0) == pid);
  CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
  char want[64];
  snprintf(want, sizeof(want), "pid %d\n", (int)pid);
  CHECKF(strcmp(buf, want) == 0, "the new image said: %s", buf);
}

static void test_tz(void)
{
  TEST("tz_local / tz_time in Europe/Athens: 09:00 either side of both 2026 DST changes; a skipped time moves forward; TZ kept");
  setenv("TZ", "UTC", 1);
  tzset();
  struct tm tm;
  REQUIRE(sys_tz_local("Europe/Athens", 1774764000, &tm) == 0); /* 2026-03-29 09:00 EEST */
  CHECKF(tm.tm_hour == 9 && tm.tm_mday == 29 && tm.tm_isdst == 1 && tm.tm_gmtoff == 3 * 3600,
         "%02d:%02d day %d dst %d off %ld", tm.tm_hour, tm.tm_min, tm.tm_mday, tm.tm_isdst, (long)tm.tm_gmtoff);
  REQUIRE(sys_tz_local("Europe/Athens", 1774681200, &tm) == 0); /* 2026-03-28 09:00 EET */
  CHECK(tm.tm_hour == 9 && tm.tm_isdst == 0 && tm.tm_gmtoff == 2 * 3600);
  struct { int mon, day, hour, min; time_t want; } cases[] = {
    {3, 28, 9, 0, 1774681200}, {3, 29, 9, 0, 1774764000},     /* spring: 23 h apart */
    {10, 24, 9, 0, 1792821600}, {10, 25, 9, 0, 1792911600},   /* autumn: 25 h apart */
    {3, 29, 3, 30, 1774747800},                               /* 03:30 does not exist: 04:30 EEST */
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = 126, tm.tm_mon = cases[i].mon - 1, tm.tm_mday = cases[i].day;
    tm.tm_hour = cases[i].hour, tm.tm_min = cases[i].min;
    time_t t = 0;
    REQUIRE(sys_tz_time("Europe/Athens", &tm, &t) == 0);
    CHECKF(t == cases[i].want, "case %zu: %ld, want %ld", i, (long)t, (long)cases[i].want);
  }
  CHECKF(strcmp(getenv("TZ"), "UTC") == 0, "TZ is %s", getenv("TZ"));
  unsetenv("TZ");
  REQUIRE(sys_tz_local("UTC", 0, &tm) == 0);
  CHECK(getenv("TZ") == NULL);
  CHECK(tm.tm_year == 70 && tm.tm_hour == 0);
}

int main(void)
{
  char tmpl[] = "/tmp/rmcp-test-sys-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != NULL);
  snprintf(tmp, sizeof(tmp), "%s", tmpl);
  test_flock();
  test_redirect_follows_rotation();
  test_redirect_appends_and_fails_cleanly();
  test_redirect_lua();
  test_exec();
  test_tz();
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
  return check_done();
}
