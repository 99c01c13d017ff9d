/* sweep.c - make the KB roots safe on the host and count them.
 *
 * A kb:write job writes the KB through an idmapped mount (Linux): its
 * files land on the host's disk, where its view's nosuid means nothing.
 * The sweep walks every root, never following a link (kb_fs.h), and
 *   - clears every set-uid / set-gid bit (files and directories);
 *   - gives every entry that has another owner to the KB owner
 *     (kb->owner_uid:gid, px_kbfs_sanitize_*), except files with several
 *     links that are not the owner's (another name may be outside);
 *   - counts entries and file bytes the way a manifest does, for the
 *     per-job caps (hooks.c).
 * It runs at open (the migration of a KB that root owned: docs/kb.md) and
 * after every kb:write job, before its finish keeps or rolls back its
 * changes. The job is gone by then and writers take turns, so nothing
 * races the walk but the host's own users. Windows: the fs layer's
 * sanitize does nothing; the walk only counts.
 */
#include <string.h>

#include "kb_int.h"
#include "px/px_error.h"
#include "px/px_log.h"

static int sweep_dir(px_kbfs_dir_t *dir, unsigned depth, px__kb_tally_t *t);

static int sweep_entry(px_kbfs_dir_t *dir, const px__kb_dirent_t *de,
                       unsigned depth, px__kb_tally_t *t) {
  px_kbfs_dir_t *sub = NULL;
  int rc;
  t->entries++;
  if (de->st.type == PX_KBFS_FILE)
    t->bytes += de->st.size;
  if (de->st.type != PX_KBFS_DIR)
    return px_kbfs_sanitize_at(dir, de->name, &de->st, &t->fixed);
  rc = px_kbfs_open_dir(dir, de->name, &sub);
  if (rc == PX_ENOENT)
    return 0; /* gone meanwhile (a host user): nothing to fix */
  if (rc == 0)
    rc = px_kbfs_sanitize_dir(sub, &t->fixed);
  if (rc == 0)
    rc = sweep_dir(sub, depth + 1, t);
  px_kbfs_close_dir(&sub);
  return rc;
}

static int sweep_dir(px_kbfs_dir_t *dir, unsigned depth, px__kb_tally_t *t) {
  px__kb_dirlist_t d = {0};
  size_t i;
  int rc;
  if (depth > PX_KB_MAX_DEPTH)
    return PX_ERANGE;
  /* Temp files included: a job may name its files ".px-kb-tmp-*". */
  rc = px__kb_dirlist(dir, 0, &d);
  for (i = 0; rc == 0 && i < d.n; i++)
    rc = sweep_entry(dir, &d.v[i], depth, t);
  px__kb_dirlist_free(&d);
  return rc;
}

int px__kb_sweep(px_kb_t *kb, px__kb_tally_t *t) {
  size_t i;
  int rc = px_os_priv_scope_enter();
  memset(t, 0, sizeof *t);
  if (rc)
    return rc;
  for (i = 0; rc == 0 && i < kb->nroots; i++) {
    px_kbfs_dir_t *dir = NULL;
    rc = px_kbfs_open_root(kb->roots[i].path, &dir);
    if (rc == 0) {
      px_kbfs_dir_set_owner(dir, kb->owner_uid, kb->owner_gid);
      t->entries++; /* the root itself, as in a manifest */
      rc = px_kbfs_sanitize_dir(dir, &t->fixed);
    }
    if (rc == 0)
      rc = sweep_dir(dir, 0, t);
    if (rc)
      PX_LOG(PX_LOG_ERROR, "kb: cannot sweep root %s (%s): %s",
             kb->roots[i].name, kb->roots[i].path, px_strerror(rc));
    px_kbfs_close_dir(&dir);
  }
  px_os_priv_scope_leave();
  return rc;
}
