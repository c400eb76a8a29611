/* fastlane.c: rmcp.fastlane, the launcher's hot path (see fastlane.h). Lua opens the lane on the
 * active server when nothing waits for one, and closes it before it looks at the requests in
 * flight (a crash, a swap, a cancel, a stop): closing hands back the requests the lane relayed,
 * which Lua then owns like any other. A host line is taken only when nothing could make the Lua
 * path act otherwise: a top-level object with "jsonrpc":"2.0", an integer id not in flight, the
 * method ping, tools/list or tools/call (with a plain params.name), and no _meta or one whose
 * progress token the lane can keep (one plain integer, one _meta) and whose threadId no receipt
 * needs (not a watch's or poll's); and only while no peer is behind (the launcher's back-pressure
 * gates, config.lua). The receipt of a watch or poll answer stays Lua's: on_receipt hears of each
 * such request as it goes out and of its answer. */
#include <lauxlib.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "channel_lua.h"
#include "fastlane.h"
#include "lua_host.h"
#include "modules.h"
#include "proc_lua.h"

#define FASTLANE_MT "rmcp.fastlane"

typedef struct {
  int64_t id;
  lua_Integer seq;
  char *line;    /* the host's line: Lua needs it back when the lane closes; NULL for a held id */
  size_t len;
  int receipt;   /* a tool of receipt_tools: its answer has a receipt */
  int has_token; /* its _meta.progressToken, the integer token: the server's progress for it passes */
  int64_t token;
} lane_entry;

typedef struct {
  lua_State *L;
  lchannel_t *host;      /* the launcher's stdout */
  lchannel_t *target;    /* the active server's stdin while open, else NULL */
  int host_ref, target_ref, on_settle, on_receipt;
  int target_tag;
  lua_Integer seq;       /* arrival order, shared with Lua's ledger */
  lua_Integer max_in_flight;
  lua_Integer lua_pending; /* host requests in flight in Lua's ledger */
  lane_entry *e;         /* the lane's requests (line != NULL) and the integer ids Lua holds */
  size_t n, cap, fast;
} fastlane_t;

/* The tools whose answers have a receipt (launcher/wire.lua RECEIPT_TOOLS). */
static const char *const receipt_tools[] = {"reasonix_watch", "reasonix_poll", NULL};

/* ---- a JSON scanner that locates members without decoding ---- */

/* After the whitespace at p. */
static const char *ws(const char *p, const char *e)
{
  while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
  return p;
}

/* Nesting the scanner follows; a deeper line goes to Lua (cjson decodes up to 1,000 levels). */
#define SCAN_MAX_DEPTH 64

/* After the four hex digits at p as a code unit in *u, or NULL. */
static const char *hex4(const char *p, const char *e, unsigned *u)
{
  *u = 0;
  for (int i = 0; i < 4; i++, p++) {
    if (p >= e || !strchr("0123456789abcdefABCDEF", *p) || *p == '\0') return NULL;
    *u = *u * 16 + (unsigned)(*p <= '9' ? *p - '0' : (*p | 0x20) - 'a' + 10);
  }
  return p;
}

/* After the string whose opening quote is at p, or NULL when cjson would refuse it (a control
 * character, an unknown escape, a lone surrogate); *esc tells whether it has escapes. */
static const char *skip_string(const char *p, const char *e, int *esc)
{
  unsigned u, lo;
  *esc = 0;
  for (p++; p < e; p++) {
    if (*p == '"') return p + 1;
    if ((unsigned char)*p < 0x20) return NULL;
    if (*p != '\\') continue;
    *esc = 1;
    if (++p >= e || !strchr("\"\\/bfnrtu", *p) || *p == '\0') return NULL;
    if (*p != 'u') continue;
    if (!(p = hex4(p + 1, e, &u))) return NULL;
    if (u >= 0xdc00 && u <= 0xdfff) return NULL;
    if (u >= 0xd800 && u <= 0xdbff) {
      if (e - p < 2 || p[0] != '\\' || p[1] != 'u' || !(p = hex4(p + 2, e, &lo))) return NULL;
      if (lo < 0xdc00 || lo > 0xdfff) return NULL;
    }
    p--;
  }
  return NULL;
}

/* After the digits at p (at least one), or NULL. */
static const char *skip_digits(const char *p, const char *e)
{
  const char *s = p;
  while (p < e && *p >= '0' && *p <= '9') p++;
  return p > s ? p : NULL;
}

/* After the JSON number at p (RFC 8259's grammar), or NULL. */
static const char *skip_number(const char *p, const char *e)
{
  if (p < e && *p == '-') p++;
  if (p < e && *p == '0')
    p++;
  else if (!(p = skip_digits(p, e)))
    return NULL;
  if (p < e && *p == '.' && !(p = skip_digits(p + 1, e))) return NULL;
  if (p < e && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < e && (*p == '+' || *p == '-')) p++;
    return skip_digits(p, e);
  }
  return p;
}

/* After the JSON value at p, nested depth levels down, or NULL when cjson would refuse it. */
static const char *skip_value(const char *p, const char *e, int depth)
{
  int esc;
  if (p >= e) return NULL;
  if (*p == '"') return skip_string(p, e, &esc);
  if (*p == '{' || *p == '[') {
    char close = *p == '{' ? '}' : ']';
    if (depth >= SCAN_MAX_DEPTH) return NULL;
    p = ws(p + 1, e);
    if (p < e && *p == close) return p + 1;
    for (;;) {
      if (close == '}') {
        if (p >= e || *p != '"' || !(p = skip_string(p, e, &esc))) return NULL;
        p = ws(p, e);
        if (p >= e || *p != ':') return NULL;
        p = ws(p + 1, e);
      }
      if (!(p = skip_value(p, e, depth + 1))) return NULL;
      p = ws(p, e);
      if (p < e && *p == close) return p + 1;
      if (p >= e || *p != ',') return NULL;
      p = ws(p + 1, e);
    }
  }
  static const char *const literals[] = {"true", "false", "null", NULL};
  for (const char *const *l = literals; *l; l++) {
    size_t n = strlen(*l);
    if ((size_t)(e - p) >= n && memcmp(p, *l, n) == 0) return p + n;
  }
  return skip_number(p, e);
}

/* Calls fn(key, klen, value, vend, ctx) for each member of the object at p; returns the end of
 * the object, or NULL when it is not one, a key has escapes, or fn returned 0. */
const char *fastlane_members(const char *p, const char *e, fastlane_member_fn fn, void *ctx)
{
  int esc;
  p = ws(p, e);
  if (p >= e || *p != '{') return NULL;
  p = ws(p + 1, e);
  if (p < e && *p == '}') return p + 1;
  for (;;) {
    if (p >= e || *p != '"') return NULL;
    const char *k = p + 1, *kend = skip_string(p, e, &esc);
    if (!kend || esc) return NULL;
    p = ws(kend, e);
    if (p >= e || *p != ':') return NULL;
    /* depth 1: params' members were checked at their depth as the request's value */
    const char *v = ws(p + 1, e), *vend = skip_value(v, e, 1);
    if (!vend) return NULL;
    if (!fn(k, (size_t)(kend - 1 - k), v, vend, ctx)) return NULL;
    p = ws(vend, e);
    if (p < e && *p == ',') {
      p = ws(p + 1, e);
      continue;
    }
    if (p < e && *p == '}') return p + 1;
    return NULL;
  }
}

typedef struct {
  const char *jsonrpc, *id, *id_end, *method, *method_end, *params, *params_end;
  const char *name, *name_end, *args, *args_end;
  int meta, metas, meta_plain, thread;
  int64_t token;
} request_t;

/* True when the member (k, n) is the name given. */
static int key_is(const char *k, size_t n, const char *name)
{
  return strlen(name) == n && memcmp(k, name, n) == 0;
}

/* The kind meta_scan gives a _meta the lanes must leave to Lua: not an object with plain keys. */
#define META_REFUSED (-1)

/* What one _meta holds: its kind, whether it has a threadId, its progressToken members, the last
 * one as a plain integer. */
typedef struct {
  int kind, thread, tokens, token_plain;
  int64_t token;
} meta_t;

/* fastlane_members callback of _meta: a threadId and a progressToken are noted. */
static int meta_member(const char *k, size_t n, const char *v, const char *vend, void *ctx)
{
  meta_t *m = ctx;
  if (key_is(k, n, "threadId")) m->thread = 1;
  if (key_is(k, n, "progressToken")) {
    m->kind = FASTLANE_META_PROGRESS;
    m->tokens++;
    m->token_plain = fastlane_parse_id(v, vend, &m->token);
  }
  return 1;
}

/* What the _meta value [v, vend) holds (kind META_REFUSED: the lanes leave the line to Lua). */
static meta_t meta_scan(const char *v, const char *vend)
{
  meta_t m = {FASTLANE_META_INERT, 0, 0, 0, 0};
  if (!fastlane_members(v, vend, meta_member, &m)) m.kind = META_REFUSED;
  return m;
}

/* fastlane_members callback of params: its name (a plain string), its arguments, and of its _meta
 * the kind (of a repeated _meta, the most careful: cjson keeps the last), whether one has a
 * threadId, how many there are, and the last one's integer progress token. */
static int params_member(const char *k, size_t n, const char *v, const char *vend, void *ctx)
{
  request_t *r = ctx;
  int esc;
  if (key_is(k, n, "_meta")) {
    meta_t m = meta_scan(v, vend);
    if (m.kind == META_REFUSED) return 0;
    if (m.kind > r->meta) r->meta = m.kind;
    r->thread |= m.thread;
    r->metas++;
    r->meta_plain = r->metas == 1 && (m.tokens == 0 || (m.tokens == 1 && m.token_plain));
    r->token = m.token;
  }
  if (key_is(k, n, "arguments")) {
    r->args = v;
    r->args_end = vend;
  }
  if (key_is(k, n, "name")) {
    if (*v != '"' || !skip_string(v, vend, &esc) || esc) return 0;
    r->name = v + 1;
    r->name_end = vend - 1;
  }
  return 1;
}

/* fastlane_members callback of the request: its four members, nothing else. */
static int request_member(const char *k, size_t n, const char *v, const char *vend, void *ctx)
{
  request_t *r = ctx;
  int esc;
  if (key_is(k, n, "jsonrpc")) {
    r->jsonrpc = v;
    return vend - v == 5 && memcmp(v, "\"2.0\"", 5) == 0;
  }
  if (key_is(k, n, "id")) {
    r->id = v;
    r->id_end = vend;
    return 1;
  }
  if (key_is(k, n, "method")) {
    if (*v != '"' || !skip_string(v, vend, &esc) || esc) return 0;
    r->method = v + 1;
    r->method_end = vend - 1;
    return 1;
  }
  if (key_is(k, n, "params")) {
    r->params = v;
    r->params_end = vend;
    return 1;
  }
  return 0;
}

/* Parses the integer id text [p, e) into *out; 0 when it is not a plain integer of at most 15
 * digits (cjson reads numbers as doubles: past 2^53 the id Lua sees would not be this one). */
int fastlane_parse_id(const char *p, const char *e, int64_t *out)
{
  int neg = 0;
  if (p < e && *p == '-') {
    neg = 1;
    p++;
  }
  if (p >= e || e - p > 15) return 0;
  int64_t v = 0;
  for (; p < e; p++) {
    if (*p < '0' || *p > '9') return 0;
    v = v * 10 + (*p - '0');
  }
  *out = neg ? -v : v;
  return 1;
}

/* True when the span [p, e) equals s. */
static int span_is(const char *p, const char *e, const char *s)
{
  return (size_t)(e - p) == strlen(s) && memcmp(p, s, (size_t)(e - p)) == 0;
}

/* Whether the lane may take a host line (see the head of this file): 0 no, 1 yes, 2 yes and its
 * answer has a receipt; *r is what it found. */
int fastlane_scan(const char *line, size_t len, fastlane_request *r)
{
  request_t q;
  memset(&q, 0, sizeof q);
  memset(r, 0, sizeof *r);
  const char *e = line + len, *end = fastlane_members(line, e, request_member, &q);
  if (!end || ws(end, e) != e || !q.jsonrpc || !q.id || !q.method) return 0;
  if (!fastlane_parse_id(q.id, q.id_end, &r->id)) return 0;
  if (q.params && !fastlane_members(q.params, q.params_end, params_member, &q)) return 0;
  r->meta = q.meta;
  r->meta_plain = q.meta_plain;
  r->thread = q.thread;
  r->token = q.token;
  r->method = q.method;
  r->method_len = (size_t)(q.method_end - q.method);
  r->name = q.name;
  r->name_len = q.name ? (size_t)(q.name_end - q.name) : 0;
  r->args = q.args;
  r->args_len = q.args ? (size_t)(q.args_end - q.args) : 0;
  if (span_is(q.method, q.method_end, "ping") || span_is(q.method, q.method_end, "tools/list")) return 1;
  if (!span_is(q.method, q.method_end, "tools/call") || !q.name) return 0;
  for (const char *const *t = receipt_tools; *t; t++)
    if (span_is(q.name, q.name_end, *t)) return 2;
  return 1;
}

/* ---- the requests in flight ---- */

/* Index of the entry of id (fast: one the lane relayed, else one Lua holds), or -1. */
static long lane_find(const fastlane_t *f, int64_t id, int fast)
{
  for (size_t i = 0; i < f->n; i++)
    if (f->e[i].id == id && (f->e[i].line != NULL) == fast) return (long)i;
  return -1;
}

/* Appends an entry (token: its integer progress token, or NULL); 0 when out of memory. */
static int lane_add(fastlane_t *f, int64_t id, char *line, size_t len, int receipt, const int64_t *token)
{
  if (f->n == f->cap) {
    size_t cap = f->cap ? f->cap * 2 : 16;
    lane_entry *e = realloc(f->e, cap * sizeof *e);
    if (!e) return 0;
    f->e = e;
    f->cap = cap;
  }
  f->e[f->n++] = (lane_entry){id, line ? ++f->seq : 0, line, len, receipt, token != NULL, token ? *token : 0};
  if (line) f->fast++;
  return 1;
}

/* Removes entry i, keeping the order of the rest. */
static void lane_remove(fastlane_t *f, size_t i)
{
  if (f->e[i].line) {
    free(f->e[i].line);
    f->fast--;
  }
  memmove(&f->e[i], &f->e[i + 1], (f->n - i - 1) * sizeof *f->e);
  f->n--;
}

/* Calls Lua's on_receipt(id, queued): a receipt request goes out (queued nil), or its result was
 * written to the host with queued bytes still unwritten (-1: it could not be written). */
static void lane_receipt_hook(fastlane_t *f, int64_t id, int with_queued, lua_Integer queued)
{
  if (f->on_receipt == LUA_NOREF) return;
  lua_pushinteger(f->L, (lua_Integer)id);
  if (with_queued)
    lua_pushinteger(f->L, queued);
  else
    lua_pushnil(f->L);
  lua_host_call_ref(f->L, f->on_receipt, 2);
}

/* Host stdin filter: relays a plain request to the active server. */
static int lane_host_line(void *data, int tag, const char *line, size_t len)
{
  (void)tag;
  fastlane_t *f = data;
  fastlane_request r;
  channel_t *to = channel_lua_ready(f->target);
  if (!to || !channel_lua_ready(f->host)) return 0;
  if ((lua_Integer)f->fast + f->lua_pending + 1 >= f->max_in_flight) return 0;
  int kind = fastlane_scan(line, len, &r);
  int64_t id = r.id;
  /* a repeated _meta, one of more than one progress token or of one not a plain integer, is Lua's
   * (it routes the progress), and so is a watch's or poll's with a threadId (its receipt names the
   * thread) */
  if (!kind || (r.meta != FASTLANE_META_NONE && !r.meta_plain) || (r.thread && kind == 2)) return 0;
  if (lane_find(f, id, 1) >= 0 || lane_find(f, id, 0) >= 0) return 0;
  char *copy = malloc(len ? len : 1);
  if (!copy) return 0;
  memcpy(copy, line, len);
  if (!lane_add(f, id, copy, len, kind == 2, r.meta == FASTLANE_META_PROGRESS ? &r.token : NULL)) {
    free(copy);
    return 0;
  }
  if (kind == 2) lane_receipt_hook(f, id, 0, 0);
  /* a failed write is the server's end: Lua learns it from its exit */
  if (f->target && channel_lua_get(f->target) == to) channel_write(to, line, len);
  return 1;
}

/* Calls Lua's on_settle (the launcher's gates look again). */
static void lane_settle_hook(fastlane_t *f)
{
  if (f->on_settle == LUA_NOREF) return;
  lua_host_call_ref(f->L, f->on_settle, 0);
}

/* The length of the method of a notification line from the server, if the host gets it as it
 * is (launcher/router.lua: not progress, a cancel or private); else 0. */
static size_t passing_notification(const char *line, size_t len)
{
  static const char head[] = "{\"jsonrpc\":\"2.0\",\"method\":\"";
  size_t h = sizeof head - 1;
  if (len <= h || memcmp(line, head, h) != 0) return 0;
  const char *m = line + h, *e = line + len, *q = m;
  while (q < e && *q != '"' && *q != '\\') q++;
  if (q >= e || *q != '"' || q == m) return 0;
  if (span_is(m, q, "notifications/progress") || span_is(m, q, "notifications/cancelled")) return 0;
  if (q - m >= 7 && memcmp(m, "$/rmcp/", 7) == 0) return 0;
  return (size_t)(q - m);
}

/* Server stdout filter: the answer to a request the lane relayed, and the plain notifications of
 * the active server, go to the host. */
static int lane_child_line(void *data, int tag, const char *line, size_t len)
{
  static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
  fastlane_t *f = data;
  if (!f->target || tag != f->target_tag) return 0;
  channel_t *host = f->host ? channel_lua_get(f->host) : NULL;
  if (!host) return 0;
  size_t h = sizeof head - 1;
  if (len > h && memcmp(line, head, h) == 0) {
    const char *p = line + h, *e = line + len, *q = p;
    while (q < e && ((*q >= '0' && *q <= '9') || *q == '-')) q++;
    int64_t id;
    if (!fastlane_parse_id(p, q, &id)) return 0;
    if (!(e - q > 10 && memcmp(q, ",\"result\":", 10) == 0) && !(e - q > 9 && memcmp(q, ",\"error\":", 9) == 0))
      return 0;
    long i = lane_find(f, id, 1);
    if (i < 0) return 0;
    int was_full = (lua_Integer)f->fast + f->lua_pending >= f->max_in_flight;
    int receipt = f->e[i].receipt && q[2] == 'r';
    lane_remove(f, (size_t)i);
    int r = channel_write(host, line, len);
    if (receipt) lane_receipt_hook(f, id, 1, r < 0 ? -1 : (lua_Integer)channel_queued(host));
    if (was_full || channel_queued(host) >= CHANNEL_HIGH_WATER) lane_settle_hook(f);
    return 1;
  }
  if (!passing_notification(line, len)) return 0;
  channel_write(host, line, len);
  if (channel_queued(host) >= CHANNEL_HIGH_WATER) lane_settle_hook(f);
  return 1;
}

/* ---- Lua binding ---- */

/* Check arg 1 is a lane. */
static fastlane_t *lane_check(lua_State *L)
{
  return luaL_checkudata(L, 1, FASTLANE_MT);
}

/* Drops the target (no reference left to the server's stdin). */
static void lane_drop_target(lua_State *L, fastlane_t *f)
{
  f->target = NULL;
  luaL_unref(L, LUA_REGISTRYINDEX, f->target_ref);
  f->target_ref = LUA_NOREF;
}

/* fastlane.new{host = stdout channel, input = stdin channel, max_in_flight = n, on_settle = fn,
 * on_receipt = fn(id, queued)} -> lane: sees every host line of input first. */
static int lane_new(lua_State *L)
{
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_State *main;
  fastlane_t *f = lua_host_newobject(L, sizeof *f, FASTLANE_MT, "rmcp.fastlane", &main);
  f->L = main;
  f->host_ref = f->target_ref = f->on_settle = f->on_receipt = LUA_NOREF;
  lua_getfield(L, 1, "max_in_flight");
  f->max_in_flight = luaL_checkinteger(L, -1);
  lua_pop(L, 1);
  f->on_settle = lua_host_checkref(L, 1, "on_settle");
  f->on_receipt = lua_host_checkref(L, 1, "on_receipt");
  f->host = channel_lua_lane_ends(L, 1, lane_host_line, f, &f->host_ref);
  /* the channels and processes hold a pointer to it: it lives as long as the process */
  lua_pushvalue(L, -1);
  luaL_ref(L, LUA_REGISTRYINDEX);
  return 1;
}

/* lane:watch(proc, tag): the lane sees each stdout line of server proc (tag: its number) first. */
static int lane_watch(lua_State *L)
{
  fastlane_t *f = lane_check(L);
  proc_lua_set_filter(L, 2, lane_child_line, f, (int)luaL_checkinteger(L, 3));
  return 0;
}

/* lane:open(stdin channel, tag): plain requests go to that server (its number: tag) from now on. */
static int lane_open(lua_State *L)
{
  fastlane_t *f = lane_check(L);
  lchannel_t *target = channel_lua_check(L, 2);
  lua_Integer tag = luaL_checkinteger(L, 3);
  lane_drop_target(L, f);
  lua_pushvalue(L, 2);
  f->target_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  f->target = target;
  f->target_tag = (int)tag;
  return 0;
}

/* lane:close() -> {{line=, seq=}, ...}: nothing is taken any more; the requests the lane relayed
 * and that are not answered, in arrival order, are Lua's from now on. */
static int lane_close(lua_State *L)
{
  fastlane_t *f = lane_check(L);
  lane_drop_target(L, f);
  lua_createtable(L, (int)f->fast, 0);
  int k = 0;
  for (size_t i = 0; i < f->n;) {
    if (!f->e[i].line) {
      i++;
      continue;
    }
    lua_createtable(L, 0, 2);
    lua_pushlstring(L, f->e[i].line, f->e[i].len);
    lua_setfield(L, -2, "line");
    lua_pushinteger(L, f->e[i].seq);
    lua_setfield(L, -2, "seq");
    lua_rawseti(L, -2, ++k);
    lane_remove(f, i);
  }
  return 1;
}

/* lane:is_open() */
static int lane_is_open(lua_State *L)
{
  lua_pushboolean(L, lane_check(L)->target != NULL);
  return 1;
}

/* lane:held(id, delta): Lua's ledger took (1) or let go of (-1) a host request with this id (an
 * integer id is then never taken by the lane: the ledger decides about a reused id). */
static int lane_held(lua_State *L)
{
  fastlane_t *f = lane_check(L);
  lua_Integer delta = luaL_checkinteger(L, 3);
  f->lua_pending += delta;
  if (!lua_isinteger(L, 2)) return 0;
  int64_t id = (int64_t)lua_tointeger(L, 2);
  if (delta > 0) {
    if (!lane_add(f, id, NULL, 0, 0, NULL)) return luaL_error(L, "fastlane: out of memory");
  } else {
    long i = lane_find(f, id, 0);
    if (i >= 0) lane_remove(f, (size_t)i);
  }
  return 0;
}

/* lane:has_token(token) -> true when a request the lane relayed and that is not answered has
 * this integer progress token (the server's progress for it goes to the host) */
static int lane_has_token(lua_State *L)
{
  fastlane_t *f = lane_check(L);
  if (!lua_isinteger(L, 2)) {
    lua_pushboolean(L, 0);
    return 1;
  }
  int64_t token = (int64_t)lua_tointeger(L, 2);
  int found = 0;
  for (size_t i = 0; i < f->n && !found; i++)
    found = f->e[i].line != NULL && f->e[i].has_token && f->e[i].token == token;
  lua_pushboolean(L, found);
  return 1;
}

/* lane:count() -> the requests the lane relayed that are not answered */
static int lane_count(lua_State *L)
{
  lua_pushinteger(L, (lua_Integer)lane_check(L)->fast);
  return 1;
}

/* lane:next_seq() -> the next arrival number (the ledger's requests and the lane's share them) */
static int lane_next_seq(lua_State *L)
{
  fastlane_t *f = lane_check(L);
  lua_pushinteger(L, ++f->seq);
  return 1;
}

/* __gc (at the state's close: the registry holds every lane): frees the entries and their lines. */
static int lane_gc(lua_State *L)
{
  fastlane_t *f = lane_check(L);
  for (size_t i = 0; i < f->n; i++) free(f->e[i].line);
  free(f->e);
  f->e = NULL;
  f->n = f->cap = f->fast = 0;
  return 0;
}

/* Module loader: require "rmcp.fastlane". */
int luaopen_rmcp_fastlane(lua_State *L)
{
  static const luaL_Reg methods[] = {
    {"watch", lane_watch}, {"open", lane_open}, {"close", lane_close}, {"is_open", lane_is_open},
    {"held", lane_held}, {"count", lane_count}, {"has_token", lane_has_token}, {"next_seq", lane_next_seq},
    {NULL, NULL},
  };
  return lua_host_module(L, FASTLANE_MT, methods, lane_gc, lane_new);
}
