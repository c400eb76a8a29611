/* channel.c: framed streams with queued writes and back-pressure (the Lua binding, rmcp.channel, is
 * channel_lua.c). Memory is freed only from uv close callbacks, so closing a channel inside its own
 * callback is safe. */
#include "channel.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ndjson.h"

#define READ_CHUNK (64 * 1024)
/* Lines one channel hands over per callback (its read, its pump), so at most twice this per loop
 * turn. A peer that floods (an agent streaming chunks) has the rest delivered on later turns while
 * its reading waits, so every other channel (a control call on the socket) is served in between. */
#define DELIVER_PER_TURN 128

enum { CH_STREAM, CH_FILE };

struct channel {
  union {                /* first member: see channel_free_unopened */
    uv_handle_t handle;
    uv_stream_t stream;
    uv_pipe_t pipe;
    uv_tty_t tty;
  } io;
  uv_loop_t *loop;
  uv_idle_t pump;        /* delivers buffered lines after resume; reads plain files */
  uv_shutdown_t sreq;
  int kind, fd, orig_fd, is_socket;
  int raw, readable, writable, drop_partial;
  int reading, paused, eof, eof_pending, eof_err, eof_done;
  int closed, flushing, io_closed, shutting, high;
  int throttled;         /* reading stopped: more lines buffered than one turn delivers */
  int write_err;
  int handles;           /* uv handles not yet closed: free at zero */
  size_t queued;
  ndjson_t nd;
  char *rbuf;
  const channel_cbs *cbs;
  void *data;
  channel_t *next, **pprev;  /* all live channels, for the teardown walk */
};

typedef struct {
  uv_write_t req;
  channel_t *ch;
  size_t len;
  char bytes[];
} channel_wreq;

static channel_t *channel_list;

static void channel_pump_update(channel_t *ch);
static void channel_pump_cb(uv_idle_t *idle);
static void channel_alloc_cb(uv_handle_t *handle, size_t hint, uv_buf_t *buf);
static void channel_read_cb(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

/* Final close callback of each handle: frees the channel once all its handles are closed. */
static void channel_handle_closed(uv_handle_t *handle)
{
  channel_t *ch = handle->data;
  if (--ch->handles > 0) return;
  if (ch->kind == CH_FILE && ch->fd >= 0) close(ch->fd);
  if (ch->orig_fd > 2) close(ch->orig_fd);
  if (ch->next) ch->next->pprev = ch->pprev;
  *ch->pprev = ch->next;
  if (ch->cbs && ch->cbs->on_closed) ch->cbs->on_closed(ch);
  ndjson_free(&ch->nd);
  free(ch->rbuf);
  free(ch);
}

/* Close the byte stream (not the channel): used by close and by shutdown of a plain pipe. */
static void channel_close_io(channel_t *ch)
{
  if (ch->io_closed) return;
  ch->io_closed = 1;
  ch->reading = 0;
  if (ch->kind == CH_STREAM) {
    uv_close(&ch->io.handle, channel_handle_closed);
  } else if (ch->fd >= 0) {
    close(ch->fd);
    ch->fd = -1;
  }
}

/* True while user callbacks may run. */
static int channel_live(const channel_t *ch)
{
  return !ch->closed && !ch->flushing;
}

/* Whether finished items wait in the framing buffer. */
static int channel_has_items(const channel_t *ch)
{
  return ch->nd.head < ch->nd.tail;
}

/* Deliver buffered ndjson items in order (at most DELIVER_PER_TURN), then a pending EOF once
 * none is left, unless paused or closed. */
static void channel_deliver(channel_t *ch)
{
  ndjson_item it;
  int n = 0;
  while (channel_live(ch) && !ch->paused && n < DELIVER_PER_TURN && ndjson_next(&ch->nd, &it) != NDJSON_NONE) {
    n++;
    if (it.kind == NDJSON_LINE) {
      if (ch->cbs->on_line) ch->cbs->on_line(ch, it.data, it.len);
    } else if (ch->cbs->on_oversize) {
      ch->cbs->on_oversize(ch, it.len);
    }
  }
  if (channel_live(ch) && !ch->paused && ch->eof_pending && !channel_has_items(ch)) {
    ch->eof_pending = 0;
    ch->eof_done = 1;
    if (ch->cbs->on_eof) ch->cbs->on_eof(ch, ch->eof_err);
  }
}

/* The read side ended (err 0) or failed: flush the final line (unless it is to be dropped), then
 * report once. */
static void channel_input_end(channel_t *ch, int err)
{
  if (ch->eof) return;
  ch->eof = 1;
  if (ch->reading && ch->kind == CH_STREAM) uv_read_stop(&ch->io.stream);
  ch->reading = 0;
  if (!ch->raw && err == 0 && !ch->drop_partial) ndjson_eof(&ch->nd);
  if (!ch->eof_done) {
    ch->eof_pending = 1;
    ch->eof_err = err;
  }
  channel_deliver(ch);
  channel_pump_update(ch);
}

/* Bytes arrived: frame them (ndjson) or hand them over (raw). */
static void channel_input(channel_t *ch, const char *p, size_t n)
{
  if (!channel_live(ch)) return;
  if (ch->raw) {
    if (ch->cbs->on_data) ch->cbs->on_data(ch, p, n);
    return;
  }
  int r = ndjson_feed(&ch->nd, p, n);
  channel_deliver(ch);
  if (r < 0 && !ch->closed) {
    channel_input_end(ch, UV_ENOMEM);
  } else if (channel_has_items(ch) && channel_live(ch) && !ch->paused) {
    /* more than a turn's worth: stop reading until the pump has handed the rest over */
    if (ch->reading && ch->kind == CH_STREAM) {
      uv_read_stop(&ch->io.stream);
      ch->reading = 0;
      ch->throttled = 1;
    }
    channel_pump_update(ch);
  }
}

/* Start reading a stream again after a throttle, once everything buffered was delivered. */
static void channel_unthrottle(channel_t *ch)
{
  if (!ch->throttled || channel_has_items(ch) || ch->paused || !channel_live(ch)) return;
  ch->throttled = 0;
  if (ch->readable && !ch->eof && !ch->io_closed && ch->kind == CH_STREAM &&
      uv_read_start(&ch->io.stream, channel_alloc_cb, channel_read_cb) == 0)
    ch->reading = 1;
}

/* libuv allocation callback: one reusable read buffer per channel. */
static void channel_alloc_cb(uv_handle_t *handle, size_t hint, uv_buf_t *buf)
{
  channel_t *ch = handle->data;
  (void)hint;
  if (ch->rbuf == NULL) ch->rbuf = malloc(READ_CHUNK);
  *buf = uv_buf_init(ch->rbuf, ch->rbuf ? READ_CHUNK : 0);
}

/* libuv read callback. */
static void channel_read_cb(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
  channel_t *ch = stream->data;
  if (nread > 0)
    channel_input(ch, buf->base, (size_t)nread);
  else if (nread < 0)
    channel_input_end(ch, nread == UV_EOF ? 0 : (int)nread);
}

/* Whether the pump has work: buffered items, a pending EOF, or a plain file to read. */
static int channel_pump_needed(const channel_t *ch)
{
  if (!channel_live(ch) || ch->paused) return 0;
  if (ch->eof_pending || ch->nd.head < ch->nd.tail) return 1;
  return ch->kind == CH_FILE && ch->readable && !ch->eof && !ch->io_closed;
}

/* Start or stop the pump idle handle to match channel_pump_needed. */
static void channel_pump_update(channel_t *ch)
{
  if (ch->closed) return;
  if (channel_pump_needed(ch))
    uv_idle_start(&ch->pump, channel_pump_cb);
  else
    uv_idle_stop(&ch->pump);
}

/* Idle callback: deliver a turn's worth of what is buffered; read one chunk of a plain file when
 * nothing is; start a throttled stream reading again once its buffer is delivered. */
static void channel_pump_cb(uv_idle_t *idle)
{
  channel_t *ch = idle->data;
  if (ch->kind == CH_FILE && ch->readable && !ch->eof && !ch->paused && channel_live(ch) && !channel_has_items(ch)) {
    if (ch->rbuf == NULL) ch->rbuf = malloc(READ_CHUNK);
    ssize_t n = ch->rbuf ? read(ch->fd, ch->rbuf, READ_CHUNK) : -ENOMEM;
    if (n > 0)
      channel_input(ch, ch->rbuf, (size_t)n);
    else if (n == 0)
      channel_input_end(ch, 0);
    else if (errno != EINTR && errno != EAGAIN)
      channel_input_end(ch, n == -ENOMEM ? UV_ENOMEM : -errno);
  } else {
    channel_deliver(ch);
  }
  channel_unthrottle(ch);
  channel_pump_update(ch);
}

/* Close callback for a pipe handle whose uv_pipe_open failed: the channel was never live. */
static void channel_free_unopened(uv_handle_t *handle)
{
  free(handle);
}

/* Open a channel on fd (pipe, Unix socket, tty or plain file); on failure fd stays open. */
int channel_open(uv_loop_t *loop, int fd, const channel_opts *o, channel_t **out)
{
  static const channel_cbs none;
  int acc = fcntl(fd, F_GETFL);
  if (acc < 0) return -errno;
  uv_handle_type type = uv_guess_handle(fd);
  if (type != UV_NAMED_PIPE && type != UV_TTY && type != UV_FILE) return UV_EINVAL;
  acc &= O_ACCMODE;
  if ((o->read && acc == O_WRONLY) || (o->write && acc == O_RDONLY)) return UV_EBADF;
  channel_t *ch = calloc(1, sizeof(*ch));
  if (ch == NULL) return UV_ENOMEM;
  ch->loop = loop;
  ch->fd = fd;
  ch->orig_fd = -1;
  ch->raw = o->raw;
  ch->drop_partial = o->drop_partial;
  ch->readable = o->read;
  ch->writable = o->write;
  ch->cbs = o->cbs ? o->cbs : &none;
  ch->data = o->data;
  ndjson_init(&ch->nd, o->max_line);
  int r = 0;
  if (type == UV_FILE) {
    ch->kind = CH_FILE;
  } else if (type == UV_TTY) {
    r = uv_tty_init(loop, &ch->io.tty, fd, o->read);
    if (r == 0) {
      uv_os_fd_t real;
      /* libuv may reopen the tty; the fd we were given is then ours to close */
      if (uv_fileno(&ch->io.handle, &real) == 0 && real != fd) ch->orig_fd = fd;
    }
  } else {
    struct stat st;
    ch->is_socket = fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
    r = uv_pipe_init(loop, &ch->io.pipe, 0);
    if (r == 0) {
      r = uv_pipe_open(&ch->io.pipe, fd);
      if (r < 0) {
        uv_close(&ch->io.handle, channel_free_unopened);
        return r;
      }
    }
  }
  if (r < 0) {
    free(ch);
    return r;
  }
  ch->io.handle.data = ch;
  uv_idle_init(loop, &ch->pump);
  ch->pump.data = ch;
  ch->handles = ch->kind == CH_STREAM ? 2 : 1;
  ch->next = channel_list;
  ch->pprev = &channel_list;
  if (channel_list) channel_list->pprev = &ch->next;
  channel_list = ch;
  if (ch->readable) {
    if (ch->kind == CH_STREAM) {
      r = uv_read_start(&ch->io.stream, channel_alloc_cb, channel_read_cb);
      if (r < 0) {
        ch->closed = 1;
        ch->io_closed = 1;
        /* rare (access mode said readable): the fd goes with the handle */
        uv_close(&ch->io.handle, channel_handle_closed);
        uv_close((uv_handle_t *)&ch->pump, channel_handle_closed);
        return r;
      }
      ch->reading = 1;
    }
  }
  channel_pump_update(ch);
  *out = ch;
  return 0;
}

/* Remember a write failure; a write-only channel reports it as its EOF (the peer is gone). */
static void channel_write_failed(channel_t *ch, int err)
{
  if (ch->write_err == 0) ch->write_err = err;
  if (!ch->readable && !ch->eof_done && !ch->eof_pending) {
    ch->eof_pending = 1;
    ch->eof_err = err;
    channel_pump_update(ch);
  }
}

/* Flushed everything after shutdown(): half-close a socket, close a plain pipe. */
static void channel_shutdown_cb(uv_shutdown_t *req, int status)
{
  (void)req;
  (void)status;
}

/* The write queue is empty and shutdown() was asked for: close our write side now. */
static void channel_shutdown_now(channel_t *ch)
{
  if (ch->io_closed) return;
  if (ch->kind == CH_STREAM && ch->is_socket) {
    if (uv_shutdown(&ch->sreq, &ch->io.stream, channel_shutdown_cb) < 0 && !ch->readable)
      channel_close_io(ch);
  } else if (!ch->readable) {
    channel_close_io(ch);
  }
}

/* uv_write completion: account for the bytes, fire on_drain when back under the mark and
 * on_flushed when nothing is queued any more. */
static void channel_write_cb(uv_write_t *req, int status)
{
  channel_wreq *w = (channel_wreq *)req;
  channel_t *ch = w->ch;
  ch->queued -= w->len;
  free(w);
  if (status < 0 && status != UV_ECANCELED) channel_write_failed(ch, status);
  if (ch->closed) return;
  if (ch->shutting && ch->queued == 0) channel_shutdown_now(ch);
  if (ch->high && ch->queued < CHANNEL_HIGH_WATER) {
    ch->high = 0;
    if (!ch->flushing && ch->cbs->on_drain) ch->cbs->on_drain(ch);
  }
  if (ch->closed) return; /* (on_drain may close it) */
  if (ch->queued == 0 && status == 0 && !ch->flushing && ch->cbs->on_flushed) ch->cbs->on_flushed(ch);
}

/* Blocking write for plain files (they are never "not ready"). */
static int channel_write_file(channel_t *ch, const char *p, size_t n)
{
  while (n > 0) {
    ssize_t w = write(ch->fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return -errno;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Queue bytes (ndjson adds "\n"); tries a direct write first so queued() stays honest. */
int channel_write(channel_t *ch, const char *data, size_t len)
{
  if (ch->closed || ch->shutting || ch->io_closed) return UV_EPIPE;
  if (!ch->writable) return UV_EBADF;
  if (ch->write_err) return ch->write_err;
  size_t total = len + (ch->raw ? 0 : 1);
  if (ch->kind == CH_FILE) {
    int r = channel_write_file(ch, data, len);
    if (r == 0 && !ch->raw) r = channel_write_file(ch, "\n", 1);
    if (r < 0) channel_write_failed(ch, r);
    return r;
  }
  size_t off = 0;
  if (ch->queued == 0) {
    uv_buf_t bufs[2] = {uv_buf_init((char *)data, (unsigned)len), uv_buf_init("\n", 1)};
    int r = uv_try_write(&ch->io.stream, bufs, ch->raw ? 1 : 2);
    if (r >= 0) {
      off = (size_t)r;
    } else if (r != UV_EAGAIN && r != UV_ENOSYS) {
      channel_write_failed(ch, r);
      return r;
    }
    if (off == total) return 0;
  }
  size_t n = total - off;
  channel_wreq *w = malloc(sizeof(*w) + n);
  if (w == NULL) return UV_ENOMEM;
  w->ch = ch;
  w->len = n;
  if (off < len) {
    memcpy(w->bytes, data + off, len - off);
    if (!ch->raw) w->bytes[len - off] = '\n';
  } else {
    w->bytes[0] = '\n';
  }
  uv_buf_t buf = uv_buf_init(w->bytes, (unsigned)n);
  int r = uv_write(&w->req, &ch->io.stream, &buf, 1, channel_write_cb);
  if (r < 0) {
    free(w);
    channel_write_failed(ch, r);
    return r;
  }
  ch->queued += n;
  if (ch->queued >= CHANNEL_HIGH_WATER) ch->high = 1;
  return 0;
}

/* Bytes accepted by channel_write but not yet handed to the kernel. */
size_t channel_queued(const channel_t *ch)
{
  return ch->queued;
}

/* Stop reading (and stop delivering buffered lines) until channel_resume. */
void channel_pause(channel_t *ch)
{
  if (ch->closed || ch->paused) return;
  ch->paused = 1;
  if (ch->reading && ch->kind == CH_STREAM) uv_read_stop(&ch->io.stream);
  ch->reading = 0;
  channel_pump_update(ch);
}

/* Start reading again; buffered lines are delivered from the loop, not from this call. */
void channel_resume(channel_t *ch)
{
  if (ch->closed || !ch->paused) return;
  ch->paused = 0;
  if (ch->readable && !ch->eof && !ch->io_closed && ch->kind == CH_STREAM) {
    if (channel_has_items(ch))
      ch->throttled = 1; /* the pump delivers what is buffered first, then reading starts again */
    else if (uv_read_start(&ch->io.stream, channel_alloc_cb, channel_read_cb) == 0)
      ch->reading = 1;
  }
  channel_pump_update(ch);
}

/* Half-close: after queued writes are flushed, shut down a socket's write side or close a pipe. */
int channel_shutdown(channel_t *ch)
{
  if (ch->closed) return UV_EPIPE;
  if (!ch->writable) return UV_EBADF;
  if (ch->shutting) return 0;
  ch->shutting = 1;
  if (ch->kind == CH_FILE) {
    if (!ch->readable) channel_close_io(ch);
    return 0;
  }
  if (ch->queued == 0 || ch->is_socket) channel_shutdown_now(ch);
  return 0;
}

/* Stop everything now; idempotent; no callbacks after it; memory goes in close callbacks. */
void channel_close(channel_t *ch)
{
  if (ch->closed) return;
  ch->closed = 1;
  channel_close_io(ch);
  uv_close((uv_handle_t *)&ch->pump, channel_handle_closed);
}

/* Process teardown: keep flushing pending writes silently (returns 1), or close (returns 0). */
int channel_teardown(channel_t *ch)
{
  if (ch->closed) return 0;
  if (ch->queued == 0 || ch->io_closed) {
    channel_close(ch);
    return 0;
  }
  ch->flushing = 1;
  if (ch->reading) uv_read_stop(&ch->io.stream);
  ch->reading = 0;
  uv_idle_stop(&ch->pump);
  return 1;
}

/* Whether the channel frames lines or passes raw chunks. */
int channel_is_raw(const channel_t *ch)
{
  return ch->raw;
}

/* The fd under the channel (-1 once its stream is closed), to hand it to a successor image. */
int channel_fileno(const channel_t *ch)
{
  return ch->io_closed ? -1 : ch->fd;
}

/* Bytes read but not delivered yet (a partial line, or one being dropped as oversize): a channel
 * handed to a successor must have none, or they are lost. */
size_t channel_buffered(const channel_t *ch)
{
  return (ch->nd.len - ch->nd.head) + (ch->nd.discarding || ch->nd.has_partial ? 1 : 0);
}

/* The owner pointer given at open. */
void *channel_data(const channel_t *ch)
{
  return ch->data;
}

/* Teardown walk: a handle that belongs to a channel still flushing its writes is spared. */
int channel_handle_is_flushing(const uv_handle_t *handle)
{
  for (channel_t *ch = channel_list; ch; ch = ch->next)
    if (ch->flushing && !ch->closed && (handle == &ch->io.handle || handle == (uv_handle_t *)&ch->pump))
      return 1;
  return 0;
}
