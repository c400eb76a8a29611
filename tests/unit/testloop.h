/* testloop.h: run a uv loop until a flag is set, with a deadline that fails the test instead
 * of hanging it; and a check that a loop closes with no handle left. */
#ifndef RMCP_TEST_LOOP_H
#define RMCP_TEST_LOOP_H

#include <uv.h>

#include "check.h"

static int testloop_timed_out;

/* Deadline callback. */
static void testloop_deadline(uv_timer_t *t)
{
  testloop_timed_out = 1;
  uv_stop(t->loop);
}

/* Close a (stack) handle and run the loop until its close callback has run. */
static int close_now_done;
static void close_now_cb(uv_handle_t *h)
{
  (void)h;
  close_now_done = 1;
}
static void close_now(uv_handle_t *h)
{
  close_now_done = 0;
  uv_close(h, close_now_cb);
  while (!close_now_done) uv_run(h->loop, UV_RUN_ONCE);
}

/* Run loop until *flag is non-zero or ms milliseconds pass; returns 1 when the flag was set. */
static int run_until(uv_loop_t *loop, const int *flag, unsigned ms)
{
  uv_timer_t t;
  testloop_timed_out = 0;
  uv_timer_init(loop, &t);
  uv_timer_start(&t, testloop_deadline, ms, 0);
  while (!*flag && !testloop_timed_out) uv_run(loop, UV_RUN_ONCE);
  close_now((uv_handle_t *)&t);
  return *flag != 0;
}

/* Print any handle still open (a leak of ours). */
static void testloop_walk(uv_handle_t *h, void *arg)
{
  (void)arg;
  fprintf(stderr, "  open handle: %s%s\n", uv_handle_type_name(h->type), uv_is_closing(h) ? " (closing)" : "");
}

/* Drain pending closes and close the loop; a handle still open is a test failure. */
static void loop_finish(uv_loop_t *loop)
{
  for (int i = 0; i < 8; i++) uv_run(loop, UV_RUN_NOWAIT);
  int r = uv_loop_close(loop);
  if (r != 0) uv_walk(loop, testloop_walk, NULL);
  CHECKF(r == 0, "uv_loop_close: %s", uv_strerror(r));
}

#endif
