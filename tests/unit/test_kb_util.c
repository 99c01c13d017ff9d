/* test_kb_util.c - helpers shared by the kb tests (test_kb_util.h), and
 * the tests of the helpers' own foundation: the filesystem layer. */
#include "task.h"
#include "tests/unit/test_kb_util.h"

#include "px/px_sha256.h"
#include "px/px_error.h"
#include "px/px_util.h"

void kbt_join(char *out, size_t cap, const char *base, const char *rel) {
  size_t n;
  char sep = px_kbfs_sep();
  snprintf(out, cap, "%s", base);
  n = strlen(out);
  if (rel[0] && n && out[n - 1] != '/' && out[n - 1] != '\\' && n + 1 < cap)
    out[n++] = sep, out[n] = '\0';
  for (; *rel && n + 1 < cap; rel++)
    out[n++] = *rel == '/' ? sep : *rel;
  out[n] = '\0';
}

static void make_dir_abs(const char *parent, const char *name) {
  px_kbfs_dir_t *d = NULL;
  int rc;
  ASSERT_OK(px_kbfs_open_root(parent, &d));
  rc = px_kbfs_mkdir(d, name);
  ASSERT(rc == 0 || rc == PX_EEXIST);
  px_kbfs_close_dir(&d);
}

void kbt_env_init(kbt_env_t *e, const char *tag) {
  const char *tmp = px_test_tmpdir();
  char base[1024], name[64];
  memset(e, 0, sizeof *e);
  snprintf(name, sizeof name, "kb-%s", tag);
  make_dir_abs(tmp, name);
  kbt_join(base, sizeof base, tmp, name);
  make_dir_abs(base, "mind");
  make_dir_abs(base, "soul");
  make_dir_abs(base, "store");
  make_dir_abs(base, "outside");
  kbt_join(e->mind, sizeof e->mind, base, "mind");
  kbt_join(e->soul, sizeof e->soul, base, "soul");
  kbt_join(e->store, sizeof e->store, base, "store");
  kbt_join(e->outside, sizeof e->outside, base, "outside");
  e->roots[0].name = "mind";
  e->roots[0].path = e->mind;
  e->roots[1].name = "soul";
  e->roots[1].path = e->soul;
  px_kb_opts_default(&e->opts);
  e->opts.roots = e->roots;
  e->opts.nroots = 2;
  e->opts.store = e->store;
}

/* Open the parent dir of rel, creating parents when `make`. Returns the
 * dir and points *leaf at the last component inside rel. */
static px_kbfs_dir_t *walk_parent(const char *root, const char *rel, int make,
                                  const char **leaf) {
  px_kbfs_dir_t *d = NULL, *sub = NULL;
  const char *p = rel, *slash;
  char comp[512];
  ASSERT_OK(px_kbfs_open_root(root, &d));
  while ((slash = strchr(p, '/')) != NULL) {
    size_t len = (size_t)(slash - p);
    int rc;
    ASSERT(len < sizeof comp);
    memcpy(comp, p, len);
    comp[len] = '\0';
    if (make) {
      rc = px_kbfs_mkdir(d, comp);
      ASSERT(rc == 0 || rc == PX_EEXIST);
    }
    ASSERT_OK(px_kbfs_open_dir(d, comp, &sub));
    px_kbfs_close_dir(&d);
    d = sub;
    sub = NULL;
    p = slash + 1;
  }
  *leaf = p;
  return d;
}

px_kbfs_dir_t *kbt_open(const char *root, const char *rel) {
  px_kbfs_dir_t *d, *sub = NULL;
  const char *leaf;
  if (!rel[0]) {
    ASSERT_OK(px_kbfs_open_root(root, &d));
    return d;
  }
  d = walk_parent(root, rel, 0, &leaf);
  ASSERT_OK(px_kbfs_open_dir(d, leaf, &sub));
  px_kbfs_close_dir(&d);
  return sub;
}

void kbt_write(const char *root, const char *rel, const void *data,
               size_t len) {
  const char *leaf;
  px_kbfs_dir_t *d = walk_parent(root, rel, 1, &leaf);
  px_kbfs_file_t *f = NULL;
  ASSERT_OK(px_kbfs_create_temp(d, &f));
  ASSERT_OK(px_kbfs_write(f, data, len));
  ASSERT_OK(px_kbfs_commit(&f, leaf));
  px_kbfs_close_dir(&d);
}

void kbt_write_str(const char *root, const char *rel, const char *s) {
  kbt_write(root, rel, s, strlen(s));
}

void kbt_write_inplace(const char *root, const char *rel, const char *s,
                       int truncate) {
  const char *leaf;
  px_kbfs_dir_t *d = walk_parent(root, rel, 0, &leaf);
  px_kbfs_file_t *f = NULL;
  ASSERT_OK(px_kbfs_test_open_write(d, leaf, truncate, &f));
  ASSERT_OK(px_kbfs_write(f, s, strlen(s)));
  px_kbfs_close(&f);
  px_kbfs_close_dir(&d);
}

void kbt_mkdirs(const char *root, const char *rel) {
  char buf[1024];
  const char *leaf;
  px_kbfs_dir_t *d;
  int rc;
  snprintf(buf, sizeof buf, "%s/x", rel);
  d = walk_parent(root, buf, 1, &leaf);
  px_kbfs_close_dir(&d);
  (void)rc;
}

long kbt_read(const char *root, const char *rel, char *buf, size_t cap) {
  const char *leaf;
  px_kbfs_dir_t *d = walk_parent(root, rel, 0, &leaf);
  px_kbfs_file_t *f = NULL;
  size_t used = 0, got = 0;
  if (px_kbfs_open_read(d, leaf, 0, &f, NULL) != 0) {
    px_kbfs_close_dir(&d);
    return -1;
  }
  while (used + 1 < cap && px_kbfs_read(f, buf + used, cap - 1 - used, &got) == 0 && got)
    used += got;
  buf[used] = '\0';
  px_kbfs_close(&f);
  px_kbfs_close_dir(&d);
  return (long)used;
}

int kbt_remove(const char *root, const char *rel) {
  const char *leaf;
  px_kbfs_dir_t *d = walk_parent(root, rel, 0, &leaf);
  int rc = px_kbfs_remove(d, leaf);
  px_kbfs_close_dir(&d);
  return rc;
}

int kbt_rename(const char *root, const char *dir_rel, const char *from,
               const char *to) {
  px_kbfs_dir_t *d = kbt_open(root, dir_rel);
  int rc = px_kbfs_rename(d, from, to);
  px_kbfs_close_dir(&d);
  return rc;
}

void kbt_set_meta(const char *root, const char *rel, int64_t mtime_ns,
                  uint32_t perm) {
  const char *leaf;
  px_kbfs_dir_t *d = walk_parent(root, rel, 0, &leaf);
  px_kbfs_file_t *f = NULL;
  ASSERT_OK(px_kbfs_open_read(d, leaf, 1, &f, NULL));
  ASSERT_OK(px_kbfs_set_meta(f, mtime_ns, perm));
  px_kbfs_close(&f);
  px_kbfs_close_dir(&d);
}

int kbt_stat(const char *root, const char *rel, px_kbfs_stat_t *st) {
  const char *leaf;
  px_kbfs_dir_t *d = walk_parent(root, rel, 0, &leaf);
  int rc = px_kbfs_stat_at(d, leaf, st);
  px_kbfs_close_dir(&d);
  return rc;
}

/* --- digest --- */

typedef struct {
  char **lines;
  size_t n, cap;
} lines_t;

static void add_line(lines_t *l, const char *s) {
  ASSERT_OK(
      px_array_reserve(&l->lines, &l->cap, l->n + 1, sizeof *l->lines, 64));
  l->lines[l->n] = px_strdup(s);
  ASSERT_NOT_NULL(l->lines[l->n]);
  l->n++;
}

typedef struct {
  char **names;
  px_kbfs_stat_t *st;
  size_t n, names_cap, st_cap; /* two parallel arrays, a capacity each */
} names_t;

static int collect(void *ctx, const char *name, const px_kbfs_stat_t *st) {
  names_t *n = ctx;
  ASSERT_OK(px_array_reserve(&n->names, &n->names_cap, n->n + 1,
                             sizeof *n->names, 32));
  ASSERT_OK(px_array_reserve(&n->st, &n->st_cap, n->n + 1, sizeof *n->st, 32));
  n->names[n->n] = px_strdup(name);
  n->st[n->n] = *st;
  n->n++;
  return 0;
}

static void hash_file(px_kbfs_dir_t *d, const char *name, char hex[65]) {
  static unsigned char buf[1 << 16];
  px_kbfs_file_t *f = NULL;
  px_sha256_t s;
  unsigned char h[32];
  size_t got;
  ASSERT_OK(px_kbfs_open_read(d, name, 0, &f, NULL));
  px_sha256_init(&s);
  while (px_kbfs_read(f, buf, sizeof buf, &got) == 0 && got)
    px_sha256_update(&s, buf, got);
  px_sha256_final(&s, h);
  px_sha256_hex(h, hex);
  px_kbfs_close(&f);
}

static void digest_dir(px_kbfs_dir_t *d, const char *rel, lines_t *out) {
  names_t n;
  size_t i;
  memset(&n, 0, sizeof n);
  ASSERT_OK(px_kbfs_list(d, collect, &n));
  for (i = 0; i < n.n; i++) {
    char line[2048], hex[65] = "-";
    px_buf_t path = {0};
    px_buf_printf(&path, "%s%s%s", rel, rel[0] ? "/" : "", n.names[i]);
    if (n.st[i].type == PX_KBFS_FILE)
      hash_file(d, n.names[i], hex);
    snprintf(line, sizeof line, "%s %d %llu %o %s", px_buf_cstr(&path),
             (int)n.st[i].type,
             (unsigned long long)(n.st[i].type == PX_KBFS_FILE ? n.st[i].size : 0),
             (unsigned)(n.st[i].type == PX_KBFS_FILE ? n.st[i].perm : 0), hex);
    add_line(out, line);
    if (n.st[i].type == PX_KBFS_DIR) {
      px_kbfs_dir_t *sub = NULL;
      ASSERT_OK(px_kbfs_open_dir(d, n.names[i], &sub));
      digest_dir(sub, px_buf_cstr(&path), out);
      px_kbfs_close_dir(&sub);
    }
    px_buf_free(&path);
    free(n.names[i]);
  }
  free(n.names);
  free(n.st);
}

static int cmp_line(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

char *kbt_digest(const char *root) {
  lines_t l;
  px_buf_t b = {0};
  px_kbfs_dir_t *d = NULL;
  size_t i;
  memset(&l, 0, sizeof l);
  ASSERT_OK(px_kbfs_open_root(root, &d));
  digest_dir(d, "", &l);
  px_kbfs_close_dir(&d);
  if (l.n)
    qsort(l.lines, l.n, sizeof *l.lines, cmp_line);
  for (i = 0; i < l.n; i++) {
    px_buf_printf(&b, "%s\n", l.lines[i]);
    free(l.lines[i]);
  }
  free(l.lines);
  {
    char *text = px_buf_take(&b, NULL);
    return text ? text : px_strdup("");
  }
}

static int count_files(void *ctx, const char *name, const px_kbfs_stat_t *st) {
  (void)name;
  if (st->type == PX_KBFS_FILE)
    ++*(uint64_t *)ctx;
  return 0;
}

typedef struct {
  px_kbfs_dir_t *objects;
  uint64_t n;
} fan_t;

static int count_fan(void *ctx, const char *name, const px_kbfs_stat_t *st) {
  fan_t *f = ctx;
  px_kbfs_dir_t *d = NULL;
  if (st->type != PX_KBFS_DIR)
    return 0;
  ASSERT_OK(px_kbfs_open_dir(f->objects, name, &d));
  ASSERT_OK(px_kbfs_list(d, count_files, &f->n));
  px_kbfs_close_dir(&d);
  return 0;
}

uint64_t kbt_count_objects(const char *store) {
  fan_t f;
  f.n = 0;
  f.objects = kbt_open(store, "objects");
  ASSERT_OK(px_kbfs_list(f.objects, count_fan, &f));
  px_kbfs_close_dir(&f.objects);
  return f.n;
}

/* --- tests of the filesystem layer --- */

TEST_IMPL(kb_fs_basics) {
  kbt_env_t e;
  char buf[64];
  px_kbfs_stat_t st;
  kbt_env_init(&e, "fs");
  kbt_write_str(e.mind, "a/b/c.txt", "hello");
  ASSERT_EQ(kbt_read(e.mind, "a/b/c.txt", buf, sizeof buf), 5);
  ASSERT_STR_EQ(buf, "hello");
  ASSERT_OK(kbt_stat(e.mind, "a/b", &st));
  ASSERT_EQ(st.type, PX_KBFS_DIR);
  ASSERT_OK(kbt_stat(e.mind, "a/b/c.txt", &st));
  ASSERT_EQ(st.type, PX_KBFS_FILE);
  ASSERT_UINT_EQ(st.size, 5);
  /* Replace atomically, then rename and remove. */
  kbt_write_str(e.mind, "a/b/c.txt", "bye");
  ASSERT_EQ(kbt_read(e.mind, "a/b/c.txt", buf, sizeof buf), 3);
  ASSERT_OK(kbt_rename(e.mind, "a/b", "c.txt", "d.txt"));
  ASSERT_EQ(kbt_stat(e.mind, "a/b/c.txt", &st), PX_ENOENT);
  ASSERT_OK(kbt_remove(e.mind, "a/b/d.txt"));
  ASSERT_OK(kbt_remove(e.mind, "a/b"));
  ASSERT_EQ(kbt_stat(e.mind, "a/b", &st), PX_ENOENT);
  /* Names that are not one plain component are refused. */
  {
    px_kbfs_dir_t *d = kbt_open(e.mind, ""), *sub = NULL;
    ASSERT_EQ(px_kbfs_open_dir(d, "..", &sub), PX_EINVAL);
    ASSERT_EQ(px_kbfs_open_dir(d, "a/..", &sub), PX_EINVAL);
    if (px_kbfs_sep() == '\\') /* no alternate data streams */
      ASSERT_EQ(px_kbfs_mkdir(d, "x:stream"), PX_EINVAL);
    px_kbfs_close_dir(&d);
  }
  return 0;
}

TEST_IMPL(kb_fs_readonly_and_unicode) {
  kbt_env_t e;
  px_kbfs_stat_t st;
  char buf[64];
  const char *name = "\xc3\xa9t\xc3\xa9 \xe2\x98\x83 \xf0\x9f\x93\x9a.txt";
  kbt_env_init(&e, "fsro");
  kbt_write_str(e.mind, name, "unicode");
  ASSERT_EQ(kbt_read(e.mind, name, buf, sizeof buf), 7);
  kbt_set_meta(e.mind, name, INT64_C(1600000000000000000), 0444);
  ASSERT_OK(kbt_stat(e.mind, name, &st));
  ASSERT_EQ(st.perm & 0222, 0);
  ASSERT_EQ(st.mtime_ns, INT64_C(1600000000000000000));
  /* A read-only file can be replaced and removed by the KB layer. */
  kbt_write_str(e.mind, name, "again");
  ASSERT_EQ(kbt_read(e.mind, name, buf, sizeof buf), 5);
  kbt_set_meta(e.mind, name, INT64_C(1600000000000000000), 0444);
  ASSERT_OK(kbt_remove(e.mind, name));
  ASSERT_EQ(kbt_stat(e.mind, name, &st), PX_ENOENT);
  return 0;
}
