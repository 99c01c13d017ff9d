/* gc.c - retention and garbage collection of the store.
 *
 * Retention keeps the `keep` newest snapshots, then drops the oldest more
 * while the objects exceed max_store_bytes (the newest snapshot always
 * stays). Snapshots pinned by running jobs and the one named by a pending
 * journal are never dropped. Collection then reads every remaining
 * manifest, marks the hashes they name and removes every other object and
 * every stale temporary file of the store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_int.h"
#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_util.h"

typedef struct {
  char **v;
  size_t n, cap;
} names_t;

static void names_free(names_t *s) {
  size_t i;
  for (i = 0; i < s->n; i++)
    free(s->v[i]);
  free(s->v);
  memset(s, 0, sizeof *s);
}

static int names_add(names_t *s, const char *name, size_t len) {
  if (px_array_reserve(&s->v, &s->cap, s->n + 1, sizeof *s->v, 64))
    return PX_ENOMEM;
  s->v[s->n] = px_strndup(name, len);
  if (!s->v[s->n])
    return PX_ENOMEM;
  s->n++;
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int collect_ids(void *ctx, const char *name, const px_kbfs_stat_t *st) {
  size_t len = strlen(name);
  if (st->type != PX_KBFS_FILE || len <= 9 ||
      strcmp(name + len - 9, ".manifest") != 0)
    return 0;
  return names_add(ctx, name, len - 9);
}

int px__kb_list_ids(px_kb_t *kb, char ***ids, size_t *n) {
  names_t s = {0};
  int rc = px_kbfs_list(kb->snaps, collect_ids, &s);
  if (rc) {
    names_free(&s);
    return rc;
  }
  if (s.n)
    qsort(s.v, s.n, sizeof *s.v, cmp_str);
  *ids = s.v;
  *n = s.n;
  return 0;
}

int px__kb_is_pinned(px_kb_t *kb, const char *id) {
  size_t i;
  for (i = 0; i < kb->npins; i++)
    if (strcmp(kb->pins[i].id, id) == 0)
      return 1;
  return 0;
}

/* Sorted hashes referenced by the remaining manifests. */
typedef struct {
  unsigned char (*h)[PX_SHA256_LEN];
  size_t n, cap;
} hashes_t;

static int cmp_hash(const void *a, const void *b) {
  return memcmp(a, b, PX_SHA256_LEN);
}

static int mark(px_kb_t *kb, const names_t *ids, hashes_t *hs) {
  size_t i, j;
  for (i = 0; i < ids->n; i++) {
    px__kb_manifest_t *m = NULL;
    int rc = px__kb_manifest_read(kb, ids->v[i], &m);
    if (rc)
      return rc; /* never collect on a partial view */
    for (j = 0; j < m->n; j++) {
      if (m->e[j].type != PX_KBFS_FILE)
        continue;
      if (px_array_reserve(&hs->h, &hs->cap, hs->n + 1, sizeof *hs->h, 1024)) {
        px__kb_manifest_free(&m);
        return PX_ENOMEM;
      }
      memcpy(hs->h[hs->n++], m->e[j].hash, PX_SHA256_LEN);
    }
    px__kb_manifest_free(&m);
  }
  if (hs->n)
    qsort(hs->h, hs->n, PX_SHA256_LEN, cmp_hash);
  return 0;
}

typedef struct {
  px_kb_t *kb;
  const hashes_t *hs;
  px_kbfs_dir_t *dir;
  const char *fan;
  px_kb_gc_stats_t *st;
  names_t doomed;
} sweep_t;

static int sweep_entry(void *ctx, const char *name, const px_kbfs_stat_t *st) {
  sweep_t *s = ctx;
  char hex[PX_SHA256_HEX];
  unsigned char h[PX_SHA256_LEN];
  int keep = 0;
  if (st->type == PX_KBFS_FILE && strlen(name) == 62) {
    snprintf(hex, sizeof hex, "%s%s", s->fan, name);
    keep = px_sha256_parse(hex, h) == 0 && s->hs->n &&
           bsearch(h, s->hs->h, s->hs->n, PX_SHA256_LEN, cmp_hash) != NULL;
  }
  if (keep) {
    s->st->objects_kept++;
    s->st->bytes_kept += st->size;
    return 0;
  }
  s->st->objects_removed++;
  s->st->bytes_removed += st->size;
  return names_add(&s->doomed, name, strlen(name));
}

static int sweep_fan(void *ctx, const char *name, const px_kbfs_stat_t *st) {
  sweep_t *s = ctx;
  size_t i;
  int rc;
  if (st->type != PX_KBFS_DIR || strlen(name) != 2)
    return 0;
  rc = px_kbfs_open_dir(s->kb->objects, name, &s->dir);
  if (rc)
    return rc;
  s->fan = name;
  rc = px_kbfs_list(s->dir, sweep_entry, s);
  for (i = 0; rc == 0 && i < s->doomed.n; i++) {
    rc = px_kbfs_remove(s->dir, s->doomed.v[i]);
    rc = rc == PX_ENOENT ? 0 : rc;
  }
  names_free(&s->doomed);
  px_kbfs_close_dir(&s->dir);
  return rc;
}

static int sweep(px_kb_t *kb, const hashes_t *hs, px_kb_gc_stats_t *st) {
  sweep_t s;
  memset(&s, 0, sizeof s);
  s.kb = kb, s.hs = hs, s.st = st;
  return px_kbfs_list(kb->objects, sweep_fan, &s);
}

static int collect_temps(void *ctx, const char *name,
                         const px_kbfs_stat_t *st) {
  if (st->type != PX_KBFS_FILE || strncmp(name, ".px-kb-tmp-", 11) != 0)
    return 0;
  return names_add(ctx, name, strlen(name));
}

/* Temporary files a crash left in a store directory (manifests, the
 * journal); objects/ leftovers are swept with the objects. */
static int remove_temps(px_kbfs_dir_t *d) {
  names_t t = {0};
  size_t i;
  int rc = px_kbfs_list(d, collect_temps, &t);
  for (i = 0; rc == 0 && i < t.n; i++) {
    rc = px_kbfs_remove(d, t.v[i]);
    rc = rc == PX_ENOENT ? 0 : rc;
  }
  names_free(&t);
  return rc;
}

/* Oldest first: drop snapshots beyond `keep` and over budget. */
static int retain(px_kb_t *kb, names_t *ids, int over_budget,
                  px_kb_gc_stats_t *st) {
  char pending[PX_KB_ID_MAX] = "";
  size_t i, n = ids->n, drop = n > kb->keep ? n - kb->keep : 0;
  names_t keep = {0};
  int rc = 0;
  if (over_budget && drop == 0 && n > 1)
    drop = 1; /* one more per round; the caller loops */
  px__kb_journal_read(kb, pending);
  for (i = 0; rc == 0 && i < n; i++) {
    char name[PX_KB_ID_MAX + 16];
    if (i >= drop || i + 1 == n || px__kb_is_pinned(kb, ids->v[i]) ||
        strcmp(ids->v[i], pending) == 0) {
      rc = names_add(&keep, ids->v[i], strlen(ids->v[i]));
      continue;
    }
    snprintf(name, sizeof name, "%s.manifest", ids->v[i]);
    rc = px_kbfs_remove(kb->snaps, name);
    rc = rc == PX_ENOENT ? 0 : rc;
    st->snapshots_removed++;
  }
  names_free(ids);
  *ids = keep;
  return rc;
}

static int gc_round(px_kb_t *kb, int over_budget, px_kb_gc_stats_t *st,
                    size_t *remaining) {
  names_t ids = {0};
  hashes_t hs = {NULL, 0, 0};
  int rc = px__kb_list_ids(kb, &ids.v, &ids.n);
  ids.cap = ids.n;
  if (rc == 0)
    rc = retain(kb, &ids, over_budget, st);
  if (rc == 0)
    rc = mark(kb, &ids, &hs);
  st->objects_kept = st->bytes_kept = 0;
  if (rc == 0)
    rc = sweep(kb, &hs, st);
  if (rc == 0)
    rc = remove_temps(kb->snaps);
  if (rc == 0)
    rc = remove_temps(kb->store);
  *remaining = ids.n;
  if (rc == 0) {
    kb->nsnapshots = ids.n;
    kb->store_bytes = st->bytes_kept;
    kb->unswept = 0;
  }
  free(hs.h);
  names_free(&ids);
  return rc;
}

int px__kb_gc_locked(px_kb_t *kb, px_kb_gc_stats_t *out) {
  px_kb_gc_stats_t st;
  size_t remaining = 0, before;
  int rc;
  memset(&st, 0, sizeof st);
  rc = gc_round(kb, 0, &st, &remaining);
  while (rc == 0 && kb->max_store_bytes && st.bytes_kept > kb->max_store_bytes &&
         remaining > 1) {
    before = remaining;
    rc = gc_round(kb, 1, &st, &remaining);
    if (remaining == before)
      break; /* everything left is pinned or the newest */
  }
  if (rc)
    PX_LOG(PX_LOG_ERROR, "kb: garbage collection failed: %s", px_strerror(rc));
  else if (st.objects_removed || st.snapshots_removed)
    PX_LOG(PX_LOG_INFO, "kb: gc removed %llu snapshots, %llu objects",
           (unsigned long long)st.snapshots_removed,
           (unsigned long long)st.objects_removed);
  if (out)
    *out = st;
  return rc;
}

/* After a job: over the byte budget -> full collection. Over `keep` ->
 * drop the oldest manifests now (cheap) and sweep objects only every
 * PX_KB_SWEEP_EVERY dropped snapshots: a sweep reads every manifest, too
 * much to pay after every job once the store is at its limit. */
#define PX_KB_SWEEP_EVERY 8
void px__kb_gc_if_needed(px_kb_t *kb) {
  names_t ids = {0};
  px_kb_gc_stats_t st;
  if (kb->max_store_bytes && kb->store_bytes > kb->max_store_bytes) {
    px__kb_gc_locked(kb, NULL);
    return;
  }
  if (kb->nsnapshots <= kb->keep)
    return;
  memset(&st, 0, sizeof st);
  if (px__kb_list_ids(kb, &ids.v, &ids.n) == 0) {
    ids.cap = ids.n;
    if (retain(kb, &ids, 0, &st) == 0)
      kb->nsnapshots = ids.n;
  }
  names_free(&ids);
  kb->unswept += (unsigned)st.snapshots_removed;
  if (kb->unswept >= PX_KB_SWEEP_EVERY)
    px__kb_gc_locked(kb, NULL);
}
