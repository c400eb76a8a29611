/* relay.h: two connected sockets (Unix or TCP) pumped into each other both ways, with
 * back-pressure and half-close: the byte pump of a sandbox's network gate. */
#ifndef RMCP_RELAY_H
#define RMCP_RELAY_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

/* Bytes one direction reads per turn; while they are not all written, its source is not read. */
#define RELAY_CHUNK ((size_t)64 * 1024)

typedef struct relay relay_t;

typedef struct relay_stats {
  uint64_t a_to_b, b_to_a;  /* bytes read from one side and taken by the kernel for the other */
  int err;                  /* 0: both directions ended with an EOF passed on; else the first
                               negative uv error (a reset, a write to a side that went away) */
} relay_stats;

typedef struct relay_opts {
  const char *to_a;         /* written to a before anything read from b (may be NULL) */
  size_t to_a_len;
  const char *to_b;         /* written to b before anything read from a (may be NULL) */
  size_t to_b_len;
  /* Once: both directions ended, or one side failed; both sockets are closed as it runs. Never
   * called after relay_close. */
  void (*on_done)(relay_t *r, const relay_stats *st);
  void *data;
} relay_opts;

int relay_pipe(uv_loop_t *loop, int fd_a, int fd_b, const relay_opts *o, relay_t **out);
void relay_close(relay_t *r);
void relay_stats_get(const relay_t *r, relay_stats *st);
void *relay_data(const relay_t *r);

#endif
