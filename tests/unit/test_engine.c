/* test_engine.c - the engine driven through the fake backend: every status
 * path, output kill/truncate, streaming event order, priorities and caps,
 * queue_full, paused, duplicate_id, unknown_id, admission control, KB
 * hooks. No test asserts that anything is fast. */
#include "tests/unit/engine_harness.h"
#include "px/px_engine.h"

/* ---- every status path ---- */

TEST_IMPL(engine_status_paths) {
  eh_fix_t f;
  px_engine_job_t j;
  px_status_info_t st;
  rec_t *r;
  eh_fix_open(&f, 4, NULL);
  ASSERT_OK(eh_fix_submit(&f, eh_job("ok", PX_PRIO_NORMAL, "exit 0", NULL)));
  ASSERT_OK(eh_fix_submit(&f, eh_job("nz", PX_PRIO_NORMAL, "exit 3", NULL)));
  ASSERT_OK(
      eh_fix_submit(&f, eh_job("mem", PX_PRIO_NORMAL, "hog-memory", NULL)));
  j = eh_job("cpu", PX_PRIO_NORMAL, "spin", NULL);
  j.spec.limits.cpu_ms = 30;
  ASSERT_OK(eh_fix_submit(&f, j));
  j = eh_job("wall", PX_PRIO_NORMAL, "sleep 100000", NULL);
  j.spec.limits.wall_ms = 30;
  ASSERT_OK(eh_fix_submit(&f, j));
  ASSERT_OK(
      eh_fix_submit(&f, eh_job("procs", PX_PRIO_NORMAL, "fork-bomb", NULL)));
  ASSERT_OK(
      eh_fix_submit(&f, eh_job("lost", PX_PRIO_NORMAL, "sandbox-error", NULL)));
  ASSERT_OK(eh_fix_submit(
      &f, eh_job("noprep", PX_PRIO_NORMAL, "fail-prepare", NULL)));
  ASSERT_OK(
      eh_fix_submit(&f, eh_job("nostart", PX_PRIO_NORMAL, "fail-start", NULL)));
  ASSERT_OK(eh_fix_submit(
      &f, eh_job("toolong", PX_PRIO_NORMAL, "argv-too-long", NULL)));
  j = eh_job("noprog", PX_PRIO_NORMAL, "exit 0", NULL);
  free(j.spec.argv[0]);
  j.spec.argv[0] = px_strdup("no-such-program");
  ASSERT_OK(eh_fix_submit(&f, j));
  eh_wait_results(f.col, 11);

  r = eh_find(f.col, 0, "ok");
  ASSERT_EQ(r->status, PX_STATUS_OK);
  ASSERT_EQ(r->exit_code, 0);
  ASSERT(r->enforcement & PX_ENF(PX_ENF_OUTPUT_GUARD));
  ASSERT(r->enforcement & PX_ENF(PX_ENF_WATCHDOG_POLL));
  ASSERT_UINT_GE(r->usage.processes, 1);
  r = eh_find(f.col, 0, "nz");
  ASSERT_EQ(r->status, PX_STATUS_NONZERO_EXIT);
  ASSERT_EQ(r->exit_code, 3);
  r = eh_find(f.col, 0, "mem");
  ASSERT_EQ(r->status, PX_STATUS_KILLED);
  ASSERT_EQ(r->v.limit, PX_LIMIT_MEMORY);
  ASSERT_EQ(r->v.detected_by, PX_DETECT_OS);
  ASSERT_UINT_EQ(r->v.configured, 64u << 20);
  ASSERT_EQ(r->exit_code, -1);
  r = eh_find(f.col, 0, "cpu");
  ASSERT_EQ(r->status, PX_STATUS_KILLED);
  ASSERT_EQ(r->v.limit, PX_LIMIT_CPU);
  ASSERT_UINT_GE(r->v.observed, 30);
  r = eh_find(f.col, 0, "wall");
  ASSERT_EQ(r->status, PX_STATUS_KILLED);
  ASSERT_EQ(r->v.limit, PX_LIMIT_WALL);
  ASSERT_EQ(r->v.detected_by, PX_DETECT_WATCHDOG);
  ASSERT_UINT_EQ(r->v.configured, 30);
  ASSERT_UINT_GE(r->v.observed, 30);
  ASSERT_UINT_GE(r->usage.wall_ms, 30);
  r = eh_find(f.col, 0, "procs");
  ASSERT_EQ(r->status, PX_STATUS_KILLED);
  ASSERT_EQ(r->v.limit, PX_LIMIT_PROCESSES);
  r = eh_find(f.col, 0, "lost");
  ASSERT_EQ(r->status, PX_STATUS_ERROR);
  ASSERT_EQ(r->code, PX_CODE_SANDBOX_FAILED);
  r = eh_find(f.col, 0, "toolong"); /* backend's PX_ERANGE: argv_too_long */
  ASSERT_EQ(r->status, PX_STATUS_REJECTED);
  ASSERT_EQ(r->code, PX_CODE_ARGV_TOO_LONG);
  ASSERT_EQ(r->types[1], PX_ENGINE_EV_RESULT);
  r = eh_find(f.col, 0, "noprep");
  ASSERT_EQ(r->status, PX_STATUS_ERROR);
  ASSERT_EQ(r->code, PX_CODE_SANDBOX_FAILED);
  ASSERT_EQ(r->types[1], PX_ENGINE_EV_RESULT); /* never started */
  r = eh_find(f.col, 0, "nostart");
  ASSERT_EQ(r->status, PX_STATUS_ERROR);
  ASSERT_EQ(r->code, PX_CODE_SPAWN_FAILED);
  ASSERT_EQ(r->types[1], PX_ENGINE_EV_RESULT);
  r = eh_find(f.col, 0, "noprog");
  ASSERT_EQ(r->code, PX_CODE_SPAWN_FAILED);
  eh_check_all(f.col);

  px_engine_status(f.eng, &st);
  ASSERT_STR_EQ(st.backend, "fake");
  ASSERT_UINT_EQ(st.accepted, 11);
  ASSERT_UINT_EQ(st.counters[PX_STATUS_REJECTED], 1); /* argv too long */
  ASSERT_UINT_EQ(st.counters[PX_STATUS_OK], 1);
  ASSERT_UINT_EQ(st.counters[PX_STATUS_NONZERO_EXIT], 1);
  ASSERT_UINT_EQ(st.counters[PX_STATUS_KILLED], 4);
  ASSERT_UINT_EQ(st.counters[PX_STATUS_ERROR], 4);
  ASSERT_UINT_EQ(st.workers, 4);
  ASSERT_UINT_EQ(st.queue_max, 1000);
  ASSERT_EQ(st.paused, 0);
  ASSERT(st.enforcement_available & PX_ENF(PX_ENF_OUTPUT_GUARD));
  px_engine_client_close(f.eng, f.c, 0);
  f.c = NULL;
  px_engine_stop(f.eng);
  eh_fix_close(&f);
  return 0;
}

/* The OS refusing to create the job's process (a backend's PX_EPROCESS)
 * is answered process_create_failed, its own code (issue 25: the storm
 * and soak tests had to match "process creation failed" in the message);
 * the other start failures and a missing program stay spawn_failed. */
TEST_IMPL(engine_process_create_failed) {
  eh_fix_t f;
  px_engine_job_t j;
  rec_t *r;
  eh_fix_open(&f, 2, NULL);
  ASSERT_OK(eh_fix_submit(&f, eh_job("os", PX_PRIO_NORMAL, "fail-create", NULL)));
  ASSERT_OK(eh_fix_submit(&f, eh_job("setup", PX_PRIO_NORMAL, "fail-start", NULL)));
  j = eh_job("noprog", PX_PRIO_NORMAL, "exit 0", NULL);
  free(j.spec.argv[0]);
  j.spec.argv[0] = px_strdup("no-such-program");
  ASSERT_OK(eh_fix_submit(&f, j));
  eh_wait_results(f.col, 3);
  r = eh_find(f.col, 0, "os");
  ASSERT_EQ(r->status, PX_STATUS_ERROR);
  ASSERT_EQ(r->code, PX_CODE_PROCESS_CREATE_FAILED);
  ASSERT_STR_EQ(px_code_name(r->code), "process_create_failed");
  ASSERT_EQ(r->types[1], PX_ENGINE_EV_RESULT); /* never started */
  r = eh_find(f.col, 0, "setup");
  ASSERT_EQ(r->status, PX_STATUS_ERROR);
  ASSERT_EQ(r->code, PX_CODE_SPAWN_FAILED);
  r = eh_find(f.col, 0, "noprog");
  ASSERT_EQ(r->status, PX_STATUS_ERROR);
  ASSERT_EQ(r->code, PX_CODE_SPAWN_FAILED);
  eh_check_all(f.col);
  eh_fix_close(&f);
  return 0;
}

/* ---- output ---- */

TEST_IMPL(engine_output_capture_kill_truncate) {
  eh_fix_t f;
  px_engine_opts_t o;
  px_engine_job_t j;
  rec_t *r;
  px_engine_opts_default(&o);
  o.output.limit_bytes = 4096;
  eh_fix_open(&f, 2, &o);
  ASSERT_OK(eh_fix_submit(&f, eh_job("cap", PX_PRIO_NORMAL, "print-out 3000",
                                     "err:warn\\xff", NULL)));
  j = eh_job("kill", PX_PRIO_NORMAL, "print-out 5000", "exit 0", NULL);
  j.spec.limits.output_bytes = 1000;
  ASSERT_OK(eh_fix_submit(&f, j));
  eh_wait_results(f.col, 2);
  r = eh_find(f.col, 0, "cap");
  ASSERT_EQ(r->status, PX_STATUS_OK);
  ASSERT_UINT_EQ(r->out_len[0], 3000);
  ASSERT_EQ(r->trunc[0], 0);
  ASSERT_STR_EQ(r->out[1], "warn\xEF\xBF\xBD");
  ASSERT_EQ(r->lossy, 1);
  ASSERT_UINT_EQ(r->streamed[0].len, 0); /* not a streaming job */
  r = eh_find(f.col, 0, "kill");
  ASSERT_EQ(r->status, PX_STATUS_KILLED);
  ASSERT_EQ(r->v.limit, PX_LIMIT_OUTPUT);
  ASSERT_EQ(r->v.detected_by, PX_DETECT_ENGINE);
  ASSERT_UINT_EQ(r->v.configured, 1000);
  ASSERT_UINT_GE(r->v.observed, 1001);
  ASSERT_UINT_EQ(r->out_len[0], 1000);
  ASSERT_EQ(r->trunc[0], 1);
  px_engine_client_close(f.eng, f.c, 0);
  px_engine_free(f.eng);

  /* Truncate mode: the job runs to its end, first and last halves kept. */
  px_engine_opts_default(&o);
  o.output.limit_bytes = 1000;
  o.output.overflow = PX_OVERFLOW_TRUNCATE;
  f.eng = eh_engine(1, &o);
  f.c = eh_client(f.eng, &f.cx, f.col, 1, 0);
  ASSERT_OK(eh_fix_submit(
      &f, eh_job("trunc", PX_PRIO_NORMAL, "print-out 5000", "exit 7", NULL)));
  eh_wait_results(f.col, 3);
  r = eh_find(f.col, 1, "trunc");
  ASSERT_EQ(r->status, PX_STATUS_NONZERO_EXIT);
  ASSERT_EQ(r->exit_code, 7);
  ASSERT_UINT_EQ(r->out_len[0], 1000);
  ASSERT_EQ(r->trunc[0], 1);
  ASSERT(memcmp(r->out[0], "0123456789", 10) == 0);
  /* 5000 bytes of "0123456789" cycling per 4096-byte chunk: the last byte
   * written is index 903 of the second chunk, '3'. */
  ASSERT_EQ(r->out[0][999], '3');
  eh_check_all(f.col);
  f.c = NULL; /* without closing the client: free handles it */
  eh_fix_close(&f);
  return 0;
}

TEST_IMPL(engine_stream_event_order) {
  eh_fix_t f;
  px_engine_job_t j;
  rec_t *r;
  int i;
  eh_fix_open(&f, 2, NULL);
  j = eh_job("s", PX_PRIO_NORMAL, "out:caf\\xc3", "err:E", "sleep 5",
             "out:\\xa9!", "exit 0", NULL);
  j.stream = 1;
  ASSERT_OK(eh_fix_submit(&f, j));
  eh_wait_results(f.col, 1);
  r = eh_find(f.col, 0, "s");
  eh_check_sequence(r);
  ASSERT_EQ(r->types[0], PX_ENGINE_EV_ACCEPTED);
  ASSERT_EQ(r->types[1], PX_ENGINE_EV_STARTED);
  for (i = 2; i < r->ntypes - 1; i++)
    ASSERT_EQ(r->types[i], PX_ENGINE_EV_OUTPUT);
  ASSERT_GE(r->ntypes, 5);
  ASSERT_STR_EQ(px_buf_cstr(&r->streamed[0]), "caf\xC3\xA9!");
  ASSERT_STR_EQ(px_buf_cstr(&r->streamed[1]), "E");
  ASSERT_STR_EQ(r->out[0], "caf\xC3\xA9!");
  ASSERT_EQ(r->lossy, 0);
  eh_fix_close(&f);
  return 0;
}

/* ---- queue behaviour through the engine ---- */

TEST_IMPL(engine_priority_order_one_worker) {
  eh_fix_t f;
  uint64_t pos = 0;
  px_engine_job_t j;
  eh_fix_open(&f, 1, NULL);
  ASSERT_OK(eh_fix_submit(&f, eh_job("block", PX_PRIO_CRITICAL, "hang", NULL)));
  eh_wait_started(f.col, 1);
  ASSERT_OK(eh_fix_submit(&f, eh_job("l1", PX_PRIO_LOW, NULL)));
  ASSERT_OK(eh_fix_submit(&f, eh_job("n1", PX_PRIO_NORMAL, NULL)));
  ASSERT_OK(eh_fix_submit(&f, eh_job("h1", PX_PRIO_HIGH, NULL)));
  ASSERT_OK(eh_fix_submit(&f, eh_job("n2", PX_PRIO_NORMAL, NULL)));
  j = eh_job("c1", PX_PRIO_CRITICAL, NULL);
  ASSERT_OK(px_engine_submit_take(f.eng, f.c, &j, &pos, NULL));
  ASSERT_UINT_EQ(pos, 0); /* jobs ahead of it */
  ASSERT_UINT_EQ(eh_find(f.col, 0, "c1")->pos, 0);
  ASSERT_UINT_EQ(eh_find(f.col, 0, "l1")->pos, 0);
  ASSERT_UINT_EQ(eh_find(f.col, 0, "n2")->pos, 2);
  ASSERT_OK(px_engine_cancel(f.eng, f.c, "block"));
  eh_wait_results(f.col, 6);
  ASSERT_EQ(eh_find(f.col, 0, "block")->status, PX_STATUS_CANCELLED);
  ASSERT_EQ(eh_find(f.col, 0, "c1")->seq_started, 2);
  ASSERT_EQ(eh_find(f.col, 0, "h1")->seq_started, 3);
  ASSERT_EQ(eh_find(f.col, 0, "n1")->seq_started, 4);
  ASSERT_EQ(eh_find(f.col, 0, "n2")->seq_started, 5);
  ASSERT_EQ(eh_find(f.col, 0, "l1")->seq_started, 6);
  eh_check_all(f.col);
  eh_fix_close(&f);
  return 0;
}

TEST_IMPL(engine_client_cap) {
  eh_fix_t f; /* clients a: f.c (tag 0, cap 1), b: f.c2 (tag 1) */
  px_status_info_t st;
  eh_fix_open_cap(&f, 4, NULL, 1);
  eh_fix_client2(&f);
  ASSERT_OK(eh_fix_submit(&f, eh_job("a1", PX_PRIO_CRITICAL, "hang", NULL)));
  ASSERT_OK(eh_fix_submit(&f, eh_job("a2", PX_PRIO_CRITICAL, "hang", NULL)));
  ASSERT_OK(eh_fix_submit(&f, eh_job("a3", PX_PRIO_CRITICAL, "exit 0", NULL)));
  eh_wait_started(f.col, 1);
  /* a is at its cap: b's low-priority job still runs. */
  ASSERT_OK(eh_submit(f.eng, f.c2, eh_job("b1", PX_PRIO_LOW, "exit 0", NULL)));
  eh_wait_results(f.col, 1);
  ASSERT_EQ(eh_find(f.col, 1, "b1")->status, PX_STATUS_OK);
  px_engine_status(f.eng, &st);
  ASSERT_UINT_EQ(st.running, 1);
  ASSERT_UINT_EQ(st.queue[PX_PRIO_CRITICAL], 2);
  ASSERT_OK(px_engine_cancel(f.eng, f.c, "a1"));
  eh_wait_started(f.col, 3);
  ASSERT_OK(px_engine_cancel(f.eng, f.c, "a2"));
  eh_wait_results(f.col, 4);
  ASSERT_EQ(f.col->max_running[0], 1);
  ASSERT_EQ(eh_find(f.col, 0, "a3")->status, PX_STATUS_OK);
  eh_check_all(f.col);
  eh_fix_close(&f);
  return 0;
}

TEST_IMPL(engine_queue_full) {
  eh_fix_t f;
  px_engine_opts_t o;
  px_engine_job_t j;
  px_code_t why = PX_CODE_NONE;
  rec_t *r;
  px_engine_opts_default(&o);
  o.queue_max = 2;
  eh_fix_open(&f, 1, &o);
  ASSERT_OK(eh_fix_submit(&f, eh_job("run", PX_PRIO_NORMAL, "hang", NULL)));
  eh_wait_started(f.col, 1);
  ASSERT_OK(eh_fix_submit(&f, eh_job("q1", PX_PRIO_NORMAL, NULL)));
  ASSERT_OK(eh_fix_submit(&f, eh_job("q2", PX_PRIO_NORMAL, NULL)));
  j = eh_job("q3", PX_PRIO_CRITICAL, NULL);
  ASSERT_EQ(px_engine_submit_take(f.eng, f.c, &j, NULL, &why), PX_EBUSY);
  ASSERT_EQ(why, PX_CODE_QUEUE_FULL);
  ASSERT_NULL(j.spec.argv); /* taken anyway */
  r = eh_find(f.col, 0, "q3");
  ASSERT_EQ(r->status, PX_STATUS_REJECTED);
  ASSERT_EQ(r->code, PX_CODE_QUEUE_FULL);
  ASSERT_EQ(r->ntypes, 1); /* only its result */
  ASSERT_OK(px_engine_cancel(f.eng, f.c, "run"));
  eh_wait_results(f.col, 4);
  eh_check_all(f.col);
  px_engine_client_close(f.eng, f.c, 0);
  px_engine_free(f.eng);
  /* A client's own share of the queue. */
  px_engine_opts_default(&o);
  o.client_max_queued = 1;
  f.eng = eh_engine(1, &o);
  f.c = eh_client(f.eng, &f.cx, f.col, 1, 0);
  ASSERT_OK(eh_fix_submit(&f, eh_job("run", PX_PRIO_NORMAL, "hang", NULL)));
  eh_wait_started(f.col, 4); /* 3 from the first engine */
  ASSERT_OK(eh_fix_submit(&f, eh_job("q1", PX_PRIO_NORMAL, NULL)));
  j = eh_job("q2", PX_PRIO_NORMAL, NULL);
  ASSERT_EQ(px_engine_submit_take(f.eng, f.c, &j, NULL, &why), PX_EBUSY);
  ASSERT_EQ(why, PX_CODE_QUEUE_FULL);
  ASSERT_OK(px_engine_cancel(f.eng, f.c, "run"));
  eh_wait_results(f.col, 7);
  eh_check_all(f.col);
  eh_fix_close(&f);
  return 0;
}

TEST_IMPL(engine_scram_then_resume) {
  eh_fix_t f;
  px_engine_job_t j;
  px_code_t why = PX_CODE_NONE;
  px_status_info_t st;
  eh_fix_open(&f, 2, NULL);
  ASSERT_OK(eh_fix_submit(&f, eh_job("r1", PX_PRIO_NORMAL, "hang", NULL)));
  ASSERT_OK(eh_fix_submit(&f, eh_job("r2", PX_PRIO_NORMAL, "hang", NULL)));
  eh_wait_started(f.col, 2);
  ASSERT_OK(eh_fix_submit(&f, eh_job("q1", PX_PRIO_NORMAL, NULL)));
  ASSERT_OK(eh_fix_submit(&f, eh_job("q2", PX_PRIO_LOW, NULL)));
  ASSERT_EQ(px_engine_scram(f.eng), 4);
  eh_wait_results(f.col, 4);
  ASSERT_EQ(eh_find(f.col, 0, "r1")->status, PX_STATUS_ABORTED);
  ASSERT_EQ(eh_find(f.col, 0, "r2")->status, PX_STATUS_ABORTED);
  ASSERT_EQ(eh_find(f.col, 0, "q1")->status, PX_STATUS_ABORTED);
  ASSERT_EQ(eh_find(f.col, 0, "q2")->status, PX_STATUS_ABORTED);
  ASSERT_UINT_GE(eh_find(f.col, 0, "r1")->usage.processes, 1); /* it ran */
  px_engine_status(f.eng, &st);
  ASSERT_EQ(st.paused, 1);
  j = eh_job("late", PX_PRIO_NORMAL, NULL);
  ASSERT_EQ(px_engine_submit_take(f.eng, f.c, &j, NULL, &why), PX_EBUSY);
  ASSERT_EQ(why, PX_CODE_PAUSED);
  ASSERT_EQ(eh_find(f.col, 0, "late")->code, PX_CODE_PAUSED);
  px_engine_resume(f.eng);
  ASSERT_OK(eh_fix_submit(&f, eh_job("after", PX_PRIO_NORMAL, "exit 0", NULL)));
  eh_wait_results(f.col, 6);
  ASSERT_EQ(eh_find(f.col, 0, "after")->status, PX_STATUS_OK);
  px_engine_status(f.eng, &st);
  ASSERT_EQ(st.paused, 0);
  ASSERT_UINT_EQ(st.counters[PX_STATUS_ABORTED], 4);
  ASSERT_UINT_EQ(st.counters[PX_STATUS_REJECTED], 1);
  eh_check_all(f.col);
  eh_fix_close(&f);
  return 0;
}

TEST_IMPL(engine_duplicate_and_unknown_id) {
  eh_fix_t f; /* clients a: f.c (tag 0), b: f.c2 (tag 1) */
  px_engine_job_t j;
  px_code_t why = PX_CODE_NONE;
  eh_fix_open(&f, 2, NULL);
  eh_fix_client2(&f);
  ASSERT_OK(eh_fix_submit(&f, eh_job("x", PX_PRIO_NORMAL, "hang", NULL)));
  eh_wait_started(f.col, 1);
  j = eh_job("x", PX_PRIO_NORMAL, "exit 0", NULL);
  ASSERT_EQ(px_engine_submit_take(f.eng, f.c, &j, NULL, &why), PX_EEXIST);
  ASSERT_EQ(why, PX_CODE_DUPLICATE_ID);
  /* Another client may use the same id. */
  ASSERT_OK(
      eh_submit(f.eng, f.c2, eh_job("x", PX_PRIO_NORMAL, "exit 0", NULL)));
  eh_wait_results(f.col, 1);
  ASSERT_EQ(eh_find(f.col, 1, "x")->status, PX_STATUS_OK);
  /* The first job was not disturbed: still running, one accepted. */
  ASSERT_EQ(eh_find(f.col, 0, "x")->nresults, 0);
  ASSERT_EQ(eh_find(f.col, 0, "x")->ntypes, 2);
  ASSERT_EQ(px_engine_cancel(f.eng, f.c, "nope"), PX_ENOENT);
  ASSERT_EQ(px_engine_cancel(f.eng, f.c2, "x"), PX_ENOENT); /* already done */
  ASSERT_OK(px_engine_cancel(f.eng, f.c, "x"));
  eh_wait_results(f.col, 2);
  ASSERT_EQ(eh_find(f.col, 0, "x")->status, PX_STATUS_CANCELLED);
  /* The id is free again once its result is out. */
  ASSERT_OK(eh_fix_submit(&f, eh_job("x", PX_PRIO_NORMAL, "exit 0", NULL)));
  eh_wait_results(f.col, 3);
  eh_check_all(f.col);
  eh_fix_close(&f);
  return 0;
}

TEST_IMPL(engine_cancel_queued_and_running) {
  eh_fix_t f;
  rec_t *r;
  eh_fix_open(&f, 1, NULL);
  ASSERT_OK(eh_fix_submit(&f, eh_job("run", PX_PRIO_NORMAL, "hang", NULL)));
  eh_wait_started(f.col, 1);
  ASSERT_OK(eh_fix_submit(&f, eh_job("queued", PX_PRIO_NORMAL, NULL)));
  ASSERT_OK(px_engine_cancel(f.eng, f.c, "queued"));
  /* A queued job's result is delivered before cancel returns. */
  r = eh_find(f.col, 0, "queued");
  ASSERT_EQ(r->nresults, 1);
  ASSERT_EQ(r->status, PX_STATUS_CANCELLED);
  ASSERT_EQ(r->ntypes, 2); /* accepted, result */
  ASSERT_OK(px_engine_cancel(f.eng, f.c, "run"));
  eh_wait_results(f.col, 2);
  r = eh_find(f.col, 0, "run");
  ASSERT_EQ(r->status, PX_STATUS_CANCELLED);
  ASSERT_EQ(r->exit_code, -1);
  ASSERT_UINT_GE(r->usage.processes, 1);
  eh_check_all(f.col);
  eh_fix_close(&f);
  return 0;
}

/* ---- admission control ---- */

static px_mutex_t free_memory_lock;
static uint64_t fake_free_memory = 1;

static uint64_t get_free_memory(void) {
  uint64_t v;
  px_mutex_lock(&free_memory_lock);
  v = fake_free_memory;
  px_mutex_unlock(&free_memory_lock);
  return v;
}

static void set_free_memory(uint64_t v) {
  px_mutex_lock(&free_memory_lock);
  fake_free_memory = v;
  px_mutex_unlock(&free_memory_lock);
}

TEST_IMPL(engine_admission_floor) {
  eh_fix_t f;
  px_engine_opts_t o;
  px_status_info_t st;
  px_engine_opts_default(&o);
  o.min_free_memory_bytes = 1000;
  o.admission_poll_ms = 10;
  o.free_memory = get_free_memory;
  ASSERT_OK(px_mutex_init(&free_memory_lock));
  set_free_memory(999);
  eh_fix_open(&f, 2, &o);
  ASSERT_OK(eh_fix_submit(&f, eh_job("j", PX_PRIO_NORMAL, "exit 0", NULL)));
  px_sleep_ms(100); /* several re-checks: still under the floor */
  px_engine_status(f.eng, &st);
  ASSERT_UINT_EQ(st.queue[PX_PRIO_NORMAL], 1);
  ASSERT_UINT_EQ(st.running, 0);
  ASSERT_EQ(eh_find(f.col, 0, "j")->ntypes, 1); /* accepted only */
  set_free_memory(1000);
  eh_wait_results(f.col, 1);
  ASSERT_EQ(eh_find(f.col, 0, "j")->status, PX_STATUS_OK);
  eh_check_all(f.col);
  eh_fix_close(&f);
  px_mutex_destroy(&free_memory_lock);
  return 0;
}

/* ---- KB hooks ---- */

TEST_IMPL(engine_kb_hooks_and_rollback) {
  eh_fix_t f;
  kbrec_t k;
  px_engine_opts_t o;
  px_engine_job_t j;
  eh_kb_opts(&k, &o);
  eh_fix_open(&f, 3, &o);
  ASSERT_OK(eh_fix_submit(&f, eh_job("ov-ok", PX_PRIO_NORMAL, "exit 0", NULL)));
  ASSERT_OK(
      eh_fix_submit(&f, eh_job("ov-kill", PX_PRIO_NORMAL, "hog-memory", NULL)));
  ASSERT_OK(eh_fix_submit(&f, eh_job("ov-nz", PX_PRIO_NORMAL, "exit 1", NULL)));
  j = eh_job("al-ok", PX_PRIO_NORMAL, "exit 0", NULL);
  j.kb_rollback = PX_KB_ROLLBACK_ALWAYS;
  ASSERT_OK(eh_fix_submit(&f, j));
  j = eh_job("nv-kill", PX_PRIO_NORMAL, "hog-memory", NULL);
  j.kb_rollback = PX_KB_ROLLBACK_NEVER;
  ASSERT_OK(eh_fix_submit(&f, j));
  ASSERT_OK(
      eh_fix_submit(&f, eh_job("snapfail", PX_PRIO_NORMAL, "exit 0", NULL)));
  eh_wait_results(f.col, 6);
  ASSERT_EQ(k.snapshots, 5);
  ASSERT_EQ(k.finishes, 5);
  ASSERT_EQ(k.nrolled, 2);
  ASSERT(eh_rolled(&k, "ov-kill"));
  ASSERT(eh_rolled(&k, "al-ok"));
  ASSERT_EQ(eh_find(f.col, 0, "ov-kill")->kb_rolled_back, 1);
  ASSERT_EQ(eh_find(f.col, 0, "ov-ok")->kb_present, 1);
  ASSERT_EQ(eh_find(f.col, 0, "ov-ok")->kb_rolled_back, 0);
  ASSERT_EQ(eh_find(f.col, 0, "snapfail")->status, PX_STATUS_ERROR);
  ASSERT_EQ(eh_find(f.col, 0, "snapfail")->code, PX_CODE_SANDBOX_FAILED);
  ASSERT_EQ(eh_find(f.col, 0, "snapfail")->kb_present, 0);
  ASSERT_EQ(eh_find(f.col, 0, "snapfail")->ntypes, 2); /* never started */
  eh_check_all(f.col);
  eh_fix_close(&f);
  px_mutex_destroy(&k.m);
  return 0;
}

/* Caps over all the clients (connections) of one identity: uid:1 on two
 * connections runs one job at a time (identity_max_running 1, with idle
 * workers) and queues at most 2 (identity_max_queued), while uid:2 runs
 * and queues freely. With per-connection caps only, the second
 * connection's job started at once and its third job was queued. */
TEST_IMPL(engine_identity_caps) {
  col_t *col = eh_col_new();
  ctx_t c1, c2, c3;
  px_engine_opts_t o;
  px_engine_t *eng;
  px_engine_client_t *a1, *a2, *b;
  px_engine_job_t j;
  px_code_t why = PX_CODE_NONE;
  px_status_info_t st;
  px_engine_opts_default(&o);
  o.identity_max_queued = 2;
  o.identity_max_running = 1;
  eng = eh_engine(4, &o);
  a1 = eh_client_ident(eng, &c1, col, 0, "uid:1");
  a2 = eh_client_ident(eng, &c2, col, 1, "uid:1");
  b = eh_client_ident(eng, &c3, col, 2, "uid:2");
  ASSERT_OK(eh_submit(eng, a1, eh_job("r1", PX_PRIO_NORMAL, "hang", NULL)));
  eh_wait_started(col, 1);
  ASSERT_OK(eh_submit(eng, a2, eh_job("r2", PX_PRIO_NORMAL, "exit 0", NULL)));
  ASSERT_OK(eh_submit(eng, b, eh_job("b1", PX_PRIO_NORMAL, "exit 0", NULL)));
  eh_wait_results(col, 1);
  ASSERT_EQ(eh_find(col, 2, "b1")->status, PX_STATUS_OK);
  px_engine_status(eng, &st);
  ASSERT_UINT_EQ(st.running, 1); /* r2 waits for uid:1's slot */
  ASSERT_UINT_EQ(st.queue[PX_PRIO_NORMAL], 1);
  ASSERT_OK(eh_submit(eng, a1, eh_job("q2", PX_PRIO_NORMAL, "exit 0", NULL)));
  j = eh_job("q3", PX_PRIO_NORMAL, NULL);
  ASSERT_EQ(px_engine_submit_take(eng, a2, &j, NULL, &why), PX_EBUSY);
  ASSERT_EQ(why, PX_CODE_QUEUE_FULL); /* uid:1 has 2 queued */
  ASSERT_OK(eh_submit(eng, b, eh_job("b2", PX_PRIO_NORMAL, "exit 0", NULL)));
  ASSERT_OK(px_engine_cancel(eng, a1, "r1"));
  eh_wait_results(col, 6); /* b1 q3 b2 r1 r2 q2 */
  ASSERT_EQ(eh_find(col, 1, "r2")->status, PX_STATUS_OK);
  ASSERT_EQ(eh_find(col, 0, "q2")->status, PX_STATUS_OK);
  eh_check_all(col);
  px_engine_client_close(eng, a1, 0);
  px_engine_client_close(eng, a2, 0);
  px_engine_client_close(eng, b, 0);
  px_engine_free(eng);
  eh_col_free(col);
  return 0;
}
