/* fastlane.h: the launcher's hot path in C (rmcp.fastlane). The host's plain requests (ping,
 * tools/list, a tools/call without _meta or a receipt) go straight to the active server and their
 * answers straight back, with the ids in flight kept here; every other line, and every line while
 * the launcher's Lua has closed the lane, goes to Lua (lua/rmcp/launcher/ledger.lua). */
#ifndef RMCP_FASTLANE_H
#define RMCP_FASTLANE_H

#include <stddef.h>

/* A line filter of a channel or process stdout: 1 when it took the line, 0 to pass it on to Lua.
 * tag is the number given with the filter (the launcher's child number). */
typedef int (*line_filter_fn)(void *data, int tag, const char *line, size_t len);

#endif
