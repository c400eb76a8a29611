/* channel_lua.c: rmcp.channel, the Lua binding of channel.c: channel.open, and the channel object,
 * which either owns its channel (open) or borrows one that C code owns (channel_lua_push). */
#include <lauxlib.h>
#include <stdio.h>
#include <string.h>

#include "channel_lua.h"
#include "lua_host.h"
#include "modules.h"
#include "ndjson.h"

#define LCHANNEL_MT "rmcp.channel"

struct lchannel {
  channel_t *ch;   /* NULL once closed (or, borrowed, once its owner let go of it) */
  lua_State *L;    /* main thread */
  int borrowed;    /* C code owns ch and its callbacks: no refs, no keep-alive, no close on __gc */
  int self, on_line, on_data, on_oversize, on_eof, on_drain, on_flushed;
  line_filter_fn filter;  /* sees each line first (channel_lua_set_filter), or NULL */
  void *filter_data;
  int filter_tag;
};

/* Push the channel callback's Lua function and call it with nargs arguments. */
static void lchannel_call(channel_t *ch, int which, int nargs)
{
  lchannel_t *u = channel_data(ch);
  lua_host_call_ref(u->L, which, nargs);
}

/* on_line: one framed line. */
static void lchannel_on_line(channel_t *ch, const char *p, size_t n)
{
  lchannel_t *u = channel_data(ch);
  if (u->filter && u->filter(u->filter_data, u->filter_tag, p, n)) return;
  lua_pushlstring(u->L, p, n);
  lchannel_call(ch, u->on_line, 1);
}

/* on_data: one raw chunk. */
static void lchannel_on_data(channel_t *ch, const char *p, size_t n)
{
  lchannel_t *u = channel_data(ch);
  lua_pushlstring(u->L, p, n);
  lchannel_call(ch, u->on_data, 1);
}

/* on_oversize: a dropped line and its size. */
static void lchannel_on_oversize(channel_t *ch, size_t n)
{
  lchannel_t *u = channel_data(ch);
  lua_pushinteger(u->L, (lua_Integer)n);
  lchannel_call(ch, u->on_oversize, 1);
}

/* on_eof: nil for a clean end, an error string otherwise. */
static void lchannel_on_eof(channel_t *ch, int err)
{
  lchannel_t *u = channel_data(ch);
  if (err)
    lua_pushfstring(u->L, "%s: %s", uv_err_name(err), uv_strerror(err));
  else
    lua_pushnil(u->L);
  lchannel_call(ch, u->on_eof, 1);
}

/* on_drain: the write queue fell back under the high-water mark. */
static void lchannel_on_drain(channel_t *ch)
{
  lchannel_t *u = channel_data(ch);
  lchannel_call(ch, u->on_drain, 0);
}

/* on_flushed: the kernel took the last queued write. */
static void lchannel_on_flushed(channel_t *ch)
{
  lchannel_t *u = channel_data(ch);
  lchannel_call(ch, u->on_flushed, 0);
}

static const channel_cbs lchannel_cbs = {
  lchannel_on_line, lchannel_on_data, lchannel_on_oversize, lchannel_on_eof, lchannel_on_drain, NULL,
  lchannel_on_flushed,
};

/* Check arg 1 is a channel userdata (a method has the metatable as upvalue 1: lchannel_metatable). */
static lchannel_t *lchannel_check(lua_State *L)
{
  return lua_host_checkobject(L, 1, LCHANNEL_MT);
}

/* Check arg 1 is an open channel; raises when closed. */
static channel_t *lchannel_open_arg(lua_State *L)
{
  lchannel_t *u = lchannel_check(L);
  if (u->ch == NULL) luaL_error(L, "channel is closed");
  return u->ch;
}

/* Drop the callback refs and the keep-alive. */
static void lchannel_drop_refs(lua_State *L, lchannel_t *u)
{
  lua_host_unref(L, &u->on_line);
  lua_host_unref(L, &u->on_data);
  lua_host_unref(L, &u->on_oversize);
  lua_host_unref(L, &u->on_eof);
  lua_host_unref(L, &u->on_drain);
  lua_host_unref(L, &u->on_flushed);
  lua_host_release(L, &u->self);
}

/* Close the C channel and drop every Lua reference; idempotent. */
static void lchannel_close_ud(lua_State *L, lchannel_t *u)
{
  if (u->ch == NULL) return;
  channel_t *ch = u->ch;
  u->ch = NULL;
  channel_close(ch);
  lchannel_drop_refs(L, u);
}

/* __gc: an owned channel closes (it is only collectable once closed, or at exit); a borrowed one
 * is its owner's to close. */
static int lchannel_gc(lua_State *L)
{
  lchannel_t *u = lchannel_check(L);
  if (u->borrowed)
    u->ch = NULL;
  else
    lchannel_close_ud(L, u);
  return 0;
}

static void lchannel_metatable(lua_State *L);

/* Push a new channel object for ch (NULL: not open yet) with no callbacks. */
static lchannel_t *lchannel_new(lua_State *L, lua_State *main, channel_t *ch)
{
  lchannel_t *u = lua_newuserdatauv(L, sizeof(*u), 0);
  u->ch = ch;
  u->L = main;
  u->borrowed = 0;
  u->filter = NULL;
  u->filter_data = NULL;
  u->filter_tag = 0;
  u->self = u->on_line = u->on_data = u->on_oversize = u->on_eof = u->on_drain = u->on_flushed = LUA_NOREF;
  lchannel_metatable(L);
  lua_setmetatable(L, -2);
  return u;
}

/* Push a channel object that borrows ch: its methods work on ch, but C code owns ch and its
 * callbacks, and must call channel_lua_detach before ch goes away (the object then reads as closed;
 * close() on it closes ch, which its owner learns through on_closed). */
lchannel_t *channel_lua_push(lua_State *L, channel_t *ch)
{
  lchannel_t *u = lchannel_new(L, L, ch);
  u->borrowed = 1;
  return u;
}

/* The owner of a borrowed channel lets go of it: the object reads as closed from now on. */
void channel_lua_detach(lchannel_t *u)
{
  u->ch = NULL;
}

/* Check that the value at idx is a channel object (open or closed). */
lchannel_t *channel_lua_check(lua_State *L, int idx)
{
  return luaL_checkudata(L, idx, LCHANNEL_MT);
}

/* The channel under a channel object, or NULL once closed. */
channel_t *channel_lua_get(const lchannel_t *u)
{
  return u->ch;
}

/* The channel of a channel object that is open and not behind by the high-water mark, or NULL
 * (what the lanes write to: a channel behind is Lua's gates' to handle). */
channel_t *channel_lua_ready(const lchannel_t *u)
{
  channel_t *ch = u ? u->ch : NULL;
  return ch && channel_queued(ch) < CHANNEL_HIGH_WATER ? ch : NULL;
}

/* Lets fn see each line of an owned channel before its on_line (fastlane.h). */
void channel_lua_set_filter(lchannel_t *u, line_filter_fn fn, void *data, int tag)
{
  u->filter = fn;
  u->filter_data = data;
  u->filter_tag = tag;
}

/* Reads a lane's two ends from the options table at idx: host, the channel it writes to (kept
 * alive by a registry reference, *host_ref), and input, whose lines fn sees first (with data);
 * returns host. */
lchannel_t *channel_lua_lane_ends(lua_State *L, int idx, line_filter_fn fn, void *data, int *host_ref)
{
  lua_getfield(L, idx, "host");
  lchannel_t *host = channel_lua_check(L, -1);
  *host_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_getfield(L, idx, "input");
  channel_lua_set_filter(channel_lua_check(L, -1), fn, data, 0);
  lua_pop(L, 1);
  return host;
}

/* channel.open(fd, opts) -> channel | nil, err, code */
static int lchannel_open(lua_State *L)
{
  int fd = (int)luaL_checkinteger(L, 1);
  if (lua_isnoneornil(L, 2)) {
    lua_settop(L, 1);
    lua_newtable(L);
  }
  luaL_checktype(L, 2, LUA_TTABLE);
  channel_opts o = {0};
  lua_getfield(L, 2, "mode");
  const char *mode = luaL_optstring(L, -1, "ndjson");
  if (strcmp(mode, "raw") == 0)
    o.raw = 1;
  else if (strcmp(mode, "ndjson") != 0)
    return luaL_error(L, "mode must be \"ndjson\" or \"raw\", got \"%s\"", mode);
  lua_pop(L, 1);
  lua_getfield(L, 2, "max_line");
  lua_Integer max = luaL_optinteger(L, -1, (lua_Integer)NDJSON_DEFAULT_MAX_LINE);
  if (max <= 0) return luaL_error(L, "max_line must be positive");
  o.max_line = (size_t)max;
  lua_pop(L, 1);
  o.read = lua_host_optbool(L, 2, "read", 1);
  o.write = lua_host_optbool(L, 2, "write", 1);
  o.drop_partial = lua_host_optbool(L, 2, "drop_partial_line", 0);
  lua_host_t *h = lua_host_get(L);
  if (h == NULL) return luaL_error(L, "rmcp.channel needs the reasonix-mcp host");

  lchannel_t *u = lchannel_new(L, h->L, NULL);
  u->on_line = lua_host_checkref(L, 2, "on_line");
  u->on_data = lua_host_checkref(L, 2, "on_data");
  u->on_oversize = lua_host_checkref(L, 2, "on_oversize");
  u->on_eof = lua_host_checkref(L, 2, "on_eof");
  u->on_drain = lua_host_checkref(L, 2, "on_drain");
  u->on_flushed = lua_host_checkref(L, 2, "on_flushed");
  o.cbs = &lchannel_cbs;
  o.data = u;
  char what[32];
  snprintf(what, sizeof(what), "fd %d", fd);
  int r = channel_open(h->loop, fd, &o, &u->ch);
  if (r < 0) {
    u->ch = NULL;
    lchannel_drop_refs(L, u);
    return lua_host_fail(L, r, what);
  }
  u->self = lua_host_retain(L, -1);
  return 1;
}

/* ch:write(data) -> queued bytes | nil, err, code */
static int lchannel_write(lua_State *L)
{
  lchannel_t *u = lchannel_check(L);
  size_t n;
  const char *p = luaL_checklstring(L, 2, &n);
  if (u->ch == NULL) return lua_host_fail(L, UV_EPIPE, "channel is closed");
  if (!channel_is_raw(u->ch) && memchr(p, '\n', n)) return luaL_error(L, "ndjson line contains a newline");
  int r = channel_write(u->ch, p, n);
  if (r == UV_EBADF) return luaL_error(L, "channel was opened with write = false");
  if (r < 0) return lua_host_fail(L, r, "write");
  lua_pushinteger(L, (lua_Integer)channel_queued(u->ch));
  return 1;
}

/* ch:queued() -> bytes not yet written */
static int lchannel_queued(lua_State *L)
{
  lchannel_t *u = lchannel_check(L);
  lua_pushinteger(L, u->ch ? (lua_Integer)channel_queued(u->ch) : 0);
  return 1;
}

/* ch:pause() */
static int lchannel_pause(lua_State *L)
{
  channel_pause(lchannel_open_arg(L));
  return 0;
}

/* ch:resume() */
static int lchannel_resume(lua_State *L)
{
  channel_resume(lchannel_open_arg(L));
  return 0;
}

/* ch:shutdown() -> true | nil, err, code */
static int lchannel_shutdown(lua_State *L)
{
  lchannel_t *u = lchannel_check(L);
  if (u->ch == NULL) return lua_host_fail(L, UV_EPIPE, "channel is closed");
  int r = channel_shutdown(u->ch);
  if (r < 0) return lua_host_fail(L, r, "shutdown");
  lua_pushboolean(L, 1);
  return 1;
}

/* ch:close(): idempotent, no callbacks after it. */
static int lchannel_close(lua_State *L)
{
  lchannel_close_ud(L, lchannel_check(L));
  return 0;
}

/* ch:is_closed() */
static int lchannel_is_closed(lua_State *L)
{
  lua_pushboolean(L, lchannel_check(L)->ch == NULL);
  return 1;
}

/* ch:fileno() -> fd | nil, err, code: the fd under the channel (still the channel's), e.g. to hand
 * it to a successor image. */
static int lchannel_fileno(lua_State *L)
{
  lchannel_t *u = lchannel_check(L);
  int fd = u->ch ? channel_fileno(u->ch) : -1;
  if (fd < 0) return lua_host_fail(L, UV_EBADF, "channel is closed");
  lua_pushinteger(L, fd);
  return 1;
}

/* ch:buffered() -> bytes read but not delivered yet (a partial line); 0 once closed. */
static int lchannel_buffered(lua_State *L)
{
  lchannel_t *u = lchannel_check(L);
  lua_pushinteger(L, u->ch ? (lua_Integer)channel_buffered(u->ch) : 0);
  return 1;
}

/* Host teardown, first pass: keep flushing queued writes, or close. */
static int lchannel_teardown(lua_State *L)
{
  lchannel_t *u = lchannel_check(L);
  if (u->ch && channel_teardown(u->ch) == 0) {
    u->ch = NULL;
    lchannel_drop_refs(L, u);
  }
  return 0;
}

/* __tostring */
static int lchannel_tostring(lua_State *L)
{
  lchannel_t *u = lchannel_check(L);
  lua_pushfstring(L, "rmcp.channel: %p%s", (void *)u, u->ch ? "" : " (closed)");
  return 1;
}

/* Push the channel metatable, creating it on first use (a borrowed channel may be handed out
 * before anyone requires rmcp.channel). */
static void lchannel_metatable(lua_State *L)
{
  static const luaL_Reg methods[] = {
    {"write", lchannel_write}, {"queued", lchannel_queued}, {"pause", lchannel_pause},
    {"resume", lchannel_resume}, {"shutdown", lchannel_shutdown}, {"close", lchannel_close},
    {"is_closed", lchannel_is_closed}, {"fileno", lchannel_fileno}, {"buffered", lchannel_buffered},
    {NULL, NULL},
  };
  static const luaL_Reg meta[] = {
    {"__gc", lchannel_gc}, {"__close", lchannel_close}, {"__tostring", lchannel_tostring},
    {LUA_HOST_TEARDOWN, lchannel_teardown}, {LUA_HOST_CLOSE, lchannel_close}, {NULL, NULL},
  };
  if (luaL_newmetatable(L, LCHANNEL_MT)) {
    luaL_setfuncs(L, meta, 0);
    lua_newtable(L);
    lua_pushvalue(L, -2); /* (each method's upvalue: the metatable, for lchannel_check) */
    luaL_setfuncs(L, methods, 1);
    lua_setfield(L, -2, "__index");
  }
}

/* Module loader: require "rmcp.channel". */
int luaopen_rmcp_channel(lua_State *L)
{
  lchannel_metatable(L);
  lua_pop(L, 1);
  lua_newtable(L);
  lua_pushcfunction(L, lchannel_open);
  lua_setfield(L, -2, "open");
  lua_pushinteger(L, (lua_Integer)CHANNEL_HIGH_WATER);
  lua_setfield(L, -2, "HIGH_WATER");
  return 1;
}
