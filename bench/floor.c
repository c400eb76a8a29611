/* bench-floor: the floor of the MCP rows in bench/run.lua — the same hops as reasonix-mcp (host ->
 * launcher -> server over pipes, server -> daemon over a unix socket) with nothing on them but line
 * relaying and canned answers, so a row can say how far our code is from what the hops cost here.
 *
 *   bench-floor launch SOCK DIR   the launcher: runs `bench-floor server SOCK DIR` as its child and
 *                                 relays whole lines both ways (stdin EOF -> child stdin EOF -> exit)
 *   bench-floor server SOCK DIR   the MCP server on stdio: answers initialize, ping and tools/list
 *                                 itself; tools/call asks the daemon and splices its result in
 *   bench-floor daemon SOCK DIR   the daemon: listens on SOCK, answers {"id":K,"tool":"NAME"} with
 *                                 {"id":K,"result":<DIR/NAME.json>}; exits at stdin EOF. Its child,
 *                                 the agent, ends a "turn" on a pipe like an ACP agent on its stdio
 *
 * Canned answers are files in DIR holding one JSON value: initialize.json, tools_list.json (else
 * small defaults) and one per tool name (else {"content":[]}); bench/run.lua fills them with our
 * server's own replies, so both sides move the same bytes. The tool `stamp_watch` is the wake-up
 * row's floor, over the same hops as ours (the agent's turn end -> the daemon -> the server -> the
 * launcher -> the host): the daemon starts a turn at its agent, which 20 ms later takes the
 * CLOCK_MONOTONIC ns, writes its answer line to the daemon and then the stamp to DIR/stamp (as
 * the fake agent does); the daemon answers the watch when that line comes. A tool `work:NAME` is
 * NAME with the work a send does around its answer (the send row's second floor): the daemon appends
 * a line to DIR/journal, answers NAME, then starts a turn at its agent, which answers at once; that
 * answer is journaled too.
 * Requests are never parsed as JSON: the id token, method and tool name are found by substring. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "io.h"

#define MAX_CLIENTS 16
#define MAX_CANNED 32
#define STAMP_DELAY_NS 20000000LL

typedef struct {
  int fd;
  char *buf;
  size_t cap, len;
} linebuf_t;

typedef struct {
  char name[128];
  char *data;
  size_t len;
} canned_t;

static const char *dir;
static int stamp_fd = -1; /* DIR/stamp, opened once: each stamp is written in place (fixed width) */
static int journal_fd = -1; /* DIR/journal, opened once (O_APPEND), as agentd keeps a session's */
static canned_t canned[MAX_CANNED];
static int ncanned;

/* Prints why and exits 2. */
static void fail(const char *what) {
  fprintf(stderr, "bench-floor: %s: %s\n", what, strerror(errno));
  exit(2);
}



/* Reads what fd has into b; returns bytes read, 0 at EOF, -1 on error. */
static ssize_t fill(linebuf_t *b) {
  if (b->cap - b->len < 4096) {
    b->cap = b->cap ? b->cap * 2 : 1 << 16;
    b->buf = realloc(b->buf, b->cap);
    if (!b->buf) fail("realloc");
  }
  for (;;) {
    ssize_t r = read(b->fd, b->buf + b->len, b->cap - b->len);
    if (r < 0 && errno == EINTR) continue;
    if (r > 0) b->len += (size_t)r;
    return r;
  }
}

/* Calls fn(line, len incl. "\n", arg) for each whole line in b and keeps the partial rest. */
static void each_line(linebuf_t *b, void (*fn)(char *, size_t, void *), void *arg) {
  size_t at = 0;
  char *nl;
  while ((nl = memchr(b->buf + at, '\n', b->len - at))) {
    size_t n = (size_t)(nl - (b->buf + at)) + 1;
    fn(b->buf + at, n, arg);
    at += n;
  }
  if (at > 0) {
    memmove(b->buf, b->buf + at, b->len - at);
    b->len -= at;
  }
}

/* The canned answer named name (a file in dir, loaded once), or NULL when there is no such file. */
static canned_t *canned_get(const char *name) {
  for (int i = 0; i < ncanned; i++)
    if (strcmp(canned[i].name, name) == 0) return canned[i].data ? &canned[i] : NULL;
  if (ncanned == MAX_CANNED) return NULL;
  canned_t *c = &canned[ncanned++];
  snprintf(c->name, sizeof c->name, "%s", name);
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.json", dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  c->data = malloc((size_t)size + 1);
  if (!c->data) fail("malloc");
  c->len = fread(c->data, 1, (size_t)size, f);
  fclose(f);
  while (c->len > 0 && (c->data[c->len - 1] == '\n' || c->data[c->len - 1] == '\r')) c->len--;
  return c;
}

/* Copies the string value after key (e.g. "\"method\":\"") in line into out; 0 if absent. */
static int string_after(const char *line, size_t len, const char *key, char *out, size_t outsz) {
  const char *p = memmem(line, len, key, strlen(key));
  if (!p) return 0;
  p += strlen(key);
  const char *end = memchr(p, '"', (size_t)(line + len - p));
  if (!end || (size_t)(end - p) >= outsz) return 0;
  memcpy(out, p, (size_t)(end - p));
  out[end - p] = '\0';
  return 1;
}

/* Forks a child that dies with this process (PR_SET_PDEATHSIG; gone at once when this one already
 * was); returns 0 in the child, its pid here. */
static pid_t fork_child(void) {
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) fail("fork");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
  }
  return pid;
}

/* ---- launch ------------------------------------------------------------------------------ */

/* Writes one line (with its "\n") to the fd in *arg. */
static void relay_line(char *line, size_t len, void *arg) {
  struct iovec iov = { line, len };
  write_all(*(int *)arg, &iov, 1);
}

/* The launcher: the server as a child on two pipes, whole lines relayed each way. */
static int run_launch(const char *sock) {
  int in[2], out[2];
  if (pipe(in) < 0 || pipe(out) < 0) fail("pipe");
  pid_t pid = fork_child();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[0]); close(in[1]); close(out[0]); close(out[1]);
    execl("/proc/self/exe", "bench-floor", "server", sock, dir, (char *)NULL);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  int to_child = in[1], to_host = 1;
  linebuf_t host = { 0, NULL, 0, 0 }, child = { out[0], NULL, 0, 0 };
  struct pollfd p[2] = { { 0, POLLIN, 0 }, { out[0], POLLIN, 0 } };
  int host_open = 1;
  for (;;) {
    int r = poll(p, 2, -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      fail("poll");
    }
    if (host_open && p[0].revents) {
      if (fill(&host) <= 0) {
        host_open = 0;
        p[0].fd = -1;
        close(to_child);
      } else {
        each_line(&host, relay_line, &to_child);
      }
    }
    if (p[1].revents) {
      if (fill(&child) <= 0) break;
      each_line(&child, relay_line, &to_host);
    }
  }
  int status;
  waitpid(pid, &status, 0);
  return 0;
}

/* ---- server ------------------------------------------------------------------------------ */

typedef struct {
  int daemon_fd;
  linebuf_t daemon;
  long long next_id;
} server_t;

/* Answers one line from the host on stdout (notifications get nothing). */
static void server_line(char *line, size_t len, void *arg) {
  server_t *S = arg;
  const char *idp = memmem(line, len, "\"id\":", 5);
  if (!idp) return;
  idp += 5;
  size_t idlen = strcspn(idp, ",}");
  char method[64] = "";
  string_after(line, len, "\"method\":\"", method, sizeof method);
  struct iovec iov[5];
  static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":", result[] = ",\"result\":";
  iov[0].iov_base = (void *)head;
  iov[0].iov_len = sizeof head - 1;
  iov[1].iov_base = (void *)idp;
  iov[1].iov_len = idlen;
  iov[2].iov_base = (void *)result;
  iov[2].iov_len = sizeof result - 1;
  iov[4].iov_base = "}\n";
  iov[4].iov_len = 2;
  canned_t *c = NULL;
  const char *fallback = "{}";
  if (strcmp(method, "tools/call") == 0) {
    char tool[120];
    if (!string_after(line, len, "\"name\":\"", tool, sizeof tool) || S->daemon_fd < 0) {
      fallback = "{\"content\":[],\"isError\":true}";
    } else {
      char req[200];
      int n = snprintf(req, sizeof req, "{\"id\":%lld,\"tool\":\"%s\"}\n", ++S->next_id, tool);
      struct iovec q = { req, (size_t)n };
      if (write_all(S->daemon_fd, &q, 1) < 0) fail("write to the daemon");
      char *nl;
      while (!(nl = memchr(S->daemon.buf ? S->daemon.buf : "", '\n', S->daemon.len)))
        if (fill(&S->daemon) <= 0) fail("read from the daemon");
      size_t dlen = (size_t)(nl - S->daemon.buf) + 1;
      char *res = memmem(S->daemon.buf, dlen, "\"result\":", 9);
      if (!res) fail("daemon reply without result");
      res += 9;
      /* the daemon's line ends in "}\n": its result and our envelope's "}" */
      iov[3].iov_base = res;
      iov[3].iov_len = (size_t)(S->daemon.buf + dlen - res) - 2;
      write_all(1, iov, 5);
      memmove(S->daemon.buf, S->daemon.buf + dlen, S->daemon.len - dlen);
      S->daemon.len -= dlen;
      return;
    }
  } else if (strcmp(method, "initialize") == 0) {
    c = canned_get("initialize");
    fallback = "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"tools\":{}},"
               "\"serverInfo\":{\"name\":\"bench-floor\",\"version\":\"0\"}}";
  } else if (strcmp(method, "tools/list") == 0) {
    c = canned_get("tools_list");
    fallback = "{\"tools\":[]}";
  } else if (strcmp(method, "ping") != 0) {
    iov[2].iov_base = ",\"error\":{\"code\":-32601,\"message\":\"method not found\"}";
    iov[2].iov_len = strlen(iov[2].iov_base);
    iov[3].iov_base = "";
    iov[3].iov_len = 0;
    write_all(1, iov, 5);
    return;
  }
  iov[3].iov_base = c ? c->data : (void *)fallback;
  iov[3].iov_len = c ? c->len : strlen(fallback);
  write_all(1, iov, 5);
}

/* The server: MCP on stdio, connected to the daemon from the start (as ours connects to agentd). */
static int run_server(const char *sock) {
  server_t S = { -1, { -1, NULL, 0, 0 }, 0 };
  struct sockaddr_un a = { .sun_family = AF_UNIX };
  snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
    S.daemon_fd = fd;
    S.daemon.fd = fd;
  } else {
    fprintf(stderr, "bench-floor: no daemon at %s: %s\n", sock, strerror(errno));
    if (fd >= 0) close(fd);
  }
  linebuf_t in = { 0, NULL, 0, 0 };
  while (fill(&in) > 0) each_line(&in, server_line, &S);
  return 0;
}

/* ---- daemon ------------------------------------------------------------------------------ */

typedef struct {
  linebuf_t in;
} client_t;

static client_t clients[MAX_CLIENTS];
static int agent_in = -1; /* the daemon's write end of its agent's stdin */

/* Sends {"id":ID,"result":<canned or default>} to client fd. */
static void daemon_answer(int fd, const char *id, const char *tool) {
  canned_t *c = canned_get(tool);
  static const char none[] = "{\"content\":[]}";
  struct iovec iov[5] = {
    { "{\"id\":", 6 }, { (void *)id, strlen(id) }, { ",\"result\":", 10 },
    { c ? c->data : (void *)none, c ? c->len : sizeof none - 1 }, { "}\n", 2 },
  };
  write_all(fd, iov, 5);
}

/* Appends one line (what, then a newline) to DIR/journal. */
static void daemon_journal(const char *what) {
  if (journal_fd < 0) {
    char path[4096];
    snprintf(path, sizeof path, "%s/journal", dir);
    journal_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (journal_fd < 0) fail("journal");
  }
  struct iovec iov[2] = { { (void *)what, strlen(what) }, { "\n", 1 } };
  write_all(journal_fd, iov, 2);
}

/* Answers one request line of the client in *arg (a stamp_watch when its agent's turn ends). */
static void daemon_line(char *line, size_t len, void *arg) {
  client_t *cl = arg;
  char id[32] = "0", tool[120] = "";
  const char *idp = memmem(line, len, "\"id\":", 5);
  if (idp) {
    size_t n = strcspn(idp + 5, ",}");
    if (n < sizeof id) { memcpy(id, idp + 5, n); id[n] = '\0'; }
  }
  string_after(line, len, "\"tool\":\"", tool, sizeof tool);
  if (strcmp(tool, "stamp_watch") == 0) {
    char turn[64];
    int n = snprintf(turn, sizeof turn, "%d %s\n", (int)(cl - clients), id);
    struct iovec iov = { turn, (size_t)n };
    write_all(agent_in, &iov, 1);
    return;
  }
  if (strncmp(tool, "work:", 5) == 0) {
    daemon_journal("{\"type\":\"prompt\",\"text\":\"hi\"}");
    daemon_answer(cl->in.fd, id, tool + 5);
    struct iovec iov = { "now\n", 4 };
    write_all(agent_in, &iov, 1);
    return;
  }
  daemon_answer(cl->in.fd, id, tool);
}

/* The agent's answer ended a turn: "now" (a work: tool's) is journaled; "CLIENT ID" answers that
 * client's stamp_watch. */
static void daemon_turn_end(char *line, size_t len, void *arg) {
  (void)arg;
  char id[32];
  int i;
  line[len - 1] = '\0';
  if (strcmp(line, "now") == 0) {
    daemon_journal("{\"type\":\"turn_end\",\"stop_reason\":\"end_turn\"}");
    return;
  }
  if (sscanf(line, "%d %31s", &i, id) != 2 || i < 0 || i >= MAX_CLIENTS || clients[i].in.fd < 0) return;
  daemon_answer(clients[i].in.fd, id, "stamp_watch");
}

/* Writes stamp (ns) over the last one in DIR/stamp (no create or truncate keeps the woken reader
 * waiting). */
static void agent_stamp(long long t) {
  if (stamp_fd < 0) {
    char path[4096];
    snprintf(path, sizeof path, "%s/stamp", dir);
    stamp_fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (stamp_fd < 0) return;
  }
  char b[32];
  int n = snprintf(b, sizeof b, "%20lld\n", t);
  if (pwrite(stamp_fd, b, (size_t)n, 0) != n) perror("floor: stamp");
}

/* One turn of the agent (its line "CLIENT ID"): 20 ms later the stamp is taken, the line goes back
 * as the turn's answer, then the stamp is written. A line "now" goes back at once. */
static void agent_turn(char *line, size_t len, void *arg) {
  int out = *(int *)arg;
  if (len == 4 && memcmp(line, "now\n", 4) == 0) {
    struct iovec iov = { line, len };
    write_all(out, &iov, 1);
    return;
  }
  struct timespec delay = { 0, STAMP_DELAY_NS };
  while (nanosleep(&delay, &delay) < 0 && errno == EINTR) {}
  long long t = now_ns();
  struct iovec iov = { line, len };
  write_all(out, &iov, 1);
  agent_stamp(t);
}

/* Starts the agent: a child that reads turns on a pipe and answers on another, as an ACP agent on
 * its stdio; returns the fd the daemon reads its answers on. */
static int start_agent(void) {
  int to[2], from[2];
  if (pipe2(to, O_CLOEXEC) < 0 || pipe2(from, O_CLOEXEC) < 0) fail("pipe");
  if (fork_child() == 0) {
    close(to[1]);
    close(from[0]);
    linebuf_t in = { to[0], NULL, 0, 0 };
    while (fill(&in) > 0) each_line(&in, agent_turn, &from[1]);
    _exit(0);
  }
  close(to[0]);
  close(from[1]);
  agent_in = to[1];
  return from[0];
}

/* The daemon: a listening socket, up to MAX_CLIENTS connections, stdin EOF ends it. */
static int run_daemon(const char *sock) {
  struct sockaddr_un a = { .sun_family = AF_UNIX };
  snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
  unlink(sock);
  int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (lfd < 0) fail("socket");
  if (bind(lfd, (struct sockaddr *)&a, sizeof a) < 0) fail("bind");
  if (listen(lfd, 16) < 0) fail("listen");
  for (int i = 0; i < MAX_CLIENTS; i++) clients[i].in.fd = -1;
  linebuf_t agent = { start_agent(), NULL, 0, 0 };
  fprintf(stderr, "bench-floor: daemon listening on %s\n", sock);
  for (;;) {
    struct pollfd p[MAX_CLIENTS + 3];
    int map[MAX_CLIENTS + 3];
    int n = 0;
    p[n] = (struct pollfd){ 0, POLLIN, 0 };
    map[n++] = -2;
    p[n] = (struct pollfd){ lfd, POLLIN, 0 };
    map[n++] = -1;
    p[n] = (struct pollfd){ agent.fd, POLLIN, 0 };
    map[n++] = -3;
    for (int i = 0; i < MAX_CLIENTS; i++) {
      if (clients[i].in.fd < 0) continue;
      p[n] = (struct pollfd){ clients[i].in.fd, POLLIN, 0 };
      map[n++] = i;
    }
    int r = poll(p, (nfds_t)n, -1);
    if (r < 0 && errno != EINTR) fail("poll");
    if (r <= 0) continue;
    for (int k = 0; k < n; k++) {
      if (!p[k].revents) continue;
      if (map[k] == -2) {
        char sink[256];
        if (read(0, sink, sizeof sink) <= 0) {
          unlink(sock);
          return 0;
        }
      } else if (map[k] == -3) {
        if (fill(&agent) <= 0) fail("the agent is gone");
        each_line(&agent, daemon_turn_end, NULL);
      } else if (map[k] == -1) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) continue;
        int i = 0;
        while (i < MAX_CLIENTS && clients[i].in.fd >= 0) i++;
        if (i == MAX_CLIENTS) { close(fd); continue; }
        clients[i].in = (linebuf_t){ fd, clients[i].in.buf, clients[i].in.cap, 0 };
      } else {
        client_t *cl = &clients[map[k]];
        if (fill(&cl->in) <= 0) {
          close(cl->in.fd);
          cl->in.fd = -1;
        } else {
          each_line(&cl->in, daemon_line, cl);
        }
      }
    }
  }
}

/* Entry: bench-floor launch|server|daemon SOCK DIR. */
int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: bench-floor launch|server|daemon SOCK DIR\n");
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  dir = argv[3];
  if (strcmp(argv[1], "launch") == 0) return run_launch(argv[2]);
  if (strcmp(argv[1], "server") == 0) return run_server(argv[2]);
  if (strcmp(argv[1], "daemon") == 0) return run_daemon(argv[2]);
  fprintf(stderr, "usage: bench-floor launch|server|daemon SOCK DIR\n");
  return 1;
}
