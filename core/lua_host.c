/* lua_host.c: builds the lua_State (luv on our loop, cjson, the modules its caller names as
 * preloads) and runs every C->Lua call through one protected path with a traceback. It knows
 * no rmcp module: the bindings call its helpers, main.c registers them and tears them down. */
#include "lua_host.h"

#include <errno.h>
#include <lauxlib.h>
#include <lualib.h>
#include <luv/luv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int luaopen_cjson(lua_State *L);
int luaopen_cjson_safe(lua_State *L);

#define HOST_KEY "rmcp.host*"
#define OPEN_KEY "rmcp.open"

/* Die on out-of-memory: the only Lua failure the process does not survive. */
static void host_oom(lua_State *L)
{
  const char *msg = lua_tostring(L, -1);
  fprintf(stderr, "reasonix-mcp: fatal: out of memory in lua (%s)\n", msg ? msg : "?");
  fflush(stderr);
  _exit(70);
}

/* Message handler: turn any error value into "message + traceback". */
static int host_traceback(lua_State *L)
{
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
      msg = lua_tostring(L, -1);
    else
      msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* Report a failed call on stderr and pop the error; OOM is fatal. */
static void host_report(lua_State *L, int status)
{
  if (status == LUA_ERRMEM) host_oom(L);
  const char *msg = lua_tostring(L, -1);
  fprintf(stderr, "reasonix-mcp: lua error: %s\n", msg ? msg : "(no message)");
  fflush(stderr);
  lua_pop(L, 1);
}

/* The one protected call: function + nargs on the stack; on error logs it and leaves nothing. */
int lua_host_pcall(lua_State *L, int nargs, int nresults)
{
  int base = lua_gettop(L) - nargs;
  lua_pushcfunction(L, host_traceback);
  lua_insert(L, base);
  int status = lua_pcall(L, nargs, nresults, base);
  lua_remove(L, base);
  if (status != LUA_OK) host_report(L, status);
  return status;
}

/* luv's callback hook: same path as ours, so a Lua error in a luv callback never exits. */
static int host_luv_pcall(lua_State *L, int nargs, int nresults, int flags)
{
  int top = lua_gettop(L) - nargs - 1;
  int status = lua_host_pcall(L, nargs, nresults);
  (void)flags;
  if (status != LUA_OK) return -status;
  return nresults == LUA_MULTRET ? lua_gettop(L) - top : nresults;
}

/* Call the function held by registry ref with the nargs values on top of the stack. */
int lua_host_call_ref(lua_State *L, int ref, int nargs)
{
  if (ref == LUA_NOREF || ref == LUA_REFNIL) {
    lua_pop(L, nargs);
    return LUA_OK;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  lua_insert(L, -1 - nargs);
  return lua_host_pcall(L, nargs, 0);
}

/* The host that owns this state (NULL outside a host, e.g. a bare test state). */
lua_host_t *lua_host_get(lua_State *L)
{
  lua_getfield(L, LUA_REGISTRYINDEX, HOST_KEY);
  lua_host_t *h = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return h;
}

/* Keep the object at idx alive while it is open (and findable at teardown); returns its ref. */
int lua_host_retain(lua_State *L, int idx)
{
  idx = lua_absindex(L, idx);
  lua_getfield(L, LUA_REGISTRYINDEX, OPEN_KEY);
  lua_pushvalue(L, idx);
  int ref = luaL_ref(L, -2);
  lua_pop(L, 1);
  return ref;
}

/* Drop the keep-alive taken by lua_host_retain; idempotent. */
void lua_host_release(lua_State *L, int *ref)
{
  if (*ref == LUA_NOREF) return;
  lua_getfield(L, LUA_REGISTRYINDEX, OPEN_KEY);
  luaL_unref(L, -1, *ref);
  lua_pop(L, 1);
  *ref = LUA_NOREF;
}

/* The userdata at idx when it has metatable mt (named so in the registry), else raises as
 * luaL_checkudata. A method whose upvalue 1 is that metatable compares it directly, without looking
 * the name up in the registry (agentd calls some for every line); where upvalue 1 is not it (a
 * metamethod has none: the index is acceptable but invalid, never equal) luaL_checkudata decides. */
void *lua_host_checkobject(lua_State *L, int idx, const char *mt)
{
  void *u = lua_touserdata(L, idx);
  if (u && lua_getmetatable(L, idx)) {
    int ours = lua_rawequal(L, -1, lua_upvalueindex(1));
    lua_pop(L, 1);
    if (ours) return u;
  }
  return luaL_checkudata(L, idx, mt);
}

/* Read opts[field]: nil -> LUA_NOREF, a function -> registry ref, anything else raises. */
int lua_host_checkref(lua_State *L, int idx, const char *field)
{
  int t = lua_getfield(L, idx, field);
  if (t == LUA_TNIL) {
    lua_pop(L, 1);
    return LUA_NOREF;
  }
  if (t != LUA_TFUNCTION && !luaL_getmetafield(L, -1, "__call"))
    luaL_error(L, "option '%s' must be a function", field);
  if (t != LUA_TFUNCTION) lua_pop(L, 1);
  return luaL_ref(L, LUA_REGISTRYINDEX);
}

/* Read opts[field] as a boolean, def when absent. */
int lua_host_optbool(lua_State *L, int idx, const char *field, int def)
{
  int t = lua_getfield(L, idx, field);
  int v = t == LUA_TNIL ? def : lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

/* Release a registry ref taken by lua_host_checkref; idempotent. */
void lua_host_unref(lua_State *L, int *ref)
{
  luaL_unref(L, LUA_REGISTRYINDEX, *ref);
  *ref = LUA_NOREF;
}

/* Push luv-style failure values: nil, "CODE: message: what", "CODE". */
int lua_host_fail(lua_State *L, int err, const char *what)
{
  lua_pushnil(L);
  if (what && *what)
    lua_pushfstring(L, "%s: %s: %s", uv_err_name(err), uv_strerror(err), what);
  else
    lua_pushfstring(L, "%s: %s", uv_err_name(err), uv_strerror(err));
  lua_pushstring(L, uv_err_name(err));
  return 3;
}

/* package.loaded["rmcp.host"]: what Lua needs to know about the running binary. */
static void host_set_info(lua_host_t *h)
{
  lua_State *L = h->L;
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_createtable(L, 0, 4);
  lua_pushstring(L, h->lua_dir);
  lua_setfield(L, -2, "lua_dir");
  lua_pushstring(L, h->exe);
  lua_setfield(L, -2, "exe");
  lua_pushstring(L, h->invoked);
  lua_setfield(L, -2, "invoked");
  lua_pushstring(L, RMCP_VERSION);
  lua_setfield(L, -2, "version");
  lua_setfield(L, -2, "rmcp.host");
  lua_pop(L, 1);
}

/* Prepend the lua/ tree to package.path so require "rmcp.x" finds our modules first. */
static void host_set_path(lua_host_t *h)
{
  lua_State *L = h->L;
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "path");
  lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;%s", h->lua_dir, h->lua_dir, lua_tostring(L, -1));
  lua_setfield(L, -3, "path");
  lua_pop(L, 2);
}

/* Put each (name, luaopen) of list into package.preload; list ends with {NULL, NULL}. */
static void host_preload(lua_State *L, const luaL_Reg *list)
{
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  for (const luaL_Reg *r = list; r && r->name; r++) {
    lua_pushcfunction(L, r->func);
    lua_setfield(L, -2, r->name);
  }
  lua_pop(L, 1);
}

/* Register cjson and the caller's modules in package.preload, and luv in package.loaded. */
static void host_open_modules(lua_host_t *h, const luaL_Reg *modules)
{
  lua_State *L = h->L;
  static const luaL_Reg cjson[] = {
    {"cjson", luaopen_cjson},
    {"cjson.safe", luaopen_cjson_safe},
    {NULL, NULL},
  };
  host_preload(L, cjson);
  host_preload(L, modules);
  /* luv must see our loop and our pcall before it opens, or it builds a second loop
   * and exit(-1)s on the first callback error */
  luv_set_loop(L, h->loop);
  luv_set_callback(L, host_luv_pcall);
  luaL_requiref(L, "luv", luaopen_luv, 0);
  lua_pop(L, 1);
}

/* Resolve /proc/self/exe to an absolute path (falls back to "reasonix-mcp"). */
static char *host_exe_path(void)
{
  char *p = realpath("/proc/self/exe", NULL);
  return p ? p : strdup("reasonix-mcp");
}

/* Create the host: state, libraries, luv on loop, modules (name, luaopen; NULL-terminated) as
 * preloads, path and rmcp.host info (exe: the binary's real path, NULL: resolved here; invoked: the
 * path to start our binary by, NULL: exe). */
lua_host_t *lua_host_new(uv_loop_t *loop, const char *lua_dir, const char *exe, const char *invoked,
                         const luaL_Reg *modules)
{
  lua_host_t *h = calloc(1, sizeof(*h));
  if (h == NULL) return NULL;
  h->loop = loop;
  h->lua_dir = strdup(lua_dir ? lua_dir : ".");
  h->exe = exe ? strdup(exe) : host_exe_path();
  h->invoked = h->exe ? strdup(invoked ? invoked : h->exe) : NULL;
  h->L = luaL_newstate();
  if (h->L == NULL || h->lua_dir == NULL || h->exe == NULL || h->invoked == NULL) {
    if (h->L) lua_close(h->L);
    free(h->lua_dir);
    free(h->exe);
    free(h->invoked);
    free(h);
    return NULL;
  }
  lua_State *L = h->L;
  luaL_openlibs(L);
  lua_pushlightuserdata(L, h);
  lua_setfield(L, LUA_REGISTRYINDEX, HOST_KEY);
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, OPEN_KEY);
  host_open_modules(h, modules);
  host_set_path(h);
  host_set_info(h);
  return h;
}

/* Protected body of lua_host_run_main: require("rmcp.main").main(argv). */
static int host_main_body(lua_State *L)
{
  int argc = (int)lua_tointeger(L, 1);
  char **argv = lua_touserdata(L, 2);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "rmcp.main");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "main");
  lua_createtable(L, argc, 1);
  for (int i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i);
  }
  lua_call(L, 1, 0);
  return 0;
}

/* Run the Lua entry point; returns 0, or 1 after logging when it raised. */
int lua_host_run_main(lua_host_t *h, int argc, char **argv)
{
  lua_State *L = h->L;
  lua_pushcfunction(L, host_main_body);
  lua_pushinteger(L, argc);
  lua_pushlightuserdata(L, argv);
  return lua_host_pcall(L, 2, 0) == LUA_OK ? 0 : 1;
}

/* Call metamethod `method` (LUA_HOST_TEARDOWN, LUA_HOST_CLOSE) on every object still open: the
 * host runs the protocol, each binding decides what its objects do. */
void lua_host_close_objects(lua_host_t *h, const char *method)
{
  lua_State *L = h->L;
  lua_getfield(L, LUA_REGISTRYINDEX, OPEN_KEY);
  int open = lua_gettop(L);
  lua_newtable(L);  /* snapshot: closing edits the open table */
  int snap = lua_gettop(L), n = 0;
  lua_pushnil(L);
  while (lua_next(L, open)) {
    if (lua_type(L, -1) == LUA_TUSERDATA) {
      lua_pushvalue(L, -1);
      lua_rawseti(L, snap, ++n);
    }
    lua_pop(L, 1);
  }
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, snap, i);
    if (luaL_getmetafield(L, -1, method) != LUA_TNIL) {
      lua_insert(L, -2);
      lua_host_pcall(L, 1, 0);
    } else {
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 2);
}

/* uv_walk callback: close every handle left (luv's, whatever the caller did not close). */
static void host_walk_close(uv_handle_t *handle, void *arg)
{
  (void)arg;
  if (!uv_is_closing(handle)) uv_close(handle, NULL);
}

/* Close every handle and drain the loop while the Lua state is still alive. */
static void host_drain(lua_host_t *h)
{
  for (int i = 0; i < 16 && uv_loop_alive(h->loop); i++) {
    uv_walk(h->loop, host_walk_close, NULL);
    uv_run(h->loop, UV_RUN_DEFAULT);
  }
}

/* Close what Lua still has open (LUA_HOST_CLOSE on each object, then the loop's handles), then
 * the state; the modules' own teardown (and any flush) is the caller's, before this. */
void lua_host_free(lua_host_t *h)
{
  if (h == NULL) return;
  lua_host_close_objects(h, LUA_HOST_CLOSE);
  host_drain(h);
  lua_close(h->L);
  host_drain(h);
  free(h->lua_dir);
  free(h->exe);
  free(h->invoked);
  free(h);
}

/* The loader of a module whose objects have metatable mt (methods as __index, gc as __gc) and are
 * made by new_fn: registers mt once, pushes {new = new_fn}; returns 1 (the lanes' loaders). */
int lua_host_module(lua_State *L, const char *mt, const luaL_Reg *methods, lua_CFunction gc, lua_CFunction new_fn)
{
  if (luaL_newmetatable(L, mt)) {
    lua_newtable(L);
    luaL_setfuncs(L, methods, 0);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  lua_newtable(L);
  lua_pushcfunction(L, new_fn);
  lua_setfield(L, -2, "new");
  return 1;
}

/* Pushes a zeroed userdata of size bytes with metatable mt and returns it; *main is the host's main
 * thread (the one C callbacks call Lua on). Raises, naming module, outside the reasonix-mcp host. */
void *lua_host_newobject(lua_State *L, size_t size, const char *mt, const char *module, lua_State **main)
{
  lua_host_t *h = lua_host_get(L);
  if (h == NULL) luaL_error(L, "%s needs the reasonix-mcp host", module);
  void *p = lua_newuserdatauv(L, size, 0);
  memset(p, 0, size);
  luaL_setmetatable(L, mt);
  *main = h->L;
  return p;
}
