/* relay.c: rmcp.relay, the byte pump between two connected sockets (Unix or TCP). Each direction
 * reads one chunk, writes it, and reads again only once the kernel took all of it, so a side that
 * does not read stops the other side being read; an EOF is passed on as a shutdown of the other
 * side's write half (half-close). It works on duplicates of the fds it is given: the caller keeps
 * its own and closes them (a luv handle that read a handshake first, say). Memory is freed in the
 * close callbacks, so closing a relay inside its own callback is safe. The Lua binding is at the
 * end of this file. */
#define _GNU_SOURCE
#include "relay.h"

#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lua_host.h"
#include "modules.h"

typedef union {
  uv_handle_t handle;
  uv_stream_t stream;
  uv_pipe_t pipe;
  uv_tcp_t tcp;
} relay_io;

typedef struct relay_dir {
  relay_t *r;
  relay_io *from, *to;
  uv_write_t wreq;
  uv_shutdown_t sreq;
  char *buf;           /* RELAY_CHUNK bytes, allocated on the first read */
  char *prefix;        /* our copy of to_a / to_b until it is written */
  size_t prefix_len;
  size_t inflight;     /* payload bytes of the pending write (0 while it is the prefix) */
  int reading, writing, eof, ended;
  uint64_t bytes;
} relay_dir;

struct relay {
  relay_io io[2];      /* a, b */
  relay_dir dir[2];    /* a -> b, b -> a: dir[i] reads io[i] and writes io[1 - i] */
  int closed, finished, handles, err;
  void (*on_done)(relay_t *r, const relay_stats *st);
  void *data;
};

static void relay_alloc_cb(uv_handle_t *handle, size_t hint, uv_buf_t *buf);
static void relay_read_cb(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);
static void relay_write_cb(uv_write_t *req, int status);

/* The direction that reads the socket handle belongs to. */
static relay_dir *relay_dir_of(uv_handle_t *handle)
{
  relay_t *r = handle->data;
  return &r->dir[handle == &r->io[0].handle ? 0 : 1];
}

/* Close callback of each socket: frees the relay once both are closed. */
static void relay_closed(uv_handle_t *handle)
{
  relay_t *r = handle->data;
  if (--r->handles > 0) return;
  for (int i = 0; i < 2; i++) {
    free(r->dir[i].buf);
    free(r->dir[i].prefix);
  }
  free(r);
}

/* Close both sockets now (idempotent); their pending writes are cancelled, no callback follows. */
static void relay_close_io(relay_t *r)
{
  if (r->closed) return;
  r->closed = 1;
  for (int i = 0; i < 2; i++) uv_close(&r->io[i].handle, relay_closed);
}

/* Both directions ended or a side failed: close both sockets, then report once. */
static void relay_finish(relay_t *r)
{
  if (r->finished || r->closed) return;
  r->finished = 1;
  relay_stats st;
  relay_stats_get(r, &st);
  relay_close_io(r);
  if (r->on_done) r->on_done(r, &st);
}

/* Remember the first error of the relay. */
static void relay_error(relay_t *r, int err)
{
  if (r->err == 0) r->err = err;
}

/* One direction is over (its EOF passed on, or its writes failed): the relay finishes with the
 * other one. */
static void relay_dir_end(relay_dir *d)
{
  if (d->ended) return;
  d->ended = 1;
  if (d->reading) uv_read_stop(&d->from->stream);
  d->reading = 0;
  if (d->r->dir[0].ended && d->r->dir[1].ended) relay_finish(d->r);
}

/* A write to the other side failed (it went away): nothing more can go that way; the other
 * direction still delivers what that side sent before it went. */
static void relay_write_failed(relay_dir *d, int err)
{
  relay_error(d->r, err);
  relay_dir_end(d);
}

/* Shutdown completion: the other side has our EOF. */
static void relay_shutdown_cb(uv_shutdown_t *req, int status)
{
  relay_dir *d = req->data;
  if (d->r->closed) return;
  if (status < 0) relay_error(d->r, status);
  relay_dir_end(d);
}

/* The source ended and all it sent is written: half-close the other side's write half. */
static void relay_pass_eof(relay_dir *d)
{
  d->sreq.data = d;
  int r = uv_shutdown(&d->sreq, &d->to->stream, relay_shutdown_cb);
  if (r < 0) relay_write_failed(d, r);
}

/* Start reading the source (after a write was taken, or at start); returns 0 or a uv error. */
static int relay_read(relay_dir *d)
{
  if (d->reading || d->eof || d->ended || d->r->closed) return 0;
  int r = uv_read_start(&d->from->stream, relay_alloc_cb, relay_read_cb);
  if (r == 0) d->reading = 1;
  return r;
}

/* Everything handed to the other side was taken: pass an EOF on, or read the next chunk. */
static void relay_sent(relay_dir *d)
{
  if (d->prefix) {
    free(d->prefix);
    d->prefix = NULL;
  }
  if (d->eof) {
    relay_pass_eof(d);
    return;
  }
  int r = relay_read(d);
  if (r < 0) {
    relay_error(d->r, r);
    relay_finish(d->r);
  }
}

/* Queue p[0..n) for the other side with the source not read until it is written: the
 * back-pressure. payload counts toward the stats (0 for the prefix). Returns 0 or a uv error. */
static int relay_queue(relay_dir *d, char *p, size_t n, size_t payload)
{
  uv_buf_t b = uv_buf_init(p, (unsigned)n);
  d->wreq.data = d;
  d->inflight = payload;
  int r = uv_write(&d->wreq, &d->to->stream, &b, 1, relay_write_cb);
  if (r < 0) return r;
  d->writing = 1;
  if (d->reading) uv_read_stop(&d->from->stream);
  d->reading = 0;
  return 0;
}

/* Hand a chunk read from the source to the other side: at once when the kernel takes it all,
 * else the rest is queued. */
static void relay_send(relay_dir *d, char *p, size_t n)
{
  uv_buf_t b = uv_buf_init(p, (unsigned)n);
  int w = uv_try_write(&d->to->stream, &b, 1);
  if (w == UV_EAGAIN || w == UV_ENOSYS) w = 0;
  if (w < 0) {
    relay_write_failed(d, w);
    return;
  }
  if ((size_t)w == n) {
    d->bytes += n;
    return;
  }
  d->bytes += (size_t)w;
  int r = relay_queue(d, p + w, n - (size_t)w, n - (size_t)w);
  if (r < 0) relay_write_failed(d, r);
}

/* Write completion: account for it and go on reading (or pass the EOF on). */
static void relay_write_cb(uv_write_t *req, int status)
{
  relay_dir *d = req->data;
  d->writing = 0;
  if (d->r->closed) return;
  if (status < 0) {
    relay_write_failed(d, status);
    return;
  }
  d->bytes += d->inflight;
  d->inflight = 0;
  relay_sent(d);
}

/* libuv allocation callback: one reusable chunk per direction (reading waits while it is in a
 * write). */
static void relay_alloc_cb(uv_handle_t *handle, size_t hint, uv_buf_t *buf)
{
  relay_dir *d = relay_dir_of(handle);
  (void)hint;
  if (d->buf == NULL) d->buf = malloc(RELAY_CHUNK);
  *buf = uv_buf_init(d->buf, d->buf ? (unsigned)RELAY_CHUNK : 0);
}

/* libuv read callback: a chunk goes to the other side; EOF is passed on; an error (a reset, no
 * memory) ends the relay. */
static void relay_read_cb(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
  relay_dir *d = relay_dir_of((uv_handle_t *)stream);
  if (d->r->closed || nread == 0) return;
  if (nread > 0) {
    relay_send(d, buf->base, (size_t)nread);
    return;
  }
  uv_read_stop(stream);
  d->reading = 0;
  if (nread == UV_EOF) {
    d->eof = 1;
    relay_pass_eof(d);
    return;
  }
  relay_error(d->r, (int)nread);
  relay_finish(d->r);
}

/* What kind of handle fd needs: UV_TCP or UV_NAMED_PIPE for a connected stream socket, else a
 * negative uv error (EBADF, or EINVAL for anything that is not a stream socket). */
static int relay_kind(int fd)
{
  struct stat st;
  if (fstat(fd, &st) < 0) return -errno;
  if (!S_ISSOCK(st.st_mode)) return UV_EINVAL;
  int type;
  socklen_t len = sizeof(type);
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0) return -errno;
  if (type != SOCK_STREAM) return UV_EINVAL;
  uv_handle_type t = uv_guess_handle(fd);
  return t == UV_TCP || t == UV_NAMED_PIPE ? (int)t : UV_EINVAL;
}

/* Open side i of r on a duplicate of fd (kind from relay_kind); the handle counts toward
 * r->handles once initialised. Returns 0 or a uv error (the duplicate is then closed). */
static int relay_open_side(uv_loop_t *loop, relay_t *r, int i, int fd, int kind)
{
  int dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (dup < 0) return -errno;
  relay_io *io = &r->io[i];
  int e = kind == UV_TCP ? uv_tcp_init(loop, &io->tcp) : uv_pipe_init(loop, &io->pipe, 0);
  if (e < 0) {
    close(dup);
    return e;
  }
  io->handle.data = r;
  r->handles++;
  e = kind == UV_TCP ? uv_tcp_open(&io->tcp, dup) : uv_pipe_open(&io->pipe, dup);
  if (e < 0) {
    close(dup);
    return e;
  }
  if (kind == UV_TCP) uv_tcp_nodelay(&io->tcp, 1); /* chunks are relayed as they come: no Nagle wait */
  return 0;
}

/* Keep a copy of a prefix for direction d. */
static int relay_set_prefix(relay_dir *d, const char *p, size_t n)
{
  if (p == NULL || n == 0) return 0;
  d->prefix = malloc(n);
  if (d->prefix == NULL) return UV_ENOMEM;
  memcpy(d->prefix, p, n);
  d->prefix_len = n;
  return 0;
}

/* Start both directions: the prefix first where there is one, else reading. No callback runs
 * before this returns. */
static int relay_start(relay_t *r)
{
  for (int i = 0; i < 2; i++) {
    relay_dir *d = &r->dir[i];
    int e = d->prefix ? relay_queue(d, d->prefix, d->prefix_len, 0) : relay_read(d);
    if (e < 0) return e;
  }
  return 0;
}

/* Pump fd_a and fd_b (connected stream sockets, Unix or TCP) into each other until both
 * directions ended. Works on duplicates: fd_a and fd_b stay the caller's either way. Returns 0
 * (*out set) or a negative uv error. */
int relay_pipe(uv_loop_t *loop, int fd_a, int fd_b, const relay_opts *o, relay_t **out)
{
  int kind[2] = {relay_kind(fd_a), relay_kind(fd_b)};
  if (kind[0] < 0) return kind[0];
  if (kind[1] < 0) return kind[1];
  relay_t *r = calloc(1, sizeof(*r));
  if (r == NULL) return UV_ENOMEM;
  r->on_done = o->on_done;
  r->data = o->data;
  for (int i = 0; i < 2; i++) {
    r->dir[i].r = r;
    r->dir[i].from = &r->io[i];
    r->dir[i].to = &r->io[1 - i];
  }
  int e = relay_set_prefix(&r->dir[0], o->to_b, o->to_b_len);
  if (e == 0) e = relay_set_prefix(&r->dir[1], o->to_a, o->to_a_len);
  if (e == 0) e = relay_open_side(loop, r, 0, fd_a, kind[0]);
  if (e == 0) e = relay_open_side(loop, r, 1, fd_b, kind[1]);
  if (e == 0) e = relay_start(r);
  if (e < 0) {
    r->closed = 1;
    for (int i = 0; i < r->handles; i++) uv_close(&r->io[i].handle, relay_closed);
    if (r->handles == 0) {
      free(r->dir[0].prefix);
      free(r->dir[1].prefix);
      free(r);
    }
    return e;
  }
  *out = r;
  return 0;
}

/* Stop now: both sockets closed (their peers see EOF or a reset), pending bytes dropped, no
 * callback after it; idempotent. */
void relay_close(relay_t *r)
{
  relay_close_io(r);
}

/* Bytes relayed so far each way, and the first error. */
void relay_stats_get(const relay_t *r, relay_stats *st)
{
  st->a_to_b = r->dir[0].bytes;
  st->b_to_a = r->dir[1].bytes;
  st->err = r->err;
}

/* The owner pointer given at relay_pipe. */
void *relay_data(const relay_t *r)
{
  return r->data;
}

/* ---- Lua binding: rmcp.relay ---- */

#define LRELAY_MT "rmcp.relay"

typedef struct {
  relay_t *r;          /* NULL once done or closed */
  lua_State *L;        /* main thread */
  int self, on_done;
  relay_stats last;    /* the stats when it ended */
} lrelay_t;

/* Drop the callback and the keep-alive. */
static void lrelay_drop(lua_State *L, lrelay_t *u)
{
  lua_host_unref(L, &u->on_done);
  lua_host_release(L, &u->self);
}

/* The relay ended: on_done(a_to_b, b_to_a, err | nil), then let go of everything. */
static void lrelay_on_done(relay_t *r, const relay_stats *st)
{
  lrelay_t *u = relay_data(r);
  lua_State *L = u->L;
  u->r = NULL;
  u->last = *st;
  int ref = u->on_done;
  u->on_done = LUA_NOREF;
  lua_pushinteger(L, (lua_Integer)st->a_to_b);
  lua_pushinteger(L, (lua_Integer)st->b_to_a);
  if (st->err)
    lua_pushfstring(L, "%s: %s", uv_err_name(st->err), uv_strerror(st->err));
  else
    lua_pushnil(L);
  lua_host_call_ref(L, ref, 3);
  luaL_unref(L, LUA_REGISTRYINDEX, ref);
  lrelay_drop(L, u);
}

/* Read opts[field] as an optional string. */
static const char *lrelay_optstr(lua_State *L, int idx, const char *field, size_t *len)
{
  int t = lua_getfield(L, idx, field);
  const char *s = NULL;
  *len = 0;
  if (t == LUA_TSTRING)
    s = lua_tolstring(L, -1, len);
  else if (t != LUA_TNIL)
    luaL_error(L, "option '%s' must be a string", field);
  lua_pop(L, 1);  /* the string stays alive in the opts table */
  return s;
}

/* relay.pipe(fd_a, fd_b[, {to_a, to_b, on_done}]) -> relay | nil, err, code */
static int lrelay_pipe(lua_State *L)
{
  int fd_a = (int)luaL_checkinteger(L, 1);
  int fd_b = (int)luaL_checkinteger(L, 2);
  if (lua_isnoneornil(L, 3)) {
    lua_settop(L, 2);
    lua_newtable(L);
  }
  luaL_checktype(L, 3, LUA_TTABLE);
  lua_host_t *h = lua_host_get(L);
  if (h == NULL) return luaL_error(L, "rmcp.relay needs the reasonix-mcp host");
  relay_opts o = {0};
  o.to_a = lrelay_optstr(L, 3, "to_a", &o.to_a_len);
  o.to_b = lrelay_optstr(L, 3, "to_b", &o.to_b_len);
  lrelay_t *u = lua_newuserdatauv(L, sizeof(*u), 0);
  memset(u, 0, sizeof(*u));
  u->L = h->L;
  u->self = LUA_NOREF;
  u->on_done = lua_host_checkref(L, 3, "on_done");
  luaL_setmetatable(L, LRELAY_MT);
  o.on_done = lrelay_on_done;
  o.data = u;
  int r = relay_pipe(h->loop, fd_a, fd_b, &o, &u->r);
  if (r < 0) {
    u->r = NULL;
    lua_host_unref(L, &u->on_done);
    return lua_host_fail(L, r, "relay");
  }
  u->self = lua_host_retain(L, -1);
  return 1;
}

/* r:close(): both sockets closed now, no callback after it; idempotent. */
static int lrelay_close(lua_State *L)
{
  lrelay_t *u = luaL_checkudata(L, 1, LRELAY_MT);
  if (u->r == NULL) return 0;
  relay_stats_get(u->r, &u->last);
  relay_close(u->r);
  u->r = NULL;
  lrelay_drop(L, u);
  return 0;
}

/* r:is_closed() -> true once it ended or was closed */
static int lrelay_is_closed(lua_State *L)
{
  lrelay_t *u = luaL_checkudata(L, 1, LRELAY_MT);
  lua_pushboolean(L, u->r == NULL);
  return 1;
}

/* r:stats() -> a_to_b, b_to_a (bytes relayed so far, or in all once it ended) */
static int lrelay_stats(lua_State *L)
{
  lrelay_t *u = luaL_checkudata(L, 1, LRELAY_MT);
  relay_stats st = u->last;
  if (u->r) relay_stats_get(u->r, &st);
  lua_pushinteger(L, (lua_Integer)st.a_to_b);
  lua_pushinteger(L, (lua_Integer)st.b_to_a);
  return 2;
}

/* Module loader: require "rmcp.relay". */
int luaopen_rmcp_relay(lua_State *L)
{
  static const luaL_Reg meta[] = {
    {"__gc", lrelay_close}, {"__close", lrelay_close}, {LUA_HOST_TEARDOWN, lrelay_close},
    {LUA_HOST_CLOSE, lrelay_close}, {NULL, NULL},
  };
  static const luaL_Reg methods[] = {
    {"close", lrelay_close}, {"is_closed", lrelay_is_closed}, {"stats", lrelay_stats}, {NULL, NULL},
  };
  static const luaL_Reg funcs[] = {{"pipe", lrelay_pipe}, {NULL, NULL}};
  if (luaL_newmetatable(L, LRELAY_MT)) {
    luaL_setfuncs(L, meta, 0);
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  luaL_newlib(L, funcs);
  lua_pushinteger(L, (lua_Integer)RELAY_CHUNK);
  lua_setfield(L, -2, "CHUNK");
  return 1;
}
