/* test_ndjson.c: framing survives every split point, CRLF, blank lines, oversize lines (counted,
 * not stored), a final line at EOF, NUL bytes and invalid UTF-8. */
#include <string.h>

#include "check.h"
#include "ndjson.h"

/* Append every finished item to log as "L<len>:<bytes>|" or "O<n>|". */
static void drain(ndjson_t *nd, char *log, size_t cap, size_t *usedp)
{
  ndjson_item it;
  size_t used = *usedp;
  while (ndjson_next(nd, &it) != NDJSON_NONE) {
    int n;
    if (it.kind == NDJSON_LINE) {
      n = snprintf(log + used, cap - used, "L%zu:", it.len);
      used += (size_t)n;
      REQUIRE(used + it.len + 2 < cap);
      memcpy(log + used, it.data, it.len);
      used += it.len;
      log[used++] = '|';
      log[used] = '\0';
    } else {
      n = snprintf(log + used, cap - used, "O%zu|", it.len);
      used += (size_t)n;
    }
  }
  *usedp = used;
}

/* Frame input fed in the given pieces, draining after each feed; return the log. */
static void frame(const char *in, size_t n, const size_t *cuts, int ncuts, size_t max, char *log, size_t cap)
{
  ndjson_t nd;
  ndjson_init(&nd, max);
  log[0] = '\0';
  size_t at = 0, used = 0;
  for (int i = 0; i <= ncuts; i++) {
    size_t end = i < ncuts ? cuts[i] : n;
    REQUIRE(ndjson_feed(&nd, in + at, end - at) == 0);
    drain(&nd, log, cap, &used);
    at = end;
  }
  ndjson_eof(&nd);
  drain(&nd, log, cap, &used);
  ndjson_free(&nd);
}

static const char multi[] = "a\r\n\r\n  \n{\"x\":1}\nbb\n\n\r\n\t\r\nlast";
static const char multi_expect[] = "L1:a|L7:{\"x\":1}|L2:bb|L4:last|";

/* Every 1-, 2- and 3-way split of a multi-line input, and byte-by-byte. */
static void test_splits(void)
{
  TEST("every split point (whole, byte-by-byte, all 2-way and 3-way splits)");
  char log[4096];
  size_t n = sizeof(multi) - 1;
  frame(multi, n, NULL, 0, 0, log, sizeof(log));
  CHECKF(strcmp(log, multi_expect) == 0, "whole: %s", log);

  size_t cuts[64];
  for (size_t i = 0; i < n; i++) cuts[i] = i + 1;
  frame(multi, n, cuts, (int)n - 1, 0, log, sizeof(log));
  CHECKF(strcmp(log, multi_expect) == 0, "bytewise: %s", log);

  for (size_t a = 0; a <= n; a++) {
    size_t c[1] = {a};
    frame(multi, n, c, 1, 0, log, sizeof(log));
    CHECKF(strcmp(log, multi_expect) == 0, "split at %zu: %s", a, log);
    for (size_t b = a; b <= n; b++) {
      size_t c2[2] = {a, b};
      frame(multi, n, c2, 2, 0, log, sizeof(log));
      CHECKF(strcmp(log, multi_expect) == 0, "split at %zu,%zu: %s", a, b, log);
    }
  }
}

/* CRLF stripping and which lines count as blank. */
static void test_crlf_blank(void)
{
  TEST("CRLF lines lose the \\r; empty and whitespace-only lines are skipped");
  char log[256];
  const char in[] = "x\r\n\r\n \r\n\n y \r\nz\r";
  frame(in, sizeof(in) - 1, NULL, 0, 0, log, sizeof(log));
  CHECKF(strcmp(log, "L1:x|L3: y |L1:z|") == 0, "%s", log);
}

/* Lines over max_line: reported once with their size, framing goes on, memory stays small. */
static void test_oversize(void)
{
  TEST("oversize lines are counted, not stored, and the next line still arrives");
  char log[512];
  char in[256];
  memset(in, 0, sizeof(in));
  strcpy(in, "ok\n");
  memset(in + 3, 'x', 100);
  strcpy(in + 103, "\nnext\n");
  size_t n = strlen(in);
  frame(in, n, NULL, 0, 8, log, sizeof(log));
  CHECKF(strcmp(log, "L2:ok|O100|L4:next|") == 0, "%s", log);
  size_t cuts[256];
  for (size_t i = 0; i + 1 < n; i++) cuts[i] = i + 1;
  frame(in, n, cuts, (int)n - 1, 8, log, sizeof(log));
  CHECKF(strcmp(log, "L2:ok|O100|L4:next|") == 0, "bytewise: %s", log);

  TEST("max_line boundary: exactly max kept (also with CRLF), max+1 dropped");
  frame("12345678\n123456789\n12345678\r\n", 29, NULL, 0, 8, log, sizeof(log));
  CHECKF(strcmp(log, "L8:12345678|O9|L8:12345678|") == 0, "%s", log);

  TEST("an oversize final line without newline is reported at EOF");
  frame("a\nbbbbbbbbbbbb", 14, NULL, 0, 4, log, sizeof(log));
  CHECKF(strcmp(log, "L1:a|O12|") == 0, "%s", log);

  TEST("a 32 MiB line streamed in 64 KiB chunks never grows the buffer past max_line");
  ndjson_t nd;
  ndjson_init(&nd, 1024);
  static char chunk[65536];
  memset(chunk, 'y', sizeof(chunk));
  REQUIRE(ndjson_feed(&nd, "{\"a\":1}\n", 8) == 0);
  size_t total = 0;
  for (int i = 0; i < 512; i++) {
    REQUIRE(ndjson_feed(&nd, chunk, sizeof(chunk)) == 0);
    total += sizeof(chunk);
  }
  CHECKF(ndjson_memory(&nd) <= 8192, "memory %zu", ndjson_memory(&nd));
  REQUIRE(ndjson_feed(&nd, "\n{\"b\":2}\n", 9) == 0);
  ndjson_item it;
  CHECK(ndjson_next(&nd, &it) == NDJSON_LINE && it.len == 7 && memcmp(it.data, "{\"a\":1}", 7) == 0);
  CHECK(ndjson_next(&nd, &it) == NDJSON_OVERSIZE && it.len == total);
  CHECK(ndjson_next(&nd, &it) == NDJSON_LINE && it.len == 7 && memcmp(it.data, "{\"b\":2}", 7) == 0);
  CHECK(ndjson_next(&nd, &it) == NDJSON_NONE);
  CHECKF(ndjson_memory(&nd) <= 8192, "memory %zu", ndjson_memory(&nd));
  ndjson_free(&nd);
}

/* EOF handling and byte transparency. */
static void test_eof_bytes(void)
{
  char log[256];
  TEST("a final line without newline is delivered at EOF; nothing is invented after it");
  frame("one\ntwo", 7, NULL, 0, 0, log, sizeof(log));
  CHECKF(strcmp(log, "L3:one|L3:two|") == 0, "%s", log);
  frame("", 0, NULL, 0, 0, log, sizeof(log));
  CHECKF(strcmp(log, "") == 0, "%s", log);
  frame("   ", 3, NULL, 0, 0, log, sizeof(log));
  CHECKF(strcmp(log, "") == 0, "%s", log);

  TEST("embedded NUL and invalid UTF-8 pass through untouched");
  const char in[] = "a\0b\n\xff\xfe\xc3(\n";
  frame(in, sizeof(in) - 1, NULL, 0, 0, log, sizeof(log));
  CHECK(memcmp(log, "L3:a\0b|L4:\xff\xfe\xc3(|", 15) == 0);
}

/* Items stay in order when the consumer pulls lazily between feeds. */
static void test_lazy_pull(void)
{
  TEST("lazy consumer: items keep their order across feeds and compaction");
  ndjson_t nd;
  ndjson_init(&nd, 4);
  ndjson_item it;
  REQUIRE(ndjson_feed(&nd, "a\nbbbbbbb\nc", 11) == 0);
  CHECK(ndjson_next(&nd, &it) == NDJSON_LINE && it.len == 1 && it.data[0] == 'a');
  REQUIRE(ndjson_feed(&nd, "c\nd\n", 4) == 0);
  CHECK(ndjson_next(&nd, &it) == NDJSON_OVERSIZE && it.len == 7);
  CHECK(ndjson_next(&nd, &it) == NDJSON_LINE && it.len == 2 && memcmp(it.data, "cc", 2) == 0);
  CHECK(ndjson_next(&nd, &it) == NDJSON_LINE && it.len == 1 && it.data[0] == 'd');
  CHECK(ndjson_next(&nd, &it) == NDJSON_NONE);
  for (int i = 0; i < 10000; i++) REQUIRE(ndjson_feed(&nd, "xy\n", 3) == 0);
  int got = 0;
  while (ndjson_next(&nd, &it) == NDJSON_LINE) got += it.len == 2;
  CHECK(got == 10000);
  ndjson_free(&nd);
}

int main(void)
{
  printf("test_ndjson\n");
  test_splits();
  test_crlf_blank();
  test_oversize();
  test_eof_bytes();
  test_lazy_pull();
  return check_done();
}
