/* test_exepath.c: the path processes we start from our binary are given (exepath_invoked): the
 * path we were started by while it leads to this binary (absolute, relative, found on PATH, or a
 * symlink, kept as given so an upgrade that repoints the link is followed), else the real path. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "exepath.h"

/* exepath_invoked(argv0, the running binary's real path) equals want (freed). */
static int invoked_is(const char *argv0, const char *want)
{
  char self[PATH_MAX];
  REQUIRE(realpath("/proc/self/exe", self) != NULL);
  char *got = exepath_invoked(argv0, self);
  int same = got && strcmp(got, want) == 0;
  if (!same) fprintf(stderr, "  argv0 %s: got %s, want %s\n", argv0 ? argv0 : "(null)", got ? got : "(null)", want);
  free(got);
  return same;
}

int main(void)
{
  printf("test_exepath\n");
  char self[PATH_MAX], tmp[PATH_MAX], link[PATH_MAX + 16], cwd[PATH_MAX];
  REQUIRE(realpath("/proc/self/exe", self) != NULL);
  char tmpl[] = "/tmp/rmcp-test-exepath-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != NULL);
  REQUIRE(realpath(tmpl, tmp) != NULL);
  snprintf(link, sizeof(link), "%s/rmcp-link", tmp);
  REQUIRE(symlink(self, link) == 0);
  REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);

  TEST("the binary's own path is kept");
  CHECK(invoked_is(self, self));
  TEST("a symlink to the binary is kept as given, not resolved");
  CHECK(invoked_is(link, link));
  TEST("a relative path is made absolute against the cwd");
  REQUIRE(chdir(tmp) == 0);
  CHECK(invoked_is("./rmcp-link", link));
  CHECK(invoked_is("./missing", self));
  REQUIRE(chdir(cwd) == 0);
  TEST("a bare name is found on PATH");
  setenv("PATH", tmp, 1);
  CHECK(invoked_is("rmcp-link", link));
  TEST("a bare name not on PATH, another binary, or no argv[0]: the real path");
  setenv("PATH", "/nonexistent", 1);
  CHECK(invoked_is("rmcp-link", self));
  CHECK(invoked_is("/bin/sh", self));
  CHECK(invoked_is("", self));
  CHECK(invoked_is(NULL, self));

  unlink(link);
  rmdir(tmp);
  return check_done();
}
