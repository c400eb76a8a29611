/* json.h: what rmcp.json (json.c) shares with other C code: its string quoting, so a C path writes
 * the bytes json.encode would, and its reading of a request line's head. */
#ifndef RMCP_JSON_H
#define RMCP_JSON_H

#include <stddef.h>
#include <stdint.h>

/* The most bytes json_quote writes for n bytes in: every byte as \u00XX, and the quotes. */
#define JSON_QUOTED_MAX(n) (6 * (n) + 2)

/* Writes at out the JSON string json.encode writes for the n bytes at s (escapes, "/" as is, invalid
 * UTF-8 as \ufffd); returns the bytes written. */
size_t json_quote(char *out, const char *s, size_t n);

/* A JSON-RPC request line written id first, as json_request_head reads it: the id, and its text,
 * the method and the params text pointing into the line. */
typedef struct {
  int64_t id;
  const char *id_text, *method, *params;
  size_t id_len, method_len, params_len;
} json_request_t;

/* Reads the line [s, s + n) (no newline) when it is {"jsonrpc":"2.0","id":N,"method":"M","params":P}
 * with N an integer of at most 15 digits (no leading zero) and M of [A-Za-z0-9_/$] only; 1 and *r
 * filled, else 0. P is not checked: the caller decodes it or compares it. */
int json_request_head(const char *s, size_t n, json_request_t *r);

#endif
