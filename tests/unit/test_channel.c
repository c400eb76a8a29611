/* test_channel.c: rmcp.channel through its C API over real pipes and socketpairs: write
 * back-pressure and on_drain, an oversize line surviving, closing and pausing inside callbacks,
 * the final line at EOF (delivered, or dropped when asked), shutdown/half-close, write errors, and
 * plain files. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "channel.h"
#include "testloop.h"

typedef struct {
  char log[8192];
  size_t bytes;
  int lines, oversize, eof, eof_err, drains, flushes;
  int close_after_lines;   /* close inside on_line after this many lines (0: never) */
  int pause_after_lines;   /* pause inside on_line after this many lines (0: never) */
  channel_t *ch;
} sink;

/* Append to the sink's log. */
static void slog(sink *s, const char *fmt, const char *p, size_t n)
{
  size_t used = strlen(s->log);
  snprintf(s->log + used, sizeof(s->log) - used, fmt, (int)n, p);
}

/* on_line: log it; close or pause when the test asks. */
static void s_line(channel_t *ch, const char *p, size_t n)
{
  sink *s = channel_data(ch);
  s->lines++;
  slog(s, "L:%.*s|", p, n);
  if (s->close_after_lines && s->lines == s->close_after_lines) {
    channel_close(ch);
    s->ch = NULL;
    s->eof = 1;  /* nothing more will come: let run_until return */
  }
  if (s->pause_after_lines && s->lines == s->pause_after_lines) channel_pause(ch);
}

/* on_data: count. */
static void s_data(channel_t *ch, const char *p, size_t n)
{
  sink *s = channel_data(ch);
  (void)p;
  s->bytes += n;
}

/* on_oversize: log it. */
static void s_oversize(channel_t *ch, size_t n)
{
  sink *s = channel_data(ch);
  s->oversize++;
  char buf[32];
  snprintf(buf, sizeof(buf), "%zu", n);
  slog(s, "O:%.*s|", buf, strlen(buf));
}

/* on_eof: record. */
static void s_eof(channel_t *ch, int err)
{
  sink *s = channel_data(ch);
  s->eof = 1;
  s->eof_err = err;
  slog(s, "EOF%.*s|", "", 0);
}

/* on_drain: count. */
static void s_drain(channel_t *ch)
{
  sink *s = channel_data(ch);
  s->drains++;
}

/* on_flushed: count. */
static void s_flushed(channel_t *ch)
{
  sink *s = channel_data(ch);
  s->flushes++;
}

static const channel_cbs sink_cbs = {s_line, s_data, s_oversize, s_eof, s_drain, NULL, s_flushed};

/* Open a channel with a sink. */
static channel_t *open_sink(uv_loop_t *loop, int fd, sink *s, int raw, size_t max, int rd, int wr)
{
  channel_opts o = {raw, max, rd, wr, &sink_cbs, s, 0};
  channel_t *ch = NULL;
  int r = channel_open(loop, fd, &o, &ch);
  CHECKF(r == 0, "channel_open: %s", uv_strerror(r));
  REQUIRE(ch);
  s->ch = ch;
  return ch;
}

static void test_backpressure(uv_loop_t *loop)
{
  TEST("back-pressure: queued grows while the reader is paused, on_drain then on_flushed fire after resume");
  int p[2];
  REQUIRE(pipe2(p, O_CLOEXEC) == 0);
  sink w = {0}, r = {0};
  channel_t *wc = open_sink(loop, p[1], &w, 1, 0, 0, 1);
  channel_t *rc = open_sink(loop, p[0], &r, 1, 0, 1, 0);
  channel_pause(rc);
  static char chunk[64 * 1024];
  memset(chunk, 'z', sizeof(chunk));
  size_t total = 0;
  for (int i = 0; i < 48; i++) {
    CHECK(channel_write(wc, chunk, sizeof(chunk)) == 0);
    total += sizeof(chunk);
  }
  CHECKF(channel_queued(wc) >= CHANNEL_HIGH_WATER, "queued %zu", channel_queued(wc));
  uv_run(loop, UV_RUN_NOWAIT);
  CHECK(w.drains == 0 && w.flushes == 0);
  channel_resume(rc);
  CHECK(run_until(loop, &w.drains, 10000));
  CHECK(channel_queued(wc) < CHANNEL_HIGH_WATER);
  CHECK(run_until(loop, &w.flushes, 10000));
  CHECKF(channel_queued(wc) == 0 && w.flushes == 1, "queued %zu, flushes %d", channel_queued(wc), w.flushes);
  /* a write the pipe takes at once queues nothing and says nothing */
  CHECK(channel_write(wc, "x", 1) == 0 && channel_queued(wc) == 0);
  uv_run(loop, UV_RUN_NOWAIT);
  CHECK(w.flushes == 1);
  total += 1;
  CHECK(channel_shutdown(wc) == 0);  /* a pipe: closes after the flush, the reader sees EOF */
  CHECK(run_until(loop, &r.eof, 10000));
  CHECKF(r.bytes == total, "read %zu of %zu", r.bytes, total);
  CHECK(w.drains == 1 && r.eof_err == 0);
  channel_close(wc);
  channel_close(rc);
}

/* Write all of buf to fd (blocking). */
static void write_all(int fd, const char *buf, size_t n)
{
  while (n > 0) {
    ssize_t w = write(fd, buf, n);
    REQUIRE(w > 0);
    buf += w;
    n -= (size_t)w;
  }
}

/* A writer process: write the given bytes to fd then exit (keeps the test single-threaded). */
static pid_t writer(int fd, const char *buf, size_t n)
{
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    write_all(fd, buf, n);
    _exit(0);
  }
  close(fd);
  return pid;
}

static void test_oversize_pipe(uv_loop_t *loop)
{
  TEST("an oversize line over a pipe is dropped and reported; the channel goes on");
  size_t big = 300 * 1024;
  char *buf = malloc(big + 64);
  REQUIRE(buf);
  strcpy(buf, "{\"a\":1}\n");
  memset(buf + 8, 'x', big);
  strcpy(buf + 8 + big, "\n{\"b\":2}\nlast");
  size_t n = 8 + big + strlen("\n{\"b\":2}\nlast");
  int p[2];
  REQUIRE(pipe2(p, O_CLOEXEC) == 0);
  sink r = {0};
  channel_t *rc = open_sink(loop, p[0], &r, 0, 4096, 1, 0);
  pid_t pid = writer(p[1], buf, n);
  free(buf);
  CHECK(run_until(loop, &r.eof, 10000));
  char want[128];
  snprintf(want, sizeof(want), "L:{\"a\":1}|O:%zu|L:{\"b\":2}|L:last|EOF|", big);
  CHECKF(strcmp(r.log, want) == 0, "%s", r.log);
  channel_close(rc);
  waitpid(pid, NULL, 0);
}

static void test_close_in_callback(uv_loop_t *loop)
{
  TEST("close inside on_line with more lines in the same chunk: no further callbacks, no use-after-free");
  int p[2];
  REQUIRE(pipe2(p, O_CLOEXEC) == 0);
  write_all(p[1], "1\n2\n3\n4\n", 8);
  close(p[1]);
  sink r = {0};
  r.close_after_lines = 2;
  open_sink(loop, p[0], &r, 0, 0, 1, 0);
  CHECK(run_until(loop, &r.eof, 10000));
  for (int i = 0; i < 4; i++) uv_run(loop, UV_RUN_NOWAIT);
  CHECKF(strcmp(r.log, "L:1|L:2|") == 0, "%s", r.log);
  CHECK(r.ch == NULL);
}

static void test_pause_in_callback(uv_loop_t *loop)
{
  TEST("pause inside on_line keeps the rest buffered; resume delivers it in order, then EOF");
  int p[2];
  REQUIRE(pipe2(p, O_CLOEXEC) == 0);
  write_all(p[1], "1\n2\n3\nfinal", 11);
  close(p[1]);
  sink r = {0};
  r.pause_after_lines = 1;
  channel_t *rc = open_sink(loop, p[0], &r, 0, 0, 1, 0);
  while (r.lines < 1) uv_run(loop, UV_RUN_ONCE);
  for (int i = 0; i < 4; i++) uv_run(loop, UV_RUN_NOWAIT);
  CHECKF(strcmp(r.log, "L:1|") == 0, "paused: %s", r.log);
  channel_resume(rc);
  CHECKF(strcmp(r.log, "L:1|") == 0, "resume delivered synchronously: %s", r.log);
  CHECK(run_until(loop, &r.eof, 10000));
  CHECKF(strcmp(r.log, "L:1|L:2|L:3|L:final|EOF|") == 0, "%s", r.log);
  channel_close(rc);
}

static void test_drop_partial(uv_loop_t *loop)
{
  TEST("drop_partial: a last line without its newline (its writer died) is dropped, then EOF");
  int p[2];
  REQUIRE(pipe2(p, O_CLOEXEC) == 0);
  write_all(p[1], "1\n2\ncut in the midd", 20);
  close(p[1]);
  sink r = {0};
  channel_opts o = {0, 0, 1, 0, &sink_cbs, &r, 1};
  channel_t *rc = NULL;
  REQUIRE(channel_open(loop, p[0], &o, &rc) == 0);
  CHECK(run_until(loop, &r.eof, 10000));
  CHECKF(strcmp(r.log, "L:1|L:2|EOF|") == 0, "%s", r.log);
  channel_close(rc);
}

static void test_socketpair_halfclose(uv_loop_t *loop)
{
  TEST("socket shutdown is a half-close: the peer sees EOF and can still answer");
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  sink a = {0}, b = {0};
  channel_t *ac = open_sink(loop, sv[0], &a, 0, 0, 1, 1);
  channel_t *bc = open_sink(loop, sv[1], &b, 0, 0, 1, 1);
  CHECK(channel_write(ac, "ping", 4) == 0);
  CHECK(channel_shutdown(ac) == 0);
  CHECK(channel_write(ac, "late", 4) == UV_EPIPE);
  CHECK(run_until(loop, &b.eof, 10000));
  CHECKF(strcmp(b.log, "L:ping|EOF|") == 0, "%s", b.log);
  CHECK(channel_write(bc, "pong", 4) == 0);
  CHECK(channel_shutdown(bc) == 0);
  CHECK(run_until(loop, &a.eof, 10000));
  CHECKF(strcmp(a.log, "L:pong|EOF|") == 0, "%s", a.log);
  channel_close(ac);
  channel_close(bc);
}

static void test_write_errors(uv_loop_t *loop)
{
  TEST("a write-only channel whose reader is gone reports EPIPE (write result and on_eof)");
  int p[2];
  REQUIRE(pipe2(p, O_CLOEXEC) == 0);
  close(p[0]);
  sink w = {0};
  channel_t *wc = open_sink(loop, p[1], &w, 0, 0, 0, 1);
  CHECK(channel_write(wc, "x", 1) == UV_EPIPE);
  CHECK(run_until(loop, &w.eof, 10000));
  CHECK(w.eof_err == UV_EPIPE);
  CHECK(channel_write(wc, "y", 1) == UV_EPIPE);
  channel_close(wc);
  channel_close(wc);  /* idempotent */

  TEST("direction mismatches are refused without taking the fd");
  REQUIRE(pipe2(p, O_CLOEXEC) == 0);
  channel_opts o = {0, 0, 1, 0, &sink_cbs, &w, 0};
  channel_t *ch;
  CHECK(channel_open(loop, p[1], &o, &ch) == UV_EBADF);
  CHECK(fcntl(p[1], F_GETFD) >= 0);
  close(p[0]);
  close(p[1]);
}

static void test_plain_file(uv_loop_t *loop)
{
  TEST("plain files: lines read to EOF; writes land synchronously");
  char path[] = "/tmp/rmcp-test-channel-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  write_all(fd, "a\nb\r\nc", 6);
  close(fd);
  sink r = {0};
  channel_t *rc = open_sink(loop, open(path, O_RDONLY | O_CLOEXEC), &r, 0, 0, 1, 0);
  CHECK(run_until(loop, &r.eof, 10000));
  CHECKF(strcmp(r.log, "L:a|L:b|L:c|EOF|") == 0, "%s", r.log);
  channel_close(rc);
  sink w = {0};
  channel_t *wc = open_sink(loop, open(path, O_WRONLY | O_TRUNC | O_CLOEXEC), &w, 0, 0, 0, 1);
  CHECK(channel_write(wc, "{}", 2) == 0 && channel_queued(wc) == 0);
  channel_close(wc);
  char buf[8] = {0};
  fd = open(path, O_RDONLY);
  CHECK(read(fd, buf, sizeof(buf)) == 3 && strcmp(buf, "{}\n") == 0);
  close(fd);
  unlink(path);
}

/* Counts lines per loop turn (a prepare handle marks each turn) and when the other channel's
 * line arrived. */
typedef struct {
  int lines, turn_lines, max_turn_lines, eof;
  int *other_lines;        /* the flood's count, read when this channel's line arrives */
  int flood_seen;          /* the flood's count at that moment */
  int bad_order;
} counter;

/* on_line of the flooding channel: lines must come in order, counted per turn. */
static void c_line(channel_t *ch, const char *p, size_t n)
{
  counter *c = channel_data(ch);
  char want[16];
  int len = snprintf(want, sizeof(want), "%d", c->lines);
  if ((size_t)len != n || memcmp(want, p, n) != 0) c->bad_order = 1;
  c->lines++;
  if (++c->turn_lines > c->max_turn_lines) c->max_turn_lines = c->turn_lines;
}

/* on_line of the quiet channel: note how far the flood had come. */
static void q_line(channel_t *ch, const char *p, size_t n)
{
  counter *c = channel_data(ch);
  (void)p;
  (void)n;
  c->lines++;
  c->flood_seen = *c->other_lines;
}

/* on_eof: record. */
static void c_eof(channel_t *ch, int err)
{
  counter *c = channel_data(ch);
  (void)err;
  c->eof = 1;
}

/* Prepare callback: a new loop turn starts. */
static void turn_start(uv_prepare_t *h)
{
  counter *c = h->data;
  c->turn_lines = 0;
}

static void test_flood_fairness(uv_loop_t *loop)
{
  TEST("a flood is delivered at most 2 x 128 lines a loop turn, in order; another channel is served meanwhile");
  enum { N = 5000 };
  int a[2], b[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a) == 0);
  REQUIRE(pipe2(b, O_CLOEXEC) == 0);
  int big = 1 << 20;
  setsockopt(a[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
  static char buf[N * 6];
  size_t len = 0;
  for (int i = 0; i < N; i++) len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%d\n", i);
  counter flood = {0}, quiet = {0};
  quiet.other_lines = &flood.lines;
  static const channel_cbs flood_cbs = {c_line, NULL, NULL, c_eof, NULL, NULL, NULL};
  static const channel_cbs quiet_cbs = {q_line, NULL, NULL, c_eof, NULL, NULL, NULL};
  channel_opts fo = {0, 0, 1, 0, &flood_cbs, &flood, 0}, qo = {0, 0, 1, 0, &quiet_cbs, &quiet, 0};
  channel_t *fc = NULL, *qc = NULL;
  REQUIRE(channel_open(loop, a[0], &fo, &fc) == 0);
  REQUIRE(channel_open(loop, b[0], &qo, &qc) == 0);
  uv_prepare_t turns;
  uv_prepare_init(loop, &turns);
  turns.data = &flood;
  uv_prepare_start(&turns, turn_start);
  write_all(a[1], buf, len);  /* all of it is in the socket before the loop runs */
  close(a[1]);
  write_all(b[1], "control\n", 8);
  close(b[1]);
  CHECK(run_until(loop, &flood.eof, 20000));
  CHECK(run_until(loop, &quiet.eof, 5000));
  CHECKF(flood.lines == N, "lines %d", flood.lines);
  CHECK(!flood.bad_order);
  CHECKF(flood.max_turn_lines <= 2 * 128, "at most 2 x 128 lines a turn (read + pump), saw %d", flood.max_turn_lines);
  CHECKF(quiet.lines == 1 && quiet.flood_seen < N / 2, "the quiet line came after %d flood lines", quiet.flood_seen);
  close_now((uv_handle_t *)&turns);
  channel_close(fc);
  channel_close(qc);
}

int main(void)
{
  printf("test_channel\n");
  signal(SIGPIPE, SIG_IGN);
  uv_loop_t loop;
  uv_loop_init(&loop);
  test_backpressure(&loop);
  test_oversize_pipe(&loop);
  test_close_in_callback(&loop);
  test_pause_in_callback(&loop);
  test_drop_partial(&loop);
  test_socketpair_halfclose(&loop);
  test_write_errors(&loop);
  test_plain_file(&loop);
  test_flood_fairness(&loop);
  loop_finish(&loop);
  return check_done();
}
