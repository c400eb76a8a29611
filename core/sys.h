/* sys.h: small process-level services for Lua: flock, euid, stdio redirection, stopping the loop. */
#ifndef RMCP_SYS_H
#define RMCP_SYS_H

int sys_flock(const char *path, int *fd);
void sys_unlock(int fd);
int sys_redirect_stdio(const char *path);
int sys_cloexec(int fd, int on);
int sys_exec(const char *file, char *const argv[], char *const envp[]);

#endif
