/* main.c: process entry. Builds the host on our own loop, hands argv to rmcp.main, runs the
 * loop, and tears the modules down in order so valgrind and ASan see no leak: the host knows
 * none of them. */
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

#include "channel.h"
#include "exepath.h"
#include "first_server.h"
#include "lua_host.h"
#include "modules.h"
#include "proc.h"

#define FLUSH_TIMEOUT_MS 2000

/* RMCP_SOURCE_LUA_DIR is defined for the build tree's binary only (edit Lua, rerun, no install);
 * the installed binary (CMake's reasonix-mcp-installed) carries no path of the build machine. */

/* The rmcp.* modules this binary has, handed to the host as preloads. */
static const luaL_Reg main_modules[] = {
  {"rmcp.channel", luaopen_rmcp_channel},
  {"rmcp.proc", luaopen_rmcp_proc},
  {"rmcp.sock", luaopen_rmcp_sock},
  {"rmcp.sys", luaopen_rmcp_sys},
  {"rmcp.fswatch", luaopen_rmcp_fswatch},
  {"rmcp.json", luaopen_rmcp_json},
  {"rmcp.http", luaopen_rmcp_http},
  {"rmcp.relay", luaopen_rmcp_relay},
  {"rmcp.fastlane", luaopen_rmcp_fastlane},
  {"rmcp.serverlane", luaopen_rmcp_serverlane},
  {"rmcp.answerlane", luaopen_rmcp_answerlane},
  {NULL, NULL},
};

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

/* Where the lua/ tree is: $REASONIX_MCP_LUA_DIR, the installed share dir beside exe (the binary's
 * real path, or NULL), else the source tree (build tree's binary) or NULL (an install without it). */
static char *main_lua_dir(const char *exe)
{
  const char *env = getenv("REASONIX_MCP_LUA_DIR");
  if (env && *env) return strdup(env);
  char cand[PATH_MAX + 64] = "<exe dir>/../share/reasonix-mcp/lua";
  char *dir = exe ? strdup(exe) : NULL;
  if (dir) {
    char probe[PATH_MAX + 96];
    snprintf(cand, sizeof(cand), "%s/../share/reasonix-mcp/lua", dirname(dir));
    snprintf(probe, sizeof(probe), "%s/rmcp/main.lua", cand);
    free(dir);
    if (access(probe, R_OK) == 0) {
      char *real = realpath(cand, NULL);
      return real ? real : strdup(cand);
    }
  }
#ifdef RMCP_SOURCE_LUA_DIR
  return strdup(RMCP_SOURCE_LUA_DIR);
#else
  fprintf(stderr, "reasonix-mcp: its Lua tree is missing: no %s/rmcp/main.lua beside the binary (reinstall the "
    "package, or set REASONIX_MCP_LUA_DIR to a lua/ tree)\n", cand);
  return NULL;
#endif
}

/* uv_walk callback for the final sweep. */
static void main_close_handle(uv_handle_t *handle, void *arg)
{
  (void)arg;
  if (!uv_is_closing(handle)) uv_close(handle, NULL);
}

/* uv_walk callback of the flush: close every handle but the deadline and channels still flushing. */
static void main_close_unflushed(uv_handle_t *handle, void *keep)
{
  if (handle == keep || uv_is_closing(handle) || channel_handle_is_flushing(handle)) return;
  uv_close(handle, NULL);
}

/* Deadline of the flush: stop waiting for slow readers. */
static void main_flush_timeout(uv_timer_t *t)
{
  uv_stop(t->loop);
}

/* Close callback of the flush deadline: it lives on main_flush's stack. */
static void main_flush_closed(uv_handle_t *handle)
{
  *(int *)handle->data = 1;
}

/* Give channels with queued writes up to FLUSH_TIMEOUT_MS to write them, with everything else
 * closed, so a reply written just before sys.stop is not lost. */
static void main_flush(uv_loop_t *loop)
{
  uv_timer_t timer;
  int closed = 0;
  uv_timer_init(loop, &timer);
  timer.data = &closed;
  uv_timer_start(&timer, main_flush_timeout, FLUSH_TIMEOUT_MS, 0);
  uv_unref((uv_handle_t *)&timer);
  uv_walk(loop, main_close_unflushed, &timer);
  uv_run(loop, UV_RUN_DEFAULT);
  uv_close((uv_handle_t *)&timer, main_flush_closed);
  while (!closed) uv_run(loop, UV_RUN_NOWAIT);  /* not a slow reader's writes: only the close */
}

/* Tear down in order: Lua objects stop (channels with queued writes start flushing), the process
 * table lets go of children, the flush runs (bounded), then the host closes the rest and Lua. */
static int main_teardown(uv_loop_t *loop, lua_host_t *host)
{
  lua_host_close_objects(host, LUA_HOST_TEARDOWN);
  first_server_drop();
  proc_teardown();
  main_flush(loop);
  lua_host_free(host);
  uv_walk(loop, main_close_handle, NULL);
  uv_run(loop, UV_RUN_DEFAULT);
  return uv_loop_close(loop);
}

/* Entry point: exit code from sys.stop(code), 0 when the loop runs dry, 1 when main() raised. */
int main(int argc, char **argv)
{
  signal(SIGPIPE, SIG_IGN);
  signal(SIGXFSZ, SIG_IGN); /* a file over RLIMIT_FSIZE fails a write with EFBIG, reported, not a kill */
  main_fix_stdio();
  uv_loop_t loop;
  int r = uv_loop_init(&loop);
  if (r < 0) {
    fprintf(stderr, "reasonix-mcp: uv_loop_init: %s\n", uv_strerror(r));
    return 1;
  }
  char *exe = realpath("/proc/self/exe", NULL);
  char *lua_dir = main_lua_dir(exe);
  if (lua_dir == NULL) { /* said why */
    free(exe);
    uv_loop_close(&loop);
    return 1;
  }
  char *invoked = exe ? exepath_invoked(argv[0], exe) : NULL;
  /* the launcher (no subcommand) starts its first server before its own Lua loads */
  if (invoked && (argc < 2 || strcmp(argv[1], "launcher") == 0)) first_server_start(invoked);
  lua_host_t *host = lua_host_new(&loop, lua_dir, exe, invoked, main_modules);
  free(lua_dir);
  free(invoked);
  free(exe);
  if (host == NULL) {
    fprintf(stderr, "reasonix-mcp: out of memory creating the lua state\n");
    return 1;
  }
  int code = 1;
  if (lua_host_run_main(host, argc, argv) == 0) {
    uv_run(&loop, UV_RUN_DEFAULT);
    code = host->stopped ? host->exit_code : 0;
  }
  if (main_teardown(&loop, host) != 0) fprintf(stderr, "reasonix-mcp: warning: uv loop still busy at exit\n");
  return code;
}
