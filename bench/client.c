/* bench-client: the bare NDJSON client behind every MCP row of bench/run.lua. It starts the MCP
 * servers a plan names (ours through the launcher, the Node SDK peer, the C floor), all with the
 * same code path: fork+exec, two pipes, one buffered reader per server, one request in flight.
 *
 *   bench-client rtt  PLAN ROUNDS [WARM]   round trips of each case, interleaved round by round
 *   bench-client cold PLAN ROUNDS          start -> initialize result of each server, interleaved
 *
 * PLAN has one directive per line, fields separated by tabs:
 *   server NAME ARGV0 [ARG...]    a server, started with this argv (PATH searched), our env and cwd
 *   case   LABEL SERVER REQUEST   a timed request; "@ID@" in REQUEST becomes the request id
 *   pre    LABEL REQUEST          sent and answered (untimed) before each timed request of LABEL
 *   stamp  LABEL FILE             the interval of LABEL starts at the CLOCK_MONOTONIC ns the peer
 *                                 writes into FILE (the fake agent's turn end), not at the send
 *   dump   LABEL FILE             the last reply line of LABEL is written to FILE
 * Output (stdout), one JSON object a line: per case {"case","n","p50","p90","p99","mean","min",
 * "max","bytes","errors","error"} in microseconds; per server {"server","init","rss_kib"} (rtt:
 * the RSS of the server and each child, after the rounds). Progress and failures go to stderr.
 * Exit: 0 done, 1 usage or plan error, 2 a server died or did not answer in time. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "io.h"

#define MAX_SERVERS 8
#define MAX_CASES 32
#define MAX_ARGS 32

typedef struct {
  char *name;
  char *argv[MAX_ARGS + 1];
  pid_t pid;
  int to_fd;    /* its stdin */
  int from_fd;  /* its stdout */
  char *buf;
  size_t cap, start, end;
  double init_us;
} server_t;

typedef struct {
  char *label;
  server_t *srv;
  char *head, *tail;         /* the request around @ID@ */
  char *pre_head, *pre_tail; /* optional untimed request before it */
  char *stamp;               /* optional stamp file */
  char *dump;                /* optional file for the last reply */
  double *lat;
  size_t n, bytes;
  unsigned errors;
  long long last_stamp;
  char error[240];
  char *last;
  size_t last_len;
} case_t;

static server_t servers[MAX_SERVERS];
static int nservers;
static case_t cases[MAX_CASES];
static int ncases;
static long long next_id = 1;

/* Prints a message to stderr and exits with code. */
static void die(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("bench-client: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(code);
}


/* strdup that exits on out-of-memory. */
static char *xstrdup(const char *s) {
  char *d = strdup(s);
  if (!d) die(2, "out of memory");
  return d;
}

/* Finds a server by name, or NULL. */
static server_t *find_server(const char *name) {
  for (int i = 0; i < nservers; i++)
    if (strcmp(servers[i].name, name) == 0) return &servers[i];
  return NULL;
}

/* Finds a case by label, or NULL. */
static case_t *find_case(const char *label) {
  for (int i = 0; i < ncases; i++)
    if (strcmp(cases[i].label, label) == 0) return &cases[i];
  return NULL;
}

/* Splits a request template at its "@ID@" into head and tail (a template without it has no id). */
static void split_template(const char *req, char **head, char **tail) {
  const char *at = strstr(req, "@ID@");
  if (!at) {
    *head = xstrdup(req);
    *tail = xstrdup("");
    return;
  }
  *head = strndup(req, (size_t)(at - req));
  *tail = xstrdup(at + 4);
  if (!*head) die(2, "out of memory");
}

/* Reads the plan file into servers[] and cases[]. */
static void read_plan(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) die(1, "cannot open plan %s: %s", path, strerror(errno));
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  int lineno = 0;
  while ((len = getline(&line, &cap, f)) >= 0) {
    lineno++;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
    if (len == 0 || line[0] == '#') continue;
    char *field[MAX_ARGS + 3];
    int nf = 0;
    char *save = NULL;
    for (char *tok = strtok_r(line, "\t", &save); tok && nf < MAX_ARGS + 3; tok = strtok_r(NULL, "\t", &save))
      field[nf++] = tok;
    if (nf == 0) continue;
    if (strcmp(field[0], "server") == 0 && nf >= 3) {
      if (nservers == MAX_SERVERS) die(1, "plan line %d: too many servers", lineno);
      server_t *s = &servers[nservers++];
      s->name = xstrdup(field[1]);
      for (int i = 2; i < nf && i - 2 < MAX_ARGS; i++) s->argv[i - 2] = xstrdup(field[i]);
      s->pid = -1;
      s->to_fd = s->from_fd = -1;
    } else if (strcmp(field[0], "case") == 0 && nf == 4) {
      if (ncases == MAX_CASES) die(1, "plan line %d: too many cases", lineno);
      case_t *c = &cases[ncases++];
      c->label = xstrdup(field[1]);
      c->srv = find_server(field[2]);
      if (!c->srv) die(1, "plan line %d: unknown server %s", lineno, field[2]);
      split_template(field[3], &c->head, &c->tail);
    } else if (nf == 3 && (strcmp(field[0], "pre") == 0 || strcmp(field[0], "stamp") == 0 ||
                           strcmp(field[0], "dump") == 0)) {
      case_t *c = find_case(field[1]);
      if (!c) die(1, "plan line %d: unknown case %s", lineno, field[1]);
      if (field[0][0] == 'p') split_template(field[2], &c->pre_head, &c->pre_tail);
      else if (field[0][0] == 's') c->stamp = xstrdup(field[2]);
      else c->dump = xstrdup(field[2]);
    } else {
      die(1, "plan line %d: cannot read `%s`", lineno, field[0]);
    }
  }
  free(line);
  fclose(f);
  if (nservers == 0) die(1, "plan %s names no server", path);
}

/* Starts s with pipes on its stdin/stdout, in its own process group, dying with us. */
static void server_start(server_t *s) {
  int in[2], out[2];
  if (pipe(in) < 0 || pipe(out) < 0) die(2, "pipe: %s", strerror(errno));
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) die(2, "fork: %s", strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[0]); close(in[1]); close(out[0]); close(out[1]);
    execvp(s->argv[0], s->argv);
    fprintf(stderr, "bench-client: cannot run %s: %s\n", s->argv[0], strerror(errno));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  fcntl(in[1], F_SETFD, FD_CLOEXEC);
  fcntl(out[0], F_SETFD, FD_CLOEXEC);
  s->pid = pid;
  s->to_fd = in[1];
  s->from_fd = out[0];
  s->start = s->end = 0;
  if (!s->buf) {
    s->cap = 1 << 16;
    s->buf = malloc(s->cap);
    if (!s->buf) die(2, "out of memory");
  }
}

/* Writes all of the iovecs to s (one writev in the usual case); a server that is gone ends the run. */
static void server_writev(server_t *s, struct iovec *iov, int n) {
  if (write_all(s->to_fd, iov, n) < 0) die(2, "%s: write: %s (did it exit?)", s->name, strerror(errno));
}

/* Sends head ID tail "\n" to s; returns the id used. */
static long long server_send(server_t *s, const char *head, const char *tail) {
  char idbuf[32];
  long long id = next_id++;
  int idlen = snprintf(idbuf, sizeof idbuf, "%lld", id);
  struct iovec iov[4] = {
    { (void *)head, strlen(head) }, { idbuf, (size_t)idlen }, { (void *)tail, strlen(tail) }, { "\n", 1 },
  };
  server_writev(s, iov, 4);
  return id;
}

/* The next line from s (without "\n", NUL-terminated in place), or NULL at EOF. Reads block: a
 * server that hangs is ended by bench/run.lua's deadline, whose kill reaches it through PDEATHSIG. */
static char *server_read_line(server_t *s, size_t *len) {
  for (;;) {
    char *nl = memchr(s->buf + s->start, '\n', s->end - s->start);
    if (nl) {
      char *line = s->buf + s->start;
      *len = (size_t)(nl - line);
      *nl = '\0';
      s->start = (size_t)(nl - s->buf) + 1;
      if (s->start == s->end) s->start = s->end = 0;
      return line;
    }
    if (s->start > 0) {
      memmove(s->buf, s->buf + s->start, s->end - s->start);
      s->end -= s->start;
      s->start = 0;
    }
    if (s->end == s->cap) {
      s->cap *= 2;
      s->buf = realloc(s->buf, s->cap);
      if (!s->buf) die(2, "out of memory");
    }
    ssize_t r = read(s->from_fd, s->buf + s->end, s->cap - s->end);
    if (r > 0) s->end += (size_t)r;
    else if (r == 0 || errno != EINTR) return NULL;
  }
}

/* The value of a top-level "id" key of a JSON object line when it is an integer; 0 if none. The
 * usual envelopes are read at the head (ours) or at the tail (the Node SDK's), else the line is
 * walked with string and depth tracking. */
static int line_id(const char *line, size_t len, long long *id) {
  static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
  if (len > sizeof head && memcmp(line, head, sizeof head - 1) == 0) {
    char *end;
    long long v = strtoll(line + sizeof head - 1, &end, 10);
    if (end != line + sizeof head - 1 && (*end == ',' || *end == '}')) { *id = v; return 1; }
  }
  /* tail: ...,"id":123} */
  if (len > 8 && line[len - 1] == '}') {
    size_t i = len - 1;
    while (i > 0 && line[i - 1] >= '0' && line[i - 1] <= '9') i--;
    if (i < len - 1 && i >= 6 && memcmp(line + i - 5, "\"id\":", 5) == 0 &&
        (line[i - 6] == ',' || line[i - 6] == '{')) {
      *id = strtoll(line + i, NULL, 10);
      return 1;
    }
  }
  int depth = 0, in_str = 0;
  for (size_t i = 0; i < len; i++) {
    char c = line[i];
    if (in_str) {
      if (c == '\\') i++;
      else if (c == '"') in_str = 0;
      continue;
    }
    if (c == '{' || c == '[') depth++;
    else if (c == '}' || c == ']') depth--;
    else if (c == '"') {
      if (depth == 1 && i + 5 <= len && memcmp(line + i, "\"id\":", 5) == 0) {
        char *end;
        long long v = strtoll(line + i + 5, &end, 10);
        if (end != line + i + 5) { *id = v; return 1; }
        return 0;
      }
      in_str = 1;
    }
  }
  return 0;
}

/* Reads lines from s until the reply to id; returns it (valid until the next read) or dies. */
static char *await_reply(server_t *s, long long id, size_t *len) {
  for (;;) {
    char *line = server_read_line(s, len);
    if (!line) die(2, "%s: no reply to request %lld: the server closed its stdout", s->name, id);
    long long got;
    if (line_id(line, *len, &got) && got == id) return line;
  }
}

/* True when a reply line carries a result that is not a tool error. */
static int reply_ok(const char *line) {
  return strstr(line, "\"result\":") && !strstr(line, "\"isError\":true");
}

/* Closes s's stdin and waits for it to exit: TERM to its group after 5 s, KILL after 2 more. */
static void server_stop(server_t *s) {
  if (s->pid < 0) return;
  close(s->to_fd);
  s->to_fd = -1;
  int status;
  long long t0 = now_ns();
  int sig = 0;
  for (;;) {
    pid_t r = waitpid(s->pid, &status, WNOHANG);
    if (r == s->pid || (r < 0 && errno == ECHILD)) break;
    long long waited = (now_ns() - t0) / 1000000LL;
    if (sig == 0 && waited > 5000) { kill(-s->pid, SIGTERM); kill(s->pid, SIGTERM); sig = SIGTERM; }
    if (sig == SIGTERM && waited > 7000) { kill(-s->pid, SIGKILL); kill(s->pid, SIGKILL); sig = SIGKILL; }
    /* drain its stdout so it is never blocked writing */
    char sink[4096];
    struct pollfd p = { s->from_fd, POLLIN, 0 };
    if (poll(&p, 1, 5) > 0 && read(s->from_fd, sink, sizeof sink) <= 0) {
      struct timespec ts = { 0, 2000000 };
      nanosleep(&ts, NULL);
    }
  }
  if (sig) fprintf(stderr, "bench-client: %s (pid %d) did not exit on stdin EOF; sent %s\n", s->name, (int)s->pid,
                   sig == SIGTERM ? "SIGTERM" : "SIGKILL");
  close(s->from_fd);
  s->from_fd = -1;
  s->pid = -1;
  s->start = s->end = 0;
}

/* MCP initialize on s; returns microseconds from before the send to the result. */
static double server_initialize(server_t *s) {
  static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
  static const char tail[] = ",\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\","
                             "\"capabilities\":{},\"clientInfo\":{\"name\":\"bench-client\",\"version\":\"0\"}}}";
  long long t0 = now_ns();
  long long id = server_send(s, head, tail);
  size_t len;
  char *line = await_reply(s, id, &len);
  double us = (double)(now_ns() - t0) / 1e3;
  if (!reply_ok(line)) die(2, "%s: initialize failed: %.300s", s->name, line);
  static const char note[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
  struct iovec iov[2] = { { (void *)note, sizeof note - 1 }, { "\n", 1 } };
  server_writev(s, iov, 2);
  return us;
}

/* Reads the ns stamp in file; waits (up to 2 s) until it differs from prev. Returns 0 if none. */
static long long read_stamp(const char *file, long long prev) {
  long long t0 = now_ns();
  for (;;) {
    int fd = open(file, O_RDONLY);
    if (fd >= 0) {
      char b[64];
      ssize_t r = read(fd, b, sizeof b - 1);
      close(fd);
      if (r > 0) {
        b[r] = '\0';
        long long v = strtoll(b, NULL, 10);
        if (v != 0 && v != prev) return v;
      }
    }
    if (now_ns() - t0 > 2000000000LL) return 0;
    struct timespec ts = { 0, 20000 };
    nanosleep(&ts, NULL);
  }
}

/* Records an error of c (the first one's text is kept). */
static void case_error(case_t *c, const char *what, const char *line) {
  c->errors++;
  if (!c->error[0]) snprintf(c->error, sizeof c->error, "%s: %.200s", what, line ? line : "");
}

/* Runs one timed request of c; record = 0 for a warm-up. */
static void case_run(case_t *c, int record) {
  server_t *s = c->srv;
  size_t len;
  if (c->pre_head) {
    long long pid = server_send(s, c->pre_head, c->pre_tail);
    char *pre = await_reply(s, pid, &len);
    if (!reply_ok(pre)) case_error(c, "pre request", pre);
  }
  long long t0 = now_ns();
  long long id = server_send(s, c->head, c->tail);
  char *line = await_reply(s, id, &len);
  long long t1 = now_ns();
  if (!reply_ok(line)) case_error(c, "reply", line);
  if (c->stamp) {
    long long st = read_stamp(c->stamp, c->last_stamp);
    if (st == 0) { case_error(c, "no new stamp in", c->stamp); return; }
    c->last_stamp = st;
    if (st > t1) { case_error(c, "stamp after the reply", NULL); return; }
    t0 = st;
  }
  c->bytes = len + 1;
  if (c->dump) {
    if (c->last_len < len + 1) {
      c->last = realloc(c->last, len + 1);
      if (!c->last) die(2, "out of memory");
    }
    memcpy(c->last, line, len);
    c->last_len = len;
  }
  if (record) c->lat[c->n++] = (double)(t1 - t0) / 1e3;
}

/* qsort order of doubles. */
static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The q-quantile of sorted v (nearest rank, as bench/run.lua computes it). */
static double quantile(const double *v, size_t n, double q) {
  if (n == 0) return 0;
  size_t i = (size_t)(q * (double)n + 0.999999999);
  if (i < 1) i = 1;
  if (i > n) i = n;
  return v[i - 1];
}

/* Prints s as a JSON string (labels and error texts). */
static void print_json_string(const char *s) {
  putchar('"');
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') printf("\\%c", ch);
    else if (ch < 0x20) printf("\\u%04x", ch);
    else putchar(ch);
  }
  putchar('"');
}

/* Prints one result line: label, count and the latency distribution in microseconds. */
static void print_stats(const char *key, const char *label, double *v, size_t n, size_t bytes, unsigned errors,
                        const char *error) {
  qsort(v, n, sizeof *v, cmp_double);
  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += v[i];
  printf("{\"%s\":", key);
  print_json_string(label);
  printf(",\"n\":%zu,\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"mean\":%.3f,\"min\":%.3f,\"max\":%.3f,\"bytes\":%zu,"
         "\"errors\":%u",
         n, quantile(v, n, 0.5), quantile(v, n, 0.9), quantile(v, n, 0.99), n ? sum / (double)n : 0,
         n ? v[0] : 0, n ? v[n - 1] : 0, bytes, errors);
  if (error && error[0]) {
    printf(",\"error\":");
    print_json_string(error);
  }
  printf("}\n");
}

/* VmRSS of pid in KiB, or -1. */
static long rss_kib(pid_t pid) {
  char path[64], b[4096];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -1;
  ssize_t r = read(fd, b, sizeof b - 1);
  close(fd);
  if (r <= 0) return -1;
  b[r] = '\0';
  char *p = strstr(b, "VmRSS:");
  return p ? strtol(p + 6, NULL, 10) : -1;
}

/* Prints {"server","init","rss_kib":[pid's RSS, then each direct child's]} for s. */
static void print_server(server_t *s) {
  printf("{\"server\":");
  print_json_string(s->name);
  printf(",\"init\":%.3f,\"pid\":%d,\"rss_kib\":[%ld", s->init_us, (int)s->pid, rss_kib(s->pid));
  DIR *d = opendir("/proc");
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char path[300], b[512];
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    int fd = open(path, O_RDONLY);
    if (fd < 0) continue;
    ssize_t r = read(fd, b, sizeof b - 1);
    close(fd);
    if (r <= 0) continue;
    b[r] = '\0';
    char *rp = strrchr(b, ')');
    int ppid = 0;
    char state;
    if (rp && sscanf(rp + 1, " %c %d", &state, &ppid) == 2 && ppid == s->pid)
      printf(",%ld", rss_kib((pid_t)atoi(e->d_name)));
  }
  if (d) closedir(d);
  printf("]}\n");
}

/* The next number of a xorshift64 sequence in *state (a fixed seed: the same orders every run). */
static uint64_t next_random(uint64_t *state) {
  uint64_t x = *state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *state = x;
}

/* Puts the case numbers 0..ncases-1 into order[] in a new random order (Fisher-Yates). */
static void shuffle_cases(int *order, uint64_t *state) {
  for (int i = 0; i < ncases; i++) order[i] = i;
  for (int i = ncases - 1; i > 0; i--) {
    int j = (int)(next_random(state) % (uint64_t)(i + 1));
    int t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
}

/* rtt: all servers up, then ROUNDS rounds of every case, each round in an order of its own. A
 * case's time depends on what ran just before it (a case after the Node peer finds the caches
 * holding the peer's code and data, not its own), so no case may always follow the same one. */
static int run_rtt(int rounds, int warm) {
  for (int i = 0; i < nservers; i++) {
    server_start(&servers[i]);
    servers[i].init_us = server_initialize(&servers[i]);
  }
  for (int i = 0; i < ncases; i++) {
    cases[i].lat = calloc((size_t)rounds + 1, sizeof(double));
    if (!cases[i].lat) die(2, "out of memory");
  }
  uint64_t seed = 0x9E3779B97F4A7C15ULL;
  int order[MAX_CASES];
  for (int r = 0; r < warm + rounds; r++) {
    shuffle_cases(order, &seed);
    for (int k = 0; k < ncases; k++) case_run(&cases[order[k]], r >= warm);
  }
  for (int i = 0; i < nservers; i++) print_server(&servers[i]);
  fflush(stdout);
  for (int i = 0; i < nservers; i++) server_stop(&servers[i]);
  for (int i = 0; i < ncases; i++) {
    case_t *c = &cases[i];
    print_stats("case", c->label, c->lat, c->n, c->bytes, c->errors, c->error);
    if (c->dump && c->last) {
      FILE *f = fopen(c->dump, "w");
      if (!f) die(2, "cannot write %s: %s", c->dump, strerror(errno));
      fwrite(c->last, 1, c->last_len, f);
      fputc('\n', f);
      fclose(f);
    }
  }
  return 0;
}

/* cold: ROUNDS rounds of start -> initialize result -> stdin EOF -> exit, for each server. */
static int run_cold(int rounds) {
  double *lat[MAX_SERVERS];
  for (int i = 0; i < nservers; i++) {
    lat[i] = calloc((size_t)rounds + 1, sizeof(double));
    if (!lat[i]) die(2, "out of memory");
  }
  for (int r = 0; r < rounds; r++) {
    for (int k = 0; k < nservers; k++) {
      int i = (r + k) % nservers;
      server_t *s = &servers[i];
      long long t0 = now_ns();
      server_start(s);
      server_initialize(s);
      lat[i][r] = (double)(now_ns() - t0) / 1e3;
      server_stop(s);
    }
  }
  for (int i = 0; i < nservers; i++) print_stats("server", servers[i].name, lat[i], (size_t)rounds, 0, 0, NULL);
  return 0;
}

/* Entry: bench-client rtt|cold PLAN ROUNDS [WARM]. */
int main(int argc, char **argv) {
  if (argc < 4 || (strcmp(argv[1], "rtt") != 0 && strcmp(argv[1], "cold") != 0)) {
    fprintf(stderr, "usage: bench-client rtt PLAN ROUNDS [WARM] | bench-client cold PLAN ROUNDS\n");
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  read_plan(argv[2]);
  int rounds = atoi(argv[3]);
  if (rounds < 1) die(1, "ROUNDS must be at least 1");
  if (strcmp(argv[1], "cold") == 0) return run_cold(rounds);
  return run_rtt(rounds, argc > 4 ? atoi(argv[4]) : 20);
}
