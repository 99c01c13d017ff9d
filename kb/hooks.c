/* hooks.c - the KB as the engine sees it (px_kb_hooks.h).
 *
 * snapshot: before a job. Mode "always" snapshots every job; "writers"
 *   only jobs holding kb:write (others see the KB read-only or not at
 *   all, so there is nothing to undo). The snapshot is pinned so retention
 *   cannot drop it while the job runs. A failure is returned: the engine
 *   then does not run the job (we never run a job we could not undo).
 * A kb:write job's roots are swept before its snapshot and again first
 *   thing in its finish (sweep.c: set-id bits cleared, owners fixed,
 *   counted).
 * finish: after every process of the job is gone. After the sweep,
 *   a job that added more than kb.job_max_bytes / job_max_files, or whose
 *   roots cannot be swept, is rolled back whatever was asked (the result
 *   says why: limit "kb_size" / "kb_files", or error), so nothing beyond
 *   the caps ever reaches a snapshot. rollback=1 restores and verifies;
 *   rollback=0 keeps the job's changes and lists them as "*_kept" (the
 *   snapshot stays for a manual restore). Then unpin and apply retention.
 */
#include <stdlib.h>
#include <string.h>

#include "kb_int.h"
#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_util.h"

typedef struct {
  char id[PX_KB_ID_MAX];
  int writer; /* the job holds kb:write (and the writer slot) */
  uint64_t bytes, entries; /* what the sweep before it counted */
} snap_t;

/* kb:write jobs run one at a time: wait for the slot (on the job's worker
 * thread, before its snapshot) and give it back in finish. */
static void writer_enter(px_kb_t *kb) {
  px_mutex_lock(&kb->writer_mu);
  while (kb->writer_busy)
    px_cond_wait(&kb->writer_cv, &kb->writer_mu);
  kb->writer_busy = 1;
  px_mutex_unlock(&kb->writer_mu);
}

static void writer_leave(px_kb_t *kb) {
  px_mutex_lock(&kb->writer_mu);
  kb->writer_busy = 0;
  px_cond_signal(&kb->writer_cv);
  px_mutex_unlock(&kb->writer_mu);
}

/* Before a writer's snapshot: entries the host made since the last sweep
 * (root's, say) are given to the KB owner, so the job can change them
 * (a foreign owner is unmapped in its view: it could not even remove
 * them), and the roots are counted for the growth caps. */
static int sweep_before(px_kb_t *kb, snap_t *s) {
  px__kb_tally_t t;
  int rc;
  px_mutex_lock(&kb->mu);
  rc = px__kb_sweep(kb, &t);
  px_mutex_unlock(&kb->mu);
  s->bytes = t.bytes;
  s->entries = t.entries;
  return rc;
}

static int hook_snapshot(void *ctx, const px_job_spec_t *spec, void **out) {
  px_kb_t *kb = ctx;
  snap_t *s;
  int rc;
  *out = NULL;
  if (kb->nroots == 0)
    return 0;
  if (kb->mode == PX_KB_SNAPSHOT_WRITERS && !(spec->caps & PX_CAP_KB_WRITE))
    return 0;
  s = calloc(1, sizeof *s);
  if (!s)
    return PX_ENOMEM;
  s->writer = (spec->caps & PX_CAP_KB_WRITE) != 0;
  if (s->writer)
    writer_enter(kb);
  rc = s->writer ? sweep_before(kb, s) : 0;
  if (rc == 0)
    rc = px__kb_snapshot_pinned(kb, s->id);
  if (rc) {
    if (s->writer)
      writer_leave(kb);
    PX_LOG(PX_LOG_ERROR, "kb: snapshot before a job failed: %s",
           px_strerror(rc));
    free(s);
    return rc;
  }
  *out = s;
  return 0;
}

static void keep_changes(px_kb_t *kb, const snap_t *s, px_kb_result_t *out) {
  px__kb_walk_t w;
  int rc = px__kb_diff_locked(kb, s->id, "_kept", kb->max_changes, &w);
  if (rc) {
    PX_LOG(PX_LOG_WARN, "kb: cannot list what the job changed: %s",
           px_strerror(rc));
  } else {
    out->changes = w.changes;
    out->nchanges = w.nchanges;
    w.changes = NULL;
    w.nchanges = 0;
  }
  px__kb_walk_free(&w);
}

static char *growth_error(const char *what, uint64_t before, uint64_t after,
                          uint64_t cap) {
  char msg[200];
  px_snprintf(msg, sizeof msg,
              "the job grew the knowledge base by %llu %s (from %llu to "
              "%llu), over kb.job_max_%s %llu: its changes were rolled back",
              (unsigned long long)(after - before), what,
              (unsigned long long)before, (unsigned long long)after,
              what, (unsigned long long)cap);
  return px_strdup(msg);
}

/* After a kb:write job, with mu held: sweep its roots and check the caps.
 * 1 when its changes must be rolled back (out->limit or out->error says
 * why), else 0. */
static int check_writer(px_kb_t *kb, const snap_t *s, px_kb_result_t *out) {
  px__kb_tally_t t;
  int rc = px__kb_sweep(kb, &t);
  if (rc) {
    char msg[160];
    px_snprintf(msg, sizeof msg, "the knowledge base could not be checked "
                "after the job (%s): its changes were rolled back",
                px_strerror(rc));
    out->error = px_strdup(msg);
    return 1;
  }
  if (t.fixed)
    PX_LOG(PX_LOG_WARN, "kb: the job left %llu set-id bit(s) or foreign "
                        "owner(s): cleared", (unsigned long long)t.fixed);
  if (kb->job_max_bytes && t.bytes > s->bytes &&
      t.bytes - s->bytes > kb->job_max_bytes) {
    out->limit = "kb_size";
    out->error = growth_error("bytes", s->bytes, t.bytes, kb->job_max_bytes);
    return 1;
  }
  if (kb->job_max_files && t.entries > s->entries &&
      t.entries - s->entries > kb->job_max_files) {
    out->limit = "kb_files";
    out->error = growth_error("files", s->entries, t.entries,
                              kb->job_max_files);
    return 1;
  }
  return 0;
}

static void hook_finish(void *ctx, void *snap, int rollback,
                        px_kb_result_t *out) {
  px_kb_t *kb = ctx;
  snap_t *s = snap;
  memset(out, 0, sizeof *out);
  if (!s)
    return; /* no snapshot: "kb": null */
  px_mutex_lock(&kb->mu);
  out->present = 1;
  out->snapshot = px_strdup(s->id);
  if (s->writer && check_writer(kb, s, out))
    rollback = 1;
  /* A job that could not write the KB changed nothing in it: restoring
   * its snapshot could only undo a writer that ran beside it. */
  if (rollback && s->writer)
    px__kb_restore_locked(kb, s->id, out); /* logs and fills out->error */
  else
    keep_changes(kb, s, out);
  px__kb_unpin(kb, s->id);
  px__kb_gc_if_needed(kb);
  px_mutex_unlock(&kb->mu);
  if (s->writer)
    writer_leave(kb);
  free(s);
}

px_kb_hooks_t px_kb_hooks(px_kb_t *kb) {
  px_kb_hooks_t h;
  h.ctx = kb;
  h.snapshot = hook_snapshot;
  h.finish = hook_finish;
  return h;
}
