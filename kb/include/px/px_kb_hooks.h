/* px_kb_hooks.h - how the engine calls the knowledge-base layer (kb/)
 * around a job, without depending on it.
 *
 *   snapshot(ctx, spec, &snap)   before start; 0 or PX_E* (a failure is a
 *                                job `error`: we never run a job we could
 *                                not roll back). *snap may be NULL when no
 *                                snapshot was needed (kb.snapshot=writers).
 *   finish(ctx, snap, rollback, out)
 *                                after the job ended (every process gone);
 *                                rollback=1 restores the KB to the snapshot
 *                                and verifies it; fills *out (owned by the
 *                                result afterwards); releases snap.
 * Both run on the engine's worker thread for that job.
 */
#ifndef PX_KB_HOOKS_H
#define PX_KB_HOOKS_H

#include "px/px_job.h"
#include "px/px_result.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  void *ctx; /* borrowed */
  int (*snapshot)(void *ctx, const px_job_spec_t *spec, void **snap);
  void (*finish)(void *ctx, void *snap, int rollback, px_kb_result_t *out);
} px_kb_hooks_t;

#ifdef __cplusplus
}
#endif
#endif /* PX_KB_HOOKS_H */
