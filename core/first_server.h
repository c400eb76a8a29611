/* first_server.h: the launcher's first `reasonix-mcp server`, started from C before the Lua host. */
#ifndef RMCP_FIRST_SERVER_H
#define RMCP_FIRST_SERVER_H

#include <sys/types.h>

int first_server_start(const char *exe);
int first_server_take(pid_t *pid, int *stdin_fd, int *stdout_fd);
void first_server_drop(void);

#endif
