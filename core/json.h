/* json.h: what rmcp.json (json.c) shares with other C code: its string quoting, so a C path writes
 * the bytes json.encode would. */
#ifndef RMCP_JSON_H
#define RMCP_JSON_H

#include <stddef.h>

/* The most bytes json_quote writes for n bytes in: every byte as \u00XX, and the quotes. */
#define JSON_QUOTED_MAX(n) (6 * (n) + 2)

/* Writes at out the JSON string json.encode writes for the n bytes at s (escapes, "/" as is, invalid
 * UTF-8 as \ufffd); returns the bytes written. */
size_t json_quote(char *out, const char *s, size_t n);

#endif
