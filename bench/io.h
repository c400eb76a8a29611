/* bench/io.h: the two helpers bench-client and bench-floor share (each is one .c file). */
#ifndef RMCP_BENCH_IO_H
#define RMCP_BENCH_IO_H

#include <errno.h>
#include <sys/uio.h>
#include <time.h>

/* Monotonic time in ns: the same clock as luv's hrtime, so stamps from a Lua peer compare. */
static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Writes all of iov to fd; 0, or -1 when the reader is gone. */
static int write_all(int fd, struct iovec *iov, int n) {
  while (n > 0) {
    ssize_t w = writev(fd, iov, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    while (n > 0 && (size_t)w >= iov->iov_len) {
      w -= (ssize_t)iov->iov_len;
      iov++;
      n--;
    }
    if (n > 0) {
      iov->iov_base = (char *)iov->iov_base + w;
      iov->iov_len -= (size_t)w;
    }
  }
  return 0;
}

#endif
