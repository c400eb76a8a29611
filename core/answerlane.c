/* answerlane.c: rmcp.answerlane, agentd's kept answers given without Lua (lua/rmcp/agentd/answers.lua
 * decides what is kept). A connection's request {"jsonrpc":"2.0","id":N,"method":M,"params":{}}
 * whose answer Lua kept for that connection (one at a time) is answered here with the kept result
 * text, as {"jsonrpc":"2.0","id":N,"result":TEXT}: only while nothing changed since it was kept (a
 * daemon-wide epoch, answerlane.changed(), bumped by every change an answer could show), the reload
 * check's window is open and its queue empty (an edit of a module or a policy is Lua's to see
 * first), the time Lua gave has not passed, and the connection is not behind. Anything else goes
 * to Lua as before. */
#include <lauxlib.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "channel_lua.h"
#include "json.h"
#include "lua_host.h"
#include "modules.h"

#define ANSWERLANE_MT "rmcp.answerlane"

typedef struct {
  lchannel_t *ch;       /* the connection's channel (kept alive by ch_ref), NULL once closed */
  int ch_ref;
  char *method, *text;  /* the kept answer: the method it answers and its result text, or NULL */
  size_t method_len, text_len;
  uint64_t epoch;       /* the epoch it was kept in */
  int watch_fd;         /* the reload queue's fd (an event closes the window) */
  uint64_t until_ns;    /* it holds until then (uv_hrtime) */
  lua_Integer taken;
  char *buf;
  size_t bufcap;
} answerlane_t;

/* Bumped by every change a kept answer could show: an answer kept in an older epoch is stale. */
static uint64_t epoch = 1;

/* Forgets the kept answer of a. */
static void kept_drop(answerlane_t *a)
{
  free(a->method);
  free(a->text);
  a->method = a->text = NULL;
  a->method_len = a->text_len = 0;
}

/* True while the kept answer holds: its time and the reload check's window are not over, and no
 * reload event is queued. */
static int still_quiet(const answerlane_t *a)
{
  if (uv_hrtime() >= a->until_ns) return 0;
  struct pollfd pfd = {a->watch_fd, POLLIN, 0};
  return poll(&pfd, 1, 0) == 0;
}

/* The channel's line filter (fastlane.h): answers a request with params {} of the kept answer's
 * method from it, in the epoch it was kept in; 0 (Lua's) for anything else. */
static int answer_line(void *data, int tag, const char *line, size_t len)
{
  (void)tag;
  answerlane_t *a = data;
  if (!a->method) return 0;
  json_request_t r;
  if (!json_request_head(line, len, &r) || r.params_len != 2 || r.params[0] != '{' || r.params[1] != '}') return 0;
  if (r.method_len != a->method_len || memcmp(r.method, a->method, r.method_len) != 0 || a->epoch != epoch) return 0;
  if (!still_quiet(a)) {
    kept_drop(a);
    return 0;
  }
  channel_t *ch = channel_lua_ready(a->ch);
  if (!ch) return 0;
  static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
  static const char mid[] = ",\"result\":";
  size_t need = sizeof head + r.id_len + sizeof mid + a->text_len + 1;
  if (need > a->bufcap) {
    char *b = realloc(a->buf, need);
    if (!b) return 0;
    a->buf = b;
    a->bufcap = need;
  }
  char *o = a->buf;
  memcpy(o, head, sizeof head - 1);
  o += sizeof head - 1;
  memcpy(o, r.id_text, r.id_len);
  o += r.id_len;
  memcpy(o, mid, sizeof mid - 1);
  o += sizeof mid - 1;
  memcpy(o, a->text, a->text_len);
  o += a->text_len;
  *o++ = '}';
  if (channel_write(ch, a->buf, (size_t)(o - a->buf)) != 0) return 0;
  a->taken++;
  return 1;
}

/* answerlane.new(channel) -> lane: sees each line of the connection's channel first. */
static int lane_new(lua_State *L)
{
  lchannel_t *u = channel_lua_check(L, 1);
  answerlane_t *a = lua_newuserdatauv(L, sizeof *a, 0);
  memset(a, 0, sizeof *a);
  a->watch_fd = -1;
  lua_pushvalue(L, 1);
  a->ch_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  a->ch = u;
  channel_lua_set_filter(u, answer_line, a, 0);
  luaL_setmetatable(L, ANSWERLANE_MT);
  return 1;
}

/* The lane at idx. */
static answerlane_t *lane_check(lua_State *L, int idx)
{
  return luaL_checkudata(L, idx, ANSWERLANE_MT);
}

/* lane:keep(method, text, watch_fd, until_ns): answers method's requests with params {} with result
 * text (in place of what it kept before) until until_ns (uv.hrtime()), an event on watch_fd, or the
 * next answerlane.changed(). */
static int lane_keep(lua_State *L)
{
  answerlane_t *a = lane_check(L, 1);
  size_t mlen, tlen;
  const char *m = luaL_checklstring(L, 2, &mlen);
  const char *t = luaL_checklstring(L, 3, &tlen);
  int fd = (int)luaL_checkinteger(L, 4);
  lua_Integer until = luaL_checkinteger(L, 5);
  kept_drop(a);
  if (!a->ch) return 0;
  char *method = malloc(mlen ? mlen : 1), *text = malloc(tlen ? tlen : 1);
  if (!method || !text) {
    free(method);
    free(text);
    return luaL_error(L, "answerlane: out of memory");
  }
  memcpy(method, m, mlen);
  memcpy(text, t, tlen);
  a->method = method;
  a->method_len = mlen;
  a->text = text;
  a->text_len = tlen;
  a->epoch = epoch;
  a->watch_fd = fd;
  a->until_ns = until > 0 ? (uint64_t)until : 0;
  return 0;
}

/* lane:taken() -> how many requests the lane answered. */
static int lane_taken(lua_State *L)
{
  lua_pushinteger(L, lane_check(L, 1)->taken);
  return 1;
}

/* lane:close(): forgets the kept answer and lets every line of the channel go to Lua. */
static int lane_close(lua_State *L)
{
  answerlane_t *a = lane_check(L, 1);
  kept_drop(a);
  free(a->buf);
  a->buf = NULL;
  a->bufcap = 0;
  if (a->ch) {
    channel_lua_set_filter(a->ch, NULL, NULL, 0);
    a->ch = NULL;
    luaL_unref(L, LUA_REGISTRYINDEX, a->ch_ref);
    a->ch_ref = LUA_NOREF;
  }
  return 0;
}

/* answerlane.changed(): every lane's kept answer is stale (something an answer could show changed). */
static int lane_changed(lua_State *L)
{
  (void)L;
  epoch++;
  return 0;
}

/* require "rmcp.answerlane": new, changed. */
int luaopen_rmcp_answerlane(lua_State *L)
{
  static const luaL_Reg methods[] = {
    {"keep", lane_keep}, {"taken", lane_taken}, {"close", lane_close}, {NULL, NULL},
  };
  lua_host_module(L, ANSWERLANE_MT, methods, lane_close, lane_new);
  lua_pushcfunction(L, lane_changed);
  lua_setfield(L, -2, "changed");
  return 1;
}
