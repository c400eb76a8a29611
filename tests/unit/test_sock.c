/* test_sock.c: rmcp.sock: the secure directory (created 0700, refused when open or foreign),
 * listen/connect with a line each way, socket mode 0600, stale sockets, unlink on close,
 * overlong paths, and peers or servers of another uid refused (when run as root). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "channel.h"
#include "sock.h"
#include "testloop.h"

static char tmp[PATH_MAX];

/* mode bits of path, or -1. */
static int mode_of(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

static void test_secure_dir(void)
{
  char msg[768], path[PATH_MAX + 32], mid[PATH_MAX + 32];
  TEST("secure_dir creates missing components 0700");
  snprintf(mid, sizeof(mid), "%s/a", tmp);
  snprintf(path, sizeof(path), "%s/a/b/home", tmp);
  CHECKF(sock_secure_dir(path, msg, sizeof(msg)) == 0, "%s", msg);
  CHECK(mode_of(path) == 0700 && mode_of(mid) == 0700);
  CHECKF(sock_secure_dir(path, msg, sizeof(msg)) == 0, "again: %s", msg);

  TEST("secure_dir refuses a dir open to group/others, saying why");
  chmod(path, 0755);
  CHECK(sock_secure_dir(path, msg, sizeof(msg)) == UV_EACCES);
  CHECKF(strstr(msg, "0755") && strstr(msg, "chmod 700"), "%s", msg);
  chmod(path, 0700);

  TEST("secure_dir refuses a symbolic link to our own 0700 dir, saying why");
  char link[PATH_MAX + 32];
  snprintf(link, sizeof(link), "%s/link", tmp);
  CHECK(symlink(path, link) == 0);
  CHECK(sock_secure_dir(link, msg, sizeof(msg)) == UV_EACCES);
  CHECKF(strstr(msg, "symbolic link"), "%s", msg);
  unlink(link);

  TEST("secure_dir refuses a file");
  char file[PATH_MAX + 32];
  snprintf(file, sizeof(file), "%s/file", tmp);
  close(open(file, O_CREAT | O_WRONLY, 0600));
  CHECK(sock_secure_dir(file, msg, sizeof(msg)) == UV_ENOTDIR);

  if (geteuid() != 0) {
    TEST("(skipped: foreign owner check needs root)");
    return;
  }
  TEST("secure_dir refuses a dir owned by another uid");
  CHECK(chown(path, 65534, 65534) == 0);
  CHECK(sock_secure_dir(path, msg, sizeof(msg)) == UV_EACCES);
  CHECKF(strstr(msg, "owned by uid 65534"), "%s", msg);
  CHECK(chown(path, 0, 0) == 0);
}

typedef struct {
  int accepted, fd;
  uid_t uid;
  pid_t pid;
  char got[256];
  int done;
  channel_t *ch;
} server_state;

/* Server side: answer the first line with "pong <line>" and close. */
static void srv_line(channel_t *ch, const char *p, size_t n)
{
  server_state *s = channel_data(ch);
  snprintf(s->got, sizeof(s->got), "%.*s", (int)n, p);
  char reply[300];
  int m = snprintf(reply, sizeof(reply), "pong %.*s", (int)n, p);
  channel_write(ch, reply, (size_t)m);
  channel_shutdown(ch);
}

/* Server side: the client went away. */
static void srv_eof(channel_t *ch, int err)
{
  (void)err;
  server_state *s = channel_data(ch);
  channel_close(ch);
  s->ch = NULL;
}

static const channel_cbs srv_cbs = {srv_line, NULL, NULL, srv_eof, NULL, NULL, NULL};

typedef struct {
  char got[256];
  int eof;
} client_state;

/* Client side: record the answer. */
static void cli_line(channel_t *ch, const char *p, size_t n)
{
  client_state *c = channel_data(ch);
  snprintf(c->got, sizeof(c->got), "%.*s", (int)n, p);
}

/* Client side: server closed. */
static void cli_eof(channel_t *ch, int err)
{
  (void)err;
  client_state *c = channel_data(ch);
  c->eof = 1;
  channel_close(ch);
}

static const channel_cbs cli_cbs = {cli_line, NULL, NULL, cli_eof, NULL, NULL, NULL};

static uv_loop_t *the_loop;

/* Accept callback bound to the test loop. */
static void on_accept_loop(sock_listener_t *l, int fd, uid_t uid, pid_t pid)
{
  server_state *s = sock_listener_data(l);
  s->accepted++;
  s->uid = uid;
  s->pid = pid;
  channel_opts o = {0, 0, 1, 1, &srv_cbs, s, 0};
  CHECK(channel_open(the_loop, fd, &o, &s->ch) == 0);
}

static void test_round_trip(uv_loop_t *loop)
{
  char msg[768], dir[PATH_MAX + 32], path[PATH_MAX + 64];
  snprintf(dir, sizeof(dir), "%s/home", tmp);
  REQUIRE(sock_secure_dir(dir, msg, sizeof(msg)) == 0);
  snprintf(path, sizeof(path), "%s/agentd.sock", dir);

  TEST("a stale socket file is replaced; a non-socket file is not");
  int stale = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  strcpy(sa.sun_path, path);
  REQUIRE(bind(stale, (struct sockaddr *)&sa, sizeof(sa)) == 0);
  close(stale);
  int fd;
  CHECK(sock_connect(path, &fd, msg, sizeof(msg)) == UV_ECONNREFUSED);
  server_state s;
  memset(&s, 0, sizeof(s));
  sock_listener_t *l = NULL;
  CHECKF(sock_listen(loop, path, on_accept_loop, &s, &l, msg, sizeof(msg)) == 0, "%s", msg);
  REQUIRE(l);
  char notsock[PATH_MAX + 64];
  snprintf(notsock, sizeof(notsock), "%s/plain", dir);
  close(open(notsock, O_CREAT | O_WRONLY, 0600));
  sock_listener_t *l2 = NULL;
  CHECK(sock_listen(loop, notsock, on_accept_loop, &s, &l2, msg, sizeof(msg)) == UV_EADDRINUSE);
  CHECKF(strstr(msg, "not a socket") != NULL, "%s", msg);

  TEST("the socket is 0600, and its private name (bound and listening before the rename) is gone");
  struct stat st;
  CHECK(lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0600);
  char priv[PATH_MAX + 96];
  snprintf(priv, sizeof(priv), "%s.%ld", path, (long)getpid());
  CHECK(lstat(priv, &st) < 0 && errno == ENOENT);
  DIR *d = opendir(dir);
  int entries = 0;
  for (struct dirent *e; d && (e = readdir(d));) entries += e->d_name[0] != '.';
  if (d) closedir(d);
  CHECKF(entries == 2, "the home holds the socket and the plain file only (%d entries)", entries);

  TEST("listen/connect round trip, a line each way, peer credentials passed on");
  REQUIRE(sock_connect(path, &fd, msg, sizeof(msg)) == 0);
  CHECK(fcntl(fd, F_GETFL) & O_NONBLOCK);
  CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
  client_state c;
  memset(&c, 0, sizeof(c));
  channel_opts o = {0, 0, 1, 1, &cli_cbs, &c, 0};
  channel_t *cc;
  REQUIRE(channel_open(loop, fd, &o, &cc) == 0);
  CHECK(channel_write(cc, "ping", 4) == 0);
  CHECK(run_until(loop, &c.eof, 10000));
  CHECKF(strcmp(c.got, "pong ping") == 0, "%s", c.got);
  CHECK(strcmp(s.got, "ping") == 0);
  CHECK(s.accepted == 1 && s.uid == geteuid() && s.pid == getpid());
  while (s.ch) uv_run(loop, UV_RUN_ONCE);

  TEST("close unlinks the path, unless another server replaced the socket");
  sock_listener_t *l3 = NULL;
  CHECK(sock_listen(loop, path, on_accept_loop, &s, &l3, msg, sizeof(msg)) == 0);
  sock_listener_close(l);
  CHECK(lstat(path, &st) == 0);
  sock_listener_close(l3);
  CHECK(lstat(path, &st) < 0 && errno == ENOENT);
  CHECK(sock_connect(path, &fd, msg, sizeof(msg)) == UV_ENOENT);
  uv_run(loop, UV_RUN_NOWAIT);
}

static void test_long_path(uv_loop_t *loop)
{
  TEST("a path longer than sun_path is a clear error");
  char msg[768], path[300];
  memset(path, 'p', sizeof(path) - 1);
  path[0] = '/';
  path[sizeof(path) - 1] = '\0';
  sock_listener_t *l;
  int fd;
  CHECK(sock_listen(loop, path, on_accept_loop, NULL, &l, msg, sizeof(msg)) == UV_ENAMETOOLONG);
  CHECKF(strstr(msg, "limit is 107") != NULL, "%s", msg);
  CHECK(sock_connect(path, &fd, msg, sizeof(msg)) == UV_ENAMETOOLONG);
}

/* In a child of another uid: connect to path and report what the server did (1 = closed on us). */
static void foreign_client(const char *path, int wfd)
{
  if (setgid(65534) < 0 || setuid(65534) < 0) _exit(20);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  strcpy(sa.sun_path, path);
  if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) _exit(21);
  char c;
  char verdict = read(fd, &c, 1) == 0 ? '1' : '0';
  if (write(wfd, &verdict, 1) != 1) _exit(22);
  _exit(0);
}

/* In a child of another uid: listen on path, say so, wait to be killed. */
static void foreign_server(const char *path, int wfd)
{
  if (setgid(65534) < 0 || setuid(65534) < 0) _exit(20);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  strcpy(sa.sun_path, path);
  if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0) _exit(21);
  if (write(wfd, "r", 1) != 1) _exit(22);
  for (;;) pause();
}

typedef struct {
  char verdict;
  int got;
} report;

/* The foreign client's verdict arrives over a pipe. */
static void report_data(channel_t *ch, const char *p, size_t n)
{
  report *r = channel_data(ch);
  if (n > 0) r->verdict = p[0];
  r->got = 1;
}

static const channel_cbs report_cbs = {NULL, report_data, NULL, NULL, NULL, NULL, NULL};

static void test_foreign_uid(uv_loop_t *loop)
{
  if (geteuid() != 0) {
    TEST("(skipped: foreign-uid peer checks need root)");
    return;
  }
  char msg[768], dir[PATH_MAX + 32], path[PATH_MAX + 64];
  snprintf(dir, sizeof(dir), "%s/open", tmp);
  REQUIRE(mkdir(dir, 0777) == 0 && chmod(dir, 0777) == 0 && chmod(tmp, 0755) == 0);
  snprintf(path, sizeof(path), "%s/s.sock", dir);

  TEST("a peer of another uid is refused in C (closed, never handed to the callback)");
  server_state s;
  memset(&s, 0, sizeof(s));
  sock_listener_t *l;
  REQUIRE(sock_listen(loop, path, on_accept_loop, &s, &l, msg, sizeof(msg)) == 0);
  chmod(path, 0777);  /* let the other uid reach it, so only the credential check stops it */
  int p[2];
  REQUIRE(pipe2(p, O_CLOEXEC) == 0);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) foreign_client(path, p[1]);
  close(p[1]);
  report r = {0, 0};
  channel_opts o = {1, 0, 1, 0, &report_cbs, &r, 0};
  channel_t *rc;
  REQUIRE(channel_open(loop, p[0], &o, &rc) == 0);
  CHECK(run_until(loop, &r.got, 10000));
  CHECK(r.verdict == '1' && s.accepted == 0);
  channel_close(rc);
  sock_listener_close(l);
  int st;
  CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);

  TEST("connect refuses a server of another uid");
  REQUIRE(pipe2(p, O_CLOEXEC) == 0);
  fflush(NULL);
  pid = fork();
  if (pid == 0) foreign_server(path, p[1]);
  close(p[1]);
  char c;
  REQUIRE(read(p[0], &c, 1) == 1);
  close(p[0]);
  int fd;
  CHECK(sock_connect(path, &fd, msg, sizeof(msg)) == UV_EACCES);
  CHECKF(strstr(msg, "uid 65534") != NULL, "%s", msg);
  kill(pid, SIGKILL);
  CHECK(waitpid(pid, NULL, 0) == pid);
  unlink(path);
  uv_run(loop, UV_RUN_NOWAIT);
}

int main(void)
{
  printf("test_sock\n");
  signal(SIGPIPE, SIG_IGN);
  char tmpl[] = "/tmp/rmcp-test-sock-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != NULL);
  REQUIRE(realpath(tmpl, tmp) != NULL);
  uv_loop_t loop;
  uv_loop_init(&loop);
  the_loop = &loop;
  test_secure_dir();
  test_round_trip(&loop);
  test_long_path(&loop);
  test_foreign_uid(&loop);
  loop_finish(&loop);
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", tmp);
  return check_done();
}
