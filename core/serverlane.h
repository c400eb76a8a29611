/* serverlane.h: the checks of rmcp.serverlane (serverlane.c), the server's hot path, that a host's
 * tool arguments must pass before the lane takes the call without Lua: a tool's entry as
 * lua/rmcp/server/lane.lua compiles it from the inputSchema, and the check of an arguments text
 * against it (shared with tests/fuzz/fuzz_serverlane.c). */
#ifndef RMCP_SERVERLANE_H
#define RMCP_SERVERLANE_H

#include <lua.h>
#include <stddef.h>

/* The most properties a lane tool has (a bit each in the check's mask). */
#define SERVERLANE_MAX_PROPS 32

/* What the lane checks of a property's value. */
enum { LANE_LUA, LANE_STRING, LANE_BOOLEAN, LANE_INTEGER, LANE_STRINGS };

/* A property of a lane tool's arguments. */
typedef struct {
  char *name;
  int kind;           /* LANE_LUA: a value the lane does not check (the line goes to Lua) */
  int required;
  char **enums;       /* LANE_STRING: the allowed values, or NULL */
  int nenums;
  int nonempty;       /* LANE_STRING: "" goes to Lua (a minLength of 1) */
  int has_min, has_max;
  double min, max;    /* LANE_INTEGER's bounds; LANE_STRINGS's min: the fewest items */
} lane_prop;

/* A tool whose calls the lane may take. */
typedef struct {
  char *name, *method;
  int keep;           /* the answer is kept until its receipt (delivery_key, confirm) */
  int blocking;       /* a call with a progress token asks agentd for progress: Lua's */
  lane_prop *props;
  int nprops;
} lane_tool;

/* Reads the tool entry {name, method, keep, blocking, props = {{name, kind, required?, enum?,
 * minimum?, maximum?, min_items?, nonempty?}}} at the top of L's stack into t; raises on a
 * malformed one. */
void serverlane_tool_read(lua_State *L, lane_tool *t);

/* Frees what serverlane_tool_read allocated for t. */
void serverlane_tool_free(lane_tool *t);

/* True when the arguments text (a JSON object; NULL: absent) passes t's checks: each member a
 * property of t, once, ASCII, its value of the kind checked; every required one present. */
int serverlane_args_ok(const lane_tool *t, const char *args, size_t len);

#endif
