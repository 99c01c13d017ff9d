/* test_metrics.c - the engine's metrics (px_metrics.h): histogram buckets,
 * and what a set of jobs on the fake backend records. */
#include "tests/unit/engine_harness.h"
#include "task.h"

#include "px/px_metrics.h"

TEST_IMPL(metrics_histogram_buckets) {
  px_histogram_t h;
  uint64_t total = 0;
  unsigned i;
  memset(&h, 0, sizeof h);
  px_histogram_observe(&h, 0);      /* <= 5 */
  px_histogram_observe(&h, 5);      /* <= 5: bounds are inclusive */
  px_histogram_observe(&h, 6);      /* <= 10 */
  px_histogram_observe(&h, 300000); /* the last bound */
  px_histogram_observe(&h, 300001); /* +Inf */
  ASSERT_UINT_EQ(h.bucket[0], 2);
  ASSERT_UINT_EQ(h.bucket[1], 1);
  ASSERT_UINT_EQ(h.bucket[PX_METRICS_NBUCKETS - 1], 1);
  ASSERT_UINT_EQ(h.bucket[PX_METRICS_NBUCKETS], 1);
  ASSERT_UINT_EQ(h.count, 5);
  ASSERT_UINT_EQ(h.sum_ms, 600012);
  for (i = 0; i <= PX_METRICS_NBUCKETS; i++)
    total += h.bucket[i];
  ASSERT_UINT_EQ(total, h.count);
  for (i = 1; i < PX_METRICS_NBUCKETS; i++)
    ASSERT_UINT_GE(px_metrics_bucket_ms[i], px_metrics_bucket_ms[i - 1] + 1);
  return 0;
}

TEST_IMPL(engine_metrics_counts) {
  col_t *col = eh_col_new();
  ctx_t cx;
  px_engine_t *eng = eh_engine(4, NULL);
  px_engine_client_t *c = eh_client(eng, &cx, col, 0, 0);
  px_engine_job_t j;
  px_metrics_t m;
  ASSERT_OK(eh_submit(eng, c, eh_job("ok", PX_PRIO_NORMAL, "exit 0", (const char *)NULL)));
  ASSERT_OK(eh_submit(eng, c, eh_job("nz", PX_PRIO_NORMAL, "exit 3", (const char *)NULL)));
  ASSERT_OK(eh_submit(eng, c, eh_job("mem", PX_PRIO_NORMAL, "hog-memory", (const char *)NULL)));
  j = eh_job("wall", PX_PRIO_NORMAL, "sleep 100000", (const char *)NULL);
  j.spec.limits.wall_ms = 30;
  ASSERT_OK(eh_submit(eng, c, j));
  ASSERT_OK(eh_submit(eng, c, eh_job("toolong", PX_PRIO_NORMAL, "argv-too-long", (const char *)NULL)));
  eh_wait_results(col, 5);
  px_engine_metrics(eng, &m);
  ASSERT_UINT_EQ(m.results[PX_STATUS_OK], 1);
  ASSERT_UINT_EQ(m.results[PX_STATUS_NONZERO_EXIT], 1);
  ASSERT_UINT_EQ(m.results[PX_STATUS_KILLED], 2);
  ASSERT_UINT_EQ(m.results[PX_STATUS_REJECTED], 1);
  ASSERT_UINT_EQ(m.kills[PX_LIMIT_MEMORY], 1);
  ASSERT_UINT_EQ(m.kills[PX_LIMIT_WALL], 1);
  ASSERT_UINT_EQ(m.kills[PX_LIMIT_CPU], 0);
  /* The refused job never started: only the four that ran are timed. */
  ASSERT_UINT_EQ(m.run_wall.count, 4);
  ASSERT_UINT_EQ(m.queue_wait.count, 4);
  ASSERT_UINT_GE(m.run_wall.sum_ms, 30); /* the wall-time kill ran >= 30 ms */
  ASSERT_UINT_EQ(m.kb_rollbacks, 0);
  px_engine_client_close(eng, c, 0);
  px_engine_stop(eng);
  px_engine_free(eng);
  eh_col_free(col);
  return 0;
}
