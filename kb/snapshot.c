/* snapshot.c - walk the KB roots into a manifest.
 *
 * Directories are opened one component at a time without following links
 * (kb_fs.h). A regular file whose size, mtime, ctime and identity
 * (dev+ino / volume serial+file index) equal its entry in the previous
 * manifest keeps that entry's hash: an unchanged KB costs one stat per
 * entry and no reads. Anything else is hashed and stored if new. Links
 * and other special entries are recorded as "l" entries (never followed,
 * never stored) with a warning.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_int.h"
#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_util.h"

static void entry_from(px__kb_entry_t *e, const char *path,
                       const px_kbfs_stat_t *st) {
  memset(e, 0, sizeof *e);
  e->path = (char *)path;
  e->type = st->type == PX_KBFS_OTHER ? PX_KBFS_LINK : st->type;
  e->size = st->type == PX_KBFS_FILE ? st->size : 0;
  e->mtime_ns = st->mtime_ns;
  e->ctime_ns = st->ctime_ns;
  e->dev = st->dev;
  e->ino = st->ino;
  /* A set-id bit is never recorded, so never restored (docs/kb.md). */
  e->perm = st->perm & 01777;
}

static int walk_dir(px_kb_t *kb, px_kbfs_dir_t *dir, const char *rel,
                    unsigned depth, px__kb_manifest_t *out);

static int add_file(px_kb_t *kb, px_kbfs_dir_t *dir, const px__kb_dirent_t *de,
                    const char *path, px__kb_manifest_t *out) {
  px__kb_entry_t e;
  px_kbfs_stat_t st = de->st;
  long prev = kb->last ? px__kb_manifest_find(kb->last, path) : -1;
  int rc;
  /* The stat-only shortcut below trusts what it compares: a listing only
   * when it knows the file has one name (a write through another hard
   * link leaves this name's directory entry stale on NTFS; a Windows
   * listing cannot count names), else the file's own stat by handle. */
  if (prev >= 0 && st.nlink != 1 &&
      (rc = px_kbfs_stat_at(dir, de->name, &st)) != 0 && rc != PX_ENOENT)
    return rc;
  entry_from(&e, path, &st);
  if (prev >= 0 && st.type == PX_KBFS_FILE &&
      px__kb_same_stat(&kb->last->e[prev], &st)) {
    memcpy(e.hash, kb->last->e[prev].hash, sizeof e.hash); /* stat only */
  } else {
    rc = px__kb_store_file(kb, dir, de->name, e.hash, &st);
    if (rc == PX_ELOOP) {
      /* Listed as a file, opened as a link (swapped meanwhile, or Wine
       * showing a Unix symlink as its target): record it as a link. */
      PX_LOG(PX_LOG_WARN, "kb: %s is a link: recorded, never followed", path);
      e.type = PX_KBFS_LINK;
      e.size = 0;
      return px__kb_manifest_add(out, &e);
    }
    if (rc) {
      PX_LOG(PX_LOG_ERROR, "kb: cannot snapshot a file of %s: %s",
             px_kbfs_dir_path(dir), px_strerror(rc));
      return rc;
    }
    /* What was hashed is what the handle saw: record its stat, with the
     * listing's identity fields (Windows listings and handles agree). */
    {
      unsigned char h[PX_SHA256_LEN];
      memcpy(h, e.hash, sizeof h);
      entry_from(&e, path, &st);
      memcpy(e.hash, h, sizeof h);
    }
    if (st.type != PX_KBFS_FILE)
      return PX_EAGAIN;
  }
  return px__kb_manifest_add(out, &e);
}

static int add_entry(px_kb_t *kb, px_kbfs_dir_t *dir, const px__kb_dirent_t *de,
                     const char *path, unsigned depth,
                     px__kb_manifest_t *out) {
  px__kb_entry_t e;
  px_kbfs_dir_t *sub = NULL;
  int rc;
  switch (de->st.type) {
  case PX_KBFS_FILE:
    return add_file(kb, dir, de, path, out);
  case PX_KBFS_DIR:
    entry_from(&e, path, &de->st);
    rc = px__kb_manifest_add(out, &e);
    if (rc == 0)
      rc = px_kbfs_open_dir(dir, de->name, &sub);
    if (rc == 0)
      rc = walk_dir(kb, sub, path, depth + 1, out);
    px_kbfs_close_dir(&sub);
    return rc;
  default:
    PX_LOG(PX_LOG_WARN, "kb: %s is a link or special file: recorded, "
                        "never followed", path);
    entry_from(&e, path, &de->st);
    return px__kb_manifest_add(out, &e);
  }
}

static int walk_dir(px_kb_t *kb, px_kbfs_dir_t *dir, const char *rel,
                    unsigned depth, px__kb_manifest_t *out) {
  px__kb_dirlist_t d = {0};
  px_buf_t path = {0};
  size_t i;
  int rc;
  if (depth > PX_KB_MAX_DEPTH)
    return PX_ERANGE;
  rc = px__kb_dirlist(dir, 1, &d); /* our temp files are not content */
  for (i = 0; rc == 0 && i < d.n; i++) {
    px_buf_reset(&path);
    rc = px_buf_printf(&path, "%s/%s", rel, d.v[i].name);
    if (rc == 0)
      rc = add_entry(kb, dir, &d.v[i], px_buf_cstr(&path), depth, out);
  }
  px_buf_free(&path);
  px__kb_dirlist_free(&d);
  return rc;
}

static int snapshot_root(px_kb_t *kb, const px__kb_root_t *r,
                         px__kb_manifest_t *m) {
  px_kbfs_dir_t *dir = NULL;
  px_kbfs_stat_t st;
  px__kb_entry_t e;
  int rc = px_kbfs_open_root(r->path, &dir);
  if (rc) {
    PX_LOG(PX_LOG_ERROR, "kb: cannot open root %s (%s): %s", r->name,
           r->path, px_strerror(rc));
    return rc;
  }
  rc = px__kb_manifest_add_root(m, r->name);
  if (rc == 0)
    rc = px_kbfs_dir_stat(dir, &st);
  if (rc == 0) {
    entry_from(&e, r->name, &st);
    rc = px__kb_manifest_add(m, &e);
  }
  if (rc == 0)
    rc = walk_dir(kb, dir, r->name, 0, m);
  px_kbfs_close_dir(&dir);
  return rc;
}

/* 1 when m describes exactly the state of `last` (every field). */
static int same_state(const px__kb_manifest_t *m,
                      const px__kb_manifest_t *last) {
  size_t i;
  if (!last || last->n != m->n || last->nroots != m->nroots)
    return 0;
  for (i = 0; i < m->nroots; i++)
    if (strcmp(m->roots[i], last->roots[i]) != 0)
      return 0;
  for (i = 0; i < m->n; i++) {
    const px__kb_entry_t *a = &m->e[i], *b = &last->e[i];
    if (strcmp(a->path, b->path) != 0 || a->type != b->type ||
        a->size != b->size || a->mtime_ns != b->mtime_ns ||
        a->ctime_ns != b->ctime_ns || a->dev != b->dev || a->ino != b->ino ||
        a->perm != b->perm || memcmp(a->hash, b->hash, sizeof a->hash) != 0)
      return 0;
  }
  return 1;
}

static int snapshot_take(px_kb_t *kb, px__kb_manifest_t **out) {
  px__kb_manifest_t *m = px__kb_manifest_new();
  size_t i;
  int rc = m ? 0 : PX_ENOMEM;
  *out = NULL;
  for (i = 0; rc == 0 && i < kb->nroots; i++)
    rc = snapshot_root(kb, &kb->roots[i], m);
  if (rc == 0)
    px__kb_manifest_sort(m);
  if (rc == 0 && same_state(m, kb->last)) {
    /* Nothing changed since the newest snapshot, down to the inode and
     * ctime: that snapshot already describes this state. No new manifest
     * (and no flush) is written; *out stays NULL. */
    px__kb_manifest_free(&m);
    kb->stats.snapshots_reused++;
    return 0;
  }
  if (rc == 0) {
    px__kb_new_id(kb, m->id, &m->created_ms);
    rc = px__kb_manifest_write(kb, m);
  }
  if (rc) {
    px__kb_manifest_free(&m);
    return rc;
  }
  kb->stats.snapshots++;
  *out = m;
  return 0;
}

/* The snapshot runs in the KB's privilege scope (kb_fs.h). */
int px__kb_snapshot_take(px_kb_t *kb, px__kb_manifest_t **out) {
  int rc = px_os_priv_scope_enter();
  if (rc)
    return rc;
  rc = snapshot_take(kb, out);
  px_os_priv_scope_leave();
  return rc;
}
