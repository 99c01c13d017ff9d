/* kb_int.h - what the files of kb/ share: the KB object, manifests,
 * the object store and the converge walk. Not a public header. */
#ifndef PX_KB_INT_H
#define PX_KB_INT_H

#include <stddef.h>
#include <stdint.h>

#include "kb_fs.h"
#include "px/px_sha256.h"
#include "px/px_kb.h"
#include "px/px_os.h"

#define PX_KB_ID_MAX 40
#define PX_KB_BUF_SIZE (1024 * 1024) /* the one streaming buffer */
#define PX_KB_MAX_DEPTH 256          /* deeper trees are refused */

/* One manifest entry. Paths are "root/dir/file" with '/' separators. */
typedef struct {
  char *path; /* owned */
  px_kbfs_type_t type; /* FILE, DIR or LINK */
  uint64_t size;
  int64_t mtime_ns;
  int64_t ctime_ns;
  uint64_t dev;
  uint64_t ino;
  uint32_t perm;
  unsigned char hash[PX_SHA256_LEN]; /* files only */
} px__kb_entry_t;

typedef struct {
  char id[PX_KB_ID_MAX];
  uint64_t created_ms;
  char **roots; /* owned names, in config order */
  size_t nroots;
  px__kb_entry_t *e; /* owned, sorted by path (strcmp) once complete */
  size_t n, cap;
  uint64_t bytes; /* sum of file sizes */
} px__kb_manifest_t;

typedef struct {
  char *name; /* owned */
  char *path; /* owned */
} px__kb_root_t;

typedef struct {
  char id[PX_KB_ID_MAX];
  unsigned refs;
} px__kb_pin_t;

struct px_kb_s {
  px_mutex_t mu; /* serialises every public call */
  /* One kb:write job at a time (hooks.c): a rollback restores the whole
   * KB, so two writers side by side could undo each other. */
  px_mutex_t writer_mu;
  px_cond_t writer_cv;
  int writer_busy;
  px__kb_root_t *roots; /* owned */
  size_t nroots;
  char *store_path; /* owned */
  px_kb_mode_t mode;
  unsigned keep;
  uint64_t max_store_bytes;
  size_t max_changes;
  uint32_t owner_uid, owner_gid; /* KB owner on disk, 0: leave (sweep.c) */
  uint64_t job_max_bytes, job_max_files; /* per-job growth caps, 0: none */
  px_kbfs_dir_t *store;   /* owned: the store directory */
  px_kbfs_dir_t *objects; /* owned: store/objects */
  px_kbfs_dir_t *snaps;   /* owned: store/snapshots */
  px__kb_manifest_t *last; /* owned: the newest manifest, or NULL */
  char last_id[PX_KB_ID_MAX];
  uint64_t nsnapshots;  /* manifests in the store */
  uint64_t store_bytes; /* object bytes in the store (estimate) */
  unsigned unswept;     /* snapshots dropped since the last object sweep */
  px__kb_pin_t *pins;   /* snapshots of running jobs: never collected */
  size_t npins;
  unsigned char *buf; /* owned, PX_KB_BUF_SIZE, used under mu */
  px_kb_stats_t stats;
};

/* --- manifest.c --- */
px__kb_manifest_t *px__kb_manifest_new(void);
void px__kb_manifest_free(px__kb_manifest_t **m);
int px__kb_manifest_add(px__kb_manifest_t *m, const px__kb_entry_t *e);
int px__kb_manifest_add_root(px__kb_manifest_t *m, const char *name);
void px__kb_manifest_sort(px__kb_manifest_t *m);
/* Index of `path`, or -1. */
long px__kb_manifest_find(const px__kb_manifest_t *m, const char *path);
/* [*begin, *end) = entries below dir `path` (any depth). */
void px__kb_manifest_below(const px__kb_manifest_t *m, const char *path,
                           size_t *begin, size_t *end);
/* Write store/snapshots/<id>.manifest atomically (temp, flush, rename). */
int px__kb_manifest_write(px_kb_t *kb, const px__kb_manifest_t *m);
/* Read snapshot `id`; *out owned by the caller. */
int px__kb_manifest_read(px_kb_t *kb, const char *id, px__kb_manifest_t **out);
/* A valid snapshot id (only [0-9A-Za-z.-], bounded). */
int px__kb_id_valid(const char *id);

/* --- store.c --- */
/* Make the store layout and open its directories. */
int px__kb_store_open(px_kb_t *kb);
/* Hash regular file `name` of d (streamed); st gets its fstat. */
int px__kb_hash_file(px_kb_t *kb, px_kbfs_dir_t *d, const char *name,
                     unsigned char hash[PX_SHA256_LEN], px_kbfs_stat_t *st);
/* Make sure the content of `name` is in the store; hash[] gets its hash. */
int px__kb_store_file(px_kb_t *kb, px_kbfs_dir_t *d, const char *name,
                      unsigned char hash[PX_SHA256_LEN], px_kbfs_stat_t *st);
/* Open object `hash` for reading. */
int px__kb_object_open(px_kb_t *kb, const unsigned char hash[PX_SHA256_LEN],
                       px_kbfs_file_t **f);
/* Write data atomically as `name` in d (manifests, the journal). */
int px__kb_write_small(px_kbfs_dir_t *d, const char *name, const void *data,
                       size_t len);
/* Read a small file whole (< 1 MiB); *out NUL-terminated, caller frees. */
int px__kb_read_small(px_kbfs_dir_t *d, const char *name, char **out,
                      size_t *len);
/* A new snapshot id, larger than kb->last_id. */
void px__kb_new_id(px_kb_t *kb, char id[PX_KB_ID_MAX], uint64_t *now_ms);

/* --- dirlist.c --- */
/* One directory entry as listed (no link followed). */
typedef struct {
  char *name; /* owned */
  px_kbfs_stat_t st;
  int gone; /* the caller's mark: rollback sets it for what it removed */
} px__kb_dirent_t;

typedef struct {
  px__kb_dirent_t *v; /* owned, sorted by name (strcmp) */
  size_t n, cap;
} px__kb_dirlist_t;

/* List d into *out (replaced), sorted by name. skip_temp leaves out our
 * own temp files (".px-kb-tmp-*", regular files): not KB content for a
 * snapshot, leftovers the rollback removes. 0 or PX_E*; on failure *out is
 * empty. Free with px__kb_dirlist_free. */
int px__kb_dirlist(px_kbfs_dir_t *d, int skip_temp, px__kb_dirlist_t *out);
/* The entry named `name` not marked gone, or NULL. */
px__kb_dirent_t *px__kb_dirlist_find(px__kb_dirlist_t *l, const char *name);
/* Free the entries; l is left empty (idempotent). */
void px__kb_dirlist_free(px__kb_dirlist_t *l);
/* 1 when e is a file and st a file with the same size, mtime, ctime,
 * identity (dev+ino) and permissions: its hash can be trusted unread. */
int px__kb_same_stat(const px__kb_entry_t *e, const px_kbfs_stat_t *st);

/* --- snapshot.c --- */
/* Walk the roots into a new manifest (reusing hashes of kb->last where
 * the stat data match) and store what is new. *out owned by the caller;
 * NULL (and 0) when the state equals kb->last exactly: no new snapshot. */
int px__kb_snapshot_take(px_kb_t *kb, px__kb_manifest_t **out);

/* --- rollback.c --- */
typedef enum {
  PX__KB_FIX = 0, /* make the roots equal to the manifest */
  PX__KB_VERIFY,  /* check them, re-hashing what does not match by stat */
  PX__KB_DIFF     /* report what differs, change nothing */
} px__kb_walk_mode_t;

typedef struct {
  px__kb_walk_mode_t mode;
  const char *suffix;     /* appended to DIFF actions ("_kept") or "" */
  size_t max_changes;     /* SIZE_MAX for the diff API */
  px_kb_change_t *changes; /* owned until handed out */
  size_t nchanges;
  size_t cap;
  uint64_t files_restored;
  uint64_t files_removed;
  uint64_t bytes_restored;
  uint64_t mismatches; /* VERIFY / DIFF: differences found */
  char first_error[256];
} px__kb_walk_t;

int px__kb_walk(px_kb_t *kb, const px__kb_manifest_t *m, px__kb_walk_t *w);
void px__kb_walk_free(px__kb_walk_t *w);
/* Journaled FIX then VERIFY; fills out. `journal`: write the journal first
 * (0 when recovering from an existing one). */
int px__kb_rollback(px_kb_t *kb, const px__kb_manifest_t *m, int journal,
                    px_kb_result_t *out);

/* --- journal.c --- */
int px__kb_journal_write(px_kb_t *kb, const char *id);
int px__kb_journal_remove(px_kb_t *kb);
/* 0 and id filled when a journal exists, PX_ENOENT when none. */
int px__kb_journal_read(px_kb_t *kb, char id[PX_KB_ID_MAX]);
/* A rollback step: the fault site "kb.rollback_step" (test-seam builds);
 * an armed fault ends the process with _Exit(86), as a crash would. */
void px__kb_crash_point(void);

/* --- gc.c --- */
int px__kb_gc_locked(px_kb_t *kb, px_kb_gc_stats_t *out);
/* Run retention/gc when the store is over its limits. */
void px__kb_gc_if_needed(px_kb_t *kb);
int px__kb_is_pinned(px_kb_t *kb, const char *id);
/* Snapshot ids in the store, sorted; caller frees each and the array. */
int px__kb_list_ids(px_kb_t *kb, char ***ids, size_t *n);

/* --- sweep.c --- */
typedef struct {
  uint64_t bytes;   /* sum of regular file sizes, as a manifest counts */
  uint64_t entries; /* roots and every entry below them */
  uint64_t fixed;   /* set-id bits cleared and owners changed */
} px__kb_tally_t;
/* Walk every root (no link followed): clear set-id bits, give entries of
 * another owner to kb->owner_uid:gid (px_kbfs_sanitize_*), and count. 0 or
 * PX_E* (PX_ERANGE for a tree deeper than PX_KB_MAX_DEPTH: what is below
 * was not seen). Called with mu held, or before the KB is shared. */
int px__kb_sweep(px_kb_t *kb, px__kb_tally_t *t);

/* --- kb.c --- */
/* Snapshot now and pin it for a running job (takes mu). */
int px__kb_snapshot_pinned(px_kb_t *kb, char id[PX_KB_ID_MAX]);
/* With mu held: journaled rollback to `id` (NULL: newest). */
int px__kb_restore_locked(px_kb_t *kb, const char *id, px_kb_result_t *out);
/* With mu held: DIFF walk against `id`; w owned by the caller. */
int px__kb_diff_locked(px_kb_t *kb, const char *id, const char *suffix,
                       size_t max, px__kb_walk_t *w);
int px__kb_pin(px_kb_t *kb, const char *id);
void px__kb_unpin(px_kb_t *kb, const char *id);

#endif /* PX_KB_INT_H */
