/* fuzz_http.c: rmcp.http (core/http.c over http-parser) on arbitrary bytes; the checks are in
 * http_check.lua: feed never raises, and the requests of an input fed whole are those of the same
 * input fed in pieces. */
#include "fuzz_lua.h"

/* libFuzzer entry: one input through http_check.lua, in a state built once. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static lua_State *L;
  static int ref;
  if (L == NULL) L = fuzz_lua_open("http_check.lua", &ref, 0);
  fuzz_lua_check(L, ref, data, size, "fuzz_http");
  return 0;
}
