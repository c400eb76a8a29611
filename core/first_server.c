/* first_server.c: the launcher's first `reasonix-mcp server`, started from C as soon as the
 * launcher process runs, before its Lua host is built, so the server's start-up (exec, Lua,
 * the answer to initialize) overlaps the launcher's instead of following it. It is started as
 * lua/rmcp/launcher/child.lua starts every later server (stdin and stdout piped, stderr shared,
 * own process group, PDEATHSIG, REASONIX_MCP_LAUNCHER_PID), and the launcher's Lua adopts it
 * through rmcp.proc.take_first_server(). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "first_server.h"
#include "proc.h"

extern char **environ;

#define LAUNCHER_PID_VAR "REASONIX_MCP_LAUNCHER_PID="

/* The started server until the Lua side takes it: pid, our end of its stdin and of its stdout. */
static struct {
  pid_t pid;
  int in, out;
} first = {-1, -1, -1};

/* Our environment without REASONIX_MCP_LAUNCHER_PID, then own (that variable set to our pid): a
 * malloc'd vector whose entries point into environ. */
static char **first_server_env(char *own)
{
  size_t n = 0;
  while (environ[n]) n++;
  char **env = malloc(sizeof(char *) * (n + 2));
  if (env == NULL) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], LAUNCHER_PID_VAR, sizeof(LAUNCHER_PID_VAR) - 1) != 0) env[k++] = environ[i];
  env[k++] = own;
  env[k] = NULL;
  return env;
}

/* Start `exe server`; 0, or a negative errno (the launcher's Lua then starts it itself and
 * reports the failure). */
int first_server_start(const char *exe)
{
  char own[sizeof(LAUNCHER_PID_VAR) + 24];
  snprintf(own, sizeof(own), "%s%ld", LAUNCHER_PID_VAR, (long)getpid());
  char **env = first_server_env(own);
  if (env == NULL) return -ENOMEM;
  char *argv[] = {(char *)exe, "server", NULL};
  proc_opts o;
  memset(&o, 0, sizeof(o));
  o.file = exe;
  o.argv = argv;
  o.env = env;
  o.pdeathsig = SIGHUP; /* as the launcher's own servers: the server finishes what we wrote it */
  o.io[0].kind = PROC_IO_PIPE;
  o.io[1].kind = PROC_IO_PIPE;
  o.io[2].kind = PROC_IO_INHERIT;
  int fds[3];
  pid_t pid;
  int r = proc_start(&o, &pid, fds, NULL);
  free(env);
  if (r < 0) return r;
  first.pid = pid;
  first.in = fds[0];
  first.out = fds[1];
  return 0;
}

/* Hand the started server over, once: 0 with its pid and our pipe ends (the caller owns them
 * now), or -1 when none was started or it was already taken. */
int first_server_take(pid_t *pid, int *stdin_fd, int *stdout_fd)
{
  if (first.pid < 0) return -1;
  *pid = first.pid;
  *stdin_fd = first.in;
  *stdout_fd = first.out;
  first.pid = first.in = first.out = -1;
  return 0;
}

/* At exit: a server nobody took sees its stdin and stdout close, and stops (PDEATHSIG covers a
 * launcher that dies first). */
void first_server_drop(void)
{
  if (first.pid < 0) return;
  close(first.in);
  close(first.out);
  first.pid = first.in = first.out = -1;
}
