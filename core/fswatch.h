/* fswatch.h: a directory change queue (inotify) that is read synchronously, never by the loop. */
#ifndef RMCP_FSWATCH_H
#define RMCP_FSWATCH_H

#include <stddef.h>

int fswatch_open(int *fdp);
int fswatch_add(int fd, const char *dir, int entries_only, int *wdp);
int fswatch_remove(int fd, int wd);
/* Calls fn(wd, name, ud) for each queued event; returns how many, 0 when none, or -errno. */
int fswatch_drain(int fd, void (*fn)(int wd, const char *name, void *ud), void *ud);

#endif
