/* fastlane.h: the launcher's hot path in C (rmcp.fastlane). The host's plain requests (ping,
 * tools/list, a tools/call without _meta or a receipt) go straight to the active server and their
 * answers straight back, with the ids in flight kept here; every other line, and every line while
 * the launcher's Lua has closed the lane, goes to Lua (lua/rmcp/launcher/ledger.lua). */
#ifndef RMCP_FASTLANE_H
#define RMCP_FASTLANE_H

#include <stddef.h>
#include <stdint.h>

/* A line filter of a channel or process stdout: 1 when it took the line, 0 to pass it on to Lua.
 * tag is the number given with the filter (the launcher's child number). */
typedef int (*line_filter_fn)(void *data, int tag, const char *line, size_t len);

/* What fastlane_scan found in a host line it lets the lane take: method and name point into the
 * line (name NULL when params has none). */
typedef struct {
  int64_t id;
  const char *method, *name;
  size_t method_len, name_len;
} fastlane_request;

/* Whether the lane may take a host line: 0 no, 1 yes, 2 yes and its answer has a receipt. */
int fastlane_scan(const char *line, size_t len, fastlane_request *r);

#endif
