/* fuzz_agentd.c: agentd's socket API (agentd/api.lua over lib/jsonrpc.lua) on arbitrary lines of
 * one connection, against restored sessions; the checks are in agentd_check.lua. The daemon's home
 * is a private scratch dir that exists only while an input runs (libFuzzer ends without atexit). */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_lua.h"

static char fuzz_home[64];
static char fuzz_sessions[96];

/* nftw callback: remove one entry (depth first). */
static int fuzz_agentd_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

/* libFuzzer entry: one input through agentd_check.lua, in a state built once. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static lua_State *L;
  static int ref;
  if (L == NULL) {
    snprintf(fuzz_home, sizeof fuzz_home, "/tmp/rmcp-fuzz-agentd.XXXXXX");
    if (mkdtemp(fuzz_home) == NULL || rmdir(fuzz_home) != 0) abort();
    snprintf(fuzz_sessions, sizeof fuzz_sessions, "%s/sessions", fuzz_home);
    /* nothing may come from the user's own home, policies or agent */
    setenv("REASONIX_MCP_HOME", fuzz_home, 1);
    setenv("RMCP_FUZZ_HOME", fuzz_home, 1);
    setenv("REASONIX_MCP_POLICY_PATH", "/nonexistent/rmcp-fuzz-policy", 1);
    setenv("REASONIX_BIN", "/nonexistent/reasonix", 1);
  }
  if (mkdir(fuzz_home, 0700) != 0 || mkdir(fuzz_sessions, 0700) != 0) abort();
  if (L == NULL) L = fuzz_lua_open("agentd_check.lua", &ref, 1);
  fuzz_lua_check(L, ref, data, size, "fuzz_agentd");
  if (nftw(fuzz_home, fuzz_agentd_rm, 8, FTW_DEPTH | FTW_PHYS) != 0) abort();
  return 0;
}
