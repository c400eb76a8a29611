/* test_relay.c: rmcp.relay through its C API over real socketpairs and TCP loopback connections:
 * the prefixes first, bytes both ways, half-close passed on, a large transfer each way with a
 * reader that stops (the writer is stopped, the other direction flows on), a TCP side, a reset, a
 * side that goes away, close while running, closing inside on_done, and fds that are not stream
 * sockets. The relay works on duplicates: each test closes its own fds as a caller does. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "relay.h"
#include "testloop.h"

/* One end a test holds: what it read so far, and whether it stops reading or reads slowly. */
typedef struct {
  int fd;
  char *buf;
  size_t len, cap;
  int eof, err;
  int paused;        /* do not read */
  size_t max_read;   /* 0: all there is; else at most this much per step (a slow reader) */
} peer;

/* Bytes one end writes as the kernel takes them, then (optionally) its write half shut down. */
typedef struct {
  int fd;
  const char *data;
  size_t len, off;
  int shut_after, shut;
} feeder;

/* The ends a test drives, stepped with the loop. */
typedef struct {
  peer *p[2];
  feeder *f[2];
} world;

typedef struct {
  int called, close_inside;
  relay_stats st;
} done_rec;

/* on_done: record it (and close the relay again when asked: a no-op). */
static void rec_done(relay_t *r, const relay_stats *st)
{
  done_rec *d = relay_data(r);
  d->called++;
  d->st = *st;
  if (d->close_inside) relay_close(r);
}

/* Read what fd has now, within the peer's budget. */
static void peer_read(peer *p)
{
  if (p->paused || p->eof || p->err || p->fd < 0) return;
  size_t budget = p->max_read ? p->max_read : SIZE_MAX;
  while (budget > 0) {
    if (p->cap - p->len < 65536) {
      p->cap = p->cap ? p->cap * 2 : 1 << 20;
      p->buf = realloc(p->buf, p->cap);
      REQUIRE(p->buf);
    }
    size_t want = p->cap - p->len < budget ? p->cap - p->len : budget;
    ssize_t n = read(p->fd, p->buf + p->len, want);
    if (n > 0) {
      p->len += (size_t)n;
      budget -= (size_t)n;
    } else if (n == 0) {
      p->eof = 1;
      return;
    } else {
      if (errno == EINTR) continue;
      if (errno != EAGAIN) p->err = errno;
      return;
    }
  }
}

/* Write what the kernel takes now; shut the write half once all is written, when asked. */
static void feed(feeder *f)
{
  while (f->off < f->len) {
    size_t n = f->len - f->off < 65536 ? f->len - f->off : 65536;
    ssize_t w = write(f->fd, f->data + f->off, n);
    if (w <= 0) break;
    f->off += (size_t)w;
  }
  if (f->off == f->len && f->shut_after && !f->shut) {
    CHECK(shutdown(f->fd, SHUT_WR) == 0);
    f->shut = 1;
  }
}

/* One step: a loop turn without blocking, then every end writes and reads what it can. */
static void world_step(uv_loop_t *loop, world *w)
{
  uv_run(loop, UV_RUN_NOWAIT);
  for (int i = 0; i < 2; i++) {
    if (w->f[i]) feed(w->f[i]);
    if (w->p[i]) peer_read(w->p[i]);
  }
  usleep(200);
}

/* Step the world until cond holds (20 s at most); ok gets cond. */
#define STEP_UNTIL(loop, w, cond, ok)                                       \
  do {                                                                      \
    uint64_t end_ = uv_hrtime() + 20000000000ull;                           \
    while (!(cond) && uv_hrtime() < end_) world_step(loop, w);              \
    ok = (cond);                                                            \
  } while (0)

/* A connected pair of non-blocking Unix stream sockets. */
static void unix_pair(int sv[2])
{
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) == 0);
}

/* A connected pair of non-blocking TCP sockets over 127.0.0.1: sv[0] connected, sv[1] accepted. */
static void tcp_pair(int sv[2])
{
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(l >= 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof(sa);
  REQUIRE(bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(l, 1) == 0);
  REQUIRE(getsockname(l, (struct sockaddr *)&sa, &len) == 0);
  sv[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(sv[0] >= 0 && connect(sv[0], (struct sockaddr *)&sa, sizeof(sa)) == 0);
  sv[1] = accept4(l, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
  REQUIRE(sv[1] >= 0);
  REQUIRE(fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK) == 0);
  close(l);
}

/* Start a relay between a and b (then closed here: the relay has its own), recording into d. */
static relay_t *start(uv_loop_t *loop, int a, int b, const char *to_a, const char *to_b, done_rec *d)
{
  relay_opts o = {to_a, to_a ? strlen(to_a) : 0, to_b, to_b ? strlen(to_b) : 0, rec_done, d};
  relay_t *r = NULL;
  int e = relay_pipe(loop, a, b, &o, &r);
  CHECKF(e == 0, "relay_pipe: %s", uv_strerror(e));
  REQUIRE(r);
  close(a);
  close(b);
  return r;
}

/* Whether the peer read exactly s. */
static int got(const peer *p, const char *s)
{
  return p->len == strlen(s) && memcmp(p->buf, s, p->len) == 0;
}

/* Free what the peers read and close their fds. */
static void world_free(world *w)
{
  for (int i = 0; i < 2; i++) {
    if (!w->p[i]) continue;
    free(w->p[i]->buf);
    if (w->p[i]->fd >= 0) close(w->p[i]->fd);
  }
}

/* The classic exchange over sides made by pair_a and pair_b: prefixes, both ways, half-close. */
static void exchange(uv_loop_t *loop, void (*pair_a)(int[2]), void (*pair_b)(int[2]))
{
  int A[2], B[2];
  pair_a(A);
  pair_b(B);
  done_rec d = {0};
  start(loop, A[1], B[0], "OK\n", "HEAD\n", &d);
  peer pa = {.fd = A[0]}, pb = {.fd = B[1]};
  world w = {{&pa, &pb}, {NULL, NULL}};
  int ok;
  CHECK(write(A[0], "hello", 5) == 5);
  STEP_UNTIL(loop, &w, pb.len >= 10, ok);
  CHECKF(ok && got(&pb, "HEAD\nhello"), "b read %.*s", (int)pb.len, pb.buf);
  CHECK(write(B[1], "world", 5) == 5);
  STEP_UNTIL(loop, &w, pa.len >= 8, ok);
  CHECKF(ok && got(&pa, "OK\nworld"), "a read %.*s", (int)pa.len, pa.buf);

  CHECK(shutdown(A[0], SHUT_WR) == 0);
  STEP_UNTIL(loop, &w, pb.eof, ok);
  CHECKF(ok, "b saw the EOF a sent");
  CHECK(!pa.eof && d.called == 0);
  CHECK(write(B[1], " late", 5) == 5);
  STEP_UNTIL(loop, &w, pa.len >= 13, ok);
  CHECKF(ok && got(&pa, "OK\nworld late"), "a still reads after its half-close: %.*s", (int)pa.len, pa.buf);
  CHECK(shutdown(B[1], SHUT_WR) == 0);
  STEP_UNTIL(loop, &w, pa.eof && d.called, ok);
  CHECK(ok && d.called == 1);
  CHECKF(d.st.err == 0 && d.st.a_to_b == 5 && d.st.b_to_a == 10, "err %d, a->b %llu, b->a %llu", d.st.err,
         (unsigned long long)d.st.a_to_b, (unsigned long long)d.st.b_to_a);
  world_free(&w);
}

static void test_exchange(uv_loop_t *loop)
{
  TEST("unix <-> unix: the prefixes go first, bytes both ways, each half-close passed on, then on_done");
  exchange(loop, unix_pair, unix_pair);
  TEST("tcp <-> unix: the same over a TCP side");
  exchange(loop, tcp_pair, unix_pair);
  TEST("tcp <-> tcp: the same");
  exchange(loop, tcp_pair, tcp_pair);
}

/* A pattern of n bytes that a shifted or lost chunk cannot match. */
static char *pattern(size_t n, unsigned seed)
{
  char *p = malloc(n);
  REQUIRE(p);
  uint32_t x = seed;
  for (size_t i = 0; i < n; i++) {
    x = x * 1103515245u + 12345u;
    p[i] = (char)(x >> 16);
  }
  return p;
}

static void test_backpressure(uv_loop_t *loop, void (*pair_b)(int[2]), const char *name)
{
  TEST(name);
  size_t N = 8u << 20;
  char *ab = pattern(N, 1), *ba = pattern(N, 2);
  int A[2], B[2];
  unix_pair(A);
  pair_b(B);
  done_rec d = {0};
  relay_t *r = start(loop, A[1], B[0], NULL, NULL, &d);
  peer pa = {.fd = A[0]}, pb = {.fd = B[1], .paused = 1};
  feeder fa = {.fd = A[0], .data = ab, .len = N, .shut_after = 1};
  feeder fb = {.fd = B[1], .data = ba, .len = N, .shut_after = 1};
  world w = {{&pa, &pb}, {&fa, &fb}};
  int ok;
  STEP_UNTIL(loop, &w, pa.len == N, ok);
  CHECKF(ok, "b -> a flowed on while b did not read: %zu of %zu", pa.len, N);
  for (int i = 0; i < 200; i++) world_step(loop, &w);
  size_t stalled = fa.off;
  relay_stats st;
  relay_stats_get(r, &st);
  for (int i = 0; i < 200; i++) world_step(loop, &w);
  CHECKF(fa.off == stalled && fa.off < N, "a's writes stopped while b did not read (%zu, then %zu of %zu)", stalled,
         fa.off, N);
  CHECKF(st.a_to_b <= stalled && stalled - st.a_to_b <= 4u << 20,
         "what a wrote and the relay did not pass on sits in kernel buffers (%zu written, %llu relayed)", stalled,
         (unsigned long long)st.a_to_b);
  pb.paused = 0;
  pb.max_read = 16 * 1024;
  STEP_UNTIL(loop, &w, pb.eof && pa.eof && d.called, ok);
  CHECKF(ok, "both ends saw EOF (a %d, b %d), on_done %d", pa.eof, pb.eof, d.called);
  CHECKF(pb.len == N && memcmp(pb.buf, ab, N) == 0, "b read a's bytes in order (%zu of %zu)", pb.len, N);
  CHECK(memcmp(pa.buf, ba, N) == 0);
  CHECK(d.st.err == 0 && d.st.a_to_b == N && d.st.b_to_a == N);
  world_free(&w);
  free(ab);
  free(ba);
}

static void test_close_running(uv_loop_t *loop)
{
  TEST("relay_close while bytes flow: no on_done; the given fds stay the caller's; peers see EOF once closed");
  int A[2], B[2];
  unix_pair(A);
  unix_pair(B);
  done_rec d = {0};
  relay_opts o = {NULL, 0, NULL, 0, rec_done, &d};
  relay_t *r = NULL;
  REQUIRE(relay_pipe(loop, A[1], B[0], &o, &r) == 0);
  peer pa = {.fd = A[0]}, pb = {.fd = B[1]};
  world w = {{&pa, &pb}, {NULL, NULL}};
  int ok;
  CHECK(write(A[0], "x", 1) == 1);
  STEP_UNTIL(loop, &w, pb.len == 1, ok);
  CHECK(ok);
  relay_close(r);
  relay_close(r);
  for (int i = 0; i < 20; i++) world_step(loop, &w);
  CHECK(d.called == 0);
  CHECKF(!pa.eof && !pb.eof, "our own fds still hold the sockets open");
  CHECK(fcntl(A[1], F_GETFD) >= 0 && fcntl(B[0], F_GETFD) >= 0);
  close(A[1]);
  close(B[0]);
  STEP_UNTIL(loop, &w, pa.eof && pb.eof, ok);
  CHECK(ok && d.called == 0);
  world_free(&w);
}

static void test_reset(uv_loop_t *loop)
{
  TEST("a TCP side reset: on_done with the error, the other side sees EOF");
  int A[2], B[2];
  unix_pair(A);
  tcp_pair(B);
  done_rec d = {0};
  start(loop, A[1], B[0], NULL, NULL, &d);
  struct linger lg = {1, 0};
  REQUIRE(setsockopt(B[1], SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) == 0);
  close(B[1]);
  CHECK(run_until(loop, &d.called, 10000));
  CHECKF(d.st.err == UV_ECONNRESET, "err %s", d.st.err ? uv_err_name(d.st.err) : "0");
  char c;
  CHECKF(read(A[0], &c, 1) == 0, "a sees EOF at once: the relay closed its side as on_done ran");
  uv_run(loop, UV_RUN_NOWAIT);
  CHECK(d.called == 1);
  close(A[0]);
}

static void test_side_gone(uv_loop_t *loop)
{
  TEST("a side that closes outright: what it sent still arrives, writes to it end that way, then on_done");
  int A[2], B[2];
  unix_pair(A);
  unix_pair(B);
  done_rec d = {0};
  d.close_inside = 1;
  start(loop, A[1], B[0], NULL, NULL, &d);
  CHECK(write(B[1], "bye", 3) == 3);
  close(B[1]);
  peer pa = {.fd = A[0]};
  world w = {{&pa, NULL}, {NULL, NULL}};
  int ok;
  STEP_UNTIL(loop, &w, pa.eof, ok);
  CHECKF(ok && got(&pa, "bye"), "a read %.*s", (int)pa.len, pa.buf);
  CHECK(d.called == 0);
  CHECK(write(A[0], "more", 4) == 4);
  STEP_UNTIL(loop, &w, d.called, ok);
  CHECK(ok && d.called == 1);
  CHECKF(d.st.err == UV_EPIPE && d.st.b_to_a == 3, "err %s", d.st.err ? uv_err_name(d.st.err) : "0");
  world_free(&w);
}

static void test_not_a_stream_socket(uv_loop_t *loop)
{
  TEST("a pipe, a datagram socket or a closed fd is refused; the fds are left as they were");
  int p[2], A[2], u;
  REQUIRE(pipe2(p, O_CLOEXEC) == 0);
  unix_pair(A);
  u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(u >= 0);
  relay_opts o = {0};
  relay_t *r = NULL;
  CHECK(relay_pipe(loop, p[0], A[1], &o, &r) == UV_EINVAL);
  CHECK(relay_pipe(loop, A[1], u, &o, &r) == UV_EINVAL);
  CHECK(relay_pipe(loop, A[1], 999, &o, &r) == UV_EBADF);
  CHECK(r == NULL);
  CHECK(fcntl(p[0], F_GETFD) >= 0 && fcntl(A[1], F_GETFD) >= 0 && fcntl(u, F_GETFD) >= 0);
  close(p[0]);
  close(p[1]);
  close(A[0]);
  close(A[1]);
  close(u);
  uv_run(loop, UV_RUN_NOWAIT);
}

int main(void)
{
  printf("test_relay\n");
  signal(SIGPIPE, SIG_IGN);
  uv_loop_t loop;
  uv_loop_init(&loop);
  test_exchange(&loop);
  test_backpressure(&loop, unix_pair, "8 MiB each way, unix <-> unix: a side that stops reading stops the other "
                                      "side's writes, the other direction flows on; then a slow reader gets it all");
  test_backpressure(&loop, tcp_pair, "the same with a TCP side");
  test_close_running(&loop);
  test_reset(&loop);
  test_side_gone(&loop);
  test_not_a_stream_socket(&loop);
  loop_finish(&loop);
  return check_done();
}
