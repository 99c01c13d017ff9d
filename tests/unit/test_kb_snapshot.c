/* test_kb_snapshot.c - snapshots: round trips over varied trees, the
 * stat-only fast path, dedup, and a large streamed file. */
#include "task.h"
#include "tests/unit/test_kb_util.h"

#include "px/px_error.h"

/* A tree with nested dirs, empty files, Unicode names, a read-only file. */
static void make_tree(kbt_env_t *e) {
  kbt_write_str(e->mind, "notes/today.md", "# today\nthings\n");
  kbt_write_str(e->mind, "notes/deep/er/still/leaf.txt", "leaf");
  kbt_write(e->mind, "empty.txt", "", 0);
  kbt_mkdirs(e->mind, "empty-dir/inner");
  kbt_write_str(e->mind, "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e/caf\xc3\xa9.txt",
                "unicode");
  kbt_write_str(e->mind, "with space %25.txt", "odd name");
  kbt_write_str(e->soul, "core.json", "{\"values\": [1, 2, 3]}");
  kbt_write_str(e->soul, "ro/frozen.txt", "do not change");
  kbt_set_meta(e->soul, "ro/frozen.txt", INT64_C(1500000000000000000), 0444);
}

TEST_IMPL(kb_snapshot_roundtrip) {
  kbt_env_t e;
  px_kb_t *kb = NULL;
  px_kb_result_t r;
  char *before_m, *before_s, *after;
  char *id = NULL;
  kbt_env_init(&e, "rt");
  make_tree(&e);
  before_m = kbt_digest(e.mind);
  before_s = kbt_digest(e.soul);
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  ASSERT_OK(px_kb_snapshot(kb, &id));
  ASSERT_NOT_NULL(id);
  /* Wreck it: every kind of change. */
  kbt_write_str(e.mind, "notes/today.md", "overwritten");
  ASSERT_OK(kbt_remove(e.mind, "notes/deep/er/still/leaf.txt"));
  ASSERT_OK(kbt_remove(e.mind, "notes/deep/er/still"));
  ASSERT_OK(kbt_remove(e.mind, "empty-dir/inner"));
  kbt_write_str(e.mind, "empty.txt", "no longer empty");
  kbt_write_str(e.mind, "new/dir/new.txt", "created");
  ASSERT_OK(kbt_remove(e.soul, "ro/frozen.txt"));
  kbt_write_str(e.soul, "ro/frozen.txt", "changed");
  ASSERT_OK(px_kb_restore(kb, id, &r));
  ASSERT(r.rolled_back);
  ASSERT(r.verified);
  ASSERT_NULL(r.error);
  ASSERT_STR_EQ(r.snapshot, id);
  ASSERT_UINT_GE(r.files_restored, 4);
  ASSERT_UINT_GE(r.files_removed, 3); /* new, new/dir, new/dir/new.txt */
  after = kbt_digest(e.mind);
  ASSERT_STR_EQ(after, before_m);
  free(after);
  after = kbt_digest(e.soul);
  ASSERT_STR_EQ(after, before_s);
  free(after);
  {
    px_kbfs_stat_t st;
    ASSERT_OK(kbt_stat(e.soul, "ro/frozen.txt", &st));
    ASSERT_EQ(st.perm & 0222, 0); /* still read-only */
    ASSERT_EQ(st.mtime_ns, INT64_C(1500000000000000000));
  }
  px_kb_result_free(&r);
  free(id);
  free(before_m);
  free(before_s);
  px_kb_close(&kb);
  return 0;
}

TEST_IMPL(kb_snapshot_unchanged_hashes_nothing) {
  kbt_env_t e;
  px_kb_t *kb = NULL;
  px_kb_stats_t s0, s1, s2;
  char *id1 = NULL, *id2 = NULL;
  int i;
  kbt_env_init(&e, "fast");
  make_tree(&e);
  for (i = 0; i < 50; i++) {
    char rel[64];
    snprintf(rel, sizeof rel, "bulk/f%02d.txt", i);
    kbt_write_str(e.mind, rel, rel);
  }
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  ASSERT_OK(px_kb_snapshot(kb, &id1));
  px_kb_get_stats(kb, &s0);
  ASSERT_UINT_GE(s0.files_hashed, 56);
  ASSERT_OK(px_kb_snapshot(kb, &id2));
  px_kb_get_stats(kb, &s1);
  ASSERT_UINT_EQ(s1.files_hashed, s0.files_hashed); /* stat calls only */
  ASSERT_UINT_EQ(s1.objects_stored, s0.objects_stored);
  /* Same state down to the inode: the newest snapshot's id, no manifest. */
  ASSERT_STR_EQ(id2, id1);
  ASSERT_UINT_EQ(s1.snapshots, 1);
  ASSERT_UINT_EQ(s1.snapshots_reused, 1);
  free(id1), free(id2);
  /* One changed file: exactly one hash, one new object. */
  kbt_write_str(e.mind, "bulk/f07.txt", "changed content");
  ASSERT_OK(px_kb_snapshot(kb, NULL));
  px_kb_get_stats(kb, &s2);
  ASSERT_UINT_EQ(s2.files_hashed, s1.files_hashed + 1);
  ASSERT_UINT_EQ(s2.objects_stored, s1.objects_stored + 1);
  px_kb_close(&kb);
  /* A fresh open reuses the newest manifest from disk the same way. */
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  ASSERT_OK(px_kb_snapshot(kb, NULL));
  px_kb_get_stats(kb, &s0);
  ASSERT_UINT_EQ(s0.files_hashed, 0);
  px_kb_close(&kb);
  return 0;
}

TEST_IMPL(kb_snapshot_dedup) {
  kbt_env_t e;
  px_kb_t *kb = NULL;
  px_kb_stats_t s;
  kbt_env_init(&e, "dedup");
  kbt_write_str(e.mind, "a.txt", "same content");
  kbt_write_str(e.mind, "b/a-copy.txt", "same content");
  kbt_write_str(e.soul, "third.txt", "same content");
  kbt_write_str(e.soul, "other.txt", "different");
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  ASSERT_OK(px_kb_snapshot(kb, NULL));
  px_kb_get_stats(kb, &s);
  ASSERT_UINT_EQ(s.objects_stored, 2);
  ASSERT_UINT_EQ(s.objects_reused, 2);
  ASSERT_UINT_EQ(kbt_count_objects(e.store), 2);
  /* A new file with known content is hashed but never copied again. */
  kbt_write_str(e.mind, "c.txt", "different");
  ASSERT_OK(px_kb_snapshot(kb, NULL));
  px_kb_get_stats(kb, &s);
  ASSERT_UINT_EQ(s.objects_stored, 2);
  ASSERT_UINT_EQ(kbt_count_objects(e.store), 2);
  px_kb_close(&kb);
  return 0;
}

TEST_IMPL(kb_large_file_streamed) {
  /* 128 MiB, sparse apart from a head and a tail pattern. The KB reads
   * it through a 1 MiB buffer only. Under a sanitizer (every byte hashed
   * is checked: ~20x slower) 32 MiB, still 32 buffers' worth. */
#if defined(__SANITIZE_ADDRESS__) || defined(PX_SANITIZED)
  const uint64_t size = UINT64_C(32) << 20;
#else
  const uint64_t size = UINT64_C(128) << 20;
#endif
  kbt_env_t e;
  px_kb_t *kb = NULL;
  px_kb_result_t r;
  px_kbfs_dir_t *d;
  px_kbfs_file_t *f = NULL;
  px_kbfs_stat_t st;
  char *before, *after, head[4096];
  size_t i;
  kbt_env_init(&e, "large");
  for (i = 0; i < sizeof head; i++)
    head[i] = (char)('a' + i % 26);
  d = kbt_open(e.mind, "");
  ASSERT_OK(px_kbfs_create_temp(d, &f));
  ASSERT_OK(px_kbfs_write(f, head, sizeof head));
  ASSERT_OK(px_kbfs_set_size(f, size));
  ASSERT_OK(px_kbfs_commit(&f, "big.bin"));
  px_kbfs_close_dir(&d);
  before = kbt_digest(e.mind);
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  ASSERT_OK(px_kb_snapshot(kb, NULL));
  /* The job scribbles over the start and cuts the file short. */
  kbt_write_inplace(e.mind, "big.bin", "SCRIBBLE", 0);
  d = kbt_open(e.mind, "");
  ASSERT_OK(px_kbfs_test_open_write(d, "big.bin", 0, &f));
  ASSERT_OK(px_kbfs_set_size(f, size / 3));
  px_kbfs_close(&f);
  px_kbfs_close_dir(&d);
  ASSERT_OK(px_kb_restore(kb, NULL, &r));
  ASSERT(r.verified);
  ASSERT_UINT_EQ(r.files_restored, 1);
  ASSERT_UINT_EQ(r.bytes_restored, size);
  ASSERT_OK(kbt_stat(e.mind, "big.bin", &st));
  ASSERT_UINT_EQ(st.size, size);
  after = kbt_digest(e.mind);
  ASSERT_STR_EQ(after, before);
  px_kb_result_free(&r);
  free(before);
  free(after);
  px_kb_close(&kb);
  return 0;
}
