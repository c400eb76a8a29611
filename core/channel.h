/* channel.h: NDJSON or raw byte streams over pipes, Unix sockets, ttys (and plain files). */
#ifndef RMCP_CHANNEL_H
#define RMCP_CHANNEL_H

#include <stddef.h>
#include <uv.h>

#define CHANNEL_HIGH_WATER ((size_t)1024 * 1024)

typedef struct channel channel_t;

/* Callbacks never run after channel_close(); on_closed is the last word, for freeing owner data. */
typedef struct channel_cbs {
  void (*on_line)(channel_t *ch, const char *line, size_t len);
  void (*on_data)(channel_t *ch, const char *chunk, size_t len);
  void (*on_oversize)(channel_t *ch, size_t nbytes);
  void (*on_eof)(channel_t *ch, int err);  /* err 0: peer closed; else a negative uv error */
  void (*on_drain)(channel_t *ch);
  void (*on_closed)(channel_t *ch);         /* memory is about to be freed; no I/O allowed */
  void (*on_flushed)(channel_t *ch);        /* the kernel took the last queued write (queued is 0) */
} channel_cbs;

typedef struct channel_opts {
  int raw;           /* 0: ndjson lines; 1: chunks as they come */
  size_t max_line;   /* ndjson: 0 means 16 MiB */
  int read, write;   /* directions in use */
  const channel_cbs *cbs;
  void *data;
  int drop_partial;  /* ndjson: a last line without its "\n" at EOF is dropped, not delivered (its
                        writer died in the middle of it) */
} channel_opts;

int channel_open(uv_loop_t *loop, int fd, const channel_opts *opts, channel_t **out);
int channel_write(channel_t *ch, const char *data, size_t len);
size_t channel_queued(const channel_t *ch);
void channel_pause(channel_t *ch);
void channel_resume(channel_t *ch);
int channel_shutdown(channel_t *ch);
void channel_close(channel_t *ch);
int channel_teardown(channel_t *ch);
int channel_is_raw(const channel_t *ch);
int channel_fileno(const channel_t *ch);
size_t channel_buffered(const channel_t *ch);
void *channel_data(const channel_t *ch);
int channel_handle_is_flushing(const uv_handle_t *handle);

#endif
