/* ndjson.c: line framing that survives any split, CRLF, blank lines, NULs and oversize lines. */
#include "ndjson.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Item header: one kind byte and a 64-bit length, copied with memcpy (no alignment needed). */
#define HDR (1 + sizeof(uint64_t))

/* Prepare an empty framer; max_line 0 means the default (16 MiB). */
void ndjson_init(ndjson_t *nd, size_t max_line)
{
  memset(nd, 0, sizeof(*nd));
  nd->max_line = max_line ? max_line : NDJSON_DEFAULT_MAX_LINE;
}

/* Write an item header at off. */
static void ndjson_put_hdr(ndjson_t *nd, size_t off, enum ndjson_kind kind, uint64_t len)
{
  nd->buf[off] = (char)kind;
  memcpy(nd->buf + off + 1, &len, sizeof(len));
}

/* Make room for extra more bytes after len, compacting consumed items first. */
static int ndjson_reserve(ndjson_t *nd, size_t extra)
{
  if (nd->head > 0 && (nd->head == nd->tail || nd->len + extra > nd->cap)) {
    memmove(nd->buf, nd->buf + nd->head, nd->len - nd->head);
    nd->tail -= nd->head;
    nd->len -= nd->head;
    nd->head = 0;
  }
  if (nd->len + extra <= nd->cap) return 0;
  size_t cap = nd->cap ? nd->cap : 4096;
  while (cap < nd->len + extra) cap *= 2;
  char *p = realloc(nd->buf, cap);
  if (p == NULL) return -ENOMEM;
  nd->buf = p;
  nd->cap = cap;
  return 0;
}

/* True for a line made only of spaces, tabs and carriage returns (or empty). */
static int ndjson_blank(const char *p, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r') return 0;
  return 1;
}

/* Turn the pending partial line (or the line being discarded) into a finished item. */
static void ndjson_finish_line(ndjson_t *nd)
{
  if (nd->discarding) {
    /* only a header is needed: discarding always starts from an empty partial */
    if (ndjson_reserve(nd, HDR) == 0) {
      ndjson_put_hdr(nd, nd->tail, NDJSON_OVERSIZE, nd->discarded);
      nd->tail += HDR;
      nd->len = nd->tail;
    }
    nd->discarding = 0;
    nd->discarded = 0;
    return;
  }
  if (!nd->has_partial) return;
  nd->has_partial = 0;
  size_t start = nd->tail + HDR;
  size_t n = nd->len - start;
  if (n > 0 && nd->buf[nd->len - 1] == '\r') n--;
  if (ndjson_blank(nd->buf + start, n)) {
    nd->len = nd->tail;
  } else if (n > nd->max_line) {
    ndjson_put_hdr(nd, nd->tail, NDJSON_OVERSIZE, n);
    nd->tail += HDR;
    nd->len = nd->tail;
  } else {
    ndjson_put_hdr(nd, nd->tail, NDJSON_LINE, n);
    nd->tail = start + n;
    nd->len = nd->tail;
  }
}

/* Append bytes split anywhere; a line longer than max_line is counted, not stored. */
int ndjson_feed(ndjson_t *nd, const char *data, size_t n)
{
  while (n > 0) {
    const char *nl = memchr(data, '\n', n);
    size_t seg = nl ? (size_t)(nl - data) : n;
    if (nd->discarding) {
      nd->discarded += seg;
    } else {
      size_t cur = nd->has_partial ? nd->len - nd->tail - HDR : 0;
      /* one extra byte is allowed for the "\r" of a CRLF line of exactly max_line */
      if (cur + seg > nd->max_line + 1) {
        nd->discarding = 1;
        nd->discarded = cur + seg;
        nd->has_partial = 0;
        nd->len = nd->tail;
      } else if (seg > 0) {
        if (!nd->has_partial) {
          int r = ndjson_reserve(nd, HDR + seg);
          if (r) return r;
          nd->len += HDR;
          nd->has_partial = 1;
        } else {
          int r = ndjson_reserve(nd, seg);
          if (r) return r;
        }
        memcpy(nd->buf + nd->len, data, seg);
        nd->len += seg;
      }
    }
    if (!nl) break;
    ndjson_finish_line(nd);
    data += seg + 1;
    n -= seg + 1;
  }
  return 0;
}

/* End of input: a final line without newline (or an oversize one) becomes an item. */
void ndjson_eof(ndjson_t *nd)
{
  ndjson_finish_line(nd);
}

/* Pop the next finished item; returns its kind (NDJSON_NONE when there is none). */
enum ndjson_kind ndjson_next(ndjson_t *nd, ndjson_item *out)
{
  if (nd->head >= nd->tail) {
    out->kind = NDJSON_NONE;
    out->data = NULL;
    out->len = 0;
    return NDJSON_NONE;
  }
  uint64_t len;
  out->kind = (enum ndjson_kind)nd->buf[nd->head];
  memcpy(&len, nd->buf + nd->head + 1, sizeof(len));
  out->len = (size_t)len;
  if (out->kind == NDJSON_LINE) {
    out->data = nd->buf + nd->head + HDR;
    nd->head += HDR + out->len;
  } else {
    out->data = NULL;
    nd->head += HDR;
  }
  return out->kind;
}

/* Bytes of memory held by the buffer: lets tests prove an oversize line was not stored. */
size_t ndjson_memory(const ndjson_t *nd)
{
  return nd->cap;
}

/* Release the buffer. */
void ndjson_free(ndjson_t *nd)
{
  free(nd->buf);
  memset(nd, 0, sizeof(*nd));
}
