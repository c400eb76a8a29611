/* fuzz_rpc.c: the MCP server's JSON-RPC dispatch (server/mcp.lua, lib/jsonrpc.lua) on arbitrary
 * lines, with a scripted agentd link; the checks are in rpc_check.lua. The C modules the Lua side
 * requires come from the core library as they are (no uv loop runs: nothing asynchronous fires). */
#include <stdlib.h>

#include "fuzz_lua.h"

/* libFuzzer entry: one input through rpc_check.lua, in a state built once. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static lua_State *L;
  static int ref;
  if (L == NULL) {
    /* no user policy may change what is fuzzed */
    setenv("REASONIX_MCP_POLICY_PATH", "/nonexistent/rmcp-fuzz-policy", 1);
    L = fuzz_lua_open("rpc_check.lua", &ref, 1);
  }
  fuzz_lua_check(L, ref, data, size, "fuzz_rpc");
  return 0;
}
