/* test_watchdog.c - the completion-port watchdog: its own polling kills a
 * memory hog, a busy loop, a sleeper and a spawner with the right verdicts
 * (under Wine nothing else would), and the limit messages Wine never posts
 * are fed with PostQueuedCompletionStatus to test their handling. */
#include "tests/win/wintest.h"

#include <windows.h>

static const px_backend_ops_t *ops(void) { return px_backend_native(); }

static void run_limited(wt_job_t *j, px_outcome_t *o) {
  wt_backend_t b;
  wt_capture_t c;
  wt_open(&b);
  wt_capture_init(&c);
  ASSERT_OK(wt_run(&b, j, &c, o));
  printf("violation %d configured %llu observed %llu by %d; usage cpu %llu "
         "mem %llu procs %llu wall %llu\n",
         (int)o->violation.limit,
         (unsigned long long)o->violation.configured,
         (unsigned long long)o->violation.observed,
         (int)o->violation.detected_by, (unsigned long long)o->usage.cpu_ms,
         (unsigned long long)o->usage.peak_memory_bytes,
         (unsigned long long)o->usage.processes,
         (unsigned long long)o->usage.wall_ms);
  ASSERT_EQ(o->killed, 1);
  ASSERT_EQ(o->exited, 0);
  wt_capture_free(&c);
  wt_close(&b);
}

/* Under Wine only the watchdog can have noticed; on Windows the OS may
 * have been first (its message), which is as good. */
static void assert_detector(const px_outcome_t *o) {
  if (px_test_under_wine())
    ASSERT_EQ(o->violation.detected_by, PX_DETECT_WATCHDOG);
  else
    ASSERT(o->violation.detected_by == PX_DETECT_WATCHDOG ||
           o->violation.detected_by == PX_DETECT_OS);
}

TEST_IMPL(winwd_memory_hog) {
  wt_job_t j;
  px_outcome_t o;
  wt_job(&j, "hog-memory", "400", NULL);
  j.spec.limits.memory_bytes = 64u << 20;
  run_limited(&j, &o);
  ASSERT_EQ(o.violation.limit, PX_LIMIT_MEMORY);
  ASSERT_UINT_EQ(o.violation.configured, 64u << 20);
  ASSERT_UINT_GE(o.violation.observed, 64u << 20);
  assert_detector(&o);
  ASSERT_UINT_GE(o.usage.peak_memory_bytes, 64u << 20);
  wt_job_free(&j);
  return 0;
}

TEST_IMPL(winwd_busy_loop) {
  wt_job_t j;
  px_outcome_t o;
  wt_job(&j, "busy", NULL);
  j.spec.limits.cpu_ms = 400;
  run_limited(&j, &o);
  ASSERT_EQ(o.violation.limit, PX_LIMIT_CPU);
  ASSERT_UINT_EQ(o.violation.configured, 400);
  ASSERT_UINT_GE(o.violation.observed, 400);
  assert_detector(&o);
  ASSERT_UINT_GE(o.usage.cpu_ms, 400);
  wt_job_free(&j);
  return 0;
}

TEST_IMPL(winwd_sleeper) {
  wt_job_t j;
  px_outcome_t o;
  wt_job(&j, "sleep", "60000", NULL);
  j.spec.limits.wall_ms = 300;
  run_limited(&j, &o);
  ASSERT_EQ(o.violation.limit, PX_LIMIT_WALL);
  ASSERT_UINT_EQ(o.violation.configured, 300);
  ASSERT_UINT_GE(o.violation.observed, 300);
  ASSERT_EQ(o.violation.detected_by, PX_DETECT_WATCHDOG); /* always ours */
  ASSERT_UINT_GE(o.usage.wall_ms, 300);
  wt_job_free(&j);
  return 0;
}

TEST_IMPL(winwd_spawner) {
  wt_job_t j;
  px_outcome_t o;
  wt_job(&j, "spawn", "6", NULL);
  j.spec.limits.processes = 3;
  run_limited(&j, &o);
  ASSERT_EQ(o.violation.limit, PX_LIMIT_PROCESSES);
  ASSERT_UINT_EQ(o.violation.configured, 3);
  ASSERT_UINT_GE(o.violation.observed, 4);
  assert_detector(&o);
  wt_job_free(&j);
  return 0;
}

/* Post `msg` for a sleeping job as the OS would, and return the outcome. */
static void post_and_wait(wt_backend_t *b, DWORD msg, px_outcome_t *o,
                          int then_kill) {
  wt_job_t j;
  wt_capture_t c;
  px_sandbox_t *sb;
  px_sandbox_events_t ev;
  wt_job(&j, "sleep", "60000", NULL);
  j.spec.limits.wall_ms = 20000;
  wt_capture_init(&c);
  ev = wt_events(&c);
  ASSERT_OK(ops()->prepare(b->state, &j.spec, &ev, &sb));
  ASSERT_OK(ops()->start(sb));
  ASSERT(PostQueuedCompletionStatus(px__winbe_test_port(b->state), msg,
                                    px__winbe_test_key(sb),
                                    (LPOVERLAPPED)(ULONG_PTR)px__winbe_test_pid(sb)));
  if (then_kill) {
    /* Give the watchdog time to (not) act on it, then end the job. */
    uint64_t until = px_now_ms() + 300;
    while (px_now_ms() < until &&
           px__winbe_test_msgs(sb, msg < 16 ? msg : 0) == 0)
      px_sleep_ms(5);
    px_sleep_ms(50);
    ASSERT_OK(ops()->kill(sb));
  }
  ASSERT_OK(ops()->wait(sb, o));
  ops()->release(sb);
  wt_capture_free(&c);
  wt_job_free(&j);
}

TEST_IMPL(winwd_posted_limit_messages) {
  static const struct {
    DWORD msg;
    px_limit_t limit;
  } cases[] = {
      {JOB_OBJECT_MSG_PROCESS_MEMORY_LIMIT, PX_LIMIT_MEMORY},
      {JOB_OBJECT_MSG_JOB_MEMORY_LIMIT, PX_LIMIT_MEMORY},
      {JOB_OBJECT_MSG_END_OF_JOB_TIME, PX_LIMIT_CPU},
      {JOB_OBJECT_MSG_END_OF_PROCESS_TIME, PX_LIMIT_CPU},
      {JOB_OBJECT_MSG_ACTIVE_PROCESS_LIMIT, PX_LIMIT_PROCESSES},
  };
  wt_backend_t b;
  size_t i;
  wt_open(&b);
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    px_outcome_t o;
    post_and_wait(&b, cases[i].msg, &o, 0);
    printf("msg %lu -> limit %d by %d\n", (unsigned long)cases[i].msg,
           (int)o.violation.limit, (int)o.violation.detected_by);
    ASSERT_EQ(o.killed, 1);
    ASSERT_EQ(o.exited, 0);
    ASSERT_EQ(o.violation.limit, cases[i].limit);
    ASSERT_EQ(o.violation.detected_by, PX_DETECT_OS);
    ASSERT_UINT_GE(o.violation.observed, o.violation.configured);
  }
  wt_close(&b);
  return 0;
}

/* Messages that are not verdicts do not kill. */
TEST_IMPL(winwd_posted_benign_messages) {
  static const DWORD msgs[] = {JOB_OBJECT_MSG_ABNORMAL_EXIT_PROCESS,
                               JOB_OBJECT_MSG_NOTIFICATION_LIMIT,
                               12 /* JOB_CYCLE_TIME_LIMIT */, 15};
  wt_backend_t b;
  size_t i;
  wt_open(&b);
  for (i = 0; i < sizeof msgs / sizeof msgs[0]; i++) {
    px_outcome_t o;
    post_and_wait(&b, msgs[i], &o, 1);
    ASSERT_EQ(o.killed, 1); /* by our kill() */
    ASSERT_EQ(o.violation.limit, PX_LIMIT_NONE);
  }
  wt_close(&b);
  return 0;
}

/* The first verdict wins; later messages do not overwrite it. */
TEST_IMPL(winwd_first_verdict_wins) {
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  px_outcome_t o;
  px_sandbox_t *sb;
  px_sandbox_events_t ev;
  HANDLE port;
  wt_open(&b);
  port = px__winbe_test_port(b.state);
  wt_job(&j, "sleep", "60000", NULL);
  wt_capture_init(&c);
  ev = wt_events(&c);
  ASSERT_OK(ops()->prepare(b.state, &j.spec, &ev, &sb));
  ASSERT_OK(ops()->start(sb));
  ASSERT(PostQueuedCompletionStatus(port, JOB_OBJECT_MSG_JOB_MEMORY_LIMIT,
                                    px__winbe_test_key(sb), NULL));
  ASSERT(PostQueuedCompletionStatus(port, JOB_OBJECT_MSG_END_OF_JOB_TIME,
                                    px__winbe_test_key(sb), NULL));
  ASSERT_OK(ops()->wait(sb, &o));
  ASSERT_EQ(o.violation.limit, PX_LIMIT_MEMORY);
  ops()->release(sb);
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
  return 0;
}

/* A message for a released job (or a key never used) is ignored, and the
 * watchdog keeps serving the others. */
TEST_IMPL(winwd_late_messages) {
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  px_outcome_t o;
  px_sandbox_t *sb;
  px_sandbox_events_t ev;
  ULONG_PTR old;
  HANDLE port;
  wt_open(&b);
  port = px__winbe_test_port(b.state);
  wt_job(&j, "exit", "0", NULL);
  wt_capture_init(&c);
  ev = wt_events(&c);
  ASSERT_OK(ops()->prepare(b.state, &j.spec, &ev, &sb));
  ASSERT_OK(ops()->start(sb));
  ASSERT_OK(ops()->wait(sb, &o));
  old = px__winbe_test_key(sb);
  ops()->release(sb);
  ASSERT(PostQueuedCompletionStatus(port, JOB_OBJECT_MSG_JOB_MEMORY_LIMIT, old, NULL));
  ASSERT(PostQueuedCompletionStatus(port, JOB_OBJECT_MSG_ACTIVE_PROCESS_ZERO,
                                    old + 1000, NULL));
  ASSERT(PostQueuedCompletionStatus(port, 0, 2 /* wake */, NULL));
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_job(&j, "exit", "5", NULL);
  wt_capture_init(&c);
  ASSERT_OK(wt_run(&b, &j, &c, &o));
  ASSERT_EQ(o.exit_code, 5);
  ASSERT_EQ(o.violation.limit, PX_LIMIT_NONE);
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
  return 0;
}

/* A grandchild left behind by an exiting parent is part of the job: the
 * job ends only when it is gone (wall limit here). */
TEST_IMPL(winwd_orphan_grandchild) {
  wt_job_t j;
  px_outcome_t o;
  wt_job(&j, "spawn", "1", NULL); /* parent sleeps too; the wall kills both */
  j.spec.limits.wall_ms = 500;
  run_limited(&j, &o);
  ASSERT_EQ(o.violation.limit, PX_LIMIT_WALL);
  ASSERT_GE(o.usage.processes, 2);
  wt_job_free(&j);
  return 0;
}
