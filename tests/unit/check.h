/* check.h: the tiny assertion kit shared by the unit tests: each CHECK prints what failed,
 * each test prints what it checks, and main() returns non-zero on any failure. */
#ifndef RMCP_TEST_CHECK_H
#define RMCP_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static int check_failures;

#define CHECK(cond)                                                              \
  do {                                                                           \
    if (!(cond)) {                                                               \
      fprintf(stderr, "  FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);         \
      check_failures++;                                                          \
    }                                                                            \
  } while (0)

#define CHECKF(cond, ...)                                                        \
  do {                                                                           \
    if (!(cond)) {                                                               \
      fprintf(stderr, "  FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);         \
      fprintf(stderr, __VA_ARGS__);                                              \
      fputc('\n', stderr);                                                       \
      check_failures++;                                                          \
    }                                                                            \
  } while (0)

/* Fatal: the rest of the test cannot run. */
#define REQUIRE(cond)                                                            \
  do {                                                                           \
    if (!(cond)) {                                                               \
      fprintf(stderr, "  FATAL %s:%d: %s\n", __FILE__, __LINE__, #cond);        \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

#define TEST(name) printf("- %s\n", name), fflush(stdout)

/* Summary line and exit status. */
static inline int check_done(void)
{
  if (check_failures) {
    printf("%d check(s) failed\n", check_failures);
    return 1;
  }
  printf("all checks passed\n");
  return 0;
}

#endif
