/* fuzz_lua.h: the Lua state the Lua-facing fuzz targets share: standard libraries, cjson and rmcp.json
 * preloaded as the host does (core/lua_host.c), the source lua/ tree first on package.path, and a
 * checker script from tests/fuzz/ that each input is handed to. No uv loop: the targets pick modules
 * that need none. */
#ifndef RMCP_FUZZ_LUA_H
#define RMCP_FUZZ_LUA_H

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int luaopen_cjson(lua_State *L);
int luaopen_cjson_safe(lua_State *L);
int luaopen_rmcp_json(lua_State *L);
#ifdef RMCP_FUZZ_WITH_HTTP
int luaopen_rmcp_http(lua_State *L);
#endif
#ifdef RMCP_FUZZ_WITH_CORE
int luaopen_luv(lua_State *L);
int luaopen_rmcp_fswatch(lua_State *L);
int luaopen_rmcp_sys(lua_State *L);
int luaopen_rmcp_answerlane(lua_State *L);
#endif

/* Lua line-to-line edges as libFuzzer extra counters: the interpreter is not instrumented, so
 * without these the fuzzer would see only the C it calls, blind to which Lua branches an input took. */
#define FUZZ_LUA_EDGES 65536
__attribute__((used, section("__libfuzzer_extra_counters"))) static uint8_t fuzz_lua_edges[FUZZ_LUA_EDGES];
static uintptr_t fuzz_lua_prev;

/* Line hook: counts the edge from the previous Lua line to this one (AFL's prev >> 1 ^ cur). */
static inline void fuzz_lua_hook(lua_State *L, lua_Debug *ar)
{
  if (!lua_getinfo(L, "S", ar)) return;
  uintptr_t cur = ((uintptr_t)ar->source * 31u + (uintptr_t)ar->currentline) * 2654435761u;
  cur = (cur >> 7) % FUZZ_LUA_EDGES;
  uint8_t *c = &fuzz_lua_edges[(cur ^ fuzz_lua_prev) % FUZZ_LUA_EDGES];
  if (*c < 255) (*c)++;
  fuzz_lua_prev = cur >> 1;
}

/* Stops the run with the Lua message on top of the stack, as libFuzzer's crash. */
static inline void fuzz_lua_die(lua_State *L, const char *what)
{
  const char *msg = lua_tostring(L, -1);
  fprintf(stderr, "%s: %s\n", what, msg ? msg : "(no message)");
  abort();
}

/* Message handler: the error with a traceback, so a crash report says where it came from. */
static inline int fuzz_lua_traceback(lua_State *L)
{
  luaL_traceback(L, L, lua_tostring(L, 1), 1);
  return 1;
}

/* Builds the state and returns it with the checker function (script's return value) in the
 * registry under ref; dies when the script does not load. with_core also opens luv (on its default
 * loop, never run) and preloads the core modules the server's and agentd's Lua require. */
static inline lua_State *fuzz_lua_open(const char *script, int *ref, int with_core)
{
  lua_State *L = luaL_newstate();
  if (L == NULL) abort();
  luaL_openlibs(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_cjson);
  lua_setfield(L, -2, "cjson");
  lua_pushcfunction(L, luaopen_cjson_safe);
  lua_setfield(L, -2, "cjson.safe");
  lua_pushcfunction(L, luaopen_rmcp_json);
  lua_setfield(L, -2, "rmcp.json");
#ifdef RMCP_FUZZ_WITH_HTTP
  lua_pushcfunction(L, luaopen_rmcp_http);
  lua_setfield(L, -2, "rmcp.http");
#endif
#ifdef RMCP_FUZZ_WITH_CORE
  if (with_core) {
    lua_pushcfunction(L, luaopen_rmcp_fswatch);
    lua_setfield(L, -2, "rmcp.fswatch");
    lua_pushcfunction(L, luaopen_rmcp_sys);
    lua_setfield(L, -2, "rmcp.sys");
    lua_pushcfunction(L, luaopen_rmcp_answerlane);
    lua_setfield(L, -2, "rmcp.answerlane");
    luaL_requiref(L, "luv", luaopen_luv, 0);
    lua_pop(L, 1);
  }
#else
  (void)with_core;
#endif
  lua_pop(L, 1);
  lua_getglobal(L, "package");
  lua_pushliteral(L, RMCP_FUZZ_LUA_DIR "/?.lua;" RMCP_FUZZ_LUA_DIR "/?/init.lua;" RMCP_FUZZ_DIR "/?.lua");
  lua_setfield(L, -2, "path");
  lua_pop(L, 1);
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", RMCP_FUZZ_DIR, script);
  lua_pushcfunction(L, fuzz_lua_traceback);
  if (luaL_loadfile(L, path) != LUA_OK) fuzz_lua_die(L, script);
  if (lua_pcall(L, 0, 1, -2) != LUA_OK) fuzz_lua_die(L, script);
  if (lua_type(L, -1) != LUA_TFUNCTION) {
    lua_pushliteral(L, "does not return a function");
    fuzz_lua_die(L, script);
  }
  *ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pop(L, 1);
  lua_sethook(L, fuzz_lua_hook, LUA_MASKLINE, 0);
  return L;
}

/* Hands one input to the checker; dies on a Lua error or on the message it returns. */
static inline void fuzz_lua_check(lua_State *L, int ref, const uint8_t *data, size_t size, const char *what)
{
  lua_pushcfunction(L, fuzz_lua_traceback);
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  lua_pushlstring(L, (const char *)data, size);
  if (lua_pcall(L, 1, 1, -3) != LUA_OK) fuzz_lua_die(L, what);
  if (!lua_isnil(L, -1)) fuzz_lua_die(L, what);
  lua_pop(L, 2);
}

#endif
