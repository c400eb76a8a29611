/* http.c: rmcp.http, HTTP/1.1 message parsing for the dashboard through Debian's http-parser (the
 * parser Node.js used for years): Lua owns the sockets, routes and pages; this file only turns bytes
 * into messages. One parser per connection:
 *   local p = http.parser(max_bytes)      -- requests; max_bytes bounds one message (head and body)
 *   local reqs, err = p:feed(bytes)       -- complete requests so far: {method, url, path, query,
 *                                         --   headers = {lowercased name = value}, body, keep_alive}
 *   http.parser(max_bytes, "response")    -- responses instead: {status, headers, body, keep_alive}
 * A malformed or oversized request is an error (nil, "HPE_…: description" or "request too large");
 * the connection is then to be closed. Repeated headers are joined with ", " as RFC 9110 allows. */
#include <http_parser.h>
#include <lauxlib.h>
#include <lua.h>
#include <string.h>

#include "modules.h"

#define PARSER_MT "rmcp.http.parser"
#define MAX_HEADERS 100

/* One connection's parser and the request being read. */
typedef struct {
  http_parser parser;
  size_t max_bytes;   /* per request */
  size_t seen;        /* bytes of the current request so far */
  lua_State *L;       /* during feed: the state holding the results table at stack index `out` */
  int out;            /* the results table */
  int req;            /* the current request table (0: none) */
  int headers;        /* its headers table */
  int nheaders;
  int last_was_value; /* the last header callback was a value (a new name starts a new header) */
  int field_ref;      /* the header name being read (a string at this stack index) */
  int in_request;     /* a request is partly read: its tables wait in the userdata's user values */
  int too_large;
} http_conn_t;

/* User values of the parser userdata holding a partly read request between feeds. */
enum { UV_REQ = 1, UV_HEADERS = 2, UV_FIELD = 3, UV_COUNT = 3 };

/* The parser of argument 1. */
static http_conn_t *check_conn(lua_State *L) {
  return luaL_checkudata(L, 1, PARSER_MT);
}

/* Appends data to string field key of the table at index t (creating it). */
static void append_field(lua_State *L, int t, const char *key, const char *at, size_t len) {
  lua_getfield(L, t, key);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_pushlstring(L, at, len);
  } else {
    lua_pushlstring(L, at, len);
    lua_concat(L, 2);
  }
  lua_setfield(L, t, key);
}

/* Counts bytes of the current request; flags it when over the bound (the callback then fails). */
static int count(http_conn_t *c, size_t len) {
  c->seen += len;
  if (c->seen > c->max_bytes) {
    c->too_large = 1;
    return 1;
  }
  return 0;
}

/* A request starts: a fresh table for it and its headers. */
static int on_message_begin(http_parser *p) {
  http_conn_t *c = p->data;
  lua_State *L = c->L;
  c->seen = 0;
  c->nheaders = 0;
  c->last_was_value = 1;
  lua_newtable(L);
  c->req = lua_gettop(L);
  lua_newtable(L);
  c->headers = lua_gettop(L);
  lua_pushvalue(L, c->headers);
  lua_setfield(L, c->req, "headers");
  lua_pushliteral(L, "");
  c->field_ref = lua_gettop(L); /* the header name being read */
  c->in_request = 1;
  return 0;
}

/* Part of the request target. */
static int on_url(http_parser *p, const char *at, size_t len) {
  http_conn_t *c = p->data;
  if (count(c, len)) return 1;
  append_field(c->L, c->req, "url", at, len);
  return 0;
}

/* Part of a header name: a name after a value starts the next header. */
static int on_header_field(http_parser *p, const char *at, size_t len) {
  http_conn_t *c = p->data;
  lua_State *L = c->L;
  if (count(c, len)) return 1;
  if (c->last_was_value) {
    if (++c->nheaders > MAX_HEADERS) {
      c->too_large = 1;
      return 1;
    }
    lua_pushliteral(L, "");
    lua_replace(L, c->field_ref);
  }
  c->last_was_value = 0;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  lua_pushvalue(L, c->field_ref);
  luaL_addvalue(&b);
  for (size_t i = 0; i < len; i++) {
    char ch = at[i];
    luaL_addchar(&b, (ch >= 'A' && ch <= 'Z') ? (char)(ch - 'A' + 'a') : ch);
  }
  luaL_pushresult(&b);
  lua_replace(L, c->field_ref);
  return 0;
}

/* Part of a header value; a repeated header is joined with ", ". */
static int on_header_value(http_parser *p, const char *at, size_t len) {
  http_conn_t *c = p->data;
  lua_State *L = c->L;
  if (count(c, len)) return 1;
  lua_pushvalue(L, c->field_ref);
  lua_gettable(L, c->headers);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_pushlstring(L, at, len);
  } else if (c->last_was_value) {
    lua_pushlstring(L, at, len); /* the same value, continued */
    lua_concat(L, 2);
  } else {
    lua_pushliteral(L, ", ");
    lua_pushlstring(L, at, len);
    lua_concat(L, 3);
  }
  lua_pushvalue(L, c->field_ref);
  lua_insert(L, -2);
  lua_settable(L, c->headers);
  c->last_was_value = 1;
  return 0;
}

/* The head is complete: method, path and query (a response: the status), and whether the
 * connection stays open. */
static int on_headers_complete(http_parser *p) {
  http_conn_t *c = p->data;
  lua_State *L = c->L;
  lua_pushboolean(L, http_should_keep_alive(p));
  lua_setfield(L, c->req, "keep_alive");
  if (p->type == HTTP_RESPONSE) {
    lua_pushinteger(L, p->status_code);
    lua_setfield(L, c->req, "status");
    return 0;
  }
  lua_pushstring(L, http_method_str((enum http_method)p->method));
  lua_setfield(L, c->req, "method");
  lua_getfield(L, c->req, "url");
  size_t ulen = 0;
  const char *url = lua_tolstring(L, -1, &ulen);
  struct http_parser_url u;
  http_parser_url_init(&u);
  if (!url || http_parser_parse_url(url, ulen, 0, &u) != 0) {
    lua_pop(L, 1);
    return 1;
  }
  if (u.field_set & (1 << UF_PATH)) {
    lua_pushlstring(L, url + u.field_data[UF_PATH].off, u.field_data[UF_PATH].len);
    lua_setfield(L, c->req, "path");
  }
  if (u.field_set & (1 << UF_QUERY)) {
    lua_pushlstring(L, url + u.field_data[UF_QUERY].off, u.field_data[UF_QUERY].len);
    lua_setfield(L, c->req, "query");
  }
  lua_pop(L, 1);
  return 0;
}

/* Part of the body. */
static int on_body(http_parser *p, const char *at, size_t len) {
  http_conn_t *c = p->data;
  if (count(c, len)) return 1;
  append_field(c->L, c->req, "body", at, len);
  return 0;
}

/* A request is complete: it joins the results. */
static int on_message_complete(http_parser *p) {
  http_conn_t *c = p->data;
  lua_State *L = c->L;
  lua_getfield(L, c->req, "body");
  if (lua_isnil(L, -1)) {
    lua_pushliteral(L, "");
    lua_setfield(L, c->req, "body");
  }
  lua_pop(L, 1);
  lua_pushvalue(L, c->req);
  lua_rawseti(L, c->out, (lua_Integer)lua_rawlen(L, c->out) + 1);
  lua_settop(L, c->out); /* drop the request's working slots */
  c->req = 0;
  c->in_request = 0;
  return 0;
}

static const http_parser_settings settings = {
  .on_message_begin = on_message_begin,
  .on_url = on_url,
  .on_header_field = on_header_field,
  .on_header_value = on_header_value,
  .on_headers_complete = on_headers_complete,
  .on_body = on_body,
  .on_message_complete = on_message_complete,
};

/* http.parser(max_bytes, kind): a parser of requests (kind "request", the default) or responses
 * for one connection. */
static int lhttp_parser(lua_State *L) {
  static const char *const kinds[] = {"request", "response", NULL};
  lua_Integer max = luaL_optinteger(L, 1, 1 << 20);
  luaL_argcheck(L, max > 0, 1, "max_bytes must be positive");
  int kind = luaL_checkoption(L, 2, "request", kinds);
  http_conn_t *c = lua_newuserdatauv(L, sizeof *c, UV_COUNT);
  memset(c, 0, sizeof *c);
  http_parser_init(&c->parser, kind == 0 ? HTTP_REQUEST : HTTP_RESPONSE);
  c->parser.data = c;
  c->max_bytes = (size_t)max;
  luaL_setmetatable(L, PARSER_MT);
  return 1;
}

/* p:feed(bytes): the requests completed by bytes, or nil and an error (close the connection). */
static int lhttp_feed(lua_State *L) {
  http_conn_t *c = check_conn(L);
  size_t len = 0;
  const char *data = luaL_checklstring(L, 2, &len);
  if (c->parser.http_errno != HPE_OK) return luaL_error(L, "http parser used after an error");
  lua_settop(L, 2);
  lua_newtable(L);
  c->L = L;
  c->out = lua_gettop(L);
  if (c->in_request) { /* the request the last feed left unfinished: its working slots again */
    lua_getiuservalue(L, 1, UV_REQ);
    c->req = lua_gettop(L);
    lua_getiuservalue(L, 1, UV_HEADERS);
    c->headers = lua_gettop(L);
    lua_getiuservalue(L, 1, UV_FIELD);
    c->field_ref = lua_gettop(L);
  }
  size_t done = http_parser_execute(&c->parser, &settings, data, len);
  c->L = NULL;
  if (c->too_large) {
    c->parser.http_errno = HPE_CB_url; /* any error state: the parser is not to be fed again */
    lua_pushnil(L);
    lua_pushliteral(L, "request too large");
    return 2;
  }
  if (c->parser.http_errno != HPE_OK || (done != len && !c->parser.upgrade)) {
    enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", http_errno_name(e), http_errno_description(e));
    return 2;
  }
  if (c->in_request) { /* keep the unfinished request for the next feed */
    lua_pushvalue(L, c->req);
    lua_setiuservalue(L, 1, UV_REQ);
    lua_pushvalue(L, c->headers);
    lua_setiuservalue(L, 1, UV_HEADERS);
    lua_pushvalue(L, c->field_ref);
    lua_setiuservalue(L, 1, UV_FIELD);
  }
  lua_settop(L, c->out);
  return 1;
}

int luaopen_rmcp_http(lua_State *L) {
  static const luaL_Reg methods[] = {{"feed", lhttp_feed}, {NULL, NULL}};
  if (luaL_newmetatable(L, PARSER_MT)) {
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  static const luaL_Reg funcs[] = {{"parser", lhttp_parser}, {NULL, NULL}};
  luaL_newlib(L, funcs);
  return 1;
}
