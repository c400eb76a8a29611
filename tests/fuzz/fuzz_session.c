/* fuzz_session.c: arbitrary bytes as a session file through agentd's loader and repair
 * (agentd/store.lua, agentd/session/state.lua); the checks are in session_check.lua. The file lives
 * in a private scratch dir that exists only while an input runs (libFuzzer ends without atexit). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_lua.h"

static char fuzz_home[64];
static char fuzz_sessions[96];

/* Removes the scratch dir after an input (the one file in it and the dir itself). */
static void fuzz_session_cleanup(void)
{
  char path[160];
  snprintf(path, sizeof path, "%s/rx-fuzz.json", fuzz_sessions);
  unlink(path);
  rmdir(fuzz_sessions);
  rmdir(fuzz_home);
}

/* libFuzzer entry: one input through session_check.lua, in a state built once. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static lua_State *L;
  static int ref;
  if (L == NULL) {
    snprintf(fuzz_home, sizeof fuzz_home, "/tmp/rmcp-fuzz-session.XXXXXX");
    if (mkdtemp(fuzz_home) == NULL || rmdir(fuzz_home) != 0) abort();
    snprintf(fuzz_sessions, sizeof fuzz_sessions, "%s/sessions", fuzz_home);
    /* nothing the loader reads may come from the user's own home */
    setenv("REASONIX_MCP_HOME", fuzz_home, 1);
    setenv("REASONIX_MCP_POLICY_PATH", "/nonexistent/rmcp-fuzz-policy", 1);
    setenv("RMCP_FUZZ_SESSIONS", fuzz_sessions, 1);
  }
  if (mkdir(fuzz_home, 0700) != 0 || mkdir(fuzz_sessions, 0700) != 0) abort();
  if (L == NULL) L = fuzz_lua_open("session_check.lua", &ref, 1);
  fuzz_lua_check(L, ref, data, size, "fuzz_session");
  fuzz_session_cleanup();
  return 0;
}
