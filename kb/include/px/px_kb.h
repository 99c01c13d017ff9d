/* px_kb.h - knowledge-base snapshots and verified rollback (kb/).
 *
 * A KB is a set of named directory roots ("mind", "soul"). A snapshot is a
 * manifest of every entry of every root (path, type, size, mtime, file
 * identity, SHA-256) over a content-addressed object store. Rollback puts
 * the roots back exactly as a manifest says, never following a link the
 * job planted, and proves it by re-hashing. See docs/kb.md.
 *
 * Thread safety: every call on one px_kb_t is serialised by its own lock.
 * Results and lists handed out are owned by the caller (free functions
 * below). All strings UTF-8.
 */
#ifndef PX_KB_H
#define PX_KB_H

#include <stddef.h>
#include <stdint.h>

#include "px/px_kb_hooks.h"
#include "px/px_result.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct px_kb_s px_kb_t;

typedef struct {
  const char *name; /* [A-Za-z0-9_-]{1,32}, unique: "mind" */
  const char *path; /* absolute host path of an existing directory */
} px_kb_root_t;

/* What config/ hands over from the `kb` section. Strings are borrowed;
 * px_kb_open copies what it keeps. */
typedef struct {
  const px_kb_root_t *roots;
  size_t nroots;
  const char *store;        /* snapshot store dir (created if missing) */
  px_kb_mode_t snapshot;    /* default ALWAYS */
  unsigned keep;            /* snapshots kept; 0 means the default, 50 */
  uint64_t max_store_bytes; /* object bytes budget; 0 = no budget */
  size_t max_changes;       /* changes listed in a result; 0 -> 32 */
  /* Linux, root daemon: the unprivileged owner of every KB entry on disk
   * (kb:write jobs' uid is mapped to it by the idmapped KB mount). At open
   * every entry is given to it and cleared of set-id bits; what a rollback
   * restores is created as it. 0 = leave owners alone (tests, a daemon
   * that is not root, Windows). */
  uint32_t owner_uid, owner_gid;
  /* What one kb:write job may add to the KB, checked after it ended and
   * before anything of it can be snapshotted: more and its changes are
   * rolled back, result.kb.limit "kb_size" / "kb_files". 0 = no cap. */
  uint64_t job_max_bytes; /* growth of the sum of file sizes, bytes */
  uint64_t job_max_files; /* growth of the number of entries */
} px_kb_opts_t;

/* Counters since open (tests and the benchmark read them). */
typedef struct {
  uint64_t files_hashed;   /* files read through SHA-256 */
  uint64_t bytes_hashed;
  uint64_t objects_stored; /* new objects written to the store */
  uint64_t bytes_stored;
  uint64_t objects_reused; /* hashed, but already in the store */
  uint64_t snapshots;      /* snapshots written */
  uint64_t snapshots_reused; /* KB unchanged since the newest: its id reused */
  uint64_t rollbacks;      /* rollbacks run (recovery included) */
} px_kb_stats_t;

typedef struct {
  uint64_t snapshots_removed;
  uint64_t objects_removed;
  uint64_t bytes_removed;
  uint64_t objects_kept;
  uint64_t bytes_kept;
} px_kb_gc_stats_t;

/* Fill o with the defaults (no roots, ALWAYS, keep 50, no budget). */
void px_kb_opts_default(px_kb_opts_t *o);

/* Open the KB: check the roots, create the store layout, load the newest
 * manifest. Does not recover: call px_kb_recover before accepting work.
 * *out is owned by the caller (px_kb_close). 0 or PX_E*. */
int px_kb_open(const px_kb_opts_t *opts, px_kb_t **out);
void px_kb_close(px_kb_t **kb); /* idempotent, accepts NULL */

/* Complete a rollback that a crash interrupted (the journal in the store),
 * verify it and remove the journal. 0 when there was nothing to do or the
 * rollback completed and verified; PX_EINTEGRITY when verification failed
 * (the journal stays, an ERROR is logged). out (may be NULL) gets the
 * details; free it with px_kb_result_free. */
int px_kb_recover(px_kb_t *kb, px_kb_result_t *out);

/* Take a snapshot now. *id (may be NULL) receives a copy of its id, owned
 * by the caller. When nothing changed since the newest snapshot (same
 * entries, sizes, times, identities, hashes) no manifest is written and
 * the newest snapshot's id is returned: it describes this state. */
int px_kb_snapshot(px_kb_t *kb, char **id);

/* Restore every root to snapshot `id` (NULL: the newest), journaled and
 * verified; the admin "restore" and the engine's rollback. Fills out
 * (owned by the caller). 0, or PX_EINTEGRITY when verification failed,
 * or another PX_E* (out->error says what). */
int px_kb_restore(px_kb_t *kb, const char *id, px_kb_result_t *out);

/* Snapshots, oldest first. *out owned by the caller (px_kb_list_free). */
int px_kb_list(px_kb_t *kb, px_kb_snapinfo_t **out, size_t *n);
void px_kb_list_free(px_kb_snapinfo_t *list, size_t n);

/* What changed in the roots since snapshot `id` (NULL: newest): every
 * path with action "created", "modified", "deleted", "link_changed".
 * Read-only. *out owned by the caller (px_kb_changes_free). */
int px_kb_diff(px_kb_t *kb, const char *id, px_kb_change_t **out, size_t *n);
void px_kb_changes_free(px_kb_change_t *c, size_t n);

/* Apply retention (keep N newest + byte budget; pinned snapshots of
 * running jobs are kept) and remove unreferenced objects and stale
 * temporary files. out may be NULL. */
int px_kb_gc(px_kb_t *kb, px_kb_gc_stats_t *out);

void px_kb_get_stats(px_kb_t *kb, px_kb_stats_t *out);

/* The hooks the engine calls around a job (px_kb_hooks.h); ctx is kb,
 * which must outlive every job. */
px_kb_hooks_t px_kb_hooks(px_kb_t *kb);

/* Free what a px_kb_result_t owns and zero it (idempotent). */
void px_kb_result_free(px_kb_result_t *r);

#ifdef __cplusplus
}
#endif
#endif /* PX_KB_H */
