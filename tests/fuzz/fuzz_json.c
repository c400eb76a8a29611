/* fuzz_json.c: rmcp.json (core/json.c over lua-cjson) on arbitrary bytes; the checks are in
 * json_check.lua: decode never raises; what decodes encodes without raising, as valid UTF-8, and
 * decodes back to the same value. */
#include "fuzz_lua.h"

/* libFuzzer entry: one input through json_check.lua, in a state built once. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static lua_State *L;
  static int ref;
  if (L == NULL) L = fuzz_lua_open("json_check.lua", &ref, 0);
  fuzz_lua_check(L, ref, data, size, "fuzz_json");
  return 0;
}
