/* channel_lua.h: what other bindings need of rmcp.channel: handing a channel that C code owns (a
 * process's pipe) to Lua as a channel object, as luv hands out a process's stdio as streams. */
#ifndef RMCP_CHANNEL_LUA_H
#define RMCP_CHANNEL_LUA_H

#include <lua.h>

#include "channel.h"
#include "fastlane.h"

typedef struct lchannel lchannel_t;

lchannel_t *channel_lua_push(lua_State *L, channel_t *ch);
void channel_lua_detach(lchannel_t *u);
lchannel_t *channel_lua_check(lua_State *L, int idx);
channel_t *channel_lua_get(const lchannel_t *u);
channel_t *channel_lua_ready(const lchannel_t *u);
void channel_lua_set_filter(lchannel_t *u, line_filter_fn fn, void *data, int tag);
lchannel_t *channel_lua_lane_ends(lua_State *L, int idx, line_filter_fn fn, void *data, int *host_ref);

#endif
