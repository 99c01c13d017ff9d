/* dirlist.c - one directory's entries, listed and sorted, for the two
 * walks of kb/: the snapshot (snapshot.c) and the converge walk
 * (rollback.c), and the stat comparison both use to trust a file's hash
 * without reading it. The entries and their stat data come from
 * px_kbfs_list (no links followed); nothing here opens or changes
 * anything.
 */
#include <stdlib.h>
#include <string.h>

#include "kb_int.h"
#include "px/px_error.h"
#include "px/px_util.h"

#define TEMP_PREFIX ".px-kb-tmp-" /* px_kbfs_create_temp's names */

typedef struct {
  px__kb_dirlist_t *l;
  int skip_temp;
} collect_t;

static int collect(void *ctx, const char *name, const px_kbfs_stat_t *st) {
  collect_t *c = ctx;
  px__kb_dirlist_t *l = c->l;
  if (c->skip_temp && st->type == PX_KBFS_FILE &&
      strncmp(name, TEMP_PREFIX, sizeof TEMP_PREFIX - 1) == 0)
    return 0;
  if (px_array_reserve(&l->v, &l->cap, l->n + 1, sizeof *l->v, 32))
    return PX_ENOMEM;
  l->v[l->n].name = px_strdup(name);
  if (!l->v[l->n].name)
    return PX_ENOMEM;
  l->v[l->n].st = *st;
  l->v[l->n].gone = 0;
  l->n++;
  return 0;
}

static int cmp_name(const void *a, const void *b) {
  return strcmp(((const px__kb_dirent_t *)a)->name,
                ((const px__kb_dirent_t *)b)->name);
}

int px__kb_dirlist(px_kbfs_dir_t *d, int skip_temp, px__kb_dirlist_t *out) {
  collect_t c;
  int rc;
  memset(out, 0, sizeof *out);
  c.l = out;
  c.skip_temp = skip_temp;
  rc = px_kbfs_list(d, collect, &c);
  if (rc != 0) {
    px__kb_dirlist_free(out);
    return rc;
  }
  if (out->n)
    qsort(out->v, out->n, sizeof *out->v, cmp_name);
  return 0;
}

px__kb_dirent_t *px__kb_dirlist_find(px__kb_dirlist_t *l, const char *name) {
  px__kb_dirent_t key, *e;
  memset(&key, 0, sizeof key);
  key.name = (char *)name;
  e = l->n ? bsearch(&key, l->v, l->n, sizeof *l->v, cmp_name) : NULL;
  return e && !e->gone ? e : NULL;
}

void px__kb_dirlist_free(px__kb_dirlist_t *l) {
  size_t i;
  for (i = 0; i < l->n; i++)
    free(l->v[i].name);
  free(l->v);
  memset(l, 0, sizeof *l);
}

int px__kb_same_stat(const px__kb_entry_t *e, const px_kbfs_stat_t *st) {
  return e->type == PX_KBFS_FILE && st->type == PX_KBFS_FILE &&
         e->size == st->size && e->mtime_ns == st->mtime_ns &&
         e->ctime_ns == st->ctime_ns && e->dev == st->dev &&
         e->ino == st->ino && e->perm == st->perm;
}
