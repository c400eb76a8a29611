/* serverlane.c: rmcp.serverlane, the MCP server's hot path (lua/rmcp/server/lane.lua opens and
 * closes it). A host's tools/call of a tool that only passes its arguments to agentd goes from the
 * server's stdin to agentd as a request of the lane's own (ids from LANE_FIRST_ID up, above any the
 * agentd client makes), and agentd's raw result comes back to the host as the CallToolResult
 * server/tool_view.lua makes of it, without entering Lua; a ping is answered here too, while the
 * lane is open. A host line is taken only when nothing could make Lua act otherwise:
 * fastlane_scan's request (a _meta only of members Lua ignores, such as a host's own call id, or a
 * progressToken for a tool that does not block; no threadId), method tools/call, a tool of the
 * table Lua gave, an id in flight nowhere, arguments an object whose members pass the checks Lua
 * compiled from the tool's inputSchema (anything the checks do not know goes to Lua, which gives
 * its own answer); only while no gate is behind, and no reload event is queued and the reload
 * check's window is open, or Lua's check (on_window) made it so. Any answer but a raw result, and
 * every call in flight when Lua closes the lane, is handed to Lua (on_adopt, close), which then
 * ends it as one of its own. */
#include <lauxlib.h>
#include <poll.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "channel_lua.h"
#include "fastlane.h"
#include "json.h"
#include "lua_host.h"
#include "modules.h"
#include "serverlane.h"

#define SERVERLANE_MT "rmcp.serverlane"
#define LANE_FIRST_ID 1099511627776LL /* 2^40: the agentd client counts up from 1 */

typedef struct {
  int64_t host_id, aid;
  int tool;
  char *args;         /* the arguments' text, or NULL when absent */
  size_t args_len;
} lane_call;

typedef struct {
  lua_State *L;
  lchannel_t *host;     /* the server's stdout */
  lchannel_t *agentd;   /* the agentd link's channel while open, else NULL */
  int host_ref, agentd_ref, peer_ref, by_key_ref, on_settle, on_adopt, on_window;
  lane_tool *tools;
  int ntools;
  unsigned tools_epoch;  /* counts set_tools */
  int structured;       /* protocol >= 2025-06-18: structuredContent too */
  char *key_prefix;     /* "<launcher pid>/n:" of the receipts' keys, or NULL */
  int confirm;
  int watch_fd;         /* the reload queue's fd (an event closes the window), or -1 */
  uint64_t until_ns;    /* the reload check's window ends (uv_hrtime) */
  lua_Integer max_in_flight;
  int64_t next_aid;
  lane_call *calls;
  size_t n, cap;
  lua_Integer taken;
  char *buf;
  size_t bufcap;
} serverlane_t;

/* ---- the tool table ---- */

/* Frees what serverlane_tool_read allocated for t (serverlane.h). */
void serverlane_tool_free(lane_tool *t)
{
  for (int j = 0; j < t->nprops; j++) {
    for (int k = 0; k < t->props[j].nenums; k++) free(t->props[j].enums[k]);
    free(t->props[j].enums);
    free(t->props[j].name);
  }
  free(t->props);
  free(t->name);
  free(t->method);
  memset(t, 0, sizeof *t);
}

/* Frees the tool table. */
static void tools_free(serverlane_t *s)
{
  for (int i = 0; i < s->ntools; i++) serverlane_tool_free(&s->tools[i]);
  free(s->tools);
  s->tools = NULL;
  s->ntools = 0;
}

/* A copy of the string field k of the table at idx (raises when it is not a string). */
static char *dup_field(lua_State *L, int idx, const char *k)
{
  lua_getfield(L, idx, k);
  const char *v = luaL_checkstring(L, -1);
  char *copy = strdup(v);
  lua_pop(L, 1);
  if (!copy) luaL_error(L, "serverlane: out of memory");
  return copy;
}

/* Reads one property {name, kind, required?, enum?, minimum?, maximum?, min_items?, nonempty?} at
 * the top of the stack. */
static void read_prop(lua_State *L, lane_prop *p)
{
  int t = lua_gettop(L);
  p->name = dup_field(L, t, "name");
  lua_getfield(L, t, "kind");
  const char *kind = luaL_checkstring(L, -1);
  p->kind = strcmp(kind, "string") == 0 ? LANE_STRING : strcmp(kind, "boolean") == 0 ? LANE_BOOLEAN
          : strcmp(kind, "integer") == 0 ? LANE_INTEGER : strcmp(kind, "strings") == 0 ? LANE_STRINGS : LANE_LUA;
  lua_pop(L, 1);
  p->required = lua_toboolean(L, (lua_getfield(L, t, "required"), -1));
  lua_pop(L, 1);
  if (lua_getfield(L, t, "minimum") == LUA_TNUMBER) p->has_min = 1, p->min = lua_tonumber(L, -1);
  if (lua_getfield(L, t, "maximum") == LUA_TNUMBER) p->has_max = 1, p->max = lua_tonumber(L, -1);
  if (lua_getfield(L, t, "min_items") == LUA_TNUMBER) p->has_min = 1, p->min = lua_tonumber(L, -1);
  p->nonempty = lua_toboolean(L, (lua_getfield(L, t, "nonempty"), -1));
  lua_pop(L, 4);
  if (lua_getfield(L, t, "enum") == LUA_TTABLE) {
    int n = (int)lua_rawlen(L, -1);
    p->enums = calloc((size_t)n + 1, sizeof *p->enums);
    if (!p->enums) luaL_error(L, "serverlane: out of memory");
    for (int i = 1; i <= n; i++) {
      lua_rawgeti(L, -1, i);
      p->enums[p->nenums] = strdup(luaL_checkstring(L, -1));
      if (!p->enums[p->nenums++]) luaL_error(L, "serverlane: out of memory");
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
}

/* Reads the tool entry {name, method, keep, blocking, props = {{name, kind, ...}}} at the top of
 * L's stack into t (serverlane.h; zeroed first); raises on a malformed one (what t holds is then
 * freeable). */
void serverlane_tool_read(lua_State *L, lane_tool *t)
{
  int top = lua_gettop(L);
  memset(t, 0, sizeof *t);
  t->name = dup_field(L, top, "name");
  t->method = dup_field(L, top, "method");
  t->keep = lua_toboolean(L, (lua_getfield(L, top, "keep"), -1));
  t->blocking = lua_toboolean(L, (lua_getfield(L, top, "blocking"), -1));
  lua_pop(L, 2);
  lua_getfield(L, top, "props");
  int np = (int)lua_rawlen(L, -1);
  if (np > SERVERLANE_MAX_PROPS) luaL_error(L, "serverlane: tool %s has over %d properties", t->name, SERVERLANE_MAX_PROPS);
  t->props = calloc((size_t)np + 1, sizeof *t->props);
  if (!t->props) luaL_error(L, "serverlane: out of memory");
  for (int j = 1; j <= np; j++) {
    lua_rawgeti(L, -1, j);
    read_prop(L, &t->props[t->nprops++]);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

/* lane:set_tools{{name, method, keep, blocking, props = {{name, kind, ...}}}}: the tools the lane may take
 * (only while it has no call in flight: a call names its tool by index). */
static int lane_set_tools(lua_State *L)
{
  serverlane_t *s = luaL_checkudata(L, 1, SERVERLANE_MT);
  luaL_checktype(L, 2, LUA_TTABLE);
  if (s->n) return luaL_error(L, "serverlane: set_tools with calls in flight");
  tools_free(s);
  s->tools_epoch++;
  int n = (int)lua_rawlen(L, 2);
  s->tools = calloc((size_t)n + 1, sizeof *s->tools);
  if (!s->tools) return luaL_error(L, "serverlane: out of memory");
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, 2, i);
    serverlane_tool_read(L, &s->tools[s->ntools++]);
    lua_pop(L, 1);
  }
  return 0;
}

/* ---- the arguments' check ---- */

typedef struct {
  const lane_tool *tool;
  uint32_t seen;
} args_check;

/* True when the JSON array [v, vend) (checked by the scanner) holds only strings, at least min. */
static int string_array(const char *v, const char *vend, double min)
{
  const char *p = v + 1;
  double n = 0;
  for (;;) {
    while (p < vend && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' || *p == ',')) p++;
    if (p >= vend || *p == ']') return n >= min;
    if (*p != '"') return 0;
    for (p++; p < vend && *p != '"'; p++)
      if (*p == '\\') p++;
    p++;
    n++;
  }
}

/* fastlane_members callback of the arguments: each member is a known property, once, whose value
 * passes its check; anything else stops the walk (the line goes to Lua). */
static int arg_member(const char *k, size_t n, const char *v, const char *vend, void *ctx)
{
  args_check *c = ctx;
  for (const char *q = v; q < vend; q++)
    if ((unsigned char)*q >= 0x80) return 0; /* Lua writes invalid UTF-8 otherwise than it came */
  for (int i = 0; i < c->tool->nprops; i++) {
    const lane_prop *p = &c->tool->props[i];
    if (strlen(p->name) != n || memcmp(p->name, k, n) != 0) continue;
    if (c->seen & (1u << i)) return 0; /* a repeated key: cjson keeps the last */
    c->seen |= 1u << i;
    int64_t iv;
    size_t len = (size_t)(vend - v);
    switch (p->kind) {
    case LANE_STRING:
      if (*v != '"') return 0;
      if (p->nonempty && len <= 2) return 0; /* "": any other string has a character, escaped or not */
      if (!p->nenums) return 1;
      for (int j = 0; j < p->nenums; j++)
        if (strlen(p->enums[j]) == len - 2 && memcmp(p->enums[j], v + 1, len - 2) == 0) return 1;
      return 0; /* (an escaped spelling of an allowed value goes to Lua too) */
    case LANE_BOOLEAN:
      return (len == 4 && memcmp(v, "true", 4) == 0) || (len == 5 && memcmp(v, "false", 5) == 0);
    case LANE_INTEGER:
      if (!fastlane_parse_id(v, vend, &iv)) return 0; /* no fraction nor exponent */
      if (p->has_min && (double)iv < p->min) return 0;
      if (p->has_max && (double)iv > p->max) return 0;
      return 1;
    case LANE_STRINGS:
      return *v == '[' && string_array(v, vend, p->has_min ? p->min : 0);
    default:
      return 0;
    }
  }
  return 0;
}

/* True when the arguments text (NULL: absent) passes tool's checks (serverlane.h). */
int serverlane_args_ok(const lane_tool *tool, const char *args, size_t len)
{
  args_check c = {tool, 0};
  if (args) {
    const char *e = args + len, *end = fastlane_members(args, e, arg_member, &c);
    while (end && end < e && (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')) end++;
    if (end != e) return 0; /* (the scanner's span is one value; anything after it is not ours) */
  }
  for (int i = 0; i < tool->nprops; i++)
    if (tool->props[i].required && !(c.seen & (1u << i))) return 0;
  return 1;
}

/* ---- the calls in flight ---- */

/* Index of the call of host id (host) or agentd id (!host), or -1. */
static long call_find(const serverlane_t *s, int64_t id, int host)
{
  for (size_t i = 0; i < s->n; i++)
    if ((host ? s->calls[i].host_id : s->calls[i].aid) == id) return (long)i;
  return -1;
}

/* Removes call i, keeping the order of the rest. */
static void call_remove(serverlane_t *s, size_t i)
{
  free(s->calls[i].args);
  memmove(&s->calls[i], &s->calls[i + 1], (s->n - i - 1) * sizeof *s->calls);
  s->n--;
}

/* Room for need bytes in the scratch buffer; 0 when out of memory. */
static int buf_reserve(serverlane_t *s, size_t need)
{
  if (need <= s->bufcap) return 1;
  size_t cap = s->bufcap ? s->bufcap : 4096;
  while (cap < need) cap *= 2;
  char *b = realloc(s->buf, cap);
  if (!b) return 0;
  s->buf = b;
  s->bufcap = cap;
  return 1;
}

/* The requests of the host in flight in Lua (its peer's unanswered_n). */
static lua_Integer lua_unanswered(serverlane_t *s)
{
  lua_rawgeti(s->L, LUA_REGISTRYINDEX, s->peer_ref);
  lua_getfield(s->L, -1, "unanswered_n");
  lua_Integer n = lua_tointeger(s->L, -1);
  lua_pop(s->L, 2);
  return n;
}

/* True when Lua has a tool call of host id in flight (server/calls.lua by_key). */
static int lua_holds(serverlane_t *s, int64_t id)
{
  lua_rawgeti(s->L, LUA_REGISTRYINDEX, s->by_key_ref);
  int t = lua_rawgeti(s->L, -1, (lua_Integer)id);
  lua_pop(s->L, 2);
  return t != LUA_TNIL;
}

/* True while the reload check would skip its stats: its window is open and its queue is empty. */
static int reload_quiet(const serverlane_t *s)
{
  if (uv_hrtime() >= s->until_ns) return 0;
  if (s->watch_fd < 0) return 1;
  struct pollfd pfd = {s->watch_fd, POLLIN, 0};
  return poll(&pfd, 1, 0) == 0;
}

/* Calls Lua's on_settle (the server's gates look again). */
static void settle_hook(serverlane_t *s)
{
  lua_host_call_ref(s->L, s->on_settle, 0);
}

/* Writes agentd the request of call c (params: its arguments, with a kept answer's receipt key and
 * confirm spliced in as server/receipts.lua :ask adds them); returns channel_write's result. */
static int write_request(serverlane_t *s, channel_t *to, const lane_call *c)
{
  const lane_tool *t = &s->tools[c->tool];
  char receipt[160] = "";
  if (t->keep && s->key_prefix)
    snprintf(receipt, sizeof receipt, "\"delivery_key\":\"%s%lld\"%s", s->key_prefix, (long long)c->host_id,
             s->confirm ? ",\"confirm\":true" : "");
  size_t need = c->args_len + strlen(t->method) + strlen(receipt) + 96;
  if (!buf_reserve(s, need)) return UV_ENOMEM;
  char *o = s->buf;
  o += sprintf(o, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"%s\",\"params\":", (long long)c->aid, t->method);
  const char *a = c->args ? c->args : "{}";
  size_t alen = c->args ? c->args_len : 2;
  if (!receipt[0]) {
    memcpy(o, a, alen);
    o += alen;
  } else {
    /* the object without its closing brace, then the receipt's members */
    size_t body = alen - 1;
    int empty = 1;
    for (size_t i = 1; i < body; i++)
      if (a[i] != ' ' && a[i] != '\t' && a[i] != '\r' && a[i] != '\n') empty = 0;
    memcpy(o, a, body);
    o += body;
    if (!empty) *o++ = ',';
    o += sprintf(o, "%s}", receipt);
  }
  *o++ = '}';
  return channel_write(to, s->buf, (size_t)(o - s->buf));
}

/* Answers a host's ping as server/mcp.lua does (an empty result); 1 when written, 0 leaves it to Lua. */
static int answer_ping(serverlane_t *s, channel_t *host, int64_t id)
{
  char reply[64];
  int n = snprintf(reply, sizeof reply, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{}}", (long long)id);
  (void)s;
  return channel_write(host, reply, (size_t)n) < 0 ? 0 : 1;
}

/* Server stdin filter: takes a ping, and a tools/call of a lane tool (see the head of this file). */
static int lane_host_line(void *data, int tag, const char *line, size_t len)
{
  (void)tag;
  serverlane_t *s = data;
  fastlane_request r;
  channel_t *to = channel_lua_ready(s->agentd);
  channel_t *host = channel_lua_ready(s->host);
  if (!to || !host) return 0;
  if (!fastlane_scan(line, len, &r)) return 0;
  if (r.method_len == 4 && memcmp(r.method, "ping", 4) == 0)
    return r.meta == FASTLANE_META_NONE && answer_ping(s, host, r.id); /* (a ping with _meta: Lua's) */
  if (!r.name) return 0;
  if (r.method_len != 10 || memcmp(r.method, "tools/call", 10) != 0) return 0;
  int tool = -1;
  for (int i = 0; i < s->ntools && tool < 0; i++)
    if (strlen(s->tools[i].name) == r.name_len && memcmp(s->tools[i].name, r.name, r.name_len) == 0) tool = i;
  if (tool < 0) return 0;
  if (r.meta == FASTLANE_META_PROGRESS && s->tools[tool].blocking) return 0;
  if (r.thread) return 0; /* a conversation's orchestrator: its own link, Lua's */
  if (r.args && *r.args != '{') return 0;
  if (!serverlane_args_ok(&s->tools[tool], r.args, r.args_len)) return 0;
  if (call_find(s, r.id, 1) >= 0 || lua_holds(s, r.id)) return 0;
  if ((lua_Integer)s->n + lua_unanswered(s) + 1 >= s->max_in_flight) return 0;
  if (!reload_quiet(s)) {
    /* the window closed or an event is queued: Lua runs the reload check the call would have run
     * (on_window) and opens the lane again if nothing changed; a new tool table leaves it to Lua */
    unsigned epoch = s->tools_epoch;
    lua_host_call_ref(s->L, s->on_window, 0);
    to = channel_lua_ready(s->agentd);
    if (!to || s->tools_epoch != epoch || !reload_quiet(s)) return 0;
  }
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 16;
    lane_call *c = realloc(s->calls, cap * sizeof *c);
    if (!c) return 0;
    s->calls = c;
    s->cap = cap;
  }
  lane_call c = {r.id, s->next_aid, tool, NULL, r.args_len};
  if (r.args && !(c.args = malloc(r.args_len))) return 0;
  if (r.args) memcpy(c.args, r.args, r.args_len);
  if (write_request(s, to, &c) < 0) {
    /* refused outright (agentd is gone, its EOF not read yet): Lua sends it, on a new connection */
    free(c.args);
    return 0;
  }
  s->calls[s->n++] = c;
  s->next_aid++;
  s->taken++;
  if (channel_queued(to) >= CHANNEL_HIGH_WATER || (lua_Integer)s->n + lua_unanswered(s) + 1 >= s->max_in_flight)
    settle_hook(s);
  return 1;
}

/* Pushes the table Lua adopts a call from: {id, aid, tool (its name), args (text or nil)}. */
static void push_call(lua_State *L, const serverlane_t *s, const lane_call *c)
{
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, (lua_Integer)c->host_id);
  lua_setfield(L, -2, "id");
  lua_pushinteger(L, (lua_Integer)c->aid);
  lua_setfield(L, -2, "aid");
  lua_pushstring(L, s->tools[c->tool].name);
  lua_setfield(L, -2, "tool");
  if (c->args) {
    lua_pushlstring(L, c->args, c->args_len);
    lua_setfield(L, -2, "args");
  }
}

/* Writes the host the CallToolResult of agentd's raw result [raw, raw + n) for host id, as
 * server/tool_view.lua result writes it (json.encode's key order aside: Lua's varies per process). */
static int write_result(serverlane_t *s, channel_t *host, int64_t id, const char *raw, size_t n)
{
  static const char text_head[] = ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":";
  static const char structured[] = "}],\"structuredContent\":";
  if (!buf_reserve(s, 64 + sizeof text_head + JSON_QUOTED_MAX(n) + sizeof structured + n)) return UV_ENOMEM;
  char *o = s->buf;
  o += sprintf(o, "{\"jsonrpc\":\"2.0\",\"id\":%lld", (long long)id);
  memcpy(o, text_head, sizeof text_head - 1);
  o += sizeof text_head - 1;
  o += json_quote(o, raw, n);
  if (s->structured) {
    memcpy(o, structured, sizeof structured - 1);
    o += sizeof structured - 1;
    memcpy(o, raw, n);
    o += n;
    memcpy(o, "}}", 2);
    o += 2;
  } else {
    memcpy(o, "}]}}", 4);
    o += 4;
  }
  return channel_write(host, s->buf, (size_t)(o - s->buf));
}

/* agentd link filter: the answer to a lane request goes to the host as its tool result; any other
 * answer to one (an error) is handed to Lua with its call, and the line with it. */
static int lane_agentd_line(void *data, int tag, const char *line, size_t len)
{
  static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
  static const char result[] = ",\"result\":";
  (void)tag;
  serverlane_t *s = data;
  size_t h = sizeof head - 1;
  if (!s->agentd || len <= h || memcmp(line, head, h) != 0) return 0;
  const char *p = line + h, *e = line + len, *q = p;
  while (q < e && *q >= '0' && *q <= '9') q++;
  int64_t aid;
  if (!fastlane_parse_id(p, q, &aid) || aid < LANE_FIRST_ID) return 0;
  long i = call_find(s, aid, 0);
  if (i < 0) return 0;
  channel_t *host = channel_lua_get(s->host);
  size_t rl = sizeof result - 1;
  if (!host || (size_t)(e - q) <= rl + 1 || memcmp(q, result, rl) != 0 || e[-1] != '}') {
    lane_call c = s->calls[i];
    s->calls[i].args = NULL;
    call_remove(s, (size_t)i);
    push_call(s->L, s, &c);
    free(c.args);
    lua_host_call_ref(s->L, s->on_adopt, 1);
    return 0; /* Lua reads the line as the answer to the call it adopted */
  }
  int was_full = (lua_Integer)s->n + lua_unanswered(s) >= s->max_in_flight;
  int64_t id = s->calls[i].host_id;
  call_remove(s, (size_t)i);
  write_result(s, host, id, q + rl, (size_t)(e - 1 - (q + rl)));
  if (was_full || channel_queued(host) >= CHANNEL_HIGH_WATER) settle_hook(s);
  return 1;
}

/* ---- Lua binding ---- */

/* Check arg 1 is a lane. */
static serverlane_t *lane_check(lua_State *L)
{
  return luaL_checkudata(L, 1, SERVERLANE_MT);
}

/* Drops the agentd channel (its filter and the reference to it). */
static void lane_drop_agentd(lua_State *L, serverlane_t *s)
{
  if (s->agentd) channel_lua_set_filter(s->agentd, NULL, NULL, 0);
  s->agentd = NULL;
  luaL_unref(L, LUA_REGISTRYINDEX, s->agentd_ref);
  s->agentd_ref = LUA_NOREF;
}

/* serverlane.new{host = stdout channel, input = stdin channel, peer = the host's jsonrpc peer,
 * max_in_flight = n, on_settle = fn(), on_adopt = fn(call), on_window = fn()} -> lane: sees every host
 * line first. */
static int lane_new(lua_State *L)
{
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_State *main;
  serverlane_t *s = lua_host_newobject(L, sizeof *s, SERVERLANE_MT, "rmcp.serverlane", &main);
  s->L = main;
  s->host_ref = s->agentd_ref = s->peer_ref = s->by_key_ref = s->on_settle = s->on_adopt = s->on_window = LUA_NOREF;
  s->watch_fd = -1;
  s->next_aid = LANE_FIRST_ID;
  lua_getfield(L, 1, "max_in_flight");
  s->max_in_flight = luaL_checkinteger(L, -1);
  lua_pop(L, 1);
  s->on_settle = lua_host_checkref(L, 1, "on_settle");
  s->on_adopt = lua_host_checkref(L, 1, "on_adopt");
  s->on_window = lua_host_checkref(L, 1, "on_window");
  lua_getfield(L, 1, "peer");
  luaL_checktype(L, -1, LUA_TTABLE);
  s->peer_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  s->host = channel_lua_lane_ends(L, 1, lane_host_line, s, &s->host_ref);
  /* the stdin channel holds a pointer to it: it lives as long as the process */
  lua_pushvalue(L, -1);
  luaL_ref(L, LUA_REGISTRYINDEX);
  return 1;
}

/* lane:open{agentd = the link's channel, by_key = server/calls.lua's, structured = bool,
 * key_prefix = string|nil, confirm = bool, watch_fd = fd|nil, until_ns = n}: takes calls from now
 * on (again, with what changed). */
static int lane_open(lua_State *L)
{
  serverlane_t *s = lane_check(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_getfield(L, 2, "agentd");
  lchannel_t *agentd = channel_lua_check(L, -1);
  if (agentd != s->agentd) {
    if (s->n) return luaL_error(L, "serverlane: another agentd channel with calls in flight");
    lane_drop_agentd(L, s);
    lua_pushvalue(L, -1);
    s->agentd_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    s->agentd = agentd;
    channel_lua_set_filter(agentd, lane_agentd_line, s, 0);
  }
  lua_pop(L, 1);
  lua_getfield(L, 2, "by_key");
  luaL_checktype(L, -1, LUA_TTABLE);
  luaL_unref(L, LUA_REGISTRYINDEX, s->by_key_ref);
  s->by_key_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  s->structured = lua_host_optbool(L, 2, "structured", 0);
  s->confirm = lua_host_optbool(L, 2, "confirm", 0);
  free(s->key_prefix);
  s->key_prefix = NULL;
  if (lua_getfield(L, 2, "key_prefix") == LUA_TSTRING) {
    size_t n;
    const char *k = lua_tolstring(L, -1, &n);
    if (n > 64 || strpbrk(k, "\"\\")) return luaL_error(L, "serverlane: key_prefix must be a short plain string");
    s->key_prefix = strdup(k);
  }
  lua_getfield(L, 2, "watch_fd");
  s->watch_fd = (int)luaL_optinteger(L, -1, -1);
  lua_getfield(L, 2, "until_ns");
  s->until_ns = (uint64_t)luaL_checkinteger(L, -1);
  lua_pop(L, 3);
  return 0;
}

/* lane:close() -> {{id, aid, tool, args?}, ...}: nothing is taken any more; the calls in flight,
 * in arrival order, are Lua's from now on (their answers reach the link's Lua reader). */
static int lane_close(lua_State *L)
{
  serverlane_t *s = lane_check(L);
  lane_drop_agentd(L, s);
  lua_createtable(L, (int)s->n, 0);
  for (size_t i = 0; i < s->n; i++) {
    push_call(L, s, &s->calls[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
    free(s->calls[i].args);
  }
  s->n = 0;
  return 1;
}

/* lane:is_open() */
static int lane_is_open(lua_State *L)
{
  lua_pushboolean(L, lane_check(L)->agentd != NULL);
  return 1;
}

/* lane:has(id) -> whether the lane has the call of host request id in flight */
static int lane_has(lua_State *L)
{
  serverlane_t *s = lane_check(L);
  lua_pushboolean(L, lua_isinteger(L, 2) && call_find(s, (int64_t)lua_tointeger(L, 2), 1) >= 0);
  return 1;
}

/* lane:count() -> the calls in flight */
static int lane_count(lua_State *L)
{
  lua_pushinteger(L, (lua_Integer)lane_check(L)->n);
  return 1;
}

/* lane:taken() -> the calls the lane took since the server started (tests, the log). */
static int lane_taken(lua_State *L)
{
  lua_pushinteger(L, lane_check(L)->taken);
  return 1;
}

/* __gc (at the state's close: the registry holds every lane): frees what the lane allocated. */
static int lane_gc(lua_State *L)
{
  serverlane_t *s = lane_check(L);
  for (size_t i = 0; i < s->n; i++) free(s->calls[i].args);
  free(s->calls);
  s->calls = NULL;
  s->n = s->cap = 0;
  tools_free(s);
  free(s->key_prefix);
  s->key_prefix = NULL;
  free(s->buf);
  s->buf = NULL;
  s->bufcap = 0;
  return 0;
}

/* Module loader: require "rmcp.serverlane". */
int luaopen_rmcp_serverlane(lua_State *L)
{
  static const luaL_Reg methods[] = {
    {"set_tools", lane_set_tools}, {"open", lane_open}, {"close", lane_close}, {"is_open", lane_is_open},
    {"has", lane_has}, {"count", lane_count}, {"taken", lane_taken}, {NULL, NULL},
  };
  lua_host_module(L, SERVERLANE_MT, methods, lane_gc, lane_new);
  lua_pushinteger(L, LANE_FIRST_ID);
  lua_setfield(L, -2, "FIRST_ID");
  return 1;
}
