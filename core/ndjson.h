/* ndjson.h: newline-delimited framing over a growable buffer; no I/O, so it is unit-testable. */
#ifndef RMCP_NDJSON_H
#define RMCP_NDJSON_H

#include <stddef.h>
#include <stdint.h>

#define NDJSON_DEFAULT_MAX_LINE ((size_t)16 * 1024 * 1024)

enum ndjson_kind {
  NDJSON_NONE = 0,      /* nothing complete yet */
  NDJSON_LINE = 1,      /* data/len: one line without "\n" and without a trailing "\r" */
  NDJSON_OVERSIZE = 2,  /* len: total bytes of a dropped line (without its "\n") */
};

typedef struct {
  enum ndjson_kind kind;
  const char *data;  /* valid until the next ndjson_feed/ndjson_eof/ndjson_free */
  size_t len;
} ndjson_item;

/* Buffer layout: [head, tail) finished items (header + payload), then the partial line
 * (header slot at tail, bytes up to len) while has_partial. */
typedef struct {
  char *buf;
  size_t cap, head, tail, len;
  size_t max_line;
  uint64_t discarded;  /* bytes of the oversize line being dropped */
  int has_partial;
  int discarding;
} ndjson_t;

void ndjson_init(ndjson_t *nd, size_t max_line);
int ndjson_feed(ndjson_t *nd, const char *data, size_t n);
void ndjson_eof(ndjson_t *nd);
enum ndjson_kind ndjson_next(ndjson_t *nd, ndjson_item *out);
size_t ndjson_memory(const ndjson_t *nd);
void ndjson_free(ndjson_t *nd);

#endif
