/* sock.c: rmcp.sock, tmux-style: the socket lives in a 0700 directory whose owner we check, the
 * socket itself is 0600, and a peer of another uid is refused in C before Lua sees it. */
#define _GNU_SOURCE
#include "sock.h"

#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "lua_host.h"
#include "modules.h"

struct sock_listener {
  uv_poll_t poll;
  int fd;
  int closed;
  dev_t dev;
  ino_t ino;
  char *path;
  sock_accept_cb cb;
  void *data;
};

/* Format "CODE: detail" into msg and return err (a negative errno). */
static int sock_err(char *msg, size_t msglen, int err, const char *fmt, ...)
{
  char detail[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof(detail), fmt, ap);
  va_end(ap);
  if (msg && msglen) snprintf(msg, msglen, "%s: %s", uv_err_name(err), detail);
  return err;
}

/* mkdir -p (missing components created 0700), then refuse a dir that is a symbolic link (as tmux
 * does: a link can be repointed under us), is not ours or is open to group/others, saying why. */
int sock_secure_dir(const char *path, char *msg, size_t msglen)
{
  size_t n = strlen(path);
  if (n == 0) return sock_err(msg, msglen, UV_EINVAL, "empty directory path");
  char *buf = strdup(path);
  if (buf == NULL) return sock_err(msg, msglen, UV_ENOMEM, "out of memory");
  for (char *p = buf + 1;; p++) {
    if (*p != '/' && *p != '\0') continue;
    char c = *p;
    *p = '\0';
    struct stat dst;
    if (mkdir(buf, 0700) < 0 && errno != EEXIST && !(stat(buf, &dst) == 0 && S_ISDIR(dst.st_mode))) {
      int e = -errno;
      sock_err(msg, msglen, e, "cannot create %s: %s", buf, strerror(-e));
      free(buf);
      return e;
    }
    *p = c;
    if (c == '\0') break;
  }
  free(buf);
  struct stat st;
  if (lstat(path, &st) < 0) return sock_err(msg, msglen, -errno, "%s: %s", path, strerror(errno));
  if (S_ISLNK(st.st_mode))
    return sock_err(msg, msglen, UV_EACCES, "%s is a symbolic link; refusing to use it (point the setting at the real directory)",
                    path);
  if (!S_ISDIR(st.st_mode)) return sock_err(msg, msglen, UV_ENOTDIR, "%s is not a directory", path);
  if (st.st_uid != geteuid())
    return sock_err(msg, msglen, UV_EACCES, "%s is owned by uid %u, not by us (uid %u); refusing to use it",
                    path, (unsigned)st.st_uid, (unsigned)geteuid());
  if (st.st_mode & 077)
    return sock_err(msg, msglen, UV_EACCES, "%s has mode %04o: group/others can reach it; run chmod 700 %s",
                    path, (unsigned)(st.st_mode & 07777), path);
  return 0;
}

/* Fill a sockaddr_un, refusing paths that do not fit sun_path. */
static int sock_addr(const char *path, struct sockaddr_un *sa, char *msg, size_t msglen)
{
  memset(sa, 0, sizeof(*sa));
  sa->sun_family = AF_UNIX;
  size_t n = strlen(path);
  if (n == 0) return sock_err(msg, msglen, UV_EINVAL, "empty socket path");
  if (n >= sizeof(sa->sun_path))
    return sock_err(msg, msglen, UV_ENAMETOOLONG, "socket path is %zu bytes, the limit is %zu: %s", n,
                    sizeof(sa->sun_path) - 1, path);
  memcpy(sa->sun_path, path, n);
  return 0;
}

/* Accept every pending connection; check the peer's uid before handing the fd over. */
static void sock_accept_ready(uv_poll_t *poll, int status, int events)
{
  sock_listener_t *l = poll->data;
  (void)events;
  if (status < 0) {
    fprintf(stderr, "reasonix-mcp: listen %s: %s\n", l->path, uv_strerror(status));
    return;
  }
  while (!l->closed) {
    int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        fprintf(stderr, "reasonix-mcp: accept on %s: %s\n", l->path, strerror(errno));
      return;
    }
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
      fprintf(stderr, "reasonix-mcp: %s: cannot read peer credentials: %s\n", l->path, strerror(errno));
      close(fd);
      continue;
    }
    if (cred.uid != geteuid()) {
      fprintf(stderr, "reasonix-mcp: %s: refused a connection from uid %u (pid %d)\n", l->path,
              (unsigned)cred.uid, (int)cred.pid);
      close(fd);
      continue;
    }
    l->cb(l, fd, cred.uid, cred.pid);
  }
}

/* Listen on path: stale socket replaced, bound under umask 077, mode 0600, backlog 128. The socket
 * is bound and listening under a private name first and then renamed onto path, so a client never
 * finds a socket there that refuses it (bound, not yet listening); a path too long for the private
 * name is bound in place. */
int sock_listen(uv_loop_t *loop, const char *path, sock_accept_cb cb, void *data, sock_listener_t **out,
                char *msg, size_t msglen)
{
  struct sockaddr_un sa;
  int r = sock_addr(path, &sa, msg, msglen);
  if (r < 0) return r;
  struct stat st;
  if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode))
    return sock_err(msg, msglen, UV_EADDRINUSE, "%s exists and is not a socket", path);
  char tmp[sizeof(sa.sun_path)];
  int n = snprintf(tmp, sizeof(tmp), "%s.%ld", path, (long)getpid());
  const char *bound = (n > 0 && (size_t)n < sizeof(tmp)) ? tmp : path;
  if (bound == path && lstat(path, &st) == 0 && unlink(path) < 0 && errno != ENOENT)
    return sock_err(msg, msglen, -errno, "cannot remove stale socket %s: %s", path, strerror(errno));
  if (bound == tmp) {
    unlink(tmp); /* a leftover of a daemon with our pid */
    memcpy(sa.sun_path, tmp, (size_t)n + 1);
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return sock_err(msg, msglen, -errno, "socket: %s", strerror(errno));
  mode_t old = umask(077);
  int b = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
  int e = errno;
  umask(old);
  if (b < 0) {
    close(fd);
    return sock_err(msg, msglen, -e, "bind %s: %s", bound, strerror(e));
  }
  if (chmod(bound, 0600) < 0 || listen(fd, 128) < 0 || (bound == tmp && rename(tmp, path) < 0) ||
      lstat(path, &st) < 0) {
    e = errno;
    unlink(bound);
    close(fd);
    return sock_err(msg, msglen, -e, "listen %s: %s", path, strerror(e));
  }
  sock_listener_t *l = calloc(1, sizeof(*l));
  if (l) l->path = strdup(path);
  if (l == NULL || l->path == NULL) {
    if (l) free(l);
    unlink(path);
    close(fd);
    return sock_err(msg, msglen, UV_ENOMEM, "out of memory");
  }
  l->fd = fd;
  l->dev = st.st_dev;
  l->ino = st.st_ino;
  l->cb = cb;
  l->data = data;
  r = uv_poll_init(loop, &l->poll, fd);
  if (r == 0) {
    l->poll.data = l;
    r = uv_poll_start(&l->poll, UV_READABLE, sock_accept_ready);
    if (r < 0) {
      l->closed = 1;
      sock_listener_close(l);
      return sock_err(msg, msglen, r, "poll %s: %s", path, uv_strerror(r));
    }
  } else {
    unlink(path);
    close(fd);
    free(l->path);
    free(l);
    return sock_err(msg, msglen, r, "poll %s: %s", path, uv_strerror(r));
  }
  *out = l;
  return 0;
}

/* Close callback: the fd outlives the poll handle (libuv wants it open until then). */
static void sock_listener_closed(uv_handle_t *handle)
{
  sock_listener_t *l = handle->data;
  close(l->fd);
  free(l->path);
  free(l);
}

/* Stop listening and unlink the path, unless another server has replaced our socket there. */
void sock_listener_close(sock_listener_t *l)
{
  if (uv_is_closing((uv_handle_t *)&l->poll)) return;
  l->closed = 1;
  struct stat st;
  if (lstat(l->path, &st) == 0 && st.st_dev == l->dev && st.st_ino == l->ino) unlink(l->path);
  uv_close((uv_handle_t *)&l->poll, sock_listener_closed);
}

/* The owner pointer given at listen. */
void *sock_listener_data(const sock_listener_t *l)
{
  return l->data;
}

/* Connect to path (blocking; Unix sockets answer at once), refuse a server of another uid,
 * then make the fd non-blocking for a channel. */
int sock_connect(const char *path, int *fdp, char *msg, size_t msglen)
{
  struct sockaddr_un sa;
  int r = sock_addr(path, &sa, msg, msglen);
  if (r < 0) return r;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return sock_err(msg, msglen, -errno, "socket: %s", strerror(errno));
  if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
    int e = errno;
    if (e == EINTR || e == EINPROGRESS) {
      /* the connect goes on in the background: wait for its outcome */
      struct pollfd pfd = {fd, POLLOUT, 0};
      socklen_t el = sizeof(e);
      while (poll(&pfd, 1, -1) < 0 && errno == EINTR) {}
      if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0) e = errno;
    }
    if (e != 0) {
      close(fd);
      return sock_err(msg, msglen, -e, "connect %s: %s", path, strerror(e));
    }
  }
  struct ucred cred;
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
    int e = errno;
    close(fd);
    return sock_err(msg, msglen, -e, "%s: cannot read peer credentials: %s", path, strerror(e));
  }
  if (cred.uid != geteuid()) {
    close(fd);
    return sock_err(msg, msglen, UV_EACCES, "the server on %s runs as uid %u, not as us (uid %u)", path,
                    (unsigned)cred.uid, (unsigned)geteuid());
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
    int e = errno;
    close(fd);
    return sock_err(msg, msglen, -e, "fcntl: %s", strerror(e));
  }
  *fdp = fd;
  return 0;
}

/* ---- Lua binding: rmcp.sock ---- */

#define LSOCK_MT "rmcp.sock.listener"

typedef struct {
  sock_listener_t *l;
  lua_State *L;
  int self, cb;
} lsock_t;

/* Push nil, msg, code from a C failure. */
static int lsock_fail(lua_State *L, int err, const char *msg)
{
  lua_pushnil(L);
  lua_pushstring(L, msg);
  lua_pushstring(L, uv_err_name(err));
  return 3;
}

/* sock.secure_dir(path) -> true | nil, err, code */
static int lsock_secure_dir(lua_State *L)
{
  char msg[768];
  int r = sock_secure_dir(luaL_checkstring(L, 1), msg, sizeof(msg));
  if (r < 0) return lsock_fail(L, r, msg);
  lua_pushboolean(L, 1);
  return 1;
}

/* A connection from our own uid: cb(fd, uid, pid); Lua owns fd from here. */
static void lsock_on_accept(sock_listener_t *l, int fd, uid_t uid, pid_t pid)
{
  lsock_t *u = sock_listener_data(l);
  lua_State *L = u->L;
  lua_pushinteger(L, fd);
  lua_pushinteger(L, (lua_Integer)uid);
  lua_pushinteger(L, (lua_Integer)pid);
  lua_host_call_ref(L, u->cb, 3);
}

/* sock.listen(path, cb) -> listener | nil, err, code */
static int lsock_listen(lua_State *L)
{
  const char *path = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_host_t *h = lua_host_get(L);
  if (h == NULL) return luaL_error(L, "rmcp.sock needs the reasonix-mcp host");
  lsock_t *u = lua_newuserdatauv(L, sizeof(*u), 0);
  u->l = NULL;
  u->L = h->L;
  u->self = u->cb = LUA_NOREF;
  luaL_setmetatable(L, LSOCK_MT);
  char msg[768];
  int r = sock_listen(h->loop, path, lsock_on_accept, u, &u->l, msg, sizeof(msg));
  if (r < 0) {
    u->l = NULL;
    return lsock_fail(L, r, msg);
  }
  lua_pushvalue(L, 2);
  u->cb = luaL_ref(L, LUA_REGISTRYINDEX);
  u->self = lua_host_retain(L, -1);
  return 1;
}

/* srv:close(): stop listening and unlink the path; idempotent. */
static int lsock_close(lua_State *L)
{
  lsock_t *u = luaL_checkudata(L, 1, LSOCK_MT);
  if (u->l == NULL) return 0;
  sock_listener_close(u->l);
  u->l = NULL;
  lua_host_unref(L, &u->cb);
  lua_host_release(L, &u->self);
  return 0;
}

/* sock.connect(path) -> fd | nil, err, code */
static int lsock_connect(lua_State *L)
{
  char msg[768];
  int fd;
  int r = sock_connect(luaL_checkstring(L, 1), &fd, msg, sizeof(msg));
  if (r < 0) return lsock_fail(L, r, msg);
  lua_pushinteger(L, fd);
  return 1;
}

/* Module loader: require "rmcp.sock". */
int luaopen_rmcp_sock(lua_State *L)
{
  static const luaL_Reg meta[] = {
    {"__gc", lsock_close}, {"__close", lsock_close}, {LUA_HOST_TEARDOWN, lsock_close},
    {LUA_HOST_CLOSE, lsock_close}, {NULL, NULL},
  };
  static const luaL_Reg funcs[] = {
    {"secure_dir", lsock_secure_dir}, {"listen", lsock_listen}, {"connect", lsock_connect}, {NULL, NULL},
  };
  if (luaL_newmetatable(L, LSOCK_MT)) {
    luaL_setfuncs(L, meta, 0);
    lua_newtable(L);
    lua_pushcfunction(L, lsock_close);
    lua_setfield(L, -2, "close");
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  luaL_newlib(L, funcs);
  return 1;
}
