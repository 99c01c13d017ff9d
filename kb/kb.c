/* kb.c - the KB object and its public API (px_kb.h).
 *
 * DESIGN
 * The KB is a few named roots plus a store (store.c) of content-addressed
 * objects and manifests (manifest.c). A snapshot (snapshot.c) walks the
 * roots and costs one stat per entry when nothing changed, because the
 * newest manifest stays in memory and its hashes are reused for entries
 * whose stat data match. Rollback (rollback.c) converges the roots to a
 * manifest without ever following a link and verifies the result; a
 * journal (journal.c) makes it crash-safe. Retention and gc (gc.c) bound
 * the store. hooks.c adapts all this to the engine (px_kb_hooks.h).
 * Every public call takes kb->mu: one operation at a time per KB, which
 * also makes the one streaming buffer kb->buf safe to share.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_int.h"
#include "px/px_error.h"
#include "px/px_events.h"
#include "px/px_log.h"
#include "px/px_util.h"

void px_kb_opts_default(px_kb_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->snapshot = PX_KB_SNAPSHOT_ALWAYS;
  o->keep = 50;
  o->max_changes = 32;
}

static int valid_root_name(const char *n) {
  size_t i;
  if (!n || !n[0] || strlen(n) > 32)
    return 0;
  for (i = 0; n[i]; i++)
    if (!((n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'z') ||
          (n[i] >= 'A' && n[i] <= 'Z') || n[i] == '_' || n[i] == '-'))
      return 0;
  return 1;
}

/* 1 when path `a` is `b` or below it (textual, separators '/' or '\\',
 * ASCII case-insensitive: Windows paths compare that way). */
static int inside(const char *a, const char *b) {
  size_t n = strlen(b);
  size_t i;
  while (n > 1 && (b[n - 1] == '/' || b[n - 1] == '\\'))
    n--;
  if (strlen(a) < n)
    return 0;
  for (i = 0; i < n; i++) {
    char x = a[i], y = b[i];
    if (x == '\\')
      x = '/';
    if (y == '\\')
      y = '/';
    if (x >= 'A' && x <= 'Z')
      x = (char)(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z')
      y = (char)(y - 'A' + 'a');
    if (x != y)
      return 0;
  }
  return a[n] == '\0' || a[n] == '/' || a[n] == '\\';
}

static int copy_opts(px_kb_t *kb, const px_kb_opts_t *o) {
  size_t i, j;
  if (!o->store || !o->store[0] || (o->nroots && !o->roots))
    return PX_EINVAL;
  kb->roots = calloc(o->nroots ? o->nroots : 1, sizeof *kb->roots);
  kb->store_path = px_strdup(o->store);
  if (!kb->roots || !kb->store_path)
    return PX_ENOMEM;
  for (i = 0; i < o->nroots; i++) {
    if (!valid_root_name(o->roots[i].name) || !o->roots[i].path)
      return PX_EINVAL;
    for (j = 0; j < i; j++)
      if (strcmp(o->roots[j].name, o->roots[i].name) == 0)
        return PX_EINVAL;
    kb->roots[i].name = px_strdup(o->roots[i].name);
    kb->roots[i].path = px_strdup(o->roots[i].path);
    kb->nroots = i + 1;
    if (!kb->roots[i].name || !kb->roots[i].path)
      return PX_ENOMEM;
  }
  for (i = 0; i < kb->nroots; i++) {
    if (inside(kb->store_path, kb->roots[i].path) ||
        inside(kb->roots[i].path, kb->store_path))
      return PX_EINVAL; /* a job must never reach the store */
    for (j = 0; j < i; j++)
      if (inside(kb->roots[i].path, kb->roots[j].path) ||
          inside(kb->roots[j].path, kb->roots[i].path))
        return PX_EINVAL; /* nested roots would be walked twice */
  }
  kb->mode = o->snapshot;
  kb->keep = o->keep ? o->keep : 50;
  kb->max_store_bytes = o->max_store_bytes;
  kb->max_changes = o->max_changes ? o->max_changes : 32;
  kb->owner_uid = o->owner_uid;
  kb->owner_gid = o->owner_uid ? o->owner_gid : 0;
  kb->job_max_bytes = o->job_max_bytes;
  kb->job_max_files = o->job_max_files;
  return 0;
}

/* Load the newest manifest (the stat cache of the next snapshot). */
static int load_last(px_kb_t *kb) {
  char **ids = NULL;
  size_t n = 0, i;
  int rc = px__kb_list_ids(kb, &ids, &n);
  if (rc)
    return rc;
  kb->nsnapshots = n;
  if (n) {
    px_strlcpy(kb->last_id, ids[n - 1], sizeof kb->last_id);
    if (px__kb_manifest_read(kb, ids[n - 1], &kb->last) != 0)
      PX_LOG(PX_LOG_WARN, "kb: newest manifest unreadable; the next "
                          "snapshot re-hashes everything");
  }
  for (i = 0; i < n; i++)
    free(ids[i]);
  free(ids);
  return 0;
}

/* The migration to a KB owner (docs/kb.md): every entry of the roots is
 * given to it and cleared of set-id bits, once per start, so that kb:write
 * jobs (mapped to the owner) can change what root used to own, and no
 * set-id file a job may have left under an older version survives. */
static int adopt(px_kb_t *kb) {
  px__kb_tally_t t;
  int rc;
  if (!kb->owner_uid)
    return 0;
  rc = px__kb_sweep(kb, &t);
  if (rc == 0 && t.fixed)
    PX_LOG(PX_LOG_WARN, "kb: %llu owner / set-id change(s) made to the "
                        "roots (owner %lu:%lu)", (unsigned long long)t.fixed,
           (unsigned long)kb->owner_uid, (unsigned long)kb->owner_gid);
  return rc;
}

int px_kb_open(const px_kb_opts_t *opts, px_kb_t **out) {
  px_kb_t *kb = calloc(1, sizeof *kb);
  size_t i;
  int rc = kb ? 0 : PX_ENOMEM;
  *out = NULL;
  if (rc == 0 && ((rc = px_mutex_init(&kb->mu)) != 0 ||
                   (rc = px_mutex_init(&kb->writer_mu)) != 0 ||
                   (rc = px_cond_init(&kb->writer_cv)) != 0)) {
    free(kb);
    return rc;
  }
  if (rc == 0)
    rc = copy_opts(kb, opts);
  if (rc == 0 && !(kb->buf = malloc(PX_KB_BUF_SIZE)))
    rc = PX_ENOMEM;
  for (i = 0; rc == 0 && i < kb->nroots; i++) {
    px_kbfs_dir_t *d = NULL;
    rc = px_kbfs_open_root(kb->roots[i].path, &d);
    if (rc)
      PX_LOG(PX_LOG_ERROR, "kb: root %s (%s) unusable: %s", kb->roots[i].name,
             kb->roots[i].path, px_strerror(rc));
    px_kbfs_close_dir(&d);
  }
  if (rc == 0)
    rc = adopt(kb);
  if (rc == 0)
    rc = px__kb_store_open(kb);
  if (rc == 0)
    rc = load_last(kb);
  if (rc == 0) {
    px_kb_gc_stats_t st; /* one pass to learn the store size */
    rc = px__kb_gc_locked(kb, &st);
  }
  if (rc) {
    if (kb)
      px_kb_close(&kb);
    return rc;
  }
  *out = kb;
  return 0;
}

void px_kb_close(px_kb_t **kbp) {
  px_kb_t *kb = kbp ? *kbp : NULL;
  size_t i;
  if (!kb)
    return;
  px_kbfs_close_dir(&kb->objects);
  px_kbfs_close_dir(&kb->snaps);
  px_kbfs_close_dir(&kb->store);
  px__kb_manifest_free(&kb->last);
  for (i = 0; i < kb->nroots; i++) {
    free(kb->roots[i].name);
    free(kb->roots[i].path);
  }
  free(kb->roots);
  free(kb->store_path);
  free(kb->pins);
  free(kb->buf);
  px_mutex_destroy(&kb->mu);
  px_cond_destroy(&kb->writer_cv);
  px_mutex_destroy(&kb->writer_mu);
  free(kb);
  *kbp = NULL;
}

int px_kb_recover(px_kb_t *kb, px_kb_result_t *out) {
  px_kb_result_t local;
  px__kb_manifest_t *m = NULL;
  char id[PX_KB_ID_MAX];
  int rc;
  memset(&local, 0, sizeof local);
  if (out)
    memset(out, 0, sizeof *out);
  px_mutex_lock(&kb->mu);
  rc = px__kb_journal_read(kb, id);
  if (rc == PX_ENOENT) {
    px_mutex_unlock(&kb->mu);
    return 0;
  }
  if (rc == 0) {
    PX_LOG(PX_LOG_WARN, "kb: completing a rollback to %s that was "
                        "interrupted", id);
    rc = px__kb_manifest_read(kb, id, &m);
  }
  if (rc == 0)
    rc = px__kb_rollback(kb, m, 0, &local);
  else
    PX_LOG(PX_LOG_ERROR, "kb: cannot recover the interrupted rollback: %s",
           px_strerror(rc));
  px__kb_manifest_free(&m);
  px_mutex_unlock(&kb->mu);
  if (out)
    *out = local;
  else
    px_kb_result_free(&local);
  return rc;
}

/* Take a snapshot and make it the newest. Called with mu held. */
static int snapshot_locked(px_kb_t *kb, char id[PX_KB_ID_MAX]) {
  px__kb_manifest_t *m = NULL;
  int rc = px__kb_snapshot_take(kb, &m);
  if (rc)
    return rc;
  if (!m) { /* unchanged: the newest snapshot is this state */
    if (id)
      px_strlcpy(id, kb->last_id, PX_KB_ID_MAX);
    return 0;
  }
  px__kb_manifest_free(&kb->last);
  kb->last = m;
  px_strlcpy(kb->last_id, m->id, sizeof kb->last_id);
  kb->nsnapshots++;
  if (id)
    px_strlcpy(id, m->id, PX_KB_ID_MAX);
  return 0;
}

int px__kb_snapshot_pinned(px_kb_t *kb, char id[PX_KB_ID_MAX]) {
  int rc;
  px_mutex_lock(&kb->mu);
  rc = snapshot_locked(kb, id);
  if (rc == 0)
    rc = px__kb_pin(kb, id);
  px_mutex_unlock(&kb->mu);
  return rc;
}

int px_kb_snapshot(px_kb_t *kb, char **id) {
  char tmp[PX_KB_ID_MAX];
  int rc;
  px_mutex_lock(&kb->mu);
  rc = snapshot_locked(kb, tmp);
  if (rc == 0)
    px__kb_gc_if_needed(kb);
  px_mutex_unlock(&kb->mu);
  if (rc == 0 && id && !(*id = px_strdup(tmp)))
    rc = PX_ENOMEM;
  return rc;
}

/* The manifest for `id` (NULL: newest). Called with mu held. */
static int get_manifest(px_kb_t *kb, const char *id, px__kb_manifest_t **m) {
  if (!id)
    id = kb->last_id[0] ? kb->last_id : NULL;
  if (!id)
    return PX_ENOENT;
  return px__kb_manifest_read(kb, id, m);
}

int px__kb_restore_locked(px_kb_t *kb, const char *id, px_kb_result_t *out) {
  px__kb_manifest_t *m = NULL;
  int rc = get_manifest(kb, id, &m);
  if (rc) {
    char msg[128];
    snprintf(msg, sizeof msg, "snapshot not readable: %s", px_strerror(rc));
    out->present = 1;
    free(out->error);
    out->error = px_strdup(msg);
    PX_LOG_EVENT(PX_LOG_ERROR, PX_EVENT_KB_ROLLBACK_FAILED,
                 "kb: rollback impossible: %s", msg);
    return rc;
  }
  rc = px__kb_rollback(kb, m, 1, out);
  px__kb_manifest_free(&m);
  return rc;
}

int px_kb_restore(px_kb_t *kb, const char *id, px_kb_result_t *out) {
  int rc;
  memset(out, 0, sizeof *out);
  px_mutex_lock(&kb->mu);
  rc = px__kb_restore_locked(kb, id, out);
  px_mutex_unlock(&kb->mu);
  return rc;
}

int px_kb_list(px_kb_t *kb, px_kb_snapinfo_t **out, size_t *n) {
  char **ids = NULL;
  size_t nids = 0, i;
  px_kb_snapinfo_t *v = NULL;
  int rc;
  *out = NULL;
  *n = 0;
  px_mutex_lock(&kb->mu);
  rc = px__kb_list_ids(kb, &ids, &nids);
  if (rc == 0 && nids && !(v = calloc(nids, sizeof *v)))
    rc = PX_ENOMEM;
  for (i = 0; rc == 0 && i < nids; i++) {
    px__kb_manifest_t *m = NULL;
    rc = px__kb_manifest_read(kb, ids[i], &m);
    if (rc)
      break;
    v[i].id = ids[i];
    ids[i] = NULL;
    v[i].created_ms = m->created_ms;
    v[i].entries = m->n;
    v[i].bytes = m->bytes;
    px__kb_manifest_free(&m);
  }
  px_mutex_unlock(&kb->mu);
  for (i = 0; i < nids; i++)
    free(ids[i]);
  free(ids);
  if (rc) {
    px_kb_list_free(v, nids);
    return rc;
  }
  *out = v;
  *n = nids;
  return 0;
}

void px_kb_list_free(px_kb_snapinfo_t *list, size_t n) {
  size_t i;
  if (!list)
    return;
  for (i = 0; i < n; i++)
    free(list[i].id);
  free(list);
}

int px__kb_diff_locked(px_kb_t *kb, const char *id, const char *suffix,
                       size_t max, px__kb_walk_t *w) {
  px__kb_manifest_t *m = NULL;
  int rc = get_manifest(kb, id, &m);
  memset(w, 0, sizeof *w);
  w->mode = PX__KB_DIFF;
  w->suffix = suffix;
  w->max_changes = max;
  if (rc == 0)
    rc = px__kb_walk(kb, m, w);
  px__kb_manifest_free(&m);
  return rc;
}

int px_kb_diff(px_kb_t *kb, const char *id, px_kb_change_t **out, size_t *n) {
  px__kb_walk_t w;
  int rc;
  px_mutex_lock(&kb->mu);
  rc = px__kb_diff_locked(kb, id, "", (size_t)-1, &w);
  px_mutex_unlock(&kb->mu);
  *out = NULL;
  *n = 0;
  if (rc) {
    px__kb_walk_free(&w);
    return rc;
  }
  *out = w.changes;
  *n = w.nchanges;
  return 0;
}

int px_kb_gc(px_kb_t *kb, px_kb_gc_stats_t *out) {
  int rc;
  px_mutex_lock(&kb->mu);
  rc = px__kb_gc_locked(kb, out);
  px_mutex_unlock(&kb->mu);
  return rc;
}

void px_kb_get_stats(px_kb_t *kb, px_kb_stats_t *out) {
  px_mutex_lock(&kb->mu);
  *out = kb->stats;
  px_mutex_unlock(&kb->mu);
}

void px_kb_result_free(px_kb_result_t *r) {
  if (!r)
    return;
  free(r->snapshot);
  px_kb_changes_free(r->changes, r->nchanges);
  free(r->error);
  memset(r, 0, sizeof *r);
}

int px__kb_pin(px_kb_t *kb, const char *id) {
  size_t i;
  px__kb_pin_t *np;
  for (i = 0; i < kb->npins; i++)
    if (strcmp(kb->pins[i].id, id) == 0) {
      kb->pins[i].refs++;
      return 0;
    }
  np = realloc(kb->pins, (kb->npins + 1) * sizeof *np);
  if (!np)
    return PX_ENOMEM;
  kb->pins = np;
  px_strlcpy(np[kb->npins].id, id, sizeof np[kb->npins].id);
  np[kb->npins].refs = 1;
  kb->npins++;
  return 0;
}

void px__kb_unpin(px_kb_t *kb, const char *id) {
  size_t i;
  for (i = 0; i < kb->npins; i++)
    if (strcmp(kb->pins[i].id, id) == 0) {
      if (--kb->pins[i].refs == 0)
        kb->pins[i] = kb->pins[--kb->npins];
      return;
    }
}
