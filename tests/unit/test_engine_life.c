/* test_engine_life.c - the engine's life cycle and races: stop, client
 * close, reject, exactly one result under cancel/scram/stop races, output
 * back-pressure, and the fake backend's own contract. */
#include "tests/unit/engine_harness.h"
#include "px/px_engine.h"

/* ---- stop, close, reject ---- */

TEST_IMPL(engine_stop_aborts_everything) {
  eh_fix_t f;
  kbrec_t k;
  px_engine_opts_t o;
  px_engine_job_t j;
  px_code_t why;
  eh_kb_opts(&k, &o);
  eh_fix_open(&f, 2, &o);
  ASSERT_OK(eh_fix_submit(&f, eh_job("r1", PX_PRIO_NORMAL, "hang", NULL)));
  ASSERT_OK(eh_fix_submit(&f, eh_job("r2", PX_PRIO_NORMAL, "hang", NULL)));
  eh_wait_started(f.col, 2);
  ASSERT_OK(eh_fix_submit(&f, eh_job("q1", PX_PRIO_NORMAL, NULL)));
  ASSERT_OK(eh_fix_submit(&f, eh_job("q2", PX_PRIO_NORMAL, NULL)));
  ASSERT_OK(eh_fix_submit(&f, eh_job("q3", PX_PRIO_NORMAL, NULL)));
  px_engine_stop(f.eng);
  /* Every result is out when stop returns. */
  ASSERT_EQ(f.col->results, 5);
  eh_check_statuses(f.col, PX_EH_ST(PX_STATUS_ABORTED));
  ASSERT_EQ(k.finishes, 2); /* the running jobs' KB hooks ran */
  ASSERT_UINT_GE(eh_find(f.col, 0, "r1")->usage.processes, 1);
  j = eh_job("late", PX_PRIO_NORMAL, NULL);
  ASSERT_EQ(px_engine_submit_take(f.eng, f.c, &j, NULL, &why), PX_EBUSY);
  ASSERT_EQ(why, PX_CODE_PAUSED);
  px_engine_stop(f.eng); /* idempotent */
  eh_check_all(f.col);
  eh_fix_close(&f);
  px_mutex_destroy(&k.m);
  return 0;
}

TEST_IMPL(engine_client_close) {
  eh_fix_t f; /* clients a: f.c (tag 0), b: f.c2 (tag 1) */
  px_status_info_t st;
  int events;
  eh_fix_open(&f, 1, NULL);
  eh_fix_client2(&f);
  ASSERT_OK(eh_fix_submit(&f, eh_job("run", PX_PRIO_NORMAL, "hang", NULL)));
  eh_wait_started(f.col, 1);
  ASSERT_OK(eh_fix_submit(&f, eh_job("q", PX_PRIO_NORMAL, NULL)));
  /* b disconnects without cancelling while its job waits behind a's: the
   * job still runs to its end, unheard. */
  ASSERT_OK(eh_submit(
      f.eng, f.c2, eh_job("keep", PX_PRIO_NORMAL, "sleep 20", "exit 0", NULL)));
  px_engine_client_close(f.eng, f.c2, 0);
  f.c2 = NULL;
  /* a disconnects and cancels: its running and queued jobs are
   * cancelled, and it hears nothing more. */
  px_mutex_lock(&f.col->m);
  events = f.col->events; /* a: accepted, started, accepted; b: accepted */
  px_mutex_unlock(&f.col->m);
  ASSERT_EQ(events, 4);
  px_engine_client_close(f.eng, f.c, 1);
  f.c = NULL;
  do { /* nobody hears them end: watch the counters */
    px_sleep_ms(5);
    px_engine_status(f.eng, &st);
  } while (st.counters[PX_STATUS_OK] + st.counters[PX_STATUS_CANCELLED] < 3);
  px_engine_stop(f.eng);
  px_mutex_lock(&f.col->m);
  ASSERT_EQ(f.col->events, events);
  px_mutex_unlock(&f.col->m);
  px_engine_status(f.eng, &st);
  ASSERT_UINT_EQ(st.counters[PX_STATUS_CANCELLED], 2);
  ASSERT_UINT_EQ(st.counters[PX_STATUS_OK], 1);
  eh_fix_close(&f);
  return 0;
}

TEST_IMPL(engine_reject_counts) {
  eh_fix_t fx;
  px_audit_finding_t *f = calloc(1, sizeof *f);
  px_status_info_t st;
  rec_t *r;
  px_engine_job_t j;
  eh_fix_open(&fx, 1, NULL);
  ASSERT_NOT_NULL(f);
  f->rule = px_strdup("py-socket");
  f->message = px_strdup("opens a socket");
  f->line = 3;
  f->severity = PX_SEV_HIGH;
  ASSERT_OK(px_engine_reject(fx.eng, fx.c, "bad", PX_CODE_AUDIT_REJECTED,
                             "audit finding at or above high", f, 1));
  r = eh_find(fx.col, 0, "bad");
  ASSERT_EQ(r->status, PX_STATUS_REJECTED);
  ASSERT_EQ(r->code, PX_CODE_AUDIT_REJECTED);
  ASSERT_UINT_EQ(r->naudit, 1);
  /* Findings of an accepted job reach its result. */
  j = eh_job("good", PX_PRIO_NORMAL, "exit 0", NULL);
  j.audit = calloc(1, sizeof *j.audit);
  ASSERT_NOT_NULL(j.audit);
  j.audit[0].rule = px_strdup("py-exec");
  j.audit[0].message = px_strdup("starts a process");
  j.naudit = 1;
  ASSERT_OK(px_engine_submit_take(fx.eng, fx.c, &j, NULL, NULL));
  eh_wait_results(fx.col, 2);
  ASSERT_UINT_EQ(eh_find(fx.col, 0, "good")->naudit, 1);
  px_engine_status(fx.eng, &st);
  ASSERT_UINT_EQ(st.counters[PX_STATUS_REJECTED], 1);
  ASSERT_UINT_EQ(st.accepted, 1);
  /* A refusal for an id still in flight is not delivered. */
  ASSERT_OK(eh_fix_submit(&fx, eh_job("busy", PX_PRIO_NORMAL, "hang", NULL)));
  eh_wait_started(fx.col, 2);
  ASSERT_EQ(
      px_engine_reject(fx.eng, fx.c, "busy", PX_CODE_FORBIDDEN, "no", NULL, 0),
      PX_EEXIST);
  ASSERT_EQ(eh_find(fx.col, 0, "busy")->ntypes, 2); /* accepted, started */
  ASSERT_OK(px_engine_cancel(fx.eng, fx.c, "busy"));
  eh_wait_results(fx.col, 3);
  /* Bad ids are refused before anything is delivered. */
  j = eh_job("no spaces", PX_PRIO_NORMAL, NULL);
  ASSERT_EQ(px_engine_submit_take(fx.eng, fx.c, &j, NULL, NULL), PX_EINVAL);
  eh_check_all(fx.col);
  eh_fix_close(&fx);
  return 0;
}

/* ---- races: exactly one result, always ---- */

TEST_IMPL(engine_race_cancel_vs_completion) {
  eh_fix_t f;
  px_status_info_t st;
  char id[32];
  int i, n = 400, cancelled = 0, ok = 0;
  eh_fix_open(&f, 4, NULL);
  for (i = 0; i < n; i++) {
    int rc;
    snprintf(id, sizeof id, "r%d", i);
    ASSERT_OK(eh_fix_submit(
        &f, eh_job(id, PX_PRIO_NORMAL, i % 3 ? "exit 0" : "sleep 1", NULL)));
    if (i % 5 == 4)
      px_sleep_ms(1); /* let some finish first */
    rc = px_engine_cancel(f.eng, f.c, id);
    ASSERT(rc == 0 || rc == PX_ENOENT);
  }
  eh_wait_results(f.col, n);
  for (i = 0; i < f.col->nrecs; i++) {
    ASSERT(f.col->recs[i].status == PX_STATUS_OK ||
           f.col->recs[i].status == PX_STATUS_CANCELLED);
    if (f.col->recs[i].status == PX_STATUS_OK)
      ok++;
    else
      cancelled++;
  }
  ASSERT_EQ(ok + cancelled, n);
  ASSERT_EQ(f.col->nrecs, n);
  eh_check_all(f.col);
  px_engine_status(f.eng, &st);
  ASSERT_UINT_EQ(st.counters[PX_STATUS_OK], (uint64_t)ok);
  ASSERT_UINT_EQ(st.counters[PX_STATUS_CANCELLED], (uint64_t)cancelled);
  eh_fix_close(&f);
  return 0;
}

TEST_IMPL(engine_race_scram_vs_start) {
  eh_fix_t f;
  char id[32];
  int round, k, n = 0;
  eh_fix_open(&f, 3, NULL);
  for (round = 0; round < 200; round++) {
    for (k = 0; k < 4; k++) {
      snprintf(id, sizeof id, "s%d-%d", round, k);
      ASSERT_OK(eh_fix_submit(
          &f, eh_job(id, PX_PRIO_NORMAL, k % 2 ? "sleep 1" : "exit 0", NULL)));
      n++;
    }
    (void)px_engine_scram(f.eng);
    px_engine_resume(f.eng);
  }
  eh_wait_results(f.col, n);
  ASSERT_EQ(f.col->nrecs, n);
  eh_check_statuses(f.col,
                    PX_EH_ST(PX_STATUS_OK) | PX_EH_ST(PX_STATUS_ABORTED));
  eh_check_all(f.col);
  eh_fix_close(&f);
  return 0;
}

TEST_IMPL(engine_race_stop) {
  int round;
  for (round = 0; round < 60; round++) {
    eh_fix_t f; /* clients c: f.c (tag 0), d: f.c2 (tag 1) */
    char id[32];
    int k;
    eh_fix_open(&f, 3, NULL);
    eh_fix_client2(&f);
    for (k = 0; k < 8; k++) {
      snprintf(id, sizeof id, "t%d", k);
      ASSERT_OK(eh_submit(f.eng, k % 2 ? f.c : f.c2,
                          eh_job(id, (px_priority_t)(k % PX_PRIO_COUNT),
                                 k % 3 ? "exit 0" : "hang", NULL)));
    }
    if (round % 2)
      (void)px_engine_cancel(f.eng, f.c, "t1");
    px_engine_stop(f.eng);
    ASSERT_EQ(f.col->results, 8);
    eh_check_statuses(f.col, PX_EH_ST(PX_STATUS_OK) |
                                 PX_EH_ST(PX_STATUS_ABORTED) |
                                 PX_EH_ST(PX_STATUS_CANCELLED));
    eh_check_all(f.col);
    px_engine_client_close(f.eng, f.c, 1);
    f.c = NULL;
    f.c2 = NULL; /* d never closed: free handles it */
    eh_fix_close(&f);
  }
  return 0;
}

/* ---- the fake backend on its own ---- */

TEST_IMPL(fake_backend_contract) {
  const px_backend_ops_t *ops = &px_backend_fake;
  px_engine_job_t j = eh_job("f", PX_PRIO_NORMAL, "hang", NULL);
  px_sandbox_events_t ev = {NULL, NULL, NULL};
  px_sandbox_t *sb = NULL;
  px_outcome_t oc;
  void *st = NULL;
  ASSERT_OK(ops->open(NULL, &st));
  ASSERT_STR_EQ(ops->name, "fake");
  ASSERT(ops->enforcement_available(st) & PX_ENF(PX_ENF_WATCHDOG_POLL));
  /* kill before start: the job ends at once, killed. */
  ASSERT_OK(ops->prepare(st, &j.spec, &ev, &sb));
  ASSERT_OK(ops->kill(sb)); /* checksrc: allow - backend op */
  ASSERT_OK(ops->kill(sb)); /* idempotent; checksrc: allow - backend op */
  ASSERT_OK(ops->start(sb));
  ASSERT_OK(ops->wait(sb, &oc));
  ASSERT_EQ(oc.killed, 1);
  ASSERT_EQ(oc.exited, 0);
  ASSERT_EQ(ops->wait(sb, &oc), PX_EINVAL); /* exactly once */
  ASSERT_EQ(ops->start(sb), PX_EINVAL);     /* and start too */
  ops->release(sb);
  /* release without start. */
  ASSERT_OK(ops->prepare(st, &j.spec, &ev, &sb));
  ops->release(sb);
  /* release of a running job kills it. */
  ASSERT_OK(ops->prepare(st, &j.spec, &ev, &sb));
  ASSERT_OK(ops->start(sb));
  ops->release(sb);
  px_engine_job_clear(&j);
  /* A typo in a script is refused. */
  j = eh_job("f", PX_PRIO_NORMAL, "exit", NULL);
  ASSERT_EQ(ops->prepare(st, &j.spec, &ev, &sb), PX_EINVAL);
  px_engine_job_clear(&j);
  j = eh_job("f", PX_PRIO_NORMAL, "stdin", "exit 4", "exit 5", NULL);
  ASSERT_OK(ops->prepare(st, &j.spec, &ev, &sb));
  ASSERT_OK(ops->start(sb));
  ASSERT_OK(ops->wait(sb, &oc));
  ASSERT_EQ(oc.exited, 1);
  ASSERT_EQ(oc.exit_code, 4);
  ops->release(sb);
  px_engine_job_clear(&j);
  ops->close(st);
  return 0;
}

/* ---- output back-pressure ---- */

/* 60000 bytes through a 100 KB/s bucket with a 10 KB burst: the backend is
 * told to pause, so the job cannot finish before (60000 - 10000 - one
 * 4096-byte chunk of debt) / 100 bytes per ms = 459 ms. A lower bound
 * only. */
TEST_IMPL(engine_output_backpressure) {
  eh_fix_t f;
  px_engine_opts_t o;
  rec_t *r;
  uint64_t t0;
  px_engine_opts_default(&o);
  o.output.rate_bytes_per_s = 100000;
  o.output.burst_bytes = 10000;
  eh_fix_open(&f, 1, &o);
  t0 = px_now_ms();
  ASSERT_OK(eh_fix_submit(
      &f, eh_job("flood", PX_PRIO_NORMAL, "print-out 60000", "exit 0", NULL)));
  eh_wait_results(f.col, 1);
  ASSERT_UINT_GE(px_now_ms() - t0, 459);
  r = eh_find(f.col, 0, "flood");
  ASSERT_EQ(r->status, PX_STATUS_OK);
  ASSERT_UINT_EQ(r->out_len[0], 60000);
  ASSERT_UINT_GE(r->usage.wall_ms, 459);
  eh_fix_close(&f);
  return 0;
}

/* ---- backend faults: the engine fails closed ---- */

enum { FAULT_NONE, FAULT_PREPARE_NULL, FAULT_WAIT, FAULT_SILENT_KILL };
static int fault_mode;

static int faulty_open(const px_backend_opts_t *o, void **st) {
  (void)o;
  (void)st;
  return PX_EACCES;
}

static int faulty_prepare(void *st, const px_job_spec_t *spec,
                          const px_sandbox_events_t *ev, px_sandbox_t **out) {
  if (fault_mode == FAULT_PREPARE_NULL) {
    *out = NULL;
    return 0;
  }
  return px_backend_fake.prepare(st, spec, ev, out);
}

static int faulty_wait(px_sandbox_t *sb, px_outcome_t *oc) {
  int rc = px_backend_fake.wait(sb, oc);
  if (fault_mode == FAULT_WAIT)
    return PX_EIO;
  if (fault_mode == FAULT_SILENT_KILL) {
    oc->exited = 0;
    oc->killed = 1;
  }
  return rc;
}

TEST_IMPL(engine_backend_faults) {
  px_backend_ops_t ops = px_backend_fake;
  px_engine_opts_t o;
  px_engine_t *eng = NULL;
  eh_fix_t f;
  int mode;
  px_engine_opts_default(&o);
  o.workers = 1;
  /* An incomplete table or a backend that cannot open: no engine. */
  ops.kill = NULL;
  o.backend = &ops;
  ASSERT_EQ(px_engine_new(&o, &eng), PX_EINVAL);
  ops = px_backend_fake;
  ops.open = faulty_open;
  ASSERT_EQ(px_engine_new(&o, &eng), PX_EACCES);
  ASSERT_NULL(eng);
  /* Jobs the backend fails in various ways end with status error. */
  ops = px_backend_fake;
  ops.prepare = faulty_prepare;
  ops.wait = faulty_wait;
  eh_fix_open(&f, 1, &o);
  for (mode = FAULT_PREPARE_NULL; mode <= FAULT_SILENT_KILL; mode++) {
    char id[16];
    rec_t *r;
    fault_mode = mode; /* one job at a time: the worker reads it */
    snprintf(id, sizeof id, "f%d", mode);
    ASSERT_OK(eh_fix_submit(&f, eh_job(id, PX_PRIO_NORMAL, "exit 0", NULL)));
    eh_wait_results(f.col, mode);
    r = eh_find(f.col, 0, id);
    ASSERT_EQ(r->status, PX_STATUS_ERROR);
    ASSERT_EQ(r->code, PX_CODE_SANDBOX_FAILED);
    ASSERT_EQ(r->exit_code, -1);
  }
  fault_mode = FAULT_NONE;
  eh_check_all(f.col);
  eh_fix_close(&f);
  return 0;
}

/* ---- mixed load ---- */

/* 300 jobs from three clients (one capped) at every priority, bombs and
 * floods among them, some cancelled, a scram in the middle: every job
 * ends with exactly one result and the counters add up. */
TEST_IMPL(engine_mixed_load) {
  static const char *const scripts[] = {
      "exit 0",         "exit 2",  "hog-memory", "fork-bomb",
      "print-out 9000", "sleep 2", "spin",       "fail-start"};
  col_t *col = eh_col_new();
  ctx_t cx[3];
  px_engine_client_t *c[3];
  px_engine_opts_t o;
  px_engine_t *eng;
  px_status_info_t st;
  uint64_t total = 0;
  int i, accepted = 0;
  px_engine_opts_default(&o);
  o.output.limit_bytes = 8192;
  o.aging_ms = 5;
  eng = eh_engine(6, &o);
  for (i = 0; i < 3; i++)
    c[i] = eh_client(eng, &cx[i], col, i, i == 0 ? 2 : 0);
  for (i = 0; i < 300; i++) {
    px_engine_job_t j;
    char id[16];
    int rc;
    snprintf(id, sizeof id, "m%d", i);
    j = eh_job(id, (px_priority_t)(i % PX_PRIO_COUNT), scripts[i % 8], NULL);
    j.spec.limits.cpu_ms = 3;
    j.spec.limits.wall_ms = 1000;
    rc = px_engine_submit_take(eng, c[i % 3], &j, NULL, NULL);
    ASSERT(rc == 0 || rc == PX_EBUSY); /* EBUSY: paused by the scram */
    accepted += rc == 0;
    if (i % 7 == 3)
      (void)px_engine_cancel(eng, c[(i - 3) % 3], "m0");
    if (i % 11 == 0) {
      snprintf(id, sizeof id, "m%d", i / 2);
      (void)px_engine_cancel(eng, c[(i / 2) % 3], id);
    }
    if (i == 150) {
      (void)px_engine_scram(eng);
      px_engine_resume(eng);
    }
  }
  eh_wait_results(col, 300);
  eh_check_all(col);
  ASSERT_EQ(col->nrecs, 300);
  ASSERT_LE(col->max_running[0], 2);
  px_engine_status(eng, &st);
  for (i = 0; i < PX_STATUS_COUNT_; i++)
    total += st.counters[i];
  ASSERT_UINT_EQ(total, 300);
  ASSERT_UINT_EQ(st.accepted, (uint64_t)accepted);
  for (i = 0; i < 3; i++)
    px_engine_client_close(eng, c[i], 0);
  px_engine_free(eng);
  eh_col_free(col);
  return 0;
}
