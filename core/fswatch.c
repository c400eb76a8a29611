/* fswatch.c: rmcp.fswatch, a change queue over directories that Lua drains synchronously.
 * Hot reload must see an edit on the very next call: a uv fs_event callback can run after the
 * request that follows the edit (both ready in one loop iteration, the socket first), but the
 * kernel queues the inotify event before the editor's write returns, so a non-blocking read of
 * the queue at the start of the call always sees it. */
#include "fswatch.h"

#include <errno.h>
#include <lauxlib.h>
#include <limits.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "lua_host.h"
#include "modules.h"

#define FSWATCH_MT "rmcp.fswatch"
#define FSWATCH_ENTRIES (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF)
#define FSWATCH_EVENTS (FSWATCH_ENTRIES | IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE)

/* Open a non-blocking, close-on-exec inotify queue. */
int fswatch_open(int *fdp)
{
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return -errno;
  *fdp = fd;
  return 0;
}

/* Watch dir for entries created, changed, removed or renamed, and for the dir itself going; with
 * entries_only, not for changes to what is in the entries (a dir where a log is written, watched
 * only for a subdir to appear, then queues nothing per log line). */
int fswatch_add(int fd, const char *dir, int entries_only, int *wdp)
{
  int wd = inotify_add_watch(fd, dir, (entries_only ? FSWATCH_ENTRIES : FSWATCH_EVENTS) | IN_ONLYDIR);
  if (wd < 0) return -errno;
  *wdp = wd;
  return 0;
}

/* Stop watching wd (EINVAL once the kernel dropped it, e.g. the dir was removed: harmless). */
int fswatch_remove(int fd, int wd)
{
  return inotify_rm_watch(fd, wd) < 0 ? -errno : 0;
}

/* Read everything queued without blocking and hand each event to fn. */
int fswatch_drain(int fd, void (*fn)(int wd, const char *name, void *ud), void *ud)
{
  char buf[16 * (sizeof(struct inotify_event) + NAME_MAX + 1)]
    __attribute__((aligned(__alignof__(struct inotify_event))));
  int count = 0;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return count;
      return -errno;
    }
    if (n == 0) return count;
    for (char *p = buf; p < buf + n;) {
      const struct inotify_event *ev = (const struct inotify_event *)p;
      fn(ev->wd, ev->len ? ev->name : "", ud);
      count++;
      p += sizeof(struct inotify_event) + ev->len;
    }
  }
}

typedef struct {
  int fd;
} lfswatch_t;

/* The open watcher at idx, raising when it was closed (a method has the metatable as upvalue 1:
 * luaopen_rmcp_fswatch; reload.check reads the queue on every call). */
static lfswatch_t *lfswatch_check(lua_State *L, int idx)
{
  lfswatch_t *w = lua_host_checkobject(L, idx, FSWATCH_MT);
  if (w->fd < 0) luaL_error(L, "fswatch: used after close");
  return w;
}

/* fswatch.open() -> watcher | nil, err, code */
static int lfswatch_open(lua_State *L)
{
  int fd = -1;
  int r = fswatch_open(&fd);
  if (r < 0) return lua_host_fail(L, r, "inotify_init1");
  lfswatch_t *w = lua_newuserdatauv(L, sizeof(*w), 0);
  w->fd = fd;
  luaL_setmetatable(L, FSWATCH_MT);
  return 1;
}

/* w:add(dir[, entries_only]) -> wd | nil, err, code */
static int lfswatch_add(lua_State *L)
{
  lfswatch_t *w = lfswatch_check(L, 1);
  const char *dir = luaL_checkstring(L, 2);
  int wd = -1;
  int r = fswatch_add(w->fd, dir, lua_toboolean(L, 3), &wd);
  if (r < 0) return lua_host_fail(L, r, dir);
  lua_pushinteger(L, wd);
  return 1;
}

/* w:fileno() -> the queue's fd, for a loop to poll it for readability (it stays ours) */
static int lfswatch_fileno(lua_State *L)
{
  lua_pushinteger(L, lfswatch_check(L, 1)->fd);
  return 1;
}

/* w:remove(wd) */
static int lfswatch_remove(lua_State *L)
{
  lfswatch_t *w = lfswatch_check(L, 1);
  fswatch_remove(w->fd, (int)luaL_checkinteger(L, 2));
  return 0;
}

/* Appends one event {wd=, name=} to the table on top of the stack, made by the first event (the
 * watcher alone at 1: none yet). */
static void lfswatch_push_event(int wd, const char *name, void *ud)
{
  lua_State *L = ud;
  if (lua_gettop(L) == 1) lua_newtable(L);
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, wd);
  lua_setfield(L, -2, "wd");
  lua_pushstring(L, name);
  lua_setfield(L, -2, "name");
  lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
}

/* w:read() -> nil when nothing is queued, else {{wd=, name=}, ...}; never blocks (and makes no
 * table when nothing is queued: agentd reads on every request) */
static int lfswatch_read(lua_State *L)
{
  lfswatch_t *w = lfswatch_check(L, 1);
  lua_settop(L, 1);
  int r = fswatch_drain(w->fd, lfswatch_push_event, L);
  if (r < 0) return lua_host_fail(L, r, "inotify read");
  if (r == 0) lua_pushnil(L);
  return 1;
}

/* w:close(); idempotent, also run by the garbage collector */
static int lfswatch_close(lua_State *L)
{
  lfswatch_t *w = luaL_checkudata(L, 1, FSWATCH_MT);
  if (w->fd >= 0) close(w->fd);
  w->fd = -1;
  return 0;
}

/* Registers rmcp.fswatch. */
int luaopen_rmcp_fswatch(lua_State *L)
{
  static const luaL_Reg methods[] = {
    {"add", lfswatch_add}, {"remove", lfswatch_remove}, {"read", lfswatch_read}, {"fileno", lfswatch_fileno},
    {"close", lfswatch_close}, {NULL, NULL},
  };
  luaL_newmetatable(L, FSWATCH_MT);
  lua_newtable(L);
  lua_pushvalue(L, -2); /* (each method's upvalue: the metatable, for lfswatch_check) */
  luaL_setfuncs(L, methods, 1);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, lfswatch_close);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, lfswatch_open);
  lua_setfield(L, -2, "open");
  return 1;
}
