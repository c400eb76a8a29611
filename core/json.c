/* json.c: rmcp.json, JSON at C speed through lua-cjson (Debian's 2.1.0) plus the small pass it
 * lacks. cjson does the parsing and the serialising; this file only fixes what 2.1.0 gets wrong for
 * us, around each call:
 *  - encode: an empty table marked with json.array() is written [] (cjson writes {}); integers of 15
 *    digits or more are written exactly (cjson prints them with %.14g); a float is written in the
 *    shortest form that reads back the same (never 0.40000000000000002), NaN and infinities as null;
 *    json.raw(text) splices already-encoded JSON in; "\/" becomes "/"; invalid UTF-8 becomes U+FFFD, so
 *    every byte written is valid UTF-8 JSON; a table with both 1 and "1" as keys is refused. A string
 *    of QUOTE_MIN bytes or more (and one encoded alone) is escaped here in one pass, not by cjson.
 *  - decode: integral numbers come back as Lua integers (cjson 2.1.0 decodes every number as a float)
 *    and an empty JSON array comes back marked as one, so it encodes as [] again.
 * The values cjson cannot write are swapped for sentinel strings (with a per-process random nonce) for
 * the length of the call, then the sentinels are replaced in the output; the caller's tables are
 * restored before encode returns, also on error. */
#include <lauxlib.h>
#include <lua.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "modules.h"

#define ARRAY_MT "rmcp.json.array"
#define RAW_MT "rmcp.json.raw"
#define MAX_DEPTH 1000
#define EXACT_LIMIT 100000000000000LL /* 1e14: from here on %.14g loses integer digits */
#define QUOTE_MIN 256 /* a string value this long is quoted by json_push_quoted, not by cjson */

/* Upvalues of encode and decode: cjson's encode, cjson's decode, the sentinel prefix (string), the
 * array metatable, the raw metatable. */
#define UP_ENCODE lua_upvalueindex(1)
#define UP_DECODE lua_upvalueindex(2)
#define UP_PREFIX lua_upvalueindex(3)
#define UP_ARRAY_MT lua_upvalueindex(4)
#define UP_RAW_MT lua_upvalueindex(5)

/* State of one encode: the stack slots of the restore and replacement lists (0 until the first
 * fix needs them) and of the two metatables, and the first error. */
typedef struct enc {
  lua_State *L;
  int saved;      /* table: t, key, old value, ... (what to put back) */
  int fixes;      /* table: replacement JSON text per sentinel number */
  int saved_slot, fixes_slot;
  int nsaved, nfixes;
  size_t fix_bytes; /* the length of every replacement text, for sizing the output at once */
  int array_mt, raw_mt;
  const char *prefix;
  size_t prefix_len;
  char err[200];
} enc_t;

/* True when the value at idx has the metatable at stack slot mt (works with upvalue indices too). */
static int json_mt_is(lua_State *L, int idx, int mt)
{
  if (!lua_getmetatable(L, idx)) return 0;
  int same = lua_rawequal(L, -1, mt);
  lua_pop(L, 1);
  return same;
}

/* True when the value at idx has the metatable registered under name (outside encode/decode). */
static int json_has_mt(lua_State *L, int idx, const char *name)
{
  if (!lua_getmetatable(L, idx)) return 0;
  luaL_getmetatable(L, name);
  int same = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  return same;
}

/* True when the table at idx has no entries. */
static int json_is_empty(lua_State *L, int idx)
{
  lua_pushnil(L);
  if (lua_next(L, idx)) {
    lua_pop(L, 2);
    return 0;
  }
  return 1;
}

/* Writes the shortest of %.14g..%.17g that reads back as d into buf; returns its length. */
static int json_shortest(char *buf, size_t size, double d)
{
  int n = 0;
  for (int prec = 14; prec <= 17; prec++) {
    n = snprintf(buf, size, "%.*g", prec, d);
    if (strtod(buf, NULL) == d) break;
  }
  return n;
}

/* Writes d into buf as a decimal of at most three fraction digits, when d is the double nearest to
 * such a decimal below 1e11 (time stamps, durations, most hand-written values); returns its length,
 * or 0. The text is what %.14g prints for d, without printf: r / 1000.0 is correctly rounded, so
 * r / 1000.0 == d says d is the double nearest r/1000, and at this size no shorter decimal is. */
static int json_short_decimal(char *buf, double d)
{
  if (!(d > -1e11 && d < 1e11) || d == 0) return 0; /* (-0 keeps its sign through cjson) */
  long long v = (long long)(d * 1000.0 + (d > 0 ? 0.5 : -0.5));
  if ((double)v / 1000.0 != d) return 0;
  char tmp[32];
  int n = 0, len = 0;
  unsigned long long u = v < 0 ? (unsigned long long)(-v) : (unsigned long long)v;
  unsigned frac = (unsigned)(u % 1000);
  u /= 1000;
  do {
    tmp[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0) buf[len++] = '-';
  while (n) buf[len++] = tmp[--n];
  if (frac) {
    buf[len++] = '.';
    buf[len++] = (char)('0' + frac / 100);
    buf[len++] = (char)('0' + frac / 10 % 10);
    buf[len++] = (char)('0' + frac % 10);
    while (buf[len - 1] == '0') len--;
  }
  buf[len] = '\0';
  return len;
}

/* Writes the decimal digits of i (and its sign) into buf, which has room for 21 bytes; returns
 * their length. */
static int json_integer_text(char *buf, lua_Integer i)
{
  char digits[24];
  int nd = 0, len = 0;
  lua_Unsigned u = i < 0 ? (lua_Unsigned)0 - (lua_Unsigned)i : (lua_Unsigned)i;
  do digits[nd++] = (char)('0' + u % 10);
  while ((u /= 10) > 0);
  if (i < 0) buf[len++] = '-';
  while (nd > 0) buf[len++] = digits[--nd];
  return len;
}

/* The JSON text cjson cannot write right, or cannot write cheaply, for the number on top of the
 * stack (pushed), or nothing (returns 0) when cjson's own %.14g form is exact. */
static int json_number_fix(lua_State *L)
{
  char buf[64];
  if (lua_isinteger(L, -1)) {
    lua_Integer i = lua_tointeger(L, -1);
    if (i < EXACT_LIMIT && i > -EXACT_LIMIT) return 0;
    lua_pushlstring(L, buf, (size_t)json_integer_text(buf, i));
    return 1;
  }
  double d = lua_tonumber(L, -1);
  if (!isfinite(d)) {
    lua_pushliteral(L, "null");
    return 1;
  }
  int n = json_short_decimal(buf, d);
  if (n) {
    lua_pushlstring(L, buf, (size_t)n);
    return 1;
  }
  snprintf(buf, sizeof buf, "%.14g", d);
  if (strtod(buf, NULL) == d) return 0;
  json_shortest(buf, sizeof buf, d);
  lua_pushstring(L, buf);
  return 1;
}

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0 when it is not one. */
static size_t json_utf8_len(const unsigned char *s, size_t n)
{
  unsigned c = s[0];
  size_t len;
  unsigned min;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) { len = 2; min = 0x80; }
  else if (c >= 0xe0 && c <= 0xef) { len = 3; min = 0x800; }
  else if (c >= 0xf0 && c <= 0xf4) { len = 4; min = 0x10000; }
  else return 0;
  if (n < len) return 0;
  unsigned cp = c & (0x3f >> (len - 1));
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return len;
}

/* What json_push_quoted writes for each byte below 0x80: 1 (itself), 2 (a two-byte escape) or 6
 * (\u00XX); filled by luaopen_rmcp_json. */
static unsigned char json_out_len[128];

/* Writes the escape json.encode writes for the ASCII byte c at o; returns the byte after it. */
static char *json_put_escape(char *o, unsigned char c)
{
  static const char hex[] = "0123456789abcdef";
  static const char short_esc[128] = { ['"'] = '"', ['\\'] = '\\', ['\b'] = 'b', ['\t'] = 't',
                                       ['\n'] = 'n', ['\f'] = 'f', ['\r'] = 'r' };
  *o++ = '\\';
  if (short_esc[c]) {
    *o++ = short_esc[c];
    return o;
  }
  memcpy(o, "u00", 3);
  o[3] = hex[c >> 4];
  o[4] = hex[c & 15];
  return o + 5;
}

/* Fills json_out_len once. */
static void json_out_len_init(void)
{
  for (int c = 0; c < 0x80; c++) {
    json_out_len[c] = c < 0x20 || c == 0x7f ? 6 : 1;
    if (c == '"' || c == '\\' || c == '\b' || c == '\t' || c == '\n' || c == '\f' || c == '\r') json_out_len[c] = 2;
  }
}

/* Writes the escaped bytes of s[*i, end) at o as json.encode writes them (n: the bytes of s; a
 * UTF-8 sequence starting before end may run up to 3 bytes past it); returns the byte after them. */
static char *json_quote_slice(char *o, const unsigned char *s, size_t *i, size_t end, size_t n)
{
  size_t at = *i; /* (a local: a store through o may alias *i, which would be reloaded per byte) */
  while (at < end) {
    size_t run = at; /* the bytes written as they are, copied at once */
    while (run < end && s[run] < 0x80 && json_out_len[s[run]] == 1) run++;
    memcpy(o, s + at, run - at);
    o += run - at;
    at = run;
    if (at == end) break;
    unsigned char c = s[at];
    if (c < 0x80) {
      o = json_put_escape(o, c);
      at++;
      continue;
    }
    size_t len = json_utf8_len(s + at, n - at);
    if (len) {
      memcpy(o, s + at, len);
      o += len;
      at += len;
    } else {
      memcpy(o, "\\ufffd", 6); /* one per invalid byte, as json.encode */
      o += 6;
      at++;
    }
  }
  *i = at;
  return o;
}

/* Writes at out the JSON string json.encode writes for the n bytes at s (json.h); out has room for
 * JSON_QUOTED_MAX(n) bytes. Returns the bytes written. */
size_t json_quote(char *out, const char *s, size_t n)
{
  if (json_out_len['a'] == 0) json_out_len_init();
  char *o = out;
  size_t i = 0;
  *o++ = '"';
  o = json_quote_slice(o, (const unsigned char *)s, &i, n, n);
  *o++ = '"';
  return (size_t)(o - out);
}

/* Pushes the JSON string json.encode writes for the n bytes at s, byte for byte, made in one pass
 * that works through s in slices, with room for the worst case (6 bytes out per byte in) reserved
 * per slice: cjson's per-byte escaping and the rewrite after it cost about three times this. */
static void json_push_quoted(lua_State *L, const unsigned char *s, size_t n)
{
  enum { SLICE = 4096 };
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addchar(&b, '"');
  size_t i = 0;
  while (i < n) {
    size_t end = n - i > SLICE ? i + SLICE : n;
    /* a UTF-8 sequence that starts in the slice may end up to 3 bytes past it */
    char *start = luaL_prepbuffsize(&b, 6 * (end - i) + 3);
    char *o = json_quote_slice(start, s, &i, end, n);
    luaL_addsize(&b, (size_t)(o - start));
  }
  luaL_addchar(&b, '"');
  luaL_pushresult(&b);
}

/* Pushes the sentinel of fix n: the prefix, n in decimal, \x01. */
static void json_push_sentinel(lua_State *L, const enc_t *e, int n)
{
  char buf[64];
  size_t len = e->prefix_len;
  memcpy(buf, e->prefix, len);
  len += (size_t)json_integer_text(buf + len, n);
  buf[len++] = '\x01';
  lua_pushlstring(L, buf, len);
}

/* Adds the JSON text on top of the stack (the key and its old value below it) as the next fix,
 * swapping t[key] for its sentinel and recording the old value for the restore; pops the value and
 * the text, leaving the key. The scratch tables are made on the first fix, in place of the two
 * reserved nil slots, with room for the few fixes of a typical result (they grow for more). */
static void json_fix(enc_t *e, int t)
{
  lua_State *L = e->L;
  if (e->fixes == 0) {
    lua_createtable(L, 3 * 4, 0);
    lua_replace(L, e->saved_slot);
    lua_createtable(L, 4, 0);
    lua_replace(L, e->fixes_slot);
    e->saved = e->saved_slot;
    e->fixes = e->fixes_slot;
  }
  e->fix_bytes += lua_rawlen(L, -1);
  lua_rawseti(L, e->fixes, ++e->nfixes);
  int key = lua_gettop(L) - 1;
  lua_pushvalue(L, t);
  lua_rawseti(L, e->saved, ++e->nsaved);
  lua_pushvalue(L, key);
  lua_rawseti(L, e->saved, ++e->nsaved);
  lua_rawseti(L, e->saved, ++e->nsaved); /* the old value */
  lua_pushvalue(L, key);
  json_push_sentinel(L, e, e->nfixes);
  lua_rawset(L, t);
}

/* Finds a number key of the table at t that cjson would write like one of its string keys; returns
 * -1 with the error in e when there is one, else 0. */
static int json_check_keys(enc_t *e, int t)
{
  lua_State *L = e->L;
  char buf[64];
  lua_pushnil(L);
  while (lua_next(L, t)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TNUMBER) continue;
    if (lua_isinteger(L, -1)) snprintf(buf, sizeof buf, "%lld", (long long)lua_tointeger(L, -1));
    else snprintf(buf, sizeof buf, "%.14g", lua_tonumber(L, -1));
    if (lua_getfield(L, t, buf) != LUA_TNIL) {
      lua_pop(L, 2);
      snprintf(e->err, sizeof e->err, "json: cannot encode a table with both %s and \"%s\" as keys", buf, buf);
      return -1;
    }
    lua_pop(L, 1);
  }
  return 0;
}

/* True when the string at index i starts with the sentinel prefix json_fix writes (which only a
 * caller who read the per-process nonce could spell). */
static int json_is_sentinel(enc_t *e, int i)
{
  size_t n;
  const char *s = lua_tolstring(e->L, i, &n);
  if (n == 0 || s[0] != e->prefix[0]) return 0;
  return n >= e->prefix_len && memcmp(s, e->prefix, e->prefix_len) == 0;
}

/* True when the string at index v is the sentinel of a fix this encode made in the slot t[key at
 * index k]: a table reached along two paths (not a cycle) is walked again after its values were
 * swapped. Any other string spelling a sentinel is input, and refused. */
static int json_is_own_fix(enc_t *e, int t, int k, int v)
{
  lua_State *L = e->L;
  size_t n;
  const char *s = lua_tolstring(L, v, &n);
  long num = 0;
  size_t i = e->prefix_len;
  while (i < n && s[i] >= '0' && s[i] <= '9' && num <= e->nfixes) num = num * 10 + (s[i++] - '0');
  if (i == e->prefix_len || i + 1 != n || s[i] != '\x01' || num < 1 || num > e->nfixes) return 0;
  t = lua_absindex(L, t), k = lua_absindex(L, k);
  lua_rawgeti(L, e->saved, 3 * num - 2);
  lua_rawgeti(L, e->saved, 3 * num - 1);
  int same = lua_rawequal(L, -2, t) && lua_rawequal(L, -1, k);
  lua_pop(L, 2);
  return same;
}

/* Walks the table at index t, swapping in a sentinel for every value cjson would write wrong.
 * Returns 0, or -1 with the error in e (the stack is then left as it was on entry). */
static int json_walk(enc_t *e, int t, int depth)
{
  lua_State *L = e->L;
  if (depth > MAX_DEPTH) {
    snprintf(e->err, sizeof e->err, "json: cannot encode a table nested over %d levels (a cycle?)", MAX_DEPTH);
    return -1;
  }
  luaL_checkstack(L, 8, "json: nesting");
  int has_number_key = 0, has_string_key = 0;
  lua_pushnil(L);
  while (lua_next(L, t)) {
    int kt = lua_type(L, -2);
    if (kt == LUA_TNUMBER) has_number_key = 1;
    else if (kt == LUA_TSTRING) has_string_key = 1;
    int vt = lua_type(L, -1);
    if (vt == LUA_TSTRING && e->nfixes > 0 && json_is_sentinel(e, -1) && json_is_own_fix(e, t, -2, -1)) {
      lua_pop(L, 1); /* fixed when this table was reached along another path */
      continue;
    }
    if ((kt == LUA_TSTRING && json_is_sentinel(e, -2)) || (vt == LUA_TSTRING && json_is_sentinel(e, -1))) {
      snprintf(e->err, sizeof e->err, "json: a string starts with the encoder's internal marker; refused");
      lua_pop(L, 2);
      return -1;
    }
    if (vt == LUA_TTABLE) {
      int v = lua_gettop(L);
      if (lua_getmetatable(L, v)) {
        int raw = lua_rawequal(L, -1, e->raw_mt), array = !raw && lua_rawequal(L, -1, e->array_mt);
        lua_pop(L, 1);
        if (raw) {
          lua_rawgeti(L, v, 1);
          json_fix(e, t);
          continue;
        }
        if (array && json_is_empty(L, v)) {
          lua_pushliteral(L, "[]");
          json_fix(e, t);
          continue;
        }
      }
      if (json_walk(e, v, depth + 1) < 0) {
        lua_pop(L, 2);
        return -1;
      }
    } else if (vt == LUA_TNUMBER && json_number_fix(L)) {
      json_fix(e, t);
      continue;
    } else if (vt == LUA_TSTRING && lua_rawlen(L, -1) >= QUOTE_MIN) {
      size_t n;
      const char *str = lua_tolstring(L, -1, &n);
      json_push_quoted(L, (const unsigned char *)str, n);
      json_fix(e, t);
      continue;
    }
    lua_pop(L, 1);
  }
  if (has_number_key && has_string_key) return json_check_keys(e, t);
  return 0;
}

/* Puts back every value json_walk swapped out. */
static void json_restore(enc_t *e)
{
  lua_State *L = e->L;
  if (e->saved == 0) return;
  for (int i = e->nsaved - 2; i >= 1; i -= 3) {
    lua_rawgeti(L, e->saved, i);
    lua_rawgeti(L, e->saved, i + 1);
    lua_rawgeti(L, e->saved, i + 2);
    lua_rawset(L, -3);
    lua_pop(L, 1);
  }
  e->nsaved = 0;
}

/* True when cjson's output needs the rewrite pass: an escape, a non-ASCII byte. */
static int json_needs_rewrite(const char *s, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '\\' || c >= 0x80) return 1;
  }
  return 0;
}

/* Rewrites cjson's output s into b: "\/" as "/", invalid UTF-8 as \ufffd, and each quoted sentinel
 * as its fix (from the fixes table at index fixes). */
static void json_rewrite(lua_State *L, luaL_Buffer *b, const char *s, size_t n, const char *prefix, int fixes)
{
  /* the sentinel as cjson writes it: "\u0001rmcp<nonce>:<n>\u0001" (prefix starts with \x01) */
  char quoted[64];
  int qlen = snprintf(quoted, sizeof quoted, "\"\\u0001%s", prefix + 1);
  size_t i = 0, start = 0;
  int in_string = 0;
  while (i < n) {
    unsigned char c = (unsigned char)s[i];
    if (!in_string) {
      if (c == '"') {
        if (fixes && n - i > (size_t)qlen && memcmp(s + i, quoted, qlen) == 0) {
          size_t j = i + qlen;
          long num = 0;
          while (j < n && s[j] >= '0' && s[j] <= '9') num = num * 10 + (s[j++] - '0');
          if (n - j >= 7 && memcmp(s + j, "\\u0001\"", 7) == 0) {
            luaL_addlstring(b, s + start, i - start);
            lua_rawgeti(L, fixes, num);
            luaL_addvalue(b);
            i = start = j + 7;
            continue;
          }
        }
        in_string = 1;
      }
      i++;
      continue;
    }
    if (c == '"') {
      in_string = 0;
      i++;
    } else if (c == '\\') {
      if (i + 1 < n && s[i + 1] == '/') {
        luaL_addlstring(b, s + start, i - start);
        start = i + 1; /* drop the backslash, keep the slash */
      }
      i += 2;
    } else if (c < 0x80) {
      i++;
    } else {
      size_t len = json_utf8_len((const unsigned char *)s + i, n - i);
      if (len) {
        i += len;
      } else {
        luaL_addlstring(b, s + start, i - start);
        luaL_addstring(b, "\\ufffd");
        i = start = i + 1;
      }
    }
  }
  luaL_addlstring(b, s + start, n - start);
}

/* json.encode(value) -> text | nil, message. Never raises for what it cannot encode. */
static int json_encode(lua_State *L)
{
  lua_settop(L, 1);
  int vt = lua_type(L, 1);
  if (vt == LUA_TTABLE && json_mt_is(L, 1, UP_RAW_MT)) {
    lua_rawgeti(L, 1, 1);
    return 1;
  }
  if (vt == LUA_TTABLE && json_mt_is(L, 1, UP_ARRAY_MT) && json_is_empty(L, 1)) {
    lua_pushliteral(L, "[]");
    return 1;
  }
  if (vt == LUA_TNUMBER && lua_isinteger(L, 1)) { /* a request id, say: no cjson call at all */
    char buf[32];
    lua_pushlstring(L, buf, (size_t)json_integer_text(buf, lua_tointeger(L, 1)));
    return 1;
  }
  if (vt == LUA_TNUMBER) {
    lua_pushvalue(L, 1);
    if (json_number_fix(L)) return 1;
    lua_pop(L, 1);
  }
  if (vt == LUA_TNIL) {
    lua_pushliteral(L, "null");
    return 1;
  }
  if (vt == LUA_TSTRING) {
    size_t n;
    const char *str = lua_tolstring(L, 1, &n);
    json_push_quoted(L, (const unsigned char *)str, n);
    return 1;
  }
  const char *prefix = lua_tostring(L, UP_PREFIX);
  enc_t e = { .L = L, .prefix = prefix, .prefix_len = strlen(prefix), .saved_slot = 2, .fixes_slot = 3, .array_mt = 4, .raw_mt = 5 };
  lua_pushnil(L);                    /* 2: the restore list, once needed */
  lua_pushnil(L);                    /* 3: the fix list, once needed */
  lua_pushvalue(L, UP_ARRAY_MT);     /* 4 */
  lua_pushvalue(L, UP_RAW_MT);       /* 5 */
  if (vt == LUA_TTABLE && json_walk(&e, 1, 1) < 0) {
    json_restore(&e);
    lua_pushnil(L);
    lua_pushstring(L, e.err);
    return 2;
  }
  lua_pushvalue(L, UP_ENCODE);
  lua_pushvalue(L, 1);
  int status = lua_pcall(L, 1, 1, 0);
  json_restore(&e);
  if (status != LUA_OK) {
    if (status == LUA_ERRMEM) return lua_error(L);
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  size_t n;
  const char *out = lua_tolstring(L, -1, &n);
  if (e.nfixes == 0 && !json_needs_rewrite(out, n)) return 1;
  luaL_Buffer b;
  /* sized for cjson's output and every fix once: grown only when a fix is written more than once
   * (a table reached along two paths) or invalid UTF-8 becomes \ufffd */
  luaL_buffinitsize(L, &b, n + e.fix_bytes);
  json_rewrite(L, &b, out, n, prefix, e.nfixes ? e.fixes : 0);
  luaL_pushresult(&b);
  return 1;
}

/* Number of empty arrays ("[" blanks "]") outside strings in text; scans without parsing. */
static size_t json_count_empty_arrays(const char *s, size_t n)
{
  size_t count = 0;
  int in_string = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (in_string) {
      if (c == '\\') i++;
      else if (c == '"') in_string = 0;
    } else if (c == '"') {
      in_string = 1;
    } else if (c == '[') {
      size_t j = i + 1;
      while (j < n && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r')) j++;
      if (j < n && s[j] == ']') count++;
    }
  }
  return count;
}

/* text with every empty array outside strings written as a one-element array of the marker. */
static void json_mark_empty_arrays(lua_State *L, const char *s, size_t n, const char *marker)
{
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  size_t start = 0;
  int in_string = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (in_string) {
      if (c == '\\') i++;
      else if (c == '"') in_string = 0;
    } else if (c == '"') {
      in_string = 1;
    } else if (c == '[') {
      size_t j = i + 1;
      while (j < n && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r')) j++;
      if (j < n && s[j] == ']') {
        luaL_addlstring(&b, s + start, i + 1 - start);
        luaL_addstring(&b, marker);
        start = j;
        i = j;
      }
    }
  }
  luaL_addlstring(&b, s + start, n - start);
  luaL_pushresult(&b);
}

/* Walks a decoded value at index v: integral floats become integers; a table holding only the empty
 * array marker (at index marker) becomes an empty table marked as an array, counted in *arrays. */
static void json_fix_decoded(lua_State *L, int v, int marker, int depth, size_t *arrays)
{
  luaL_checkstack(L, 6, "json: nesting");
  if (marker && lua_rawlen(L, v) == 1) {
    lua_rawgeti(L, v, 1);
    int is_marker = lua_rawequal(L, -1, marker);
    lua_pop(L, 1);
    if (is_marker) {
      lua_pushnil(L);
      lua_rawseti(L, v, 1);
      lua_pushvalue(L, UP_ARRAY_MT);
      lua_setmetatable(L, v);
      (*arrays)++;
      return;
    }
  }
  lua_pushnil(L);
  while (lua_next(L, v)) {
    int vt = lua_type(L, -1);
    if (vt == LUA_TNUMBER && !lua_isinteger(L, -1)) {
      lua_Integer i;
      if (lua_numbertointeger(lua_tonumber(L, -1), &i) && (lua_Number)i == lua_tonumber(L, -1)) {
        lua_pushvalue(L, -2);
        lua_pushinteger(L, i);
        lua_rawset(L, v);
      }
    } else if (vt == LUA_TTABLE && depth < MAX_DEPTH) {
      json_fix_decoded(L, lua_gettop(L), marker, depth + 1, arrays);
    }
    lua_pop(L, 1);
  }
}

/* json.decode(text) -> value | nil, message. Never raises. */
static int json_decode(lua_State *L)
{
  size_t n;
  if (lua_type(L, 1) != LUA_TSTRING) {
    lua_pushnil(L);
    lua_pushfstring(L, "expected a JSON string, got %s", luaL_typename(L, 1));
    return 2;
  }
  const char *s = lua_tolstring(L, 1, &n);
  lua_settop(L, 1);
  int marker = 0;
  size_t empty_arrays = 0;
  if (memchr(s, '[', n) && (empty_arrays = json_count_empty_arrays(s, n)) > 0) {
    const char *prefix = lua_tostring(L, UP_PREFIX);
    lua_pushfstring(L, "%sE\x01", prefix);                   /* 2: the marker as Lua sees it */
    marker = 2;
    lua_pushfstring(L, "\"\\u0001%sE\\u0001\"", prefix + 1); /* 3: as JSON writes it */
    json_mark_empty_arrays(L, s, n, lua_tostring(L, 3));    /* 4: the marked text */
    lua_replace(L, 1);
    lua_settop(L, 2);
  }
  lua_pushvalue(L, UP_DECODE);
  lua_pushvalue(L, 1);
  int status = lua_pcall(L, 1, 1, 0);
  if (status != LUA_OK) {
    if (status == LUA_ERRMEM) return lua_error(L);
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  int v = lua_gettop(L);
  if (lua_type(L, v) == LUA_TTABLE) {
    size_t arrays = 0;
    json_fix_decoded(L, v, marker, 1, &arrays);
    if (arrays > empty_arrays) { /* the text spelt out the marker itself: refuse, never guess */
      lua_pushnil(L);
      lua_pushliteral(L, "json: the text holds the decoder's internal empty-array marker");
      return 2;
    }
  } else if (lua_type(L, v) == LUA_TNUMBER && !lua_isinteger(L, v)) {
    lua_Integer i;
    if (lua_numbertointeger(lua_tonumber(L, v), &i) && (lua_Number)i == lua_tonumber(L, v)) lua_pushinteger(L, i);
  }
  return 1;
}

/* True for the bytes of a method name a plain request line may hold: [A-Za-z0-9_/$]. */
static int json_method_byte(unsigned char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '/' || c == '$';
}

/* Reads a request line's head (json.h). */
int json_request_head(const char *s, size_t n, json_request_t *r)
{
  static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
  static const char mid[] = ",\"method\":\"";
  static const char tail[] = "\",\"params\":";
  const char *e = s + n, *p = s + sizeof head - 1;
  /* (at least the head, one digit and the closing brace) */
  if (n < sizeof head - 1 + 2 || s[n - 1] != '}' || memcmp(s, head, sizeof head - 1) != 0) return 0;
  const char *id = p;
  while (p < e && *p >= '0' && *p <= '9') p++;
  /* (at most 15 digits: cjson reads numbers as doubles, exact to 2^53) */
  if (p == id || p - id > 15 || (p - id > 1 && *id == '0')) return 0;
  int64_t idv = 0;
  for (const char *d = id; d < p; d++) idv = idv * 10 + (*d - '0');
  if ((size_t)(e - p) < sizeof mid - 1 || memcmp(p, mid, sizeof mid - 1) != 0) return 0;
  const char *method = p += sizeof mid - 1;
  while (p < e && json_method_byte((unsigned char)*p)) p++;
  if (p == method || (size_t)(e - p) < sizeof tail - 1 || memcmp(p, tail, sizeof tail - 1) != 0) return 0;
  r->id = idv;
  r->id_text = id;
  r->id_len = (size_t)(method - (sizeof mid - 1) - id);
  r->method = method;
  r->method_len = (size_t)(p - method);
  r->params = p + sizeof tail - 1;
  r->params_len = (size_t)(e - 1 - r->params);
  return 1;
}

/* json.request(line) -> id, method, params, id text of a JSON-RPC request line written id first, as
 * every writer of ours and node's writes it (json_request_head), P one JSON object or array (decoded
 * as json.decode does; "{}" without a decode); the id text is the id as the line spells it (what an
 * answer writes: a Lua string, made without formatting the integer). nil for any other line: the
 * caller decodes it whole.
 * One pass in C where a Lua pattern cost thousands of instructions per line. */
static int json_request(lua_State *L)
{
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  json_request_t r;
  if (!json_request_head(s, n, &r)) return 0;
  const char *params = r.params, *params_end = r.params + r.params_len;
  lua_settop(L, 1); /* (the line stays at 1: method points into it) */
  if (params_end - params == 2 && params[0] == '{' && params[1] == '}') {
    lua_newtable(L);
  } else if (memchr(params, '\0', (size_t)(params_end - params)) != NULL) {
    return 0; /* cjson ends its input at a NUL byte: a whole decode must say what such a line is */
  } else {
    lua_pushvalue(L, lua_upvalueindex(1)); /* json.decode */
    lua_pushlstring(L, params, (size_t)(params_end - params));
    lua_call(L, 1, 1);
    if (lua_type(L, 2) != LUA_TTABLE) return 0;
  }
  lua_pushinteger(L, (lua_Integer)r.id);
  lua_pushlstring(L, r.method, r.method_len);
  lua_rotate(L, 2, -1); /* id, method, params */
  lua_pushlstring(L, r.id_text, r.id_len);
  return 4;
}

/* json.array([t]) -> t marked as a JSON array (so an empty one encodes as []). */
static int json_array(lua_State *L)
{
  if (lua_isnoneornil(L, 1)) {
    lua_settop(L, 0);
    lua_newtable(L);
  }
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  luaL_setmetatable(L, ARRAY_MT);
  return 1;
}

/* json.is_array(v) -> true when v was marked with json.array (or decoded from an empty array). */
static int json_is_array(lua_State *L)
{
  lua_pushboolean(L, lua_type(L, 1) == LUA_TTABLE && json_has_mt(L, 1, ARRAY_MT));
  return 1;
}

/* json.raw(text) -> a value encode writes as text, verbatim (text must be one JSON value). */
static int json_raw(lua_State *L)
{
  luaL_checktype(L, 1, LUA_TSTRING);
  lua_createtable(L, 1, 0);
  lua_pushvalue(L, 1);
  lua_rawseti(L, -2, 1);
  luaL_setmetatable(L, RAW_MT);
  return 1;
}

/* json.raw_text(v) -> the text of a json.raw value, or nil for any other value. */
static int json_raw_text(lua_State *L)
{
  if (lua_type(L, 1) == LUA_TTABLE && json_has_mt(L, 1, RAW_MT)) {
    lua_rawgeti(L, 1, 1);
    return 1;
  }
  lua_pushnil(L);
  return 1;
}

/* Pushes the sentinel prefix: \x01 "rmcp" 16 hex digits of kernel randomness ":". */
static void json_push_prefix(lua_State *L)
{
  unsigned char r[8];
  char hex[17];
  if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
    uint64_t x = (uint64_t)time(NULL) * 6364136223846793005ULL ^ (uint64_t)getpid();
    memcpy(r, &x, sizeof r);
  }
  for (int i = 0; i < 8; i++) snprintf(hex + 2 * i, 3, "%02x", r[i]);
  lua_pushfstring(L, "\x01rmcp%s:", hex);
}

/* require "rmcp.json": encode, decode, array, is_array, raw, raw_text, null. */
int luaopen_rmcp_json(lua_State *L)
{
  json_out_len_init();
  luaL_newmetatable(L, ARRAY_MT);
  lua_pushliteral(L, "json.array");
  lua_setfield(L, -2, "__name");
  lua_pop(L, 1);
  luaL_newmetatable(L, RAW_MT);
  lua_pushliteral(L, "json.raw");
  lua_setfield(L, -2, "__name");
  lua_pop(L, 1);

  /* a private cjson instance: our settings never touch another user's */
  lua_getglobal(L, "require");
  lua_pushliteral(L, "cjson");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "new");
  lua_call(L, 0, 1);
  int cj = lua_gettop(L);
  lua_getfield(L, cj, "encode_sparse_array");
  lua_pushboolean(L, 1); /* excessively sparse arrays become objects instead of an error */
  lua_call(L, 1, 0);

  lua_newtable(L);
  int mod = lua_gettop(L);
  lua_getfield(L, cj, "encode");
  lua_getfield(L, cj, "decode");
  json_push_prefix(L);
  luaL_getmetatable(L, ARRAY_MT);
  luaL_getmetatable(L, RAW_MT);
  int first = lua_gettop(L) - 4;
  for (int i = 0; i < 5; i++) lua_pushvalue(L, first + i);
  lua_pushcclosure(L, json_encode, 5);
  lua_setfield(L, mod, "encode");
  lua_pushcclosure(L, json_decode, 5);
  lua_pushvalue(L, -1);
  lua_setfield(L, mod, "decode");
  lua_pushcclosure(L, json_request, 1); /* (its upvalue: json.decode) */
  lua_setfield(L, mod, "request");
  static const luaL_Reg fns[] = {
    {"array", json_array}, {"is_array", json_is_array}, {"raw", json_raw}, {"raw_text", json_raw_text},
    {NULL, NULL},
  };
  luaL_setfuncs(L, fns, 0);
  lua_getfield(L, cj, "null");
  lua_setfield(L, mod, "null");
  return 1;
}
