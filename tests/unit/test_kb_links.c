/* test_kb_links.c - links a job plants in the KB: symlinks, hard links
 * and (Windows) junctions pointing outside. Rollback removes or replaces
 * them as themselves and nothing outside the roots changes. */
#include "task.h"
#include "tests/unit/test_kb_util.h"

#include "px/px_error.h"

static const char canary_text[] = "canary: must never change\n";

static void outside_setup(kbt_env_t *e, char *canary_path, size_t cap) {
  kbt_write_str(e->outside, "canary.txt", canary_text);
  kbt_write_str(e->outside, "dir/victim.txt", "outside victim\n");
  kbt_join(canary_path, cap, e->outside, "canary.txt");
}

static void outside_unchanged(kbt_env_t *e, const char *before) {
  char *now = kbt_digest(e->outside);
  char buf[128];
  ASSERT_STR_EQ(now, before);
  ASSERT_EQ(kbt_read(e->outside, "canary.txt", buf, sizeof buf),
            (long)strlen(canary_text));
  ASSERT_STR_EQ(buf, canary_text);
  free(now);
}

static const char no_symlink_reason[] =
    "cannot create a symbolic link here (needs a privilege, or Wine without "
    "/bin/ln)";

TEST_IMPL(kb_rollback_removes_planted_file_symlinks) {
  kbt_env_t e;
  px_kb_t *kb = NULL;
  px_kb_result_t r;
  char canary[1024], *before_kb, *before_out, *after;
  px_kbfs_dir_t *d;
  px_kbfs_stat_t st;
  int rc;
  kbt_env_init(&e, "symlinks");
  outside_setup(&e, canary, sizeof canary);
  kbt_write_str(e.mind, "notes/a.txt", "a\n");
  kbt_write_str(e.mind, "notes/b.txt", "b\n");
  before_kb = kbt_digest(e.mind);
  before_out = kbt_digest(e.outside);
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  ASSERT_OK(px_kb_snapshot(kb, NULL));
  d = kbt_open(e.mind, "notes");
  rc = px_kbfs_test_symlink(d, "new-link", canary, 0);
  if (rc == PX_ENOTSUP) {
    px_kbfs_close_dir(&d);
    px_kb_close(&kb);
    RETURN_SKIP(no_symlink_reason);
  }
  ASSERT_OK(rc);
  /* A KB file replaced by a link to the canary: a restore that opened
   * a.txt for writing would overwrite the canary. */
  ASSERT_OK(px_kbfs_remove(d, "a.txt"));
  ASSERT_OK(px_kbfs_test_symlink(d, "a.txt", canary, 0));
  px_kbfs_close_dir(&d);
  ASSERT_OK(px_kb_restore(kb, NULL, &r));
  ASSERT(r.verified);
  after = kbt_digest(e.mind);
  ASSERT_STR_EQ(after, before_kb);
  free(after);
  ASSERT_OK(kbt_stat(e.mind, "notes/a.txt", &st));
  ASSERT_EQ(st.type, PX_KBFS_FILE);
  ASSERT_EQ(kbt_stat(e.mind, "notes/new-link", &st), PX_ENOENT);
  outside_unchanged(&e, before_out);
  px_kb_result_free(&r);
  free(before_kb), free(before_out);
  px_kb_close(&kb);
  return 0;
}

TEST_IMPL(kb_rollback_removes_planted_dir_symlinks) {
  kbt_env_t e;
  px_kb_t *kb = NULL;
  px_kb_result_t r;
  char canary[1024], outdir[1024], *before_kb, *before_out, *after;
  px_kbfs_dir_t *d;
  px_kbfs_stat_t st;
  int rc;
  kbt_env_init(&e, "dirlinks");
  outside_setup(&e, canary, sizeof canary);
  kbt_join(outdir, sizeof outdir, e.outside, "dir");
  kbt_write_str(e.mind, "sub/c.txt", "c\n");
  kbt_write_str(e.mind, "keep.txt", "k\n");
  before_kb = kbt_digest(e.mind);
  before_out = kbt_digest(e.outside);
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  ASSERT_OK(px_kb_snapshot(kb, NULL));
  /* A KB dir replaced by a link to an outside dir (a naive rollback would
   * empty the outside dir), and a new link to it. */
  ASSERT_OK(kbt_remove(e.mind, "sub/c.txt"));
  ASSERT_OK(kbt_remove(e.mind, "sub"));
  d = kbt_open(e.mind, "");
  rc = px_kbfs_test_symlink(d, "sub", outdir, 1);
  if (rc == 0)
    rc = px_kbfs_test_symlink(d, "escape", outdir, 1);
  px_kbfs_close_dir(&d);
  if (rc == PX_ENOTSUP) {
    px_kb_close(&kb);
    RETURN_SKIP(no_symlink_reason);
  }
  ASSERT_OK(rc);
  kbt_write_str(e.mind, "keep.txt", "changed by the job\n");
  rc = px_kb_restore(kb, NULL, &r);
  outside_unchanged(&e, before_out); /* in every case */
  {
    /* Restored even when another entry could not be fixed. */
    char buf[64];
    ASSERT_EQ(kbt_read(e.mind, "keep.txt", buf, sizeof buf), 2);
    ASSERT_STR_EQ(buf, "k\n");
  }
  if (px_test_under_wine()) {
    /* Wine 8 follows a Unix symlink to a directory even when asked to
     * open the link itself, and will neither delete nor replace it: the
     * fs layer sees that (final path elsewhere) and refuses. */
    ASSERT_EQ(rc, PX_EINTEGRITY);
    ASSERT(!r.verified);
    ASSERT_NOT_NULL(r.error);
    px_kb_result_free(&r);
    px_kb_close(&kb);
    RETURN_SKIP("Wine 8 cannot remove a Unix symlink to a directory as "
                "itself: rollback refused it and touched nothing outside "
                "(checked); the full round trip runs on Linux and Windows");
  }
  ASSERT_OK(rc);
  ASSERT(r.verified);
  after = kbt_digest(e.mind);
  ASSERT_STR_EQ(after, before_kb);
  free(after);
  ASSERT_OK(kbt_stat(e.mind, "sub", &st));
  ASSERT_EQ(st.type, PX_KBFS_DIR);
  px_kb_result_free(&r);
  free(before_kb), free(before_out);
  px_kb_close(&kb);
  return 0;
}

TEST_IMPL(kb_rollback_replaces_hard_links) {
  kbt_env_t e;
  px_kb_t *kb = NULL;
  px_kb_result_t r;
  char canary[1024], kbfile[1024], *before_kb, *before_out, *after;
  px_kbfs_dir_t *d;
  px_kbfs_stat_t st;
  int rc;
  kbt_env_init(&e, "hardlinks");
  outside_setup(&e, canary, sizeof canary);
  kbt_write_str(e.mind, "a.txt", "kb file a\n");
  kbt_write_str(e.mind, "b.txt", "kb file b\n");
  before_kb = kbt_digest(e.mind);
  before_out = kbt_digest(e.outside);
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  ASSERT_OK(px_kb_snapshot(kb, NULL));
  d = kbt_open(e.mind, "");
  /* 1: a new name in the KB for the outside canary. */
  rc = px_kbfs_test_hardlink(d, "planted", canary);
  if (rc == PX_ENOTSUP) {
    px_kbfs_close_dir(&d);
    px_kb_close(&kb);
    RETURN_SKIP("hard links are not supported on this filesystem");
  }
  ASSERT_OK(rc);
  /* 2: a KB file replaced by a hard link to the canary: a restore that
   * opened a.txt for writing would overwrite the canary. */
  ASSERT_OK(px_kbfs_remove(d, "a.txt"));
  ASSERT_OK(px_kbfs_test_hardlink(d, "a.txt", canary));
  px_kbfs_close_dir(&d);
  /* 3: the job links a KB file from outside, then changes it. */
  kbt_join(kbfile, sizeof kbfile, e.mind, "b.txt");
  d = kbt_open(e.outside, "");
  ASSERT_OK(px_kbfs_test_hardlink(d, "grab-b.txt", kbfile));
  px_kbfs_close_dir(&d);
  kbt_write_inplace(e.outside, "grab-b.txt", "changed through outside\n", 1);
  ASSERT_OK(px_kb_restore(kb, NULL, &r));
  ASSERT(r.verified);
  after = kbt_digest(e.mind);
  ASSERT_STR_EQ(after, before_kb);
  free(after);
  /* The KB's b.txt is a file of its own again (not the outside name). */
  ASSERT_OK(kbt_stat(e.mind, "b.txt", &st));
  ASSERT(st.nlink == 0 || st.nlink == 1);
  /* Outside: the canary untouched; the job's own outside link is the
   * job's business (outside the roots, never touched by us). */
  ASSERT_OK(kbt_remove(e.outside, "grab-b.txt"));
  outside_unchanged(&e, before_out);
  px_kb_result_free(&r);
  free(before_kb), free(before_out);
  px_kb_close(&kb);
  return 0;
}

TEST_IMPL(kb_rollback_removes_junctions) {
  kbt_env_t e;
  px_kb_t *kb = NULL;
  px_kb_result_t r;
  char outdir[1024], *before_kb, *before_out, *after;
  px_kbfs_dir_t *d;
  int rc;
  if (px_kbfs_sep() != '\\')
    RETURN_SKIP("junctions exist on Windows only (symlinks cover Linux)");
  kbt_env_init(&e, "junctions");
  kbt_write_str(e.outside, "dir/victim.txt", "outside victim\n");
  kbt_join(outdir, sizeof outdir, e.outside, "dir");
  kbt_write_str(e.mind, "sub/c.txt", "c\n");
  before_kb = kbt_digest(e.mind);
  before_out = kbt_digest(e.outside);
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  ASSERT_OK(px_kb_snapshot(kb, NULL));
  ASSERT_OK(kbt_remove(e.mind, "sub/c.txt"));
  ASSERT_OK(kbt_remove(e.mind, "sub"));
  d = kbt_open(e.mind, "");
  rc = px_kbfs_test_junction(d, "sub", outdir);
  if (rc == 0)
    rc = px_kbfs_test_junction(d, "escape", outdir);
  px_kbfs_close_dir(&d);
  if (rc == PX_ENOTSUP) {
    px_kb_close(&kb);
    RETURN_SKIP(px_test_under_wine()
                    ? "Wine 8 cannot create junctions (FSCTL_SET_REPARSE_POINT)"
                    : "could not create a junction here");
  }
  ASSERT_OK(rc);
  ASSERT_OK(px_kb_restore(kb, NULL, &r));
  ASSERT(r.verified);
  after = kbt_digest(e.mind);
  ASSERT_STR_EQ(after, before_kb);
  free(after);
  after = kbt_digest(e.outside);
  ASSERT_STR_EQ(after, before_out);
  free(after);
  px_kb_result_free(&r);
  free(before_kb), free(before_out);
  px_kb_close(&kb);
  return 0;
}

TEST_IMPL(kb_snapshot_never_follows_links) {
  kbt_env_t e;
  px_kb_t *kb = NULL;
  px_kb_stats_t s;
  px_kb_change_t *c = NULL;
  size_t n = 0;
  char outdir[1024];
  px_kbfs_dir_t *d;
  int rc;
  kbt_env_init(&e, "snaplinks");
  kbt_write_str(e.outside, "dir/secret.txt", "outside secret\n");
  kbt_join(outdir, sizeof outdir, e.outside, "dir");
  kbt_write_str(e.mind, "a.txt", "a\n");
  d = kbt_open(e.mind, "");
  rc = px_kbfs_test_symlink(d, "to-outside", outdir, 1);
  px_kbfs_close_dir(&d);
  if (rc == PX_ENOTSUP)
    RETURN_SKIP(no_symlink_reason);
  ASSERT_OK(rc);
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  ASSERT_OK(px_kb_snapshot(kb, NULL));
  px_kb_get_stats(kb, &s);
  ASSERT_UINT_EQ(s.files_hashed, 1); /* a.txt only: secret.txt not read */
  ASSERT_UINT_EQ(kbt_count_objects(e.store), 1);
  /* The link is part of the snapshot: unchanged, it is no difference. */
  ASSERT_OK(px_kb_diff(kb, NULL, &c, &n));
  ASSERT_EQ(n, 0);
  px_kb_changes_free(c, n);
  px_kb_close(&kb);
  return 0;
}
