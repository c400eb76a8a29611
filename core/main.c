/* main.c: process entry. Builds the host on our own loop, hands argv to rmcp.main, runs the
 * loop, and tears everything down so valgrind and ASan see no leak. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "lua_host.h"

#ifndef RMCP_SOURCE_LUA_DIR
#define RMCP_SOURCE_LUA_DIR "lua"
#endif

/* A closed 0, 1 or 2 would be reused by the next open() and leak protocol bytes into it. */
static void main_fix_stdio(void)
{
  for (int fd = 0; fd < 3; fd++) {
    if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    int n = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (n >= 0 && n != fd) {
      dup2(n, fd);
      close(n);
    }
  }
}

/* Where the lua/ tree is: $REASONIX_MCP_LUA_DIR, the installed share dir, or the source tree. */
static char *main_lua_dir(void)
{
  const char *env = getenv("REASONIX_MCP_LUA_DIR");
  if (env && *env) return strdup(env);
  char *exe = realpath("/proc/self/exe", NULL);
  if (exe) {
    char cand[PATH_MAX + 64];
    char probe[PATH_MAX + 96];
    snprintf(cand, sizeof(cand), "%s/../share/reasonix-mcp/lua", dirname(exe));
    snprintf(probe, sizeof(probe), "%s/rmcp/main.lua", cand);
    free(exe);
    if (access(probe, R_OK) == 0) {
      char *real = realpath(cand, NULL);
      return real ? real : strdup(cand);
    }
  }
  return strdup(RMCP_SOURCE_LUA_DIR);
}

/* uv_walk callback for the final sweep. */
static void main_close_handle(uv_handle_t *handle, void *arg)
{
  (void)arg;
  if (!uv_is_closing(handle)) uv_close(handle, NULL);
}

/* Entry point: exit code from sys.stop(code), 0 when the loop runs dry, 1 when main() raised. */
int main(int argc, char **argv)
{
  signal(SIGPIPE, SIG_IGN);
  main_fix_stdio();
  uv_loop_t loop;
  int r = uv_loop_init(&loop);
  if (r < 0) {
    fprintf(stderr, "reasonix-mcp: uv_loop_init: %s\n", uv_strerror(r));
    return 1;
  }
  char *lua_dir = main_lua_dir();
  lua_host_t *host = lua_dir ? lua_host_new(&loop, lua_dir) : NULL;
  free(lua_dir);
  if (host == NULL) {
    fprintf(stderr, "reasonix-mcp: out of memory creating the lua state\n");
    return 1;
  }
  int code = 1;
  if (lua_host_run_main(host, argc, argv) == 0) {
    uv_run(&loop, UV_RUN_DEFAULT);
    code = host->stopped ? host->exit_code : 0;
  }
  lua_host_free(host);
  uv_walk(&loop, main_close_handle, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  if (uv_loop_close(&loop) != 0) fprintf(stderr, "reasonix-mcp: warning: uv loop still busy at exit\n");
  return code;
}
