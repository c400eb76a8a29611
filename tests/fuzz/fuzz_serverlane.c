/* fuzz_serverlane.c: the server lane's check of a host's tool arguments (serverlane_args_ok in
 * core/serverlane.c) on arbitrary bytes, against Lua: whenever the check lets the lane take the
 * arguments, serverlane_check.lua must find that the server's Lua would have sent agentd the same
 * call (they decode to an object without nulls that the tool's inputSchema accepts). Byte 0 picks
 * the tool (reasonix_list, reasonix_poll, reasonix_watch or reasonix_send, compiled by
 * lua/rmcp/server/lane.lua), the rest is the arguments text. */
#include "fuzz_lua.h"
#include "serverlane.h"

#define TOOLS 4

/* libFuzzer entry: one arguments text through the check; a taken one goes to the checker with the
 * tool's number. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static lua_State *L;
  static int ref;
  static lane_tool tools[TOOLS];
  if (L == NULL) {
    L = fuzz_lua_open("serverlane_check.lua", &ref, 1);
    lua_sethook(L, NULL, 0, 0);
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
    lua_call(L, 0, TOOLS); /* called without a text: the entries of the tools */
    for (int i = 0; i < TOOLS; i++) {
      lua_pushvalue(L, -TOOLS + i);
      serverlane_tool_read(L, &tools[i]);
      lua_pop(L, 1);
    }
    lua_pop(L, TOOLS);
    lua_sethook(L, fuzz_lua_hook, LUA_MASKLINE, 0);
  }
  if (size < 1) return 0;
  int which = data[0] % TOOLS;
  const char *args = (const char *)data + 1;
  if (!serverlane_args_ok(&tools[which], args, size - 1)) return 0;
  lua_pushcfunction(L, fuzz_lua_traceback);
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  lua_pushlstring(L, args, size - 1);
  lua_pushinteger(L, which + 1);
  if (lua_pcall(L, 2, 1, -4) != LUA_OK) fuzz_lua_die(L, "fuzz_serverlane");
  if (!lua_isnil(L, -1)) fuzz_lua_die(L, "fuzz_serverlane");
  lua_pop(L, 2);
  return 0;
}
