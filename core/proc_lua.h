/* proc_lua.h: what other bindings need of rmcp.proc: a C filter on a process's stdout lines. */
#ifndef RMCP_PROC_LUA_H
#define RMCP_PROC_LUA_H

#include <lua.h>

#include "fastlane.h"

void proc_lua_set_filter(lua_State *L, int idx, line_filter_fn fn, void *data, int tag);

#endif
