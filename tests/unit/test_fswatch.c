/* test_fswatch.c: the synchronous change queue hot reload reads at the start of each call: an
 * empty queue reads as nothing without blocking, a write/rename/remove in a watched dir is queued
 * before the writer returns, events carry the watch and the entry name, a removed watch reports
 * nothing more, and a missing dir is refused with ENOENT. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fswatch.h"

typedef struct {
  int count;
  int wd;
  char names[512];
} seen_t;

/* Records each event: its watch descriptor and its name, '|'-separated. */
static void record(int wd, const char *name, void *ud)
{
  seen_t *s = ud;
  s->count++;
  s->wd = wd;
  size_t len = strlen(s->names);
  snprintf(s->names + len, sizeof(s->names) - len, "%s|", name);
}

/* Creates path with text. */
static void spit(const char *path, const char *text)
{
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  close(fd);
}

int main(void)
{
  char tmp[] = "/tmp/rmcp-fswatch-XXXXXX";
  REQUIRE(mkdtemp(tmp));
  char file[PATH_MAX + 16], moved[PATH_MAX + 16];
  snprintf(file, sizeof(file), "%s/a.lua", tmp);
  snprintf(moved, sizeof(moved), "%s/b.lua", tmp);

  int fd = -1, wd = -1;
  REQUIRE(fswatch_open(&fd) == 0);
  REQUIRE(fswatch_add(fd, tmp, 0, &wd) == 0);

  TEST("an empty queue reads as nothing and does not block");
  seen_t s = {0};
  CHECK(fswatch_drain(fd, record, &s) == 0);
  CHECK(s.count == 0);

  TEST("a write is queued before the writer returns, named and tied to its watch");
  spit(file, "return {}\n");
  memset(&s, 0, sizeof(s));
  CHECK(fswatch_drain(fd, record, &s) > 0);
  CHECK(s.wd == wd);
  CHECKF(strstr(s.names, "a.lua|") != NULL, "names: %s", s.names);
  CHECK(fswatch_drain(fd, record, &s) == 0);

  TEST("a rename over a file and a removal are queued too");
  memset(&s, 0, sizeof(s));
  REQUIRE(rename(file, moved) == 0);
  REQUIRE(unlink(moved) == 0);
  CHECK(fswatch_drain(fd, record, &s) >= 3);
  CHECKF(strstr(s.names, "b.lua|") != NULL, "names: %s", s.names);

  TEST("a removed watch reports nothing more than its own end");
  CHECK(fswatch_remove(fd, wd) == 0);
  memset(&s, 0, sizeof(s));
  fswatch_drain(fd, record, &s); /* IN_IGNORED for the removed watch */
  spit(file, "x");
  memset(&s, 0, sizeof(s));
  CHECK(fswatch_drain(fd, record, &s) == 0);

  TEST("entries_only: a write to an existing entry queues nothing; a new entry does");
  spit(file, "log line 1\n");
  int wd2 = -1;
  REQUIRE(fswatch_add(fd, tmp, 1, &wd2) == 0);
  spit(file, "log line 2\n");
  memset(&s, 0, sizeof(s));
  CHECK(fswatch_drain(fd, record, &s) == 0);
  REQUIRE(rename(file, moved) == 0);
  memset(&s, 0, sizeof(s));
  CHECK(fswatch_drain(fd, record, &s) >= 1);
  CHECKF(strstr(s.names, "b.lua|") != NULL, "names: %s", s.names);
  CHECK(fswatch_remove(fd, wd2) == 0);
  fswatch_drain(fd, record, &s);
  unlink(moved);

  TEST("a missing dir is refused with ENOENT");
  char missing[PATH_MAX + 16];
  snprintf(missing, sizeof(missing), "%s/nope", tmp);
  CHECK(fswatch_add(fd, missing, 0, &wd) == -ENOENT);

  close(fd);
  unlink(file);
  rmdir(tmp);
  return check_done();
}
