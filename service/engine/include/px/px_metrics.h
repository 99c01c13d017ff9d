/* px_metrics.h - the engine's counters for `phoenixctl metrics`: results
 * by status, kills by limit, knowledge-base rollbacks and two latency
 * histograms (time in the queue, run time). The engine records into one
 * px_metrics_t under its lock; px_engine_metrics copies it out. The
 * service sends a snapshot as the `metrics` message (docs/protocol.md);
 * phoenixctl turns it into the Prometheus text format. No listener. */
#ifndef PX_METRICS_H
#define PX_METRICS_H

#include "px/px_result.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Histogram bucket upper bounds in ms (the last, +Inf, is implicit). */
#define PX_METRICS_NBUCKETS 14
extern const uint64_t px_metrics_bucket_ms[PX_METRICS_NBUCKETS];

/* The number of px_limit_t values (PX_LIMIT_NONE .. PX_LIMIT_HANDLES). */
#define PX_METRICS_NLIMITS 10

typedef struct {
  uint64_t bucket[PX_METRICS_NBUCKETS + 1]; /* NOT cumulative; [N] is +Inf */
  uint64_t count;
  uint64_t sum_ms;
} px_histogram_t;

typedef struct {
  uint64_t results[PX_STATUS_COUNT_];   /* by px_status_t */
  uint64_t kills[PX_METRICS_NLIMITS];   /* killed results by px_limit_t */
  uint64_t kb_rollbacks;                /* results whose KB was rolled back */
  uint64_t kb_rollback_failures;        /* ... where the rollback reported an error */
  px_histogram_t queue_wait;            /* accepted -> started, ms */
  px_histogram_t run_wall;              /* usage.wall_ms of jobs that ran */
} px_metrics_t;

/* Add one observation (ms) to h. */
void px_histogram_observe(px_histogram_t *h, uint64_t ms);
/* Count one delivered result. queue_wait_ms is recorded when ran is 1 (the
 * job started). The caller serializes (the engine holds its lock). */
void px_metrics_record_result(px_metrics_t *m, const px_result_t *r, int ran,
                              uint64_t queue_wait_ms);

#ifdef __cplusplus
}
#endif
#endif /* PX_METRICS_H */
