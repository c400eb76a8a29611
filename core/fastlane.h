/* fastlane.h: the launcher's hot path in C (rmcp.fastlane). The host's plain requests (ping,
 * tools/list, a tools/call whose _meta, if any, the lane can route: see fastlane.c) go straight to
 * the active server and their answers straight back, with the ids in flight kept here (a watch's or
 * poll's receipt is Lua's); every other line, and every line while the launcher's Lua has closed
 * the lane, goes to Lua (lua/rmcp/launcher/ledger.lua). */
#ifndef RMCP_FASTLANE_H
#define RMCP_FASTLANE_H

#include <stddef.h>
#include <stdint.h>

/* A line filter of a channel or process stdout: 1 when it took the line, 0 to pass it on to Lua.
 * tag is the number given with the filter (the launcher's child number). */
typedef int (*line_filter_fn)(void *data, int tag, const char *line, size_t len);

/* What a host line's params._meta holds, as the server's Lua reads it: nothing (no _meta), only
 * members it ignores (a host's own, such as claudecode/toolUseId or callId), or a progressToken
 * besides them (a threadId, which names the call's orchestrator, is told apart: thread). An escaped
 * key or a _meta that is not an object makes fastlane_scan refuse the line. */
enum { FASTLANE_META_NONE, FASTLANE_META_INERT, FASTLANE_META_PROGRESS };

/* What fastlane_scan found in a host line it lets the lane take: method, name and args point into
 * the line (name NULL when params has none; args, the value of params.arguments, NULL when absent);
 * meta, a FASTLANE_META_ kind. */
typedef struct {
  int64_t id;
  const char *method, *name, *args;
  size_t method_len, name_len, args_len;
  int meta;
  int thread;         /* a _meta has a threadId (Codex's conversation) */
  int meta_plain;     /* one _meta, with at most one progressToken, a plain integer then (in token) */
  int64_t token;
} fastlane_request;

/* Whether a lane may take a host line: 0 no, 1 yes, 2 yes and its answer has a receipt (r->meta
 * then says what its _meta holds: each lane decides what it takes). */
int fastlane_scan(const char *line, size_t len, fastlane_request *r);

/* A member callback of fastlane_members: the key (without quotes, no escapes) and the value's span,
 * checked to be JSON that cjson reads; 0 stops the walk. */
typedef int (*fastlane_member_fn)(const char *key, size_t klen, const char *v, const char *vend, void *ctx);

/* Calls fn for each member of the JSON object at p (up to e); returns the end of the object, or
 * NULL when it is not one, a key has escapes, or fn returned 0 (the server lane's checks). */
const char *fastlane_members(const char *p, const char *e, fastlane_member_fn fn, void *ctx);

/* Parses the integer text [p, e) of at most 15 digits into *out; 0 when it is not one. */
int fastlane_parse_id(const char *p, const char *e, int64_t *out);

#endif
