/* channel_lua.h: what other bindings need of rmcp.channel: handing a channel that C code owns (a
 * process's pipe) to Lua as a channel object, as luv hands out a process's stdio as streams. */
#ifndef RMCP_CHANNEL_LUA_H
#define RMCP_CHANNEL_LUA_H

#include <lua.h>

#include "channel.h"

typedef struct lchannel lchannel_t;

lchannel_t *channel_lua_push(lua_State *L, channel_t *ch);
void channel_lua_detach(lchannel_t *u);

#endif
