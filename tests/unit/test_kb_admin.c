/* test_kb_admin.c - the library API behind `phoenixctl kb`: list, diff,
 * restore, gc; retention by count and by bytes; options. */
#include "task.h"
#include "tests/unit/test_kb_util.h"

#include "px/px_error.h"
#include "px/px_util.h"

static int has(px_kb_change_t *c, size_t n, const char *path,
               const char *action) {
  size_t i;
  for (i = 0; i < n; i++)
    if (strcmp(c[i].path, path) == 0 && strcmp(c[i].action, action) == 0)
      return 1;
  return 0;
}

TEST_IMPL(kb_list_diff_restore_gc) {
  kbt_env_t e;
  px_kb_t *kb = NULL;
  px_kb_snapinfo_t *list = NULL;
  px_kb_change_t *c = NULL;
  px_kb_result_t r;
  px_kb_gc_stats_t g;
  size_t n = 0;
  char *id1 = NULL, *id2 = NULL, *id3 = NULL, *v1, *now;
  kbt_env_init(&e, "admin");
  kbt_write_str(e.mind, "a.txt", "version 1\n");
  kbt_write_str(e.mind, "b.txt", "stays\n");
  v1 = kbt_digest(e.mind);
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  ASSERT_OK(px_kb_snapshot(kb, &id1));
  kbt_write_str(e.mind, "a.txt", "version 2\n");
  ASSERT_OK(px_kb_snapshot(kb, &id2));
  kbt_write_str(e.mind, "a.txt", "version 3\n");
  kbt_write_str(e.mind, "c.txt", "new in 3\n");
  ASSERT_OK(px_kb_snapshot(kb, &id3));
  ASSERT(strcmp(id1, id2) < 0 && strcmp(id2, id3) < 0); /* sortable */
  ASSERT_OK(px_kb_list(kb, &list, &n));
  ASSERT_EQ(n, 3);
  ASSERT_STR_EQ(list[0].id, id1);
  ASSERT_STR_EQ(list[2].id, id3);
  ASSERT_UINT_EQ(list[0].entries, 3 + 1); /* soul root, mind root, a, b */
  ASSERT_UINT_EQ(list[2].bytes, 10 + 6 + 9);
  px_kb_list_free(list, n);
  /* diff against snapshot 1: a modified, c created; then b deleted. */
  ASSERT_OK(kbt_remove(e.mind, "b.txt"));
  ASSERT_OK(px_kb_diff(kb, id1, &c, &n));
  ASSERT_EQ(n, 3);
  ASSERT(has(c, n, "mind/a.txt", "modified"));
  ASSERT(has(c, n, "mind/c.txt", "created"));
  ASSERT(has(c, n, "mind/b.txt", "deleted"));
  px_kb_changes_free(c, n);
  /* restore the oldest */
  ASSERT_OK(px_kb_restore(kb, id1, &r));
  ASSERT(r.verified);
  now = kbt_digest(e.mind);
  ASSERT_STR_EQ(now, v1);
  free(now);
  px_kb_result_free(&r);
  ASSERT_EQ(px_kb_restore(kb, "no-such-snapshot", &r), PX_ENOENT);
  ASSERT_NOT_NULL(r.error);
  px_kb_result_free(&r);
  ASSERT_EQ(px_kb_restore(kb, "../escape", &r), PX_EINVAL);
  px_kb_result_free(&r);
  px_kb_close(&kb);
  /* keep 1: gc drops snapshots 1-2 and the objects only they used. */
  e.opts.keep = 1;
  ASSERT_OK(px_kb_open(&e.opts, &kb)); /* open runs a gc pass */
  ASSERT_OK(px_kb_list(kb, &list, &n));
  ASSERT_EQ(n, 1);
  ASSERT_STR_EQ(list[0].id, id3);
  px_kb_list_free(list, n);
  ASSERT_UINT_EQ(kbt_count_objects(e.store), 3); /* v3, stays, new in 3 */
  /* Leftovers of a crash mid-write are collected too. */
  kbt_write_str(e.store, "snapshots/.px-kb-tmp-0011223344556677", "torn");
  kbt_write_str(e.store, "objects/ab/.px-kb-tmp-0011223344556677", "torn");
  ASSERT_OK(px_kb_gc(kb, &g));
  ASSERT_UINT_EQ(g.objects_removed, 1);
  ASSERT_UINT_EQ(g.objects_kept, 3);
  {
    px_kbfs_stat_t st;
    ASSERT_EQ(kbt_stat(e.store, "snapshots/.px-kb-tmp-0011223344556677", &st),
              PX_ENOENT);
    ASSERT_EQ(kbt_stat(e.store, "objects/ab/.px-kb-tmp-0011223344556677", &st),
              PX_ENOENT);
  }
  px_kb_close(&kb);
  free(id1), free(id2), free(id3), free(v1);
  return 0;
}

TEST_IMPL(kb_retention_by_count_and_bytes) {
  kbt_env_t e;
  px_kb_t *kb = NULL;
  px_kb_snapinfo_t *list = NULL;
  size_t n = 0;
  int i;
  char big[4096];
  kbt_env_init(&e, "retain");
  e.opts.keep = 3;
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  for (i = 0; i < 6; i++) {
    char body[32];
    snprintf(body, sizeof body, "v%d\n", i);
    kbt_write_str(e.mind, "a.txt", body);
    ASSERT_OK(px_kb_snapshot(kb, NULL));
  }
  ASSERT_OK(px_kb_list(kb, &list, &n));
  ASSERT_EQ(n, 3); /* manifests go at once ... */
  px_kb_list_free(list, n);
  ASSERT_UINT_GE(kbt_count_objects(e.store), 3);
  ASSERT_OK(px_kb_gc(kb, NULL)); /* ... objects with the (batched) sweep */
  ASSERT_UINT_EQ(kbt_count_objects(e.store), 3);
  px_kb_close(&kb);
  /* A byte budget smaller than two versions keeps only the newest. */
  e.opts.keep = 50;
  e.opts.max_store_bytes = 6000;
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  for (i = 0; i < 4; i++) {
    memset(big, 'a' + i, sizeof big);
    kbt_write(e.mind, "a.txt", big, sizeof big);
    ASSERT_OK(px_kb_snapshot(kb, NULL));
  }
  ASSERT_OK(px_kb_list(kb, &list, &n));
  ASSERT_EQ(n, 1);
  px_kb_list_free(list, n);
  ASSERT_UINT_EQ(kbt_count_objects(e.store), 1);
  px_kb_close(&kb);
  return 0;
}

TEST_IMPL(kb_open_rejects_bad_options) {
  kbt_env_t e;
  px_kb_t *kb = NULL;
  px_kb_root_t bad[2];
  kbt_env_init(&e, "opts");
  bad[0].name = "mind";
  bad[0].path = e.mind;
  bad[1].name = "mind"; /* duplicate */
  bad[1].path = e.soul;
  e.opts.roots = bad;
  ASSERT_EQ(px_kb_open(&e.opts, &kb), PX_EINVAL);
  bad[1].name = "../x";
  ASSERT_EQ(px_kb_open(&e.opts, &kb), PX_EINVAL);
  bad[1].name = "soul";
  bad[1].path = "/no/such/dir/at/all";
  ASSERT_NE(px_kb_open(&e.opts, &kb), 0);
  ASSERT_NULL(kb);
  e.opts.roots = e.roots;
  e.opts.store = e.mind; /* the store inside a root: a job could reach it */
  ASSERT_EQ(px_kb_open(&e.opts, &kb), PX_EINVAL);
  e.opts.store = NULL;
  ASSERT_EQ(px_kb_open(&e.opts, &kb), PX_EINVAL);
  /* No journal: recovery is a no-op. */
  e.opts.store = e.store;
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  {
    px_kb_result_t r;
    ASSERT_OK(px_kb_recover(kb, &r));
    ASSERT(!r.present);
  }
  px_kb_close(&kb);
  px_kb_close(&kb); /* idempotent */
  return 0;
}
