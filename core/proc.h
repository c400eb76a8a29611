/* proc.h: fork+exec with an own process group, PDEATHSIG and reaping of our own pids only. */
#ifndef RMCP_PROC_H
#define RMCP_PROC_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/resource.h>
#include <uv.h>

#include "channel.h"

typedef struct proc proc_t;

typedef enum {
  PROC_IO_PIPE = 0,   /* a pipe to us (stdin: we write; stdout/stderr: we read) */
  PROC_IO_NULL,       /* /dev/null */
  PROC_IO_INHERIT,    /* our own fd */
  PROC_IO_FILE,       /* path (stdout/stderr: created 0600, truncated unless append) */
  PROC_IO_STDOUT,     /* stderr only: same as the child's stdout */
} proc_io_kind;

typedef struct {
  proc_io_kind kind;
  const char *path;
  int append;
} proc_io;

/* No callback runs after proc_close(). on_exit fires once, after exit AND EOF on every pipe. */
typedef struct proc_cbs {
  void (*on_line)(proc_t *p, const char *line, size_t len);
  void (*on_oversize)(proc_t *p, size_t nbytes);
  void (*on_stdout)(proc_t *p, const char *chunk, size_t len);
  void (*on_stderr)(proc_t *p, const char *chunk, size_t len);
  void (*on_exit)(proc_t *p, int code, int signal);  /* code is 128+signal when killed */
  void (*on_stdin_drain)(proc_t *p);                 /* stdin's queue fell back under the high-water mark */
} proc_cbs;

typedef struct proc_opts {
  const char *file;        /* PATH-searched when it has no '/' */
  char *const *argv;       /* NULL-terminated, argv[0] included */
  char *const *env;        /* NULL: inherit */
  const char *cwd;         /* NULL: inherit */
  int pdeathsig;           /* 0, or the signal PR_SET_PDEATHSIG sends when we die (+ getppid re-check before exec) */
  int setsid;              /* new session instead of setpgid(0,0) */
  proc_io io[3];
  int stdout_raw;          /* stdout (and stdin) as raw bytes instead of ndjson lines */
  int drop_partial_line;   /* stdout: a last line without "\n" (the child died writing it) is dropped */
  size_t max_line;
  const proc_cbs *cbs;
  void *data;
} proc_opts;

int proc_spawn(uv_loop_t *loop, const proc_opts *opts, proc_t **out, const char **failed_step);
int proc_raise_nofile(const rlim_t *children_soft, struct rlimit *before, struct rlimit *after);
int proc_children_nofile(rlim_t *soft);
int proc_start(const proc_opts *opts, pid_t *pid, int parent[3], const char **failed_step);
pid_t proc_pid(const proc_t *p);
channel_t *proc_stdio(const proc_t *p, int i);
int proc_kill(proc_t *p, int sig);
int proc_running(const proc_t *p);
void proc_close(proc_t *p);
void *proc_data(const proc_t *p);
void proc_teardown(void);
int proc_adopt(uv_loop_t *loop, pid_t pid, const int fds[3], const proc_opts *opts, proc_t **out);

#endif
