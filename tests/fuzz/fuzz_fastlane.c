/* fuzz_fastlane.c: the launcher's fast-path scanner (fastlane_scan in core/fastlane.c) on
 * arbitrary bytes, against cjson: whenever the scanner lets the lane take a line, fastlane_check.lua
 * must find it decodes (rmcp.json) to the request the scanner saw. */
#include "fastlane.h"
#include "fuzz_lua.h"

/* libFuzzer entry: one input through the scanner; a line it takes goes to fastlane_check.lua with
 * what the scanner extracted (text, kind, id, method, name or nil, the kind of its _meta, its
 * integer progress token when the launcher's lane would keep it, else nil, and whether a _meta has
 * a threadId). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static lua_State *L;
  static int ref;
  if (L == NULL) L = fuzz_lua_open("fastlane_check.lua", &ref, 0);
  fastlane_request r;
  int kind = fastlane_scan((const char *)data, size, &r);
  if (!kind) return 0;
  lua_pushcfunction(L, fuzz_lua_traceback);
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  lua_pushlstring(L, (const char *)data, size);
  lua_pushinteger(L, kind);
  lua_pushinteger(L, (lua_Integer)r.id);
  lua_pushlstring(L, r.method, r.method_len);
  if (r.name)
    lua_pushlstring(L, r.name, r.name_len);
  else
    lua_pushnil(L);
  lua_pushinteger(L, r.meta);
  if (r.meta == FASTLANE_META_PROGRESS && r.meta_plain)
    lua_pushinteger(L, (lua_Integer)r.token);
  else
    lua_pushnil(L);
  lua_pushboolean(L, r.thread);
  if (lua_pcall(L, 8, 1, -10) != LUA_OK) fuzz_lua_die(L, "fuzz_fastlane");
  if (!lua_isnil(L, -1)) fuzz_lua_die(L, "fuzz_fastlane");
  lua_pop(L, 2);
  return 0;
}
