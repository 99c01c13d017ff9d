/* rollback.c - make the KB roots equal to a manifest, check that they
 * are, or report how they differ: one walk, three modes.
 *
 * DESIGN
 * Per directory (opened from its parent without following links):
 *   1. list what is there; every entry that is not in the manifest, or is
 *      there with another type, is removed as itself (a directory the job
 *      made is emptied the same way, depth first; a symlink, junction or
 *      reparse point is unlinked, never entered);
 *   2. for every manifest child: a missing directory is created and
 *      entered; a file is kept when its stat data match the manifest, else
 *      it is re-hashed: same content -> at most its mtime/permissions are
 *      set back through the open handle; other content, or a file with more
 *      than one hard link (the job linked it from elsewhere) -> replaced
 *      from the store: temp file in the same directory, flushed, renamed
 *      over the entry (which replaces the entry itself; nothing is ever
 *      written through an existing name).
 * Nothing outside the roots is touched: every call is relative to a
 * directory handle inside them. One entry that cannot be fixed does not
 * stop the walk: the first error is kept and everything else is still
 * restored. A job-made tree deeper than PX_KB_MAX_DEPTH is moved up to the
 * root under a temp name and removed from there (no recursion without
 * bound). VERIFY runs the same walk read-only and
 * re-hashes every file whose stat data differ from the manifest (every
 * restored file does: it is a new file).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_int.h"
#include "px/px_error.h"
#include "px/px_events.h"
#include "px/px_log.h"
#include "px/px_util.h"

typedef struct {
  char **v;
  size_t n, cap;
} deferred_t;

typedef struct {
  px_kb_t *kb;
  const px__kb_manifest_t *m;
  px__kb_walk_t *w;
  px_kbfs_dir_t *root;  /* borrowed: the root being walked */
  deferred_t deferred;  /* too-deep subtrees hoisted up to the root */
  int err;              /* first error; the walk goes on past it */
} ctx_t;

/* Actions: the plain word for diffs, "_kept" for a job that kept them. */
static const char *diff_action(const px__kb_walk_t *w, const char *what) {
  int kept = w->suffix && w->suffix[0];
  if (strcmp(what, "created") == 0)
    return kept ? "created_kept" : "created";
  if (strcmp(what, "deleted") == 0)
    return kept ? "deleted_kept" : "deleted";
  if (strcmp(what, "metadata") == 0)
    return kept ? "metadata_kept" : "metadata";
  if (strcmp(what, "link_changed") == 0)
    return kept ? "link_changed_kept" : "link_changed";
  return kept ? "modified_kept" : "modified";
}

/* Add a change (copies path; action is static) up to max_changes. */
static int note(px__kb_walk_t *w, const char *path, const char *action) {
  if (w->nchanges >= w->max_changes)
    return 0;
  if (px_array_reserve(&w->changes, &w->cap, w->nchanges + 1,
                       sizeof *w->changes, 16))
    return PX_ENOMEM;
  w->changes[w->nchanges].path = px_strdup(path);
  if (!w->changes[w->nchanges].path)
    return PX_ENOMEM;
  w->changes[w->nchanges].action = (char *)action;
  w->nchanges++;
  return 0;
}

/* VERIFY and DIFF: one difference. */
static int differ(ctx_t *c, const char *path, const char *what) {
  px__kb_walk_t *w = c->w;
  w->mismatches++;
  if (w->mode == PX__KB_DIFF)
    return note(w, path, diff_action(w, what));
  if (!w->first_error[0])
    snprintf(w->first_error, sizeof w->first_error, "%s: %s", path, what);
  return 0;
}

static int fail(ctx_t *c, const char *path, const char *what, int rc) {
  if (!c->w->first_error[0])
    snprintf(c->w->first_error, sizeof c->w->first_error, "%s: %s: %s", path,
             what, px_strerror(rc));
  PX_LOG(PX_LOG_ERROR, "kb: %s failed for an entry of the KB: %s", what,
         px_strerror(rc));
  return rc;
}

/* One entry failed: remember the first error and carry on with the others
 * (a hostile entry must not keep the rest of the KB from being restored).
 * Out of memory stops the walk. */
static int keep_going(ctx_t *c, int rc) {
  if (rc && !c->err)
    c->err = rc;
  return rc == PX_ENOMEM ? rc : 0;
}

/* A directory below the depth limit: move it up to the root under a temp
 * name and remove it from there later (no recursion, no fd per level
 * beyond the limit). */
static int hoist(ctx_t *c, px_kbfs_dir_t *dir, const char *name) {
  unsigned char r[8];
  char tmp[40];
  int rc = px_random_bytes(r, sizeof r);
  if (rc)
    return rc;
  snprintf(tmp, sizeof tmp, ".px-kb-tmp-h%02x%02x%02x%02x%02x%02x%02x%02x",
           r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
  if (px_array_reserve(&c->deferred.v, &c->deferred.cap, c->deferred.n + 1,
                       sizeof *c->deferred.v, 8))
    return PX_ENOMEM;
  rc = px_kbfs_move(dir, name, c->root, tmp);
  if (rc)
    return rc;
  c->deferred.v[c->deferred.n] = px_strdup(tmp);
  return c->deferred.v[c->deferred.n++] ? 0 : PX_ENOMEM;
}

static int remove_tree(ctx_t *c, px_kbfs_dir_t *dir, const char *name,
                       const px_kbfs_stat_t *st, unsigned depth) {
  px_kbfs_dir_t *sub = NULL;
  px__kb_dirlist_t d = {0};
  size_t i;
  int rc = 0;
  px__kb_crash_point();
  if (depth > PX_KB_MAX_DEPTH && st->type == PX_KBFS_DIR)
    return hoist(c, dir, name);
  if (st->type == PX_KBFS_DIR) {
    rc = px_kbfs_open_dir(dir, name, &sub);
    if (rc == PX_ELOOP || rc == PX_EINVAL)
      rc = 0; /* swapped for a link or file meanwhile: remove as itself */
    else if (rc == 0)
      rc = px__kb_dirlist(sub, 0, &d);
    for (i = 0; rc == 0 && i < d.n; i++)
      rc = remove_tree(c, sub, d.v[i].name, &d.v[i].st, depth + 1);
    px__kb_dirlist_free(&d);
    px_kbfs_close_dir(&sub);
  }
  if (rc == 0)
    rc = px_kbfs_remove(dir, name);
  if (rc == PX_ENOENT)
    rc = 0;
  if (rc == 0)
    c->w->files_removed++;
  return rc;
}

static int restore_file(ctx_t *c, px_kbfs_dir_t *dir, const char *name,
                        const px__kb_entry_t *e) {
  px_kb_t *kb = c->kb;
  px_kbfs_file_t *src = NULL, *tmp = NULL;
  unsigned char got[PX_SHA256_LEN];
  px_sha256_t s;
  uint64_t bytes = 0;
  int rc;
  px__kb_crash_point();
  rc = px__kb_object_open(kb, e->hash, &src);
  if (rc == 0)
    rc = px_kbfs_create_temp(dir, &tmp);
  px_sha256_init(&s);
  while (rc == 0) {
    size_t n = 0;
    rc = px_kbfs_read(src, kb->buf, PX_KB_BUF_SIZE, &n);
    if (rc || n == 0)
      break;
    px_sha256_update(&s, kb->buf, n);
    bytes += n;
    rc = px_kbfs_write(tmp, kb->buf, n);
  }
  px_sha256_final(&s, got);
  if (rc == 0 && (memcmp(got, e->hash, sizeof got) != 0 || bytes != e->size))
    rc = PX_EINTEGRITY; /* the store itself is damaged */
  if (rc == 0)
    rc = px_kbfs_set_meta(tmp, e->mtime_ns, e->perm);
  if (rc == 0)
    rc = px_kbfs_commit(&tmp, name);
  px_kbfs_abort(&tmp);
  px_kbfs_close(&src);
  if (rc)
    return fail(c, e->path, "restore", rc);
  c->w->files_restored++;
  c->w->bytes_restored += bytes;
  return note(c->w, e->path, "restored");
}

/* A file present where the manifest has a file. */
static int check_file(ctx_t *c, px_kbfs_dir_t *dir, const char *name,
                      const px__kb_entry_t *e, const px_kbfs_stat_t *lst) {
  px__kb_walk_t *w = c->w;
  px_kbfs_file_t *f = NULL;
  px_kbfs_stat_t st;
  unsigned char h[PX_SHA256_LEN];
  px_sha256_t s;
  int rc, same;
  /* Untouched, by the listing's stat alone - only when the listing knows
   * the file has one name. A write through another hard link updates
   * that link's directory entry only (NTFS), so a second name makes a
   * listing stale; and a Windows listing cannot count names (nlink 0). */
  if (px__kb_same_stat(e, lst) && lst->nlink == 1)
    return 0;
  rc = px_kbfs_open_read(dir, name, w->mode == PX__KB_FIX, &f, &st);
  if (rc == PX_ELOOP || rc == PX_EINVAL || rc == PX_ENOENT) {
    /* Swapped for something else since the listing. */
    if (w->mode != PX__KB_FIX)
      return differ(c, e->path, "modified");
    rc = px_kbfs_remove(dir, name);
    return rc && rc != PX_ENOENT ? fail(c, e->path, "remove", rc)
                                 : restore_file(c, dir, name, e);
  }
  if (rc)
    return fail(c, e->path, "open", rc);
  if (rc == 0 && st.nlink == 1 && px__kb_same_stat(e, &st)) {
    px_kbfs_close(&f); /* the handle's stat is the file's own: untouched */
    return 0;
  }
  if (st.nlink > 1 && !px__kb_same_stat(e, &st)) {
    /* Changed and linked from elsewhere: replace, never write through. */
    px_kbfs_close(&f);
    return w->mode == PX__KB_FIX ? restore_file(c, dir, name, e)
                                 : differ(c, e->path, "modified");
  }
  px_sha256_init(&s);
  for (;;) {
    size_t n = 0;
    rc = px_kbfs_read(f, c->kb->buf, PX_KB_BUF_SIZE, &n);
    if (rc || n == 0)
      break;
    px_sha256_update(&s, c->kb->buf, n);
    c->kb->stats.bytes_hashed += n;
  }
  px_sha256_final(&s, h);
  c->kb->stats.files_hashed++;
  same = rc == 0 && memcmp(h, e->hash, sizeof h) == 0 && st.size == e->size;
  if (rc == 0 && same && (st.mtime_ns != e->mtime_ns || st.perm != e->perm)) {
    if (w->mode == PX__KB_FIX) {
      rc = px_kbfs_set_meta(f, e->mtime_ns, e->perm);
      if (rc == 0)
        rc = note(w, e->path, "metadata_restored");
    } else {
      rc = differ(c, e->path, "metadata");
    }
  }
  px_kbfs_close(&f);
  if (rc)
    return fail(c, e->path, "check", rc);
  if (same)
    return 0;
  return w->mode == PX__KB_FIX ? restore_file(c, dir, name, e)
                               : differ(c, e->path, "modified");
}

static int link_matches(const px__kb_entry_t *e, const px_kbfs_stat_t *st) {
  return (st->type == PX_KBFS_LINK || st->type == PX_KBFS_OTHER) &&
         e->dev == st->dev && e->ino == st->ino;
}

static int compatible(const px__kb_entry_t *e, const px_kbfs_stat_t *st) {
  if (e->type == PX_KBFS_LINK)
    return link_matches(e, st);
  return e->type == st->type;
}

static int process_dir(ctx_t *c, px_kbfs_dir_t *dir, const char *rel,
                       unsigned depth);

/* Pass 1: whatever the manifest does not have (or has as another type). */
static int prune(ctx_t *c, px_kbfs_dir_t *dir, px__kb_dirlist_t *cur, px_buf_t *path,
                 const char *rel, unsigned depth) {
  size_t i;
  int rc = 0;
  for (i = 0; rc == 0 && i < cur->n; i++) {
    px__kb_dirent_t *x = &cur->v[i];
    long idx;
    px_buf_reset(path);
    if ((rc = px_buf_printf(path, "%s/%s", rel, x->name)) != 0)
      break;
    idx = px__kb_manifest_find(c->m, px_buf_cstr(path));
    if (idx >= 0 && compatible(&c->m->e[idx], &x->st))
      continue;
    x->gone = 1;
    if (strncmp(x->name, ".px-kb-tmp-", 11) == 0 && idx < 0) {
      /* Ours, left by an interrupted restore: removed without a note. */
      if (c->w->mode == PX__KB_FIX)
        rc = keep_going(c, remove_tree(c, dir, x->name, &x->st, depth));
      continue;
    }
    if (c->w->mode == PX__KB_FIX) {
      rc = remove_tree(c, dir, x->name, &x->st, depth);
      if (rc)
        rc = keep_going(c, fail(c, px_buf_cstr(path), "remove", rc));
      else
        rc = note(c->w, px_buf_cstr(path), "removed");
    } else if (c->w->mode == PX__KB_VERIFY) {
      rc = differ(c, px_buf_cstr(path),
                  idx < 0 ? "unexpected entry" : "wrong type");
    } else {
      rc = differ(c, px_buf_cstr(path),
                  idx < 0 ? "created"
                  : c->m->e[idx].type == PX_KBFS_LINK ? "link_changed"
                                                       : "modified");
    }
  }
  return rc;
}

static int child_dir(ctx_t *c, px_kbfs_dir_t *dir, const char *name,
                     const px__kb_entry_t *e, int present, unsigned depth) {
  px_kbfs_dir_t *sub = NULL;
  int rc = 0;
  if (!present) {
    if (c->w->mode != PX__KB_FIX)
      return differ(c, e->path, c->w->mode == PX__KB_DIFF ? "deleted"
                                                          : "missing");
    px__kb_crash_point();
    rc = px_kbfs_mkdir(dir, name);
    if (rc && rc != PX_EEXIST)
      return fail(c, e->path, "mkdir", rc);
    if ((rc = note(c->w, e->path, "restored")) != 0)
      return rc;
  }
  rc = px_kbfs_open_dir(dir, name, &sub);
  if (rc)
    return fail(c, e->path, "open directory", rc);
  rc = process_dir(c, sub, e->path, depth + 1);
  px_kbfs_close_dir(&sub);
  return rc;
}

/* Pass 2: every manifest child of `rel`. */
static int restore_children(ctx_t *c, px_kbfs_dir_t *dir, px__kb_dirlist_t *cur,
                            const char *rel, unsigned depth) {
  size_t b, end, j, rl = strlen(rel);
  int rc = 0;
  px__kb_manifest_below(c->m, rel, &b, &end);
  for (j = b; rc == 0 && j < end; j++) {
    const px__kb_entry_t *e = &c->m->e[j];
    const char *name = e->path + rl + 1;
    px__kb_dirent_t *x;
    if (strchr(name, '/'))
      continue; /* deeper: handled by the child directory */
    x = px__kb_dirlist_find(cur, name);
    if (e->type == PX_KBFS_DIR) {
      rc = child_dir(c, dir, name, e, x != NULL, depth);
    } else if (e->type == PX_KBFS_FILE) {
      if (x)
        rc = check_file(c, dir, name, e, &x->st);
      else if (c->w->mode == PX__KB_FIX)
        rc = restore_file(c, dir, name, e);
      else
        rc = differ(c, e->path,
                    c->w->mode == PX__KB_DIFF ? "deleted" : "missing");
    } else if (!x && c->w->mode == PX__KB_FIX) {
      /* A link recorded in the snapshot is gone: links are never
       * recreated (we do not store where they pointed). */
      rc = note(c->w, e->path, "link_not_restored");
    } else if (!x && c->w->mode == PX__KB_DIFF) {
      rc = differ(c, e->path, "link_changed");
    }
    rc = keep_going(c, rc);
  }
  return rc;
}

static int process_dir(ctx_t *c, px_kbfs_dir_t *dir, const char *rel,
                       unsigned depth) {
  px__kb_dirlist_t cur = {0};
  px_buf_t path = {0};
  int rc;
  if (depth > PX_KB_MAX_DEPTH)
    return fail(c, rel, "walk (too deep)", PX_ERANGE);
  rc = px__kb_dirlist(dir, 0, &cur); /* temp leftovers are removed */
  if (rc == 0)
    rc = prune(c, dir, &cur, &path, rel, depth);
  if (rc == 0)
    rc = restore_children(c, dir, &cur, rel, depth);
  px_buf_free(&path);
  px__kb_dirlist_free(&cur);
  return rc;
}

/* Remove what was hoisted to the root (which may hoist more). */
static int drain_deferred(ctx_t *c) {
  int rc = 0;
  while (c->deferred.n && rc == 0) {
    char *name = c->deferred.v[--c->deferred.n];
    px_kbfs_stat_t st;
    rc = px_kbfs_stat_at(c->root, name, &st);
    if (rc == 0)
      rc = remove_tree(c, c->root, name, &st, 0);
    rc = keep_going(c, rc == PX_ENOENT ? 0 : rc);
    free(name);
  }
  return rc;
}

int px__kb_walk(px_kb_t *kb, const px__kb_manifest_t *m, px__kb_walk_t *w) {
  ctx_t c;
  size_t i, k;
  int rc = 0;
  memset(&c, 0, sizeof c);
  c.kb = kb, c.m = m, c.w = w;
  for (i = 0; rc == 0 && i < m->nroots; i++) {
    px_kbfs_dir_t *dir = NULL;
    const px__kb_root_t *r = NULL;
    for (k = 0; k < kb->nroots; k++)
      if (strcmp(kb->roots[k].name, m->roots[i]) == 0)
        r = &kb->roots[k];
    if (!r) {
      rc = keep_going(&c, fail(&c, m->roots[i], "root not configured",
                               PX_ENOENT));
      continue;
    }
    rc = px_kbfs_open_root(r->path, &dir);
    if (rc) {
      rc = keep_going(&c, fail(&c, r->name, "open root", rc));
      continue;
    }
    /* What the rollback creates belongs to the KB owner, as the job's
     * own files do: the next kb:write job can change it. */
    px_kbfs_dir_set_owner(dir, kb->owner_uid, kb->owner_gid);
    c.root = dir;
    rc = keep_going(&c, process_dir(&c, dir, r->name, 0));
    if (rc == 0)
      rc = drain_deferred(&c);
    if (rc == 0 && w->mode == PX__KB_FIX)
      rc = keep_going(&c, px_kbfs_sync_dir(dir));
    c.root = NULL;
    px_kbfs_close_dir(&dir);
  }
  while (c.deferred.n)
    free(c.deferred.v[--c.deferred.n]);
  free(c.deferred.v);
  return rc ? rc : c.err;
}

void px_kb_changes_free(px_kb_change_t *c, size_t n) {
  size_t i;
  if (!c)
    return;
  for (i = 0; i < n; i++)
    free(c[i].path); /* action is static */
  free(c);
}

void px__kb_walk_free(px__kb_walk_t *w) {
  px_kb_changes_free(w->changes, w->nchanges);
  w->changes = NULL;
  w->nchanges = w->cap = 0;
}

static int take_changes(px__kb_walk_t *w, px_kb_result_t *out) {
  out->changes = w->changes;
  out->nchanges = w->nchanges;
  w->changes = NULL;
  w->nchanges = w->cap = 0;
  return 0;
}

static int rollback(px_kb_t *kb, const px__kb_manifest_t *m, int journal,
                    px_kb_result_t *out) {
  px__kb_walk_t fix, ver;
  char msg[512];
  int rc = 0, vrc;
  memset(&fix, 0, sizeof fix);
  memset(&ver, 0, sizeof ver);
  fix.mode = PX__KB_FIX;
  fix.max_changes = kb->max_changes;
  ver.mode = PX__KB_VERIFY;
  out->present = 1;
  free(out->snapshot);
  out->snapshot = px_strdup(m->id);
  if (journal)
    rc = px__kb_journal_write(kb, m->id); /* before the first change */
  if (rc == 0)
    rc = px__kb_walk(kb, m, &fix);
  kb->stats.rollbacks++;
  vrc = px__kb_walk(kb, m, &ver);
  out->rolled_back = rc == 0;
  out->files_restored = fix.files_restored;
  out->files_removed = fix.files_removed;
  out->bytes_restored = fix.bytes_restored;
  out->verified = rc == 0 && vrc == 0 && ver.mismatches == 0;
  take_changes(&fix, out);
  if (out->verified) {
    rc = px__kb_journal_remove(kb);
    PX_LOG_EVENT(PX_LOG_INFO, PX_EVENT_KB_ROLLBACK_DONE,
           "kb: rolled back to %s: %llu restored, %llu removed, verified",
           m->id, (unsigned long long)out->files_restored,
           (unsigned long long)out->files_removed);
  } else {
    snprintf(msg, sizeof msg, "rollback to %s %s: %s", m->id,
             rc ? "failed" : "not verified",
             fix.first_error[0]  ? fix.first_error
             : ver.first_error[0] ? ver.first_error
                                  : px_strerror(rc ? rc : vrc));
    PX_LOG_EVENT(PX_LOG_ERROR, PX_EVENT_KB_ROLLBACK_FAILED, "kb: %s", msg);
    free(out->error);
    out->error = px_strdup(msg);
    rc = PX_EINTEGRITY;
  }
  px__kb_walk_free(&fix);
  px__kb_walk_free(&ver);
  return rc;
}

/* The rollback runs in the KB's privilege scope (kb_fs.h). */
int px__kb_rollback(px_kb_t *kb, const px__kb_manifest_t *m, int journal,
                    px_kb_result_t *out) {
  int rc = px_os_priv_scope_enter();
  if (rc) {
    out->present = 1;
    free(out->error);
    out->error = px_strdup("backup/restore privileges unavailable");
    PX_LOG_EVENT(PX_LOG_ERROR, PX_EVENT_KB_ROLLBACK_FAILED,
                 "kb: rollback to %s impossible: backup/restore privileges "
                 "unavailable", m->id);
    return rc;
  }
  rc = rollback(kb, m, journal, out);
  px_os_priv_scope_leave();
  return rc;
}
