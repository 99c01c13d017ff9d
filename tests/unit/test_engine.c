/* test_engine.c - the engine driven through the fake backend: every status
 * path, exactly one result under cancel/scram/stop races, priorities and
 * caps, queue_full, paused, duplicate_id, unknown_id, admission control,
 * KB hooks, output kill/truncate, streaming event order.
 * No test asserts that anything is fast. */
#include "task.h"

#include "px/px_engine.h"
#include "px/px_error.h"
#include "px/px_os.h"
#include "px/px_util.h"

#include <stdarg.h>

/* ---- an event collector (the "transport") ---- */

#define MAX_RECS 4096
#define MAX_TYPES 16

typedef struct {
  char id[PX_JOB_ID_MAX + 1];
  int client;
  int types[MAX_TYPES];
  int ntypes;
  int nresults;
  uint64_t pos;
  px_status_t status;
  px_code_t code;
  long long exit_code;
  px_violation_t v;
  px_usage_t usage;
  uint64_t enforcement;
  char *out[2];
  size_t out_len[2];
  int trunc[2];
  int lossy;
  int kb_present, kb_rolled_back;
  size_t naudit;
  px_buf_t streamed[2];
  int seq_started, seq_result; /* global order of events */
} rec_t;

typedef struct {
  px_mutex_t m;
  px_cond_t c;
  rec_t *recs;
  int nrecs;
  int results, started, events;
  int running[4], max_running[4]; /* per client tag */
} col_t;

typedef struct {
  col_t *col;
  int tag;
} ctx_t;

static rec_t *rec_get(col_t *col, const char *id, int tag) {
  int i;
  for (i = 0; i < col->nrecs; i++)
    if (col->recs[i].client == tag && strcmp(col->recs[i].id, id) == 0 &&
        col->recs[i].nresults == 0)
      return &col->recs[i];
  ASSERT(col->nrecs < MAX_RECS);
  memset(&col->recs[col->nrecs], 0, sizeof col->recs[0]);
  snprintf(col->recs[col->nrecs].id, sizeof col->recs[0].id, "%s", id);
  col->recs[col->nrecs].client = tag;
  return &col->recs[col->nrecs++];
}

static void on_event(void *p, const px_engine_event_t *ev) {
  ctx_t *cx = p;
  col_t *col = cx->col;
  rec_t *r;
  px_mutex_lock(&col->m);
  r = rec_get(col, ev->id, cx->tag);
  if (r->ntypes < MAX_TYPES)
    r->types[r->ntypes++] = (int)ev->type;
  col->events++;
  switch (ev->type) {
  case PX_ENGINE_EV_ACCEPTED:
    r->pos = ev->queue_position;
    break;
  case PX_ENGINE_EV_STARTED:
    r->seq_started = ++col->started;
    if (++col->running[cx->tag] > col->max_running[cx->tag])
      col->max_running[cx->tag] = col->running[cx->tag];
    break;
  case PX_ENGINE_EV_OUTPUT:
    ASSERT(ev->stream == PX_STREAM_STDOUT || ev->stream == PX_STREAM_STDERR);
    ASSERT_OK(px_buf_append(&r->streamed[ev->stream - 1], ev->data, ev->len));
    break;
  case PX_ENGINE_EV_RESULT: {
    const px_result_t *res = ev->result;
    int i;
    if (r->seq_started)
      col->running[cx->tag]--;
    r->nresults++;
    r->seq_result = ++col->results;
    r->status = res->status;
    r->code = res->error_code;
    r->exit_code = res->exit_code;
    r->v = res->violation;
    r->usage = res->usage;
    r->enforcement = res->enforcement;
    r->lossy = res->output_lossy;
    r->kb_present = res->kb.present;
    r->kb_rolled_back = res->kb.rolled_back;
    r->naudit = res->naudit;
    ASSERT_STR_EQ(res->id, ev->id);
    for (i = 0; i < 2; i++) {
      r->out_len[i] = res->out_len[i];
      r->trunc[i] = res->out_truncated[i];
      r->out[i] = res->out[i] ? px_strndup(res->out[i], res->out_len[i])
                              : NULL;
    }
    break;
  }
  }
  px_cond_broadcast(&col->c);
  px_mutex_unlock(&col->m);
}

static col_t *col_new(void) {
  col_t *col = calloc(1, sizeof *col);
  ASSERT_NOT_NULL(col);
  col->recs = calloc(MAX_RECS, sizeof *col->recs);
  ASSERT_NOT_NULL(col->recs);
  ASSERT_OK(px_mutex_init(&col->m));
  ASSERT_OK(px_cond_init(&col->c));
  return col;
}

static void col_free(col_t *col) {
  int i, s;
  for (i = 0; i < col->nrecs; i++)
    for (s = 0; s < 2; s++) {
      free(col->recs[i].out[s]);
      px_buf_free(&col->recs[i].streamed[s]);
    }
  px_cond_destroy(&col->c);
  px_mutex_destroy(&col->m);
  free(col->recs);
  free(col);
}

static void wait_results(col_t *col, int n) {
  px_mutex_lock(&col->m);
  while (col->results < n)
    px_cond_wait(&col->c, &col->m);
  px_mutex_unlock(&col->m);
}

static void wait_started(col_t *col, int n) {
  px_mutex_lock(&col->m);
  while (col->started < n)
    px_cond_wait(&col->c, &col->m);
  px_mutex_unlock(&col->m);
}

static rec_t *find(col_t *col, int tag, const char *id) {
  int i;
  for (i = col->nrecs - 1; i >= 0; i--)
    if (col->recs[i].client == tag && strcmp(col->recs[i].id, id) == 0)
      return &col->recs[i];
  px__test_fail(__FILE__, __LINE__, "no events for job %s", id);
  return NULL;
}

/* Events of one job are accepted? < started? < output* < result, with
 * exactly one result. */
static void check_sequence(const rec_t *r) {
  int i, seen_started = 0;
  ASSERT_EQ(r->nresults, 1);
  ASSERT_EQ(r->types[r->ntypes - 1], PX_ENGINE_EV_RESULT);
  for (i = 0; i < r->ntypes - 1; i++) {
    switch (r->types[i]) {
    case PX_ENGINE_EV_ACCEPTED:
      ASSERT_EQ(i, 0);
      break;
    case PX_ENGINE_EV_STARTED:
      ASSERT_EQ(seen_started, 0);
      seen_started = 1;
      break;
    case PX_ENGINE_EV_OUTPUT:
      ASSERT_EQ(seen_started, 1);
      break;
    default:
      px__test_fail(__FILE__, __LINE__, "job %s: event %d before result",
                    r->id, r->types[i]);
    }
  }
}

static void check_all(col_t *col) {
  int i;
  px_mutex_lock(&col->m);
  for (i = 0; i < col->nrecs; i++)
    check_sequence(&col->recs[i]);
  px_mutex_unlock(&col->m);
}

/* ---- jobs and engines ---- */

/* A fake job: argv = {"fake", steps..., NULL}. */
static px_engine_job_t mkjob(const char *id, px_priority_t prio, ...) {
  px_engine_job_t j;
  const char *steps[16];
  size_t n = 0, i;
  va_list ap;
  memset(&j, 0, sizeof j);
  va_start(ap, prio);
  while (n < 16 && (steps[n] = va_arg(ap, const char *)) != NULL)
    n++;
  va_end(ap);
  snprintf(j.spec.id, sizeof j.spec.id, "%s", id);
  j.spec.priority = prio;
  j.spec.argv = calloc(n + 2, sizeof *j.spec.argv);
  ASSERT_NOT_NULL(j.spec.argv);
  j.spec.argv[0] = px_strdup("fake");
  for (i = 0; i < n; i++)
    j.spec.argv[i + 1] = px_strdup(steps[i]);
  j.spec.argc = n + 1;
  j.spec.limits.memory_bytes = 64u << 20;
  j.spec.limits.processes = 8;
  return j;
}

static px_engine_t *mkengine(unsigned workers, px_engine_opts_t *o) {
  px_engine_opts_t def;
  px_engine_t *eng = NULL;
  if (!o) {
    px_engine_opts_default(&def);
    o = &def;
  }
  o->workers = workers;
  if (!o->backend)
    o->backend = &px_backend_fake;
  ASSERT_OK(px_engine_new(o, &eng));
  return eng;
}

static px_engine_client_t *mkclient(px_engine_t *eng, ctx_t *cx, col_t *col,
                                    int tag, unsigned cap) {
  px_engine_client_opts_t co;
  px_engine_client_t *c = NULL;
  cx->col = col;
  cx->tag = tag;
  memset(&co, 0, sizeof co);
  co.on_event = on_event;
  co.ctx = cx;
  co.max_concurrent = cap;
  co.name = "test";
  ASSERT_OK(px_engine_client_open(eng, &co, &c));
  return c;
}

static int submit(px_engine_t *eng, px_engine_client_t *c,
                  px_engine_job_t j) {
  return px_engine_submit_take(eng, c, &j, NULL, NULL);
}

/* ---- every status path ---- */

TEST_IMPL(engine_status_paths) {
  col_t *col = col_new();
  ctx_t cx;
  px_engine_t *eng = mkengine(4, NULL);
  px_engine_client_t *c = mkclient(eng, &cx, col, 0, 0);
  px_engine_job_t j;
  px_status_info_t st;
  rec_t *r;
  ASSERT_OK(submit(eng, c, mkjob("ok", PX_PRIO_NORMAL, "exit 0", NULL)));
  ASSERT_OK(submit(eng, c, mkjob("nz", PX_PRIO_NORMAL, "exit 3", NULL)));
  ASSERT_OK(submit(eng, c, mkjob("mem", PX_PRIO_NORMAL, "hog-memory", NULL)));
  j = mkjob("cpu", PX_PRIO_NORMAL, "spin", NULL);
  j.spec.limits.cpu_ms = 30;
  ASSERT_OK(submit(eng, c, j));
  j = mkjob("wall", PX_PRIO_NORMAL, "sleep 100000", NULL);
  j.spec.limits.wall_ms = 30;
  ASSERT_OK(submit(eng, c, j));
  ASSERT_OK(submit(eng, c, mkjob("procs", PX_PRIO_NORMAL, "fork-bomb", NULL)));
  ASSERT_OK(submit(eng, c, mkjob("lost", PX_PRIO_NORMAL, "sandbox-error",
                                 NULL)));
  ASSERT_OK(submit(eng, c, mkjob("noprep", PX_PRIO_NORMAL, "fail-prepare",
                                 NULL)));
  ASSERT_OK(submit(eng, c, mkjob("nostart", PX_PRIO_NORMAL, "fail-start",
                                 NULL)));
  j = mkjob("noprog", PX_PRIO_NORMAL, "exit 0", NULL);
  free(j.spec.argv[0]);
  j.spec.argv[0] = px_strdup("no-such-program");
  ASSERT_OK(submit(eng, c, j));
  wait_results(col, 10);

  r = find(col, 0, "ok");
  ASSERT_EQ(r->status, PX_STATUS_OK);
  ASSERT_EQ(r->exit_code, 0);
  ASSERT(r->enforcement & PX_ENF(PX_ENF_OUTPUT_GUARD));
  ASSERT(r->enforcement & PX_ENF(PX_ENF_WATCHDOG_POLL));
  ASSERT_UINT_GE(r->usage.processes, 1);
  r = find(col, 0, "nz");
  ASSERT_EQ(r->status, PX_STATUS_NONZERO_EXIT);
  ASSERT_EQ(r->exit_code, 3);
  r = find(col, 0, "mem");
  ASSERT_EQ(r->status, PX_STATUS_KILLED);
  ASSERT_EQ(r->v.limit, PX_LIMIT_MEMORY);
  ASSERT_EQ(r->v.detected_by, PX_DETECT_OS);
  ASSERT_UINT_EQ(r->v.configured, 64u << 20);
  ASSERT_EQ(r->exit_code, -1);
  r = find(col, 0, "cpu");
  ASSERT_EQ(r->status, PX_STATUS_KILLED);
  ASSERT_EQ(r->v.limit, PX_LIMIT_CPU);
  ASSERT_UINT_GE(r->v.observed, 30);
  r = find(col, 0, "wall");
  ASSERT_EQ(r->status, PX_STATUS_KILLED);
  ASSERT_EQ(r->v.limit, PX_LIMIT_WALL);
  ASSERT_EQ(r->v.detected_by, PX_DETECT_WATCHDOG);
  ASSERT_UINT_EQ(r->v.configured, 30);
  ASSERT_UINT_GE(r->v.observed, 30);
  ASSERT_UINT_GE(r->usage.wall_ms, 30);
  r = find(col, 0, "procs");
  ASSERT_EQ(r->status, PX_STATUS_KILLED);
  ASSERT_EQ(r->v.limit, PX_LIMIT_PROCESSES);
  r = find(col, 0, "lost");
  ASSERT_EQ(r->status, PX_STATUS_ERROR);
  ASSERT_EQ(r->code, PX_CODE_SANDBOX_FAILED);
  r = find(col, 0, "noprep");
  ASSERT_EQ(r->status, PX_STATUS_ERROR);
  ASSERT_EQ(r->code, PX_CODE_SANDBOX_FAILED);
  ASSERT_EQ(r->types[1], PX_ENGINE_EV_RESULT); /* never started */
  r = find(col, 0, "nostart");
  ASSERT_EQ(r->status, PX_STATUS_ERROR);
  ASSERT_EQ(r->code, PX_CODE_SPAWN_FAILED);
  ASSERT_EQ(r->types[1], PX_ENGINE_EV_RESULT);
  r = find(col, 0, "noprog");
  ASSERT_EQ(r->code, PX_CODE_SPAWN_FAILED);
  check_all(col);

  px_engine_status(eng, &st);
  ASSERT_STR_EQ(st.backend, "fake");
  ASSERT_UINT_EQ(st.accepted, 10);
  ASSERT_UINT_EQ(st.counters[PX_STATUS_OK], 1);
  ASSERT_UINT_EQ(st.counters[PX_STATUS_NONZERO_EXIT], 1);
  ASSERT_UINT_EQ(st.counters[PX_STATUS_KILLED], 4);
  ASSERT_UINT_EQ(st.counters[PX_STATUS_ERROR], 4);
  ASSERT_UINT_EQ(st.workers, 4);
  ASSERT_UINT_EQ(st.queue_max, 1000);
  ASSERT_EQ(st.paused, 0);
  ASSERT(st.enforcement_available & PX_ENF(PX_ENF_OUTPUT_GUARD));
  px_engine_client_close(eng, c, 0);
  px_engine_stop(eng);
  px_engine_free(eng);
  col_free(col);
  return 0;
}

/* ---- output ---- */

TEST_IMPL(engine_output_capture_kill_truncate) {
  col_t *col = col_new();
  ctx_t cx;
  px_engine_opts_t o;
  px_engine_t *eng;
  px_engine_client_t *c;
  px_engine_job_t j;
  rec_t *r;
  px_engine_opts_default(&o);
  o.output.limit_bytes = 4096;
  eng = mkengine(2, &o);
  c = mkclient(eng, &cx, col, 0, 0);
  ASSERT_OK(submit(eng, c, mkjob("cap", PX_PRIO_NORMAL, "print-out 3000",
                                 "err:warn\\xff", NULL)));
  j = mkjob("kill", PX_PRIO_NORMAL, "print-out 5000", "exit 0", NULL);
  j.spec.limits.output_bytes = 1000;
  ASSERT_OK(submit(eng, c, j));
  wait_results(col, 2);
  r = find(col, 0, "cap");
  ASSERT_EQ(r->status, PX_STATUS_OK);
  ASSERT_UINT_EQ(r->out_len[0], 3000);
  ASSERT_EQ(r->trunc[0], 0);
  ASSERT_STR_EQ(r->out[1], "warn\xEF\xBF\xBD");
  ASSERT_EQ(r->lossy, 1);
  ASSERT_UINT_EQ(r->streamed[0].len, 0); /* not a streaming job */
  r = find(col, 0, "kill");
  ASSERT_EQ(r->status, PX_STATUS_KILLED);
  ASSERT_EQ(r->v.limit, PX_LIMIT_OUTPUT);
  ASSERT_EQ(r->v.detected_by, PX_DETECT_ENGINE);
  ASSERT_UINT_EQ(r->v.configured, 1000);
  ASSERT_UINT_GE(r->v.observed, 1001);
  ASSERT_UINT_EQ(r->out_len[0], 1000);
  ASSERT_EQ(r->trunc[0], 1);
  px_engine_client_close(eng, c, 0);
  px_engine_free(eng);

  /* Truncate mode: the job runs to its end, first and last halves kept. */
  px_engine_opts_default(&o);
  o.output.limit_bytes = 1000;
  o.output.overflow = PX_OVERFLOW_TRUNCATE;
  eng = mkengine(1, &o);
  c = mkclient(eng, &cx, col, 1, 0);
  ASSERT_OK(submit(eng, c, mkjob("trunc", PX_PRIO_NORMAL, "print-out 5000",
                                 "exit 7", NULL)));
  wait_results(col, 3);
  r = find(col, 1, "trunc");
  ASSERT_EQ(r->status, PX_STATUS_NONZERO_EXIT);
  ASSERT_EQ(r->exit_code, 7);
  ASSERT_UINT_EQ(r->out_len[0], 1000);
  ASSERT_EQ(r->trunc[0], 1);
  ASSERT_MEM_EQ(r->out[0], "0123456789", 10);
  /* 5000 bytes of "0123456789" cycling per 4096-byte chunk: the last byte
   * written is index 903 of the second chunk, '3'. */
  ASSERT_EQ(r->out[0][999], '3');
  check_all(col);
  px_engine_free(eng); /* without closing the client: free handles it */
  col_free(col);
  return 0;
}

TEST_IMPL(engine_stream_event_order) {
  col_t *col = col_new();
  ctx_t cx;
  px_engine_t *eng = mkengine(2, NULL);
  px_engine_client_t *c = mkclient(eng, &cx, col, 0, 0);
  px_engine_job_t j;
  rec_t *r;
  int i;
  j = mkjob("s", PX_PRIO_NORMAL, "out:caf\\xc3", "err:E", "sleep 5",
            "out:\\xa9!", "exit 0", NULL);
  j.stream = 1;
  ASSERT_OK(submit(eng, c, j));
  wait_results(col, 1);
  r = find(col, 0, "s");
  check_sequence(r);
  ASSERT_EQ(r->types[0], PX_ENGINE_EV_ACCEPTED);
  ASSERT_EQ(r->types[1], PX_ENGINE_EV_STARTED);
  for (i = 2; i < r->ntypes - 1; i++)
    ASSERT_EQ(r->types[i], PX_ENGINE_EV_OUTPUT);
  ASSERT_GE(r->ntypes, 5);
  ASSERT_STR_EQ(px_buf_cstr(&r->streamed[0]), "caf\xC3\xA9!");
  ASSERT_STR_EQ(px_buf_cstr(&r->streamed[1]), "E");
  ASSERT_STR_EQ(r->out[0], "caf\xC3\xA9!");
  ASSERT_EQ(r->lossy, 0);
  px_engine_client_close(eng, c, 0);
  px_engine_free(eng);
  col_free(col);
  return 0;
}

/* ---- queue behaviour through the engine ---- */

TEST_IMPL(engine_priority_order_one_worker) {
  col_t *col = col_new();
  ctx_t cx;
  px_engine_t *eng = mkengine(1, NULL);
  px_engine_client_t *c = mkclient(eng, &cx, col, 0, 0);
  uint64_t pos = 0;
  px_engine_job_t j;
  ASSERT_OK(submit(eng, c, mkjob("block", PX_PRIO_CRITICAL, "hang", NULL)));
  wait_started(col, 1);
  ASSERT_OK(submit(eng, c, mkjob("l1", PX_PRIO_LOW, NULL)));
  ASSERT_OK(submit(eng, c, mkjob("n1", PX_PRIO_NORMAL, NULL)));
  ASSERT_OK(submit(eng, c, mkjob("h1", PX_PRIO_HIGH, NULL)));
  ASSERT_OK(submit(eng, c, mkjob("n2", PX_PRIO_NORMAL, NULL)));
  j = mkjob("c1", PX_PRIO_CRITICAL, NULL);
  ASSERT_OK(px_engine_submit_take(eng, c, &j, &pos, NULL));
  ASSERT_UINT_EQ(pos, 1);
  ASSERT_UINT_EQ(find(col, 0, "c1")->pos, 1);
  ASSERT_UINT_EQ(find(col, 0, "l1")->pos, 1);
  ASSERT_UINT_EQ(find(col, 0, "n2")->pos, 3);
  ASSERT_OK(px_engine_cancel(eng, c, "block"));
  wait_results(col, 6);
  ASSERT_EQ(find(col, 0, "block")->status, PX_STATUS_CANCELLED);
  ASSERT_EQ(find(col, 0, "c1")->seq_started, 2);
  ASSERT_EQ(find(col, 0, "h1")->seq_started, 3);
  ASSERT_EQ(find(col, 0, "n1")->seq_started, 4);
  ASSERT_EQ(find(col, 0, "n2")->seq_started, 5);
  ASSERT_EQ(find(col, 0, "l1")->seq_started, 6);
  check_all(col);
  px_engine_client_close(eng, c, 0);
  px_engine_free(eng);
  col_free(col);
  return 0;
}

TEST_IMPL(engine_client_cap) {
  col_t *col = col_new();
  ctx_t ca, cb;
  px_engine_t *eng = mkengine(4, NULL);
  px_engine_client_t *a = mkclient(eng, &ca, col, 0, 1);
  px_engine_client_t *b = mkclient(eng, &cb, col, 1, 0);
  px_status_info_t st;
  ASSERT_OK(submit(eng, a, mkjob("a1", PX_PRIO_CRITICAL, "hang", NULL)));
  ASSERT_OK(submit(eng, a, mkjob("a2", PX_PRIO_CRITICAL, "hang", NULL)));
  ASSERT_OK(submit(eng, a, mkjob("a3", PX_PRIO_CRITICAL, "exit 0", NULL)));
  wait_started(col, 1);
  /* a is at its cap: b's low-priority job still runs. */
  ASSERT_OK(submit(eng, b, mkjob("b1", PX_PRIO_LOW, "exit 0", NULL)));
  wait_results(col, 1);
  ASSERT_EQ(find(col, 1, "b1")->status, PX_STATUS_OK);
  px_engine_status(eng, &st);
  ASSERT_UINT_EQ(st.running, 1);
  ASSERT_UINT_EQ(st.queue[PX_PRIO_CRITICAL], 2);
  ASSERT_OK(px_engine_cancel(eng, a, "a1"));
  wait_started(col, 3);
  ASSERT_OK(px_engine_cancel(eng, a, "a2"));
  wait_results(col, 4);
  ASSERT_EQ(col->max_running[0], 1);
  ASSERT_EQ(find(col, 0, "a3")->status, PX_STATUS_OK);
  check_all(col);
  px_engine_client_close(eng, a, 0);
  px_engine_client_close(eng, b, 0);
  px_engine_free(eng);
  col_free(col);
  return 0;
}

TEST_IMPL(engine_queue_full) {
  col_t *col = col_new();
  ctx_t cx;
  px_engine_opts_t o;
  px_engine_t *eng;
  px_engine_client_t *c;
  px_engine_job_t j;
  px_code_t why = PX_CODE_NONE;
  rec_t *r;
  px_engine_opts_default(&o);
  o.queue_max = 2;
  eng = mkengine(1, &o);
  c = mkclient(eng, &cx, col, 0, 0);
  ASSERT_OK(submit(eng, c, mkjob("run", PX_PRIO_NORMAL, "hang", NULL)));
  wait_started(col, 1);
  ASSERT_OK(submit(eng, c, mkjob("q1", PX_PRIO_NORMAL, NULL)));
  ASSERT_OK(submit(eng, c, mkjob("q2", PX_PRIO_NORMAL, NULL)));
  j = mkjob("q3", PX_PRIO_CRITICAL, NULL);
  ASSERT_EQ(px_engine_submit_take(eng, c, &j, NULL, &why), PX_EBUSY);
  ASSERT_EQ(why, PX_CODE_QUEUE_FULL);
  ASSERT_NULL(j.spec.argv); /* taken anyway */
  r = find(col, 0, "q3");
  ASSERT_EQ(r->status, PX_STATUS_REJECTED);
  ASSERT_EQ(r->code, PX_CODE_QUEUE_FULL);
  ASSERT_EQ(r->ntypes, 1); /* only its result */
  ASSERT_OK(px_engine_cancel(eng, c, "run"));
  wait_results(col, 4);
  check_all(col);
  px_engine_client_close(eng, c, 0);
  px_engine_free(eng);
  col_free(col);
  return 0;
}

TEST_IMPL(engine_scram_then_resume) {
  col_t *col = col_new();
  ctx_t cx;
  px_engine_t *eng = mkengine(2, NULL);
  px_engine_client_t *c = mkclient(eng, &cx, col, 0, 0);
  px_engine_job_t j;
  px_code_t why = PX_CODE_NONE;
  px_status_info_t st;
  ASSERT_OK(submit(eng, c, mkjob("r1", PX_PRIO_NORMAL, "hang", NULL)));
  ASSERT_OK(submit(eng, c, mkjob("r2", PX_PRIO_NORMAL, "hang", NULL)));
  wait_started(col, 2);
  ASSERT_OK(submit(eng, c, mkjob("q1", PX_PRIO_NORMAL, NULL)));
  ASSERT_OK(submit(eng, c, mkjob("q2", PX_PRIO_LOW, NULL)));
  ASSERT_EQ(px_engine_scram(eng), 4);
  wait_results(col, 4);
  ASSERT_EQ(find(col, 0, "r1")->status, PX_STATUS_ABORTED);
  ASSERT_EQ(find(col, 0, "r2")->status, PX_STATUS_ABORTED);
  ASSERT_EQ(find(col, 0, "q1")->status, PX_STATUS_ABORTED);
  ASSERT_EQ(find(col, 0, "q2")->status, PX_STATUS_ABORTED);
  ASSERT_UINT_GE(find(col, 0, "r1")->usage.processes, 1); /* it ran */
  px_engine_status(eng, &st);
  ASSERT_EQ(st.paused, 1);
  j = mkjob("late", PX_PRIO_NORMAL, NULL);
  ASSERT_EQ(px_engine_submit_take(eng, c, &j, NULL, &why), PX_EBUSY);
  ASSERT_EQ(why, PX_CODE_PAUSED);
  ASSERT_EQ(find(col, 0, "late")->code, PX_CODE_PAUSED);
  px_engine_resume(eng);
  ASSERT_OK(submit(eng, c, mkjob("after", PX_PRIO_NORMAL, "exit 0", NULL)));
  wait_results(col, 6);
  ASSERT_EQ(find(col, 0, "after")->status, PX_STATUS_OK);
  px_engine_status(eng, &st);
  ASSERT_EQ(st.paused, 0);
  ASSERT_UINT_EQ(st.counters[PX_STATUS_ABORTED], 4);
  ASSERT_UINT_EQ(st.counters[PX_STATUS_REJECTED], 1);
  check_all(col);
  px_engine_client_close(eng, c, 0);
  px_engine_free(eng);
  col_free(col);
  return 0;
}

TEST_IMPL(engine_duplicate_and_unknown_id) {
  col_t *col = col_new();
  ctx_t ca, cb;
  px_engine_t *eng = mkengine(2, NULL);
  px_engine_client_t *a = mkclient(eng, &ca, col, 0, 0);
  px_engine_client_t *b = mkclient(eng, &cb, col, 1, 0);
  px_engine_job_t j;
  px_code_t why = PX_CODE_NONE;
  ASSERT_OK(submit(eng, a, mkjob("x", PX_PRIO_NORMAL, "hang", NULL)));
  wait_started(col, 1);
  j = mkjob("x", PX_PRIO_NORMAL, "exit 0", NULL);
  ASSERT_EQ(px_engine_submit_take(eng, a, &j, NULL, &why), PX_EEXIST);
  ASSERT_EQ(why, PX_CODE_DUPLICATE_ID);
  /* Another client may use the same id. */
  ASSERT_OK(submit(eng, b, mkjob("x", PX_PRIO_NORMAL, "exit 0", NULL)));
  wait_results(col, 1);
  ASSERT_EQ(find(col, 1, "x")->status, PX_STATUS_OK);
  /* The first job was not disturbed: still running, one accepted. */
  ASSERT_EQ(find(col, 0, "x")->nresults, 0);
  ASSERT_EQ(find(col, 0, "x")->ntypes, 2);
  ASSERT_EQ(px_engine_cancel(eng, a, "nope"), PX_ENOENT);
  ASSERT_EQ(px_engine_cancel(eng, b, "x"), PX_ENOENT); /* already done */
  ASSERT_OK(px_engine_cancel(eng, a, "x"));
  wait_results(col, 2);
  ASSERT_EQ(find(col, 0, "x")->status, PX_STATUS_CANCELLED);
  /* The id is free again once its result is out. */
  ASSERT_OK(submit(eng, a, mkjob("x", PX_PRIO_NORMAL, "exit 0", NULL)));
  wait_results(col, 3);
  check_all(col);
  px_engine_client_close(eng, a, 0);
  px_engine_client_close(eng, b, 0);
  px_engine_free(eng);
  col_free(col);
  return 0;
}

TEST_IMPL(engine_cancel_queued_and_running) {
  col_t *col = col_new();
  ctx_t cx;
  px_engine_t *eng = mkengine(1, NULL);
  px_engine_client_t *c = mkclient(eng, &cx, col, 0, 0);
  rec_t *r;
  ASSERT_OK(submit(eng, c, mkjob("run", PX_PRIO_NORMAL, "hang", NULL)));
  wait_started(col, 1);
  ASSERT_OK(submit(eng, c, mkjob("queued", PX_PRIO_NORMAL, NULL)));
  ASSERT_OK(px_engine_cancel(eng, c, "queued"));
  /* A queued job's result is delivered before cancel returns. */
  r = find(col, 0, "queued");
  ASSERT_EQ(r->nresults, 1);
  ASSERT_EQ(r->status, PX_STATUS_CANCELLED);
  ASSERT_EQ(r->ntypes, 2); /* accepted, result */
  ASSERT_OK(px_engine_cancel(eng, c, "run"));
  wait_results(col, 2);
  r = find(col, 0, "run");
  ASSERT_EQ(r->status, PX_STATUS_CANCELLED);
  ASSERT_EQ(r->exit_code, -1);
  ASSERT_UINT_GE(r->usage.processes, 1);
  check_all(col);
  px_engine_client_close(eng, c, 0);
  px_engine_free(eng);
  col_free(col);
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
  col_t *col = col_new();
  ctx_t cx;
  px_engine_opts_t o;
  px_engine_t *eng;
  px_engine_client_t *c;
  px_status_info_t st;
  px_engine_opts_default(&o);
  o.min_free_memory_bytes = 1000;
  o.admission_poll_ms = 10;
  o.free_memory = get_free_memory;
  ASSERT_OK(px_mutex_init(&free_memory_lock));
  set_free_memory(999);
  eng = mkengine(2, &o);
  c = mkclient(eng, &cx, col, 0, 0);
  ASSERT_OK(submit(eng, c, mkjob("j", PX_PRIO_NORMAL, "exit 0", NULL)));
  px_sleep_ms(100); /* several re-checks: still under the floor */
  px_engine_status(eng, &st);
  ASSERT_UINT_EQ(st.queue[PX_PRIO_NORMAL], 1);
  ASSERT_UINT_EQ(st.running, 0);
  ASSERT_EQ(find(col, 0, "j")->ntypes, 1); /* accepted only */
  set_free_memory(1000);
  wait_results(col, 1);
  ASSERT_EQ(find(col, 0, "j")->status, PX_STATUS_OK);
  check_all(col);
  px_engine_client_close(eng, c, 0);
  px_engine_free(eng);
  px_mutex_destroy(&free_memory_lock);
  col_free(col);
  return 0;
}

/* ---- KB hooks ---- */

typedef struct {
  px_mutex_t m;
  int snapshots, finishes, rollbacks;
  char rolled[8][PX_JOB_ID_MAX + 1];
  int nrolled;
} kbrec_t;

static int kb_snapshot(void *ctx, const px_job_spec_t *spec, void **snap) {
  kbrec_t *k = ctx;
  if (strncmp(spec->id, "snapfail", 8) == 0)
    return PX_EIO;
  px_mutex_lock(&k->m);
  k->snapshots++;
  px_mutex_unlock(&k->m);
  *snap = px_strdup(spec->id);
  return 0;
}

static void kb_finish(void *ctx, void *snap, int rollback,
                      px_kb_result_t *out) {
  kbrec_t *k = ctx;
  px_mutex_lock(&k->m);
  k->finishes++;
  if (rollback && k->nrolled < 8)
    snprintf(k->rolled[k->nrolled++], sizeof k->rolled[0], "%s",
             (char *)snap);
  px_mutex_unlock(&k->m);
  out->present = 1;
  out->rolled_back = rollback;
  out->snapshot = snap; /* hand the string to the result */
}

static int rolled(kbrec_t *k, const char *id) {
  int i;
  for (i = 0; i < k->nrolled; i++)
    if (strcmp(k->rolled[i], id) == 0)
      return 1;
  return 0;
}

TEST_IMPL(engine_kb_hooks_and_rollback) {
  col_t *col = col_new();
  ctx_t cx;
  kbrec_t k;
  px_engine_opts_t o;
  px_engine_t *eng;
  px_engine_client_t *c;
  px_engine_job_t j;
  memset(&k, 0, sizeof k);
  ASSERT_OK(px_mutex_init(&k.m));
  px_engine_opts_default(&o);
  o.kb.ctx = &k;
  o.kb.snapshot = kb_snapshot;
  o.kb.finish = kb_finish;
  eng = mkengine(3, &o);
  c = mkclient(eng, &cx, col, 0, 0);
  ASSERT_OK(submit(eng, c, mkjob("ov-ok", PX_PRIO_NORMAL, "exit 0", NULL)));
  ASSERT_OK(submit(eng, c, mkjob("ov-kill", PX_PRIO_NORMAL, "hog-memory",
                                 NULL)));
  ASSERT_OK(submit(eng, c, mkjob("ov-nz", PX_PRIO_NORMAL, "exit 1", NULL)));
  j = mkjob("al-ok", PX_PRIO_NORMAL, "exit 0", NULL);
  j.kb_rollback = PX_KB_ROLLBACK_ALWAYS;
  ASSERT_OK(submit(eng, c, j));
  j = mkjob("nv-kill", PX_PRIO_NORMAL, "hog-memory", NULL);
  j.kb_rollback = PX_KB_ROLLBACK_NEVER;
  ASSERT_OK(submit(eng, c, j));
  ASSERT_OK(submit(eng, c, mkjob("snapfail", PX_PRIO_NORMAL, "exit 0",
                                 NULL)));
  wait_results(col, 6);
  ASSERT_EQ(k.snapshots, 5);
  ASSERT_EQ(k.finishes, 5);
  ASSERT_EQ(k.nrolled, 2);
  ASSERT(rolled(&k, "ov-kill"));
  ASSERT(rolled(&k, "al-ok"));
  ASSERT_EQ(find(col, 0, "ov-kill")->kb_rolled_back, 1);
  ASSERT_EQ(find(col, 0, "ov-ok")->kb_present, 1);
  ASSERT_EQ(find(col, 0, "ov-ok")->kb_rolled_back, 0);
  ASSERT_EQ(find(col, 0, "snapfail")->status, PX_STATUS_ERROR);
  ASSERT_EQ(find(col, 0, "snapfail")->code, PX_CODE_SANDBOX_FAILED);
  ASSERT_EQ(find(col, 0, "snapfail")->kb_present, 0);
  ASSERT_EQ(find(col, 0, "snapfail")->ntypes, 2); /* never started */
  check_all(col);
  px_engine_client_close(eng, c, 0);
  px_engine_free(eng);
  px_mutex_destroy(&k.m);
  col_free(col);
  return 0;
}

/* ---- stop, close, reject ---- */

TEST_IMPL(engine_stop_aborts_everything) {
  col_t *col = col_new();
  ctx_t cx;
  kbrec_t k;
  px_engine_opts_t o;
  px_engine_t *eng;
  px_engine_client_t *c;
  px_engine_job_t j;
  px_code_t why;
  int i;
  memset(&k, 0, sizeof k);
  ASSERT_OK(px_mutex_init(&k.m));
  px_engine_opts_default(&o);
  o.kb.ctx = &k;
  o.kb.snapshot = kb_snapshot;
  o.kb.finish = kb_finish;
  eng = mkengine(2, &o);
  c = mkclient(eng, &cx, col, 0, 0);
  ASSERT_OK(submit(eng, c, mkjob("r1", PX_PRIO_NORMAL, "hang", NULL)));
  ASSERT_OK(submit(eng, c, mkjob("r2", PX_PRIO_NORMAL, "hang", NULL)));
  wait_started(col, 2);
  ASSERT_OK(submit(eng, c, mkjob("q1", PX_PRIO_NORMAL, NULL)));
  ASSERT_OK(submit(eng, c, mkjob("q2", PX_PRIO_NORMAL, NULL)));
  ASSERT_OK(submit(eng, c, mkjob("q3", PX_PRIO_NORMAL, NULL)));
  px_engine_stop(eng);
  /* Every result is out when stop returns. */
  ASSERT_EQ(col->results, 5);
  for (i = 0; i < col->nrecs; i++)
    ASSERT_EQ(col->recs[i].status, PX_STATUS_ABORTED);
  ASSERT_EQ(k.finishes, 2); /* the running jobs' KB hooks ran */
  ASSERT_UINT_GE(find(col, 0, "r1")->usage.processes, 1);
  j = mkjob("late", PX_PRIO_NORMAL, NULL);
  ASSERT_EQ(px_engine_submit_take(eng, c, &j, NULL, &why), PX_EBUSY);
  ASSERT_EQ(why, PX_CODE_PAUSED);
  px_engine_stop(eng); /* idempotent */
  check_all(col);
  px_engine_client_close(eng, c, 0);
  px_engine_free(eng);
  px_mutex_destroy(&k.m);
  col_free(col);
  return 0;
}

TEST_IMPL(engine_client_close) {
  col_t *col = col_new();
  ctx_t ca, cb;
  px_engine_t *eng = mkengine(1, NULL);
  px_engine_client_t *a = mkclient(eng, &ca, col, 0, 0);
  px_engine_client_t *b = mkclient(eng, &cb, col, 1, 0);
  px_status_info_t st;
  int events;
  /* a disconnects and cancels: its running and queued jobs are
   * cancelled, and it hears nothing more. */
  ASSERT_OK(submit(eng, a, mkjob("run", PX_PRIO_NORMAL, "hang", NULL)));
  wait_started(col, 1);
  ASSERT_OK(submit(eng, a, mkjob("q", PX_PRIO_NORMAL, NULL)));
  px_mutex_lock(&col->m);
  events = col->events;
  px_mutex_unlock(&col->m);
  px_engine_client_close(eng, a, 1);
  /* b disconnects without cancelling: its job still runs to the end. */
  ASSERT_OK(submit(eng, b, mkjob("keep", PX_PRIO_NORMAL, "sleep 20",
                                 "exit 0", NULL)));
  px_engine_client_close(eng, b, 0);
  do { /* nobody hears it end: watch the counters */
    px_sleep_ms(5);
    px_engine_status(eng, &st);
  } while (st.counters[PX_STATUS_OK] + st.counters[PX_STATUS_CANCELLED] < 3);
  px_engine_stop(eng);
  px_mutex_lock(&col->m);
  ASSERT_EQ(col->events, events + 1); /* b's accepted, nothing else */
  px_mutex_unlock(&col->m);
  px_engine_status(eng, &st);
  ASSERT_UINT_EQ(st.counters[PX_STATUS_CANCELLED], 2);
  ASSERT_UINT_EQ(st.counters[PX_STATUS_OK], 1);
  px_engine_free(eng);
  col_free(col);
  return 0;
}

TEST_IMPL(engine_reject_counts) {
  col_t *col = col_new();
  ctx_t cx;
  px_engine_t *eng = mkengine(1, NULL);
  px_engine_client_t *c = mkclient(eng, &cx, col, 0, 0);
  px_audit_finding_t *f = calloc(1, sizeof *f);
  px_status_info_t st;
  rec_t *r;
  px_engine_job_t j;
  ASSERT_NOT_NULL(f);
  f->rule = px_strdup("py-socket");
  f->message = px_strdup("opens a socket");
  f->line = 3;
  f->severity = PX_SEV_HIGH;
  ASSERT_OK(px_engine_reject(eng, c, "bad", PX_CODE_AUDIT_REJECTED,
                             "audit finding at or above high", f, 1));
  r = find(col, 0, "bad");
  ASSERT_EQ(r->status, PX_STATUS_REJECTED);
  ASSERT_EQ(r->code, PX_CODE_AUDIT_REJECTED);
  ASSERT_UINT_EQ(r->naudit, 1);
  /* Findings of an accepted job reach its result. */
  j = mkjob("good", PX_PRIO_NORMAL, "exit 0", NULL);
  j.audit = calloc(1, sizeof *j.audit);
  ASSERT_NOT_NULL(j.audit);
  j.audit[0].rule = px_strdup("py-exec");
  j.audit[0].message = px_strdup("starts a process");
  j.naudit = 1;
  ASSERT_OK(px_engine_submit_take(eng, c, &j, NULL, NULL));
  wait_results(col, 2);
  ASSERT_UINT_EQ(find(col, 0, "good")->naudit, 1);
  px_engine_status(eng, &st);
  ASSERT_UINT_EQ(st.counters[PX_STATUS_REJECTED], 1);
  ASSERT_UINT_EQ(st.accepted, 1);
  /* Bad ids are refused before anything is delivered. */
  j = mkjob("no spaces", PX_PRIO_NORMAL, NULL);
  ASSERT_EQ(px_engine_submit_take(eng, c, &j, NULL, NULL), PX_EINVAL);
  check_all(col);
  px_engine_client_close(eng, c, 0);
  px_engine_free(eng);
  col_free(col);
  return 0;
}

/* ---- races: exactly one result, always ---- */

TEST_IMPL(engine_race_cancel_vs_completion) {
  col_t *col = col_new();
  ctx_t cx;
  px_engine_t *eng = mkengine(4, NULL);
  px_engine_client_t *c = mkclient(eng, &cx, col, 0, 0);
  px_status_info_t st;
  char id[32];
  int i, n = 400, cancelled = 0, ok = 0;
  for (i = 0; i < n; i++) {
    int rc;
    snprintf(id, sizeof id, "r%d", i);
    ASSERT_OK(submit(eng, c, mkjob(id, PX_PRIO_NORMAL,
                                   i % 3 ? "exit 0" : "sleep 1", NULL)));
    if (i % 5 == 4)
      px_sleep_ms(1); /* let some finish first */
    rc = px_engine_cancel(eng, c, id);
    ASSERT(rc == 0 || rc == PX_ENOENT);
  }
  wait_results(col, n);
  for (i = 0; i < col->nrecs; i++) {
    ASSERT(col->recs[i].status == PX_STATUS_OK ||
           col->recs[i].status == PX_STATUS_CANCELLED);
    if (col->recs[i].status == PX_STATUS_OK)
      ok++;
    else
      cancelled++;
  }
  ASSERT_EQ(ok + cancelled, n);
  ASSERT_EQ(col->nrecs, n);
  check_all(col);
  px_engine_status(eng, &st);
  ASSERT_UINT_EQ(st.counters[PX_STATUS_OK], (uint64_t)ok);
  ASSERT_UINT_EQ(st.counters[PX_STATUS_CANCELLED], (uint64_t)cancelled);
  px_engine_client_close(eng, c, 0);
  px_engine_free(eng);
  col_free(col);
  return 0;
}

TEST_IMPL(engine_race_scram_vs_start) {
  col_t *col = col_new();
  ctx_t cx;
  px_engine_t *eng = mkengine(3, NULL);
  px_engine_client_t *c = mkclient(eng, &cx, col, 0, 0);
  char id[32];
  int round, k, n = 0, i;
  for (round = 0; round < 200; round++) {
    for (k = 0; k < 4; k++) {
      snprintf(id, sizeof id, "s%d-%d", round, k);
      ASSERT_OK(submit(eng, c, mkjob(id, PX_PRIO_NORMAL,
                                     k % 2 ? "sleep 1" : "exit 0", NULL)));
      n++;
    }
    (void)px_engine_scram(eng);
    px_engine_resume(eng);
  }
  wait_results(col, n);
  ASSERT_EQ(col->nrecs, n);
  for (i = 0; i < col->nrecs; i++)
    ASSERT(col->recs[i].status == PX_STATUS_OK ||
           col->recs[i].status == PX_STATUS_ABORTED);
  check_all(col);
  px_engine_client_close(eng, c, 0);
  px_engine_free(eng);
  col_free(col);
  return 0;
}

TEST_IMPL(engine_race_stop) {
  int round;
  for (round = 0; round < 60; round++) {
    col_t *col = col_new();
    ctx_t cx, cy;
    px_engine_t *eng = mkengine(3, NULL);
    px_engine_client_t *c = mkclient(eng, &cx, col, 0, 0);
    px_engine_client_t *d = mkclient(eng, &cy, col, 1, 0);
    char id[32];
    int k, i;
    for (k = 0; k < 8; k++) {
      snprintf(id, sizeof id, "t%d", k);
      ASSERT_OK(submit(eng, k % 2 ? c : d,
                       mkjob(id, (px_priority_t)(k % PX_PRIO_COUNT),
                             k % 3 ? "exit 0" : "hang", NULL)));
    }
    if (round % 2)
      (void)px_engine_cancel(eng, c, "t1");
    px_engine_stop(eng);
    ASSERT_EQ(col->results, 8);
    for (i = 0; i < col->nrecs; i++)
      ASSERT(col->recs[i].status == PX_STATUS_OK ||
             col->recs[i].status == PX_STATUS_ABORTED ||
             col->recs[i].status == PX_STATUS_CANCELLED);
    check_all(col);
    px_engine_client_close(eng, c, 1);
    px_engine_free(eng); /* d never closed: free handles it */
    col_free(col);
  }
  return 0;
}

/* ---- the fake backend on its own ---- */

TEST_IMPL(fake_backend_contract) {
  const px_backend_ops_t *ops = &px_backend_fake;
  px_engine_job_t j = mkjob("f", PX_PRIO_NORMAL, "hang", NULL);
  px_sandbox_events_t ev = {NULL, NULL, NULL};
  px_sandbox_t *sb = NULL;
  px_outcome_t oc;
  void *st = NULL;
  ASSERT_OK(ops->open(NULL, &st));
  ASSERT_STR_EQ(ops->name, "fake");
  ASSERT(ops->enforcement_available(st) & PX_ENF(PX_ENF_WATCHDOG_POLL));
  /* kill before start: the job ends at once, killed. */
  ASSERT_OK(ops->prepare(st, &j.spec, &ev, &sb));
  ASSERT_OK(ops->kill(sb));
  ASSERT_OK(ops->kill(sb)); /* idempotent */
  ASSERT_OK(ops->start(sb));
  ASSERT_OK(ops->wait(sb, &oc));
  ASSERT_EQ(oc.killed, 1);
  ASSERT_EQ(oc.exited, 0);
  ASSERT_EQ(ops->wait(sb, &oc), PX_EINVAL); /* exactly once */
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
  j = mkjob("f", PX_PRIO_NORMAL, "exit", NULL);
  ASSERT_EQ(ops->prepare(st, &j.spec, &ev, &sb), PX_EINVAL);
  px_engine_job_clear(&j);
  j = mkjob("f", PX_PRIO_NORMAL, "stdin", "exit 4", "exit 5", NULL);
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
