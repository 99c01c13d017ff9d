/* metrics.c - the engine's counters and latency histograms (px_metrics.h).
 * Plain data: the engine serializes every call under its lock. */
#include "px/px_metrics.h"

const uint64_t px_metrics_bucket_ms[PX_METRICS_NBUCKETS] = {
    5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000};

void px_histogram_observe(px_histogram_t *h, uint64_t ms) {
  unsigned i = 0;
  while (i < PX_METRICS_NBUCKETS && ms > px_metrics_bucket_ms[i])
    i++;
  h->bucket[i]++;
  h->count++;
  h->sum_ms += ms;
}

void px_metrics_record_result(px_metrics_t *m, const px_result_t *r, int ran,
                              uint64_t queue_wait_ms) {
  if ((unsigned)r->status < PX_STATUS_COUNT_)
    m->results[r->status]++;
  if (r->status == PX_STATUS_KILLED && (unsigned)r->violation.limit < PX_METRICS_NLIMITS)
    m->kills[r->violation.limit]++;
  if (r->kb.present && r->kb.rolled_back) {
    m->kb_rollbacks++;
    if (r->kb.error)
      m->kb_rollback_failures++;
  }
  if (ran) {
    px_histogram_observe(&m->queue_wait, queue_wait_ms);
    px_histogram_observe(&m->run_wall, r->usage.wall_ms);
  }
}
