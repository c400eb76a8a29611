/* fuzz_ndjson.c: NDJSON framing (core/ndjson.c) fed in fuzzer-chosen pieces with a small max_line,
 * checked against a plain model of the contract: every line and every dropped line comes out once, in
 * order, with the right bytes or count; no line is longer than max_line; an oversize line is never
 * held in memory (the buffer stays within what the pieces need).
 * Input: byte 0 picks max_line (1..64), bytes 1..4 the piece sizes (cycled), the rest is the stream. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ndjson.h"

#define HEADER 5
#define HDR_BYTES (1 + sizeof(uint64_t))

/* Stops the run with a message libFuzzer records as a crash. */
static void fuzz_fail(const char *what, size_t a, size_t b)
{
  fprintf(stderr, "fuzz_ndjson: %s (%zu vs %zu)\n", what, a, b);
  abort();
}

/* One expected item of the model, pointing into the input. */
typedef struct {
  enum ndjson_kind kind;
  const uint8_t *data;
  size_t len;
} want_t;

/* True for a line made only of spaces, tabs and carriage returns (the contract's blank line). */
static int model_blank(const uint8_t *p, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r') return 0;
  return 1;
}

/* The items the contract promises for stream s, written to out; returns their number. A raw line
 * (without "\n") longer than max_line + 1 is dropped whole; otherwise one trailing "\r" goes, blank
 * lines vanish, and what is left is a line, or dropped when still over max_line. */
static size_t model_items(const uint8_t *s, size_t n, size_t max_line, want_t *out)
{
  size_t count = 0, start = 0;
  while (start < n) {
    const uint8_t *nl = memchr(s + start, '\n', n - start);
    size_t raw = nl ? (size_t)(nl - (s + start)) : n - start;
    size_t len = raw;
    if (raw > max_line + 1) {
      out[count++] = (want_t){ NDJSON_OVERSIZE, NULL, raw };
    } else {
      if (len > 0 && s[start + len - 1] == '\r') len--;
      if (!model_blank(s + start, len)) {
        if (len > max_line) out[count++] = (want_t){ NDJSON_OVERSIZE, NULL, len };
        else out[count++] = (want_t){ NDJSON_LINE, s + start, len };
      }
    }
    start += raw + 1;
  }
  return count;
}

/* Pops every finished item and checks each against the next expected one. */
static void fuzz_drain(ndjson_t *nd, const want_t *want, size_t nwant, size_t *at, size_t max_line)
{
  ndjson_item it;
  while (ndjson_next(nd, &it) != NDJSON_NONE) {
    if (*at >= nwant) fuzz_fail("more items than the model", *at, nwant);
    const want_t *w = &want[(*at)++];
    if (it.kind != w->kind) fuzz_fail("item kind differs from the model", (size_t)it.kind, (size_t)w->kind);
    if (it.len != w->len) fuzz_fail("item length differs from the model", it.len, w->len);
    if (it.kind == NDJSON_LINE) {
      if (it.len > max_line) fuzz_fail("a line over max_line", it.len, max_line);
      if (it.len == 0) fuzz_fail("an empty line was delivered", 0, 0);
      if (memcmp(it.data, w->data, it.len) != 0) fuzz_fail("line bytes differ from the input", *at, 0);
    }
  }
}

/* libFuzzer entry: frame the stream piece by piece, draining after each feed as a channel does. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < HEADER) return 0;
  size_t max_line = 1 + data[0] % 64;
  size_t pieces[4];
  for (int i = 0; i < 4; i++) pieces[i] = 1 + data[1 + i] % 32;
  const uint8_t *s = data + HEADER;
  size_t n = size - HEADER;

  want_t *want = malloc((n + 1) * sizeof *want);
  if (want == NULL) return 0;
  size_t nwant = model_items(s, n, max_line, want);

  /* all a piece can leave behind: a partial line, plus one header and one line per byte of it */
  size_t bound = 4096;
  size_t need = (HDR_BYTES + max_line + 2) * (32 + 2);
  if (need > bound) fuzz_fail("test bound below the initial buffer", need, bound);

  ndjson_t nd;
  ndjson_init(&nd, max_line);
  size_t off = 0, at = 0;
  for (int i = 0; off < n; i++) {
    size_t k = pieces[i % 4];
    if (k > n - off) k = n - off;
    if (ndjson_feed(&nd, (const char *)s + off, k) != 0) fuzz_fail("feed failed", off, k);
    off += k;
    if (ndjson_memory(&nd) > bound) fuzz_fail("buffer grew past what a piece needs", ndjson_memory(&nd), bound);
    fuzz_drain(&nd, want, nwant, &at, max_line);
  }
  ndjson_eof(&nd);
  fuzz_drain(&nd, want, nwant, &at, max_line);
  if (at != nwant) fuzz_fail("fewer items than the model", at, nwant);
  if (ndjson_memory(&nd) > bound) fuzz_fail("buffer grew past what a piece needs", ndjson_memory(&nd), bound);
  ndjson_free(&nd);
  free(want);
  return 0;
}
