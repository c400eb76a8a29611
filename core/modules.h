/* modules.h: the rmcp.* Lua modules of the core, one luaopen_rmcp_<module> each (the binding is
 * <module>_lua.c, or the end of <module>.c); main.c hands them to the host as preloads. */
#ifndef RMCP_MODULES_H
#define RMCP_MODULES_H

#include <lua.h>

int luaopen_rmcp_channel(lua_State *L);
int luaopen_rmcp_proc(lua_State *L);
int luaopen_rmcp_sock(lua_State *L);
int luaopen_rmcp_sys(lua_State *L);
int luaopen_rmcp_fswatch(lua_State *L);
int luaopen_rmcp_json(lua_State *L);
int luaopen_rmcp_http(lua_State *L);
int luaopen_rmcp_relay(lua_State *L);
int luaopen_rmcp_fastlane(lua_State *L);
int luaopen_rmcp_serverlane(lua_State *L);
int luaopen_rmcp_answerlane(lua_State *L);

#endif
