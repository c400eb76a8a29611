/* sys.h: small process-level services for Lua: flock, euid, stdio redirection, exec, local time
 * in a named zone, stopping the loop. */
#ifndef RMCP_SYS_H
#define RMCP_SYS_H

#include <time.h>

int sys_flock(const char *path, int *fd);
void sys_unlock(int fd);
int sys_redirect_stdio(const char *path);
int sys_cloexec(int fd, int on);
int sys_exec(const char *file, char *const argv[], char *const envp[]);
struct tm;
int sys_tz_local(const char *zone, time_t t, struct tm *out);
int sys_tz_time(const char *zone, struct tm *tm, time_t *out);

#endif
