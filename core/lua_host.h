/* lua_host.h: the one lua_State of the process, bound to the core's uv loop. */
#ifndef RMCP_LUA_HOST_H
#define RMCP_LUA_HOST_H

#include <lauxlib.h>
#include <lua.h>
#include <uv.h>

typedef struct lua_host {
  lua_State *L;      /* main thread: every C->Lua callback runs on it */
  uv_loop_t *loop;
  char *lua_dir;
  char *exe;
  char *invoked;     /* the path processes we start from this binary are given (exepath.c) */
  int exit_code;     /* set by sys.stop */
  int stopped;
} lua_host_t;

/* Metamethods of the objects a binding keeps open (lua_host_retain), called at exit by
 * lua_host_close_objects: TEARDOWN stops an object (a channel with queued writes keeps flushing),
 * CLOSE closes it now. */
#define LUA_HOST_TEARDOWN "__rmcp_teardown"
#define LUA_HOST_CLOSE "__rmcp_close"

lua_host_t *lua_host_new(uv_loop_t *loop, const char *lua_dir, const char *exe, const char *invoked,
                         const luaL_Reg *modules);
int lua_host_run_main(lua_host_t *h, int argc, char **argv);
void lua_host_close_objects(lua_host_t *h, const char *method);
void lua_host_free(lua_host_t *h);

lua_host_t *lua_host_get(lua_State *L);
int lua_host_pcall(lua_State *L, int nargs, int nresults);
int lua_host_call_ref(lua_State *L, int ref, int nargs);
int lua_host_retain(lua_State *L, int idx);
void lua_host_release(lua_State *L, int *ref);
void *lua_host_checkobject(lua_State *L, int idx, const char *mt);
int lua_host_checkref(lua_State *L, int idx, const char *field);
int lua_host_optbool(lua_State *L, int idx, const char *field, int def);
void lua_host_unref(lua_State *L, int *ref);
int lua_host_fail(lua_State *L, int err, const char *what);
void *lua_host_newobject(lua_State *L, size_t size, const char *mt, const char *module, lua_State **main);
int lua_host_module(lua_State *L, const char *mt, const luaL_Reg *methods, lua_CFunction gc, lua_CFunction new_fn);

#endif
