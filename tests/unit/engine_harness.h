/* engine_harness.h - what the engine tests share: an event collector
 * standing in for a transport, fake-backend jobs, the collector + engine +
 * client fixture most tests open, KB hooks that record their calls. */
#ifndef PX_TEST_ENGINE_HARNESS_H
#define PX_TEST_ENGINE_HARNESS_H

#include "task.h"

#include "px/px_engine.h"
#include "px/px_error.h"
#include "px/px_os.h"
#include "px/px_util.h"

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

typedef struct {
  px_mutex_t m;
  int snapshots, finishes, rollbacks;
  char rolled[8][PX_JOB_ID_MAX + 1];
  int nrolled;
} kbrec_t;

/* The collector's on_event (ctx: a ctx_t). */
void eh_on_event(void *p, const px_engine_event_t *ev);
col_t *eh_col_new(void);
void eh_col_free(col_t *col);
/* Block until at least n results / started events were seen (no time
 * limit: the runner's timeout catches a hang). */
void eh_wait_results(col_t *col, int n);
void eh_wait_started(col_t *col, int n);
/* The latest record of job id of client tag (fails the test if none). */
rec_t *eh_find(col_t *col, int tag, const char *id);
/* accepted? < started? < output* < result, exactly one result. */
void eh_check_sequence(const rec_t *r);
void eh_check_all(col_t *col);
/* A fake job: argv = {"fake", steps...}; the steps end with NULL. */
px_engine_job_t eh_job(const char *id, px_priority_t prio, ...);
/* An engine over the fake backend (o may be NULL: defaults). */
px_engine_t *eh_engine(unsigned workers, px_engine_opts_t *o);
px_engine_client_t *eh_client(px_engine_t *eng, ctx_t *cx, col_t *col, int tag,
                              unsigned cap);
/* A client named after identity, counted against the identity's caps. */
px_engine_client_t *eh_client_ident(px_engine_t *eng, ctx_t *cx, col_t *col,
                                    int tag, const char *identity);
int eh_submit(px_engine_t *eng, px_engine_client_t *c, px_engine_job_t j);
/* KB hooks (ctx: a kbrec_t); snapshot fails for ids "snapfail*". */
int eh_kb_snapshot(void *ctx, const px_job_spec_t *spec, void **snap);
void eh_kb_finish(void *ctx, void *snap, int rollback, px_kb_result_t *out);
int eh_rolled(kbrec_t *k, const char *id);
/* Default options with k's recording hooks (k zeroed, its mutex made). */
void eh_kb_opts(kbrec_t *k, px_engine_opts_t *o);

/* ---- the fixture: one collector, one engine, client tag 0 ---- */

typedef struct {
  col_t *col; /* owned */
  ctx_t cx;
  px_engine_t *eng;      /* owned */
  px_engine_client_t *c; /* tag 0, no cap; NULL: not closed by eh_fix_close */
  ctx_t cx2;
  px_engine_client_t *c2; /* eh_fix_client2's, tag 1; NULL: none or closed */
} eh_fix_t;

/* A new collector, an engine of workers (o may be NULL: defaults) and
 * client tag 0 without a cap. */
void eh_fix_open(eh_fix_t *f, unsigned workers, px_engine_opts_t *o);
/* The same with client tag 0 capped at cap running jobs. */
void eh_fix_open_cap(eh_fix_t *f, unsigned workers, px_engine_opts_t *o,
                     unsigned cap);
/* eh_submit through client c. */
int eh_fix_submit(eh_fix_t *f, px_engine_job_t j);
/* A second client, c2: tag 1, no cap. */
void eh_fix_client2(eh_fix_t *f);
/* Close clients c and c2 (not cancelling), free the engine, then the
 * collector. */
void eh_fix_close(eh_fix_t *f);
/* Every job's status is one of the mask's, bits PX_EH_ST(status). */
#define PX_EH_ST(s) (1u << (s))
void eh_check_statuses(col_t *col, unsigned mask);

#endif /* PX_TEST_ENGINE_HARNESS_H */
