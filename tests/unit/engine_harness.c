/* engine_harness.c - shared helpers of the engine tests (see
 * engine_harness.h). */
#include "tests/unit/engine_harness.h"

#include <stdarg.h>

static rec_t *eh_rec_get(col_t *col, const char *id, int tag) {
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

void eh_on_event(void *p, const px_engine_event_t *ev) {
  ctx_t *cx = p;
  col_t *col = cx->col;
  rec_t *r;
  px_mutex_lock(&col->m);
  r = eh_rec_get(col, ev->id, cx->tag);
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
      r->out[i] = res->out[i] ? px_strndup(res->out[i], res->out_len[i]) : NULL;
    }
    break;
  }
  }
  px_cond_broadcast(&col->c);
  px_mutex_unlock(&col->m);
}

col_t *eh_col_new(void) {
  col_t *col = calloc(1, sizeof *col);
  ASSERT_NOT_NULL(col);
  col->recs = calloc(MAX_RECS, sizeof *col->recs);
  ASSERT_NOT_NULL(col->recs);
  ASSERT_OK(px_mutex_init(&col->m));
  ASSERT_OK(px_cond_init(&col->c));
  return col;
}

void eh_col_free(col_t *col) {
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

void eh_wait_results(col_t *col, int n) {
  px_mutex_lock(&col->m);
  while (col->results < n)
    px_cond_wait(&col->c, &col->m);
  px_mutex_unlock(&col->m);
}

void eh_wait_started(col_t *col, int n) {
  px_mutex_lock(&col->m);
  while (col->started < n)
    px_cond_wait(&col->c, &col->m);
  px_mutex_unlock(&col->m);
}

rec_t *eh_find(col_t *col, int tag, const char *id) {
  int i;
  for (i = col->nrecs - 1; i >= 0; i--)
    if (col->recs[i].client == tag && strcmp(col->recs[i].id, id) == 0)
      return &col->recs[i];
  px__test_fail(__FILE__, __LINE__, "no events for job %s", id);
  return NULL;
}

/* Events of one job are accepted? < started? < output* < result, with
 * exactly one result. */
void eh_check_sequence(const rec_t *r) {
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
      px__test_fail(__FILE__, __LINE__, "job %s: event %d before result", r->id,
                    r->types[i]);
    }
  }
}

void eh_check_all(col_t *col) {
  int i;
  px_mutex_lock(&col->m);
  for (i = 0; i < col->nrecs; i++)
    eh_check_sequence(&col->recs[i]);
  px_mutex_unlock(&col->m);
}

/* ---- jobs and engines ---- */

/* A fake job: argv = {"fake", steps..., NULL}. */
px_engine_job_t eh_job(const char *id, px_priority_t prio, ...) {
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

px_engine_t *eh_engine(unsigned workers, px_engine_opts_t *o) {
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

static px_engine_client_t *client_open(px_engine_t *eng, ctx_t *cx, col_t *col,
                                       int tag, px_engine_client_opts_t *co) {
  px_engine_client_t *c = NULL;
  cx->col = col;
  cx->tag = tag;
  co->on_event = eh_on_event;
  co->ctx = cx;
  ASSERT_OK(px_engine_client_open(eng, co, &c));
  return c;
}

px_engine_client_t *eh_client(px_engine_t *eng, ctx_t *cx, col_t *col, int tag,
                              unsigned cap) {
  px_engine_client_opts_t co;
  memset(&co, 0, sizeof co);
  co.max_concurrent = cap;
  co.name = "test";
  return client_open(eng, cx, col, tag, &co);
}

px_engine_client_t *eh_client_ident(px_engine_t *eng, ctx_t *cx, col_t *col,
                                    int tag, const char *identity) {
  px_engine_client_opts_t co;
  memset(&co, 0, sizeof co);
  co.name = identity;
  co.identity = identity;
  return client_open(eng, cx, col, tag, &co);
}

void eh_fix_open_cap(eh_fix_t *f, unsigned workers, px_engine_opts_t *o,
                     unsigned cap) {
  memset(f, 0, sizeof *f);
  f->col = eh_col_new();
  f->eng = eh_engine(workers, o);
  f->c = eh_client(f->eng, &f->cx, f->col, 0, cap);
}

void eh_fix_open(eh_fix_t *f, unsigned workers, px_engine_opts_t *o) {
  eh_fix_open_cap(f, workers, o, 0);
}

int eh_fix_submit(eh_fix_t *f, px_engine_job_t j) {
  return eh_submit(f->eng, f->c, j);
}

void eh_fix_client2(eh_fix_t *f) {
  f->c2 = eh_client(f->eng, &f->cx2, f->col, 1, 0);
}

void eh_fix_close(eh_fix_t *f) {
  if (f->c)
    px_engine_client_close(f->eng, f->c, 0);
  if (f->c2)
    px_engine_client_close(f->eng, f->c2, 0);
  px_engine_free(f->eng);
  eh_col_free(f->col);
  memset(f, 0, sizeof *f);
}

void eh_check_statuses(col_t *col, unsigned mask) {
  int i;
  for (i = 0; i < col->nrecs; i++)
    if (!(mask & PX_EH_ST(col->recs[i].status)))
      px__test_fail(__FILE__, __LINE__, "job %s: unexpected status %d",
                    col->recs[i].id, (int)col->recs[i].status);
}

int eh_submit(px_engine_t *eng, px_engine_client_t *c, px_engine_job_t j) {
  return px_engine_submit_take(eng, c, &j, NULL, NULL);
}

/* ---- KB hooks that record their calls ---- */

int eh_kb_snapshot(void *ctx, const px_job_spec_t *spec, void **snap) {
  kbrec_t *k = ctx;
  if (strncmp(spec->id, "snapfail", 8) == 0)
    return PX_EIO;
  px_mutex_lock(&k->m);
  k->snapshots++;
  px_mutex_unlock(&k->m);
  *snap = px_strdup(spec->id);
  return 0;
}

void eh_kb_finish(void *ctx, void *snap, int rollback, px_kb_result_t *out) {
  kbrec_t *k = ctx;
  px_mutex_lock(&k->m);
  k->finishes++;
  if (rollback && k->nrolled < 8)
    snprintf(k->rolled[k->nrolled++], sizeof k->rolled[0], "%s", (char *)snap);
  px_mutex_unlock(&k->m);
  out->present = 1;
  out->rolled_back = rollback;
  out->snapshot = snap; /* hand the string to the result */
}

int eh_rolled(kbrec_t *k, const char *id) {
  int i;
  for (i = 0; i < k->nrolled; i++)
    if (strcmp(k->rolled[i], id) == 0)
      return 1;
  return 0;
}

void eh_kb_opts(kbrec_t *k, px_engine_opts_t *o) {
  memset(k, 0, sizeof *k);
  ASSERT_OK(px_mutex_init(&k->m));
  px_engine_opts_default(o);
  o->kb.ctx = k;
  o->kb.snapshot = eh_kb_snapshot;
  o->kb.finish = eh_kb_finish;
}
