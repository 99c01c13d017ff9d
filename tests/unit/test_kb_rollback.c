/* test_kb_rollback.c - a job that wrecks the KB and is killed, a job that
 * succeeds and keeps its changes, snapshot modes, verification failures
 * and crash recovery. */
#include "task.h"
#include "tests/unit/test_kb_util.h"

#include "px/px_sha256.h"
#include "px/px_error.h"
#include "px/px_util.h"

static void make_tree(kbt_env_t *e) {
  int i;
  kbt_write_str(e->mind, "facts/a.txt", "alpha\n");
  kbt_write_str(e->mind, "facts/b.txt", "bravo bravo bravo\n");
  kbt_write_str(e->mind, "facts/c.txt", "charlie\n");
  kbt_write_str(e->mind, "facts/sub/d.txt", "delta\n");
  kbt_write_str(e->mind, "log.txt", "line 1\nline 2\nline 3\n");
  kbt_write(e->mind, "empty", "", 0);
  kbt_mkdirs(e->mind, "keep/empty-dir");
  kbt_write_str(e->soul, "identity.txt", "I am\n");
  for (i = 0; i < 20; i++) {
    char rel[64], body[64];
    snprintf(rel, sizeof rel, "many/m%02d.txt", i);
    snprintf(body, sizeof body, "file %d\n", i);
    kbt_write_str(e->soul, rel, body);
  }
}

/* What a confused or hostile job does to the KB. */
static void wreck(kbt_env_t *e) {
  px_kbfs_stat_t st;
  kbt_write_inplace(e->mind, "facts/a.txt", "ALPHA (modified in place)\n", 1);
  ASSERT_OK(kbt_remove(e->mind, "facts/c.txt"));
  kbt_write_str(e->mind, "facts/new.txt", "created by the job\n");
  kbt_write_str(e->mind, "junk/deep/er/x.bin", "junk");
  ASSERT_OK(kbt_rename(e->mind, "facts", "b.txt", "b-renamed.txt"));
  kbt_write_inplace(e->mind, "log.txt", "line", 1); /* truncated */
  ASSERT_OK(kbt_remove(e->mind, "keep/empty-dir"));
  ASSERT_OK(kbt_remove(e->mind, "facts/sub/d.txt"));
  ASSERT_OK(kbt_remove(e->mind, "facts/sub"));
  kbt_write_str(e->mind, "facts/sub", "a file where a directory was");
  /* Same size, content changed in place, mtime forged back. */
  ASSERT_OK(kbt_stat(e->soul, "identity.txt", &st));
  kbt_write_inplace(e->soul, "identity.txt", "I AM\n", 0);
  kbt_set_meta(e->soul, "identity.txt", st.mtime_ns, st.perm);
  ASSERT_OK(kbt_remove(e->soul, "many/m05.txt"));
  kbt_write_str(e->soul, "many/m06.txt", "rewritten\n");
}

static int has_change(const px_kb_result_t *r, const char *path,
                      const char *action) {
  size_t i;
  for (i = 0; i < r->nchanges; i++)
    if (strcmp(r->changes[i].path, path) == 0 &&
        strcmp(r->changes[i].action, action) == 0)
      return 1;
  return 0;
}

TEST_IMPL(kb_job_killed_rollback) {
  kbt_env_t e;
  px_kb_t *kb = NULL;
  px_kb_hooks_t h;
  px_job_spec_t spec;
  px_kb_result_t r;
  void *snap = NULL;
  char *bm, *bs, *am, *as;
  kbt_env_init(&e, "killed");
  make_tree(&e);
  bm = kbt_digest(e.mind);
  bs = kbt_digest(e.soul);
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  ASSERT_OK(px_kb_recover(kb, NULL));
  h = px_kb_hooks(kb);
  memset(&spec, 0, sizeof spec);
  spec.caps = PX_CAP_KB_WRITE;
  ASSERT_OK(h.snapshot(h.ctx, &spec, &snap));
  ASSERT_NOT_NULL(snap);
  wreck(&e);
  h.finish(h.ctx, snap, 1, &r); /* the watchdog killed it */
  ASSERT(r.present);
  ASSERT_NOT_NULL(r.snapshot);
  ASSERT(r.rolled_back);
  ASSERT(r.verified);
  ASSERT_NULL(r.error);
  am = kbt_digest(e.mind);
  as = kbt_digest(e.soul);
  ASSERT_STR_EQ(am, bm);
  ASSERT_STR_EQ(as, bs);
  /* a, c, b, log, sub/d, identity, m05, m06 */
  ASSERT_UINT_EQ(r.files_restored, 8);
  ASSERT(has_change(&r, "mind/facts/new.txt", "removed"));
  ASSERT(has_change(&r, "mind/junk", "removed"));
  ASSERT(has_change(&r, "mind/facts/c.txt", "restored"));
  ASSERT(has_change(&r, "soul/identity.txt", "restored"));
  ASSERT(has_change(&r, "mind/keep/empty-dir", "restored"));
  ASSERT_UINT_GE(r.bytes_restored, 50);
  px_kb_result_free(&r);
  free(am), free(as), free(bm), free(bs);
  px_kb_close(&kb);
  return 0;
}

TEST_IMPL(kb_job_success_keeps_changes) {
  kbt_env_t e;
  px_kb_t *kb = NULL;
  px_kb_hooks_t h;
  px_job_spec_t spec;
  px_kb_result_t r;
  void *snap = NULL;
  char *before, *after, *id;
  kbt_env_init(&e, "kept");
  make_tree(&e);
  before = kbt_digest(e.mind);
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  h = px_kb_hooks(kb);
  memset(&spec, 0, sizeof spec);
  spec.caps = PX_CAP_KB_WRITE;
  ASSERT_OK(h.snapshot(h.ctx, &spec, &snap));
  kbt_write_str(e.mind, "facts/learned.txt", "new knowledge\n");
  kbt_write_inplace(e.mind, "facts/a.txt", "ALPHA\n", 1);
  h.finish(h.ctx, snap, 0, &r);
  ASSERT(r.present);
  ASSERT(!r.rolled_back);
  ASSERT(has_change(&r, "mind/facts/learned.txt", "created_kept"));
  ASSERT(has_change(&r, "mind/facts/a.txt", "modified_kept"));
  ASSERT_EQ(r.nchanges, 2);
  id = px_strdup(r.snapshot);
  px_kb_result_free(&r);
  {
    char buf[64];
    ASSERT_EQ(kbt_read(e.mind, "facts/learned.txt", buf, sizeof buf), 14);
  }
  /* The snapshot stays for a manual restore. */
  ASSERT_OK(px_kb_restore(kb, id, &r));
  ASSERT(r.verified);
  after = kbt_digest(e.mind);
  ASSERT_STR_EQ(after, before);
  px_kb_result_free(&r);
  free(id), free(before), free(after);
  px_kb_close(&kb);
  return 0;
}

TEST_IMPL(kb_writers_mode) {
  kbt_env_t e;
  px_kb_t *kb = NULL;
  px_kb_hooks_t h;
  px_job_spec_t spec;
  px_kb_result_t r;
  px_kb_stats_t s;
  void *snap = (void *)&e;
  kbt_env_init(&e, "writers");
  make_tree(&e);
  e.opts.snapshot = PX_KB_SNAPSHOT_WRITERS;
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  h = px_kb_hooks(kb);
  memset(&spec, 0, sizeof spec);
  spec.caps = PX_CAP_KB_READ;
  ASSERT_OK(h.snapshot(h.ctx, &spec, &snap));
  ASSERT_NULL(snap); /* readers need no snapshot */
  h.finish(h.ctx, snap, 1, &r);
  ASSERT(!r.present);
  spec.caps = PX_CAP_KB_READ | PX_CAP_KB_WRITE;
  ASSERT_OK(h.snapshot(h.ctx, &spec, &snap));
  ASSERT_NOT_NULL(snap);
  h.finish(h.ctx, snap, 0, &r);
  ASSERT(r.present);
  ASSERT_EQ(r.nchanges, 0);
  px_kb_result_free(&r);
  px_kb_get_stats(kb, &s);
  ASSERT_UINT_EQ(s.snapshots, 1);
  px_kb_close(&kb);
  return 0;
}

TEST_IMPL(kb_damaged_store_fails_verification) {
  kbt_env_t e;
  px_kb_t *kb = NULL;
  px_kb_result_t r;
  int rc;
  kbt_env_init(&e, "damaged");
  kbt_write_str(e.mind, "only.txt", "precious");
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  ASSERT_OK(px_kb_snapshot(kb, NULL));
  /* Corrupt the one object in the store (same size, other bytes). */
  {
    char hexname[80];
    unsigned char d[32];
    char hex[65];
    px_sha256("precious", 8, d);
    px_sha256_hex(d, hex);
    snprintf(hexname, sizeof hexname, "objects/%.2s/%s", hex, hex + 2);
    kbt_set_meta(e.store, hexname, 0, 0644);
    kbt_write_inplace(e.store, hexname, "PRECIOUS", 0);
  }
  kbt_write_str(e.mind, "only.txt", "changed");
  rc = px_kb_restore(kb, NULL, &r);
  ASSERT_EQ(rc, PX_EINTEGRITY);
  ASSERT(!r.verified);
  ASSERT_NOT_NULL(r.error);
  ASSERT_STR_CONTAINS(r.error, "only.txt");
  px_kb_result_free(&r);
  px_kb_close(&kb);
  /* The journal stays: the next start tries again (and fails again). */
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  ASSERT_EQ(px_kb_recover(kb, &r), PX_EINTEGRITY);
  px_kb_result_free(&r);
  px_kb_close(&kb);
  return 0;
}

/* Crash during rollback: the helper dies at step N; recovery completes. */
TEST_IMPL(kb_crash_during_rollback_recovers) {
  kbt_env_t e;
  px_kb_t *kb = NULL;
  px_kb_result_t r;
  char helper[1024], nbuf[16], mind_arg[1100], soul_arg[1100];
  char out[4096];
  char *before_m, *before_s, *after;
  unsigned n, crashes = 0;
  int status = 0;
  snprintf(helper, sizeof helper, "%spx_kb_crash%s", px_test_self_dir(),
           px_kbfs_sep() == '\\' ? ".exe" : "");
  kbt_env_init(&e, "crash");
  make_tree(&e);
  before_m = kbt_digest(e.mind);
  before_s = kbt_digest(e.soul);
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  ASSERT_OK(px_kb_snapshot(kb, NULL));
  px_kb_close(&kb);
  snprintf(mind_arg, sizeof mind_arg, "mind=%s", e.mind);
  snprintf(soul_arg, sizeof soul_arg, "soul=%s", e.soul);
  for (n = 1; n < 40; n++) {
    const char *argv[] = {helper, e.store, nbuf, mind_arg, soul_arg, NULL};
    wreck(&e);
    snprintf(nbuf, sizeof nbuf, "%u", n);
    ASSERT_OK(px_test_spawn(argv, 60, &status, out, sizeof out));
    if (status == 0)
      break; /* n is past the last step: the rollback finished */
    if (status != 86)
      printf("helper output:\n%s\n", out);
    ASSERT_EQ(status, 86);
    crashes++;
    ASSERT_OK(px_kb_open(&e.opts, &kb));
    ASSERT_OK(px_kb_recover(kb, &r));
    ASSERT(r.present);
    ASSERT(r.verified);
    px_kb_result_free(&r);
    ASSERT_OK(px_kb_recover(kb, &r)); /* journal gone: nothing to do */
    ASSERT(!r.present);
    px_kb_close(&kb);
    after = kbt_digest(e.mind);
    ASSERT_STR_EQ(after, before_m);
    free(after);
    after = kbt_digest(e.soul);
    ASSERT_STR_EQ(after, before_s);
    free(after);
  }
  ASSERT_UINT_GE(crashes, 10);
  ASSERT_EQ(status, 0);
  free(before_m);
  free(before_s);
  return 0;
}

/* The engine must not run a job it could not undo: a snapshot that fails
 * (here: a root vanished) is an error from the hook, and no snapshot. */
TEST_IMPL(kb_snapshot_failure_is_reported) {
  kbt_env_t e;
  px_kb_t *kb = NULL;
  px_kb_hooks_t h;
  px_job_spec_t spec;
  void *snap = (void *)&e;
  char parent[1024];
  kbt_env_init(&e, "snapfail");
  kbt_write_str(e.soul, "x.txt", "x");
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  h = px_kb_hooks(kb);
  memset(&spec, 0, sizeof spec);
  ASSERT_OK(kbt_remove(e.soul, "x.txt"));
  snprintf(parent, sizeof parent, "%s", e.soul);
  parent[strlen(parent) - 5] = '\0'; /* strip the separator and "soul" */
  ASSERT_OK(kbt_remove(parent, "soul"));
  ASSERT_NE(h.snapshot(h.ctx, &spec, &snap), 0);
  ASSERT_NULL(snap);
  px_kb_close(&kb);
  return 0;
}

/* A job that builds a tree deeper than the walk's limit must not keep the
 * rollback from finishing: the too-deep part is hoisted up and removed,
 * and the rest of the KB is restored anyway. */
TEST_IMPL(kb_rollback_deep_tree) {
  kbt_env_t e;
  px_kb_t *kb = NULL;
  px_kb_result_t r;
  char *before, *after, rel[1100];
  size_t n = 0;
  int i;
  kbt_env_init(&e, "deep");
  kbt_write_str(e.mind, "a.txt", "a\n");
  before = kbt_digest(e.mind);
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  ASSERT_OK(px_kb_snapshot(kb, NULL));
  n = (size_t)snprintf(rel, sizeof rel, "deep");
  for (i = 0; i < 300; i++)
    n += (size_t)snprintf(rel + n, sizeof rel - n, "/d");
  kbt_mkdirs(e.mind, rel);
  snprintf(rel + n, sizeof rel - n, "/bottom.txt");
  kbt_write_str(e.mind, rel, "at the bottom");
  kbt_write_str(e.mind, "a.txt", "modified");
  ASSERT_OK(px_kb_restore(kb, NULL, &r));
  ASSERT(r.verified);
  after = kbt_digest(e.mind);
  ASSERT_STR_EQ(after, before);
  ASSERT_UINT_GE(r.files_removed, 302);
  px_kb_result_free(&r);
  free(before), free(after);
  px_kb_close(&kb);
  return 0;
}
