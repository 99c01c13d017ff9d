/* kb_bench.c - how much a KB snapshot and a rollback cost, measured
 * against a plain recursive copy of the same KB (printed, never asserted).
 *
 *   px_bench_kb [--files N] [--mb M] [--rounds R] [--dir PATH]
 * Defaults: 10,000 files, 200 MB, 5 rounds, ./kb-bench (created, then
 * removed). Quick run: --files 1000 --mb 20.
 *
 * Measured (median of R rounds, min and max beside it):
 *   copy        read every file and write it elsewhere (stdio, no fsync)
 *   first       snapshot into an empty store (hash, copy, fsync objects)
 *   unchanged   snapshot of the unchanged KB (stat only)
 *   reader      a kb:read job's hooks around a job (snapshot, unchanged;
 *               the diff of its finish)
 *   writer      a kb:write job's: the same plus the two sweeps (issue 24:
 *               set-id bits, owners, growth caps) before and after
 *   restore-0   rollback when nothing changed (walk + verify)
 *   restore-1   rollback after 1 file changed
 *   restore-K   rollback after K files changed (K = 1,000 or files/10)
 * Everything runs warm (the page cache holds the KB), the copy included.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb/kb_fs.h"
#include "px/px_error.h"
#include "px/px_kb.h"
#include "px/px_os.h"
#include "px/px_util.h"

#define PER_DIR 100
#define MAX_ROUNDS 50

typedef struct {
  unsigned files;
  unsigned mb;
  unsigned rounds;
  const char *dir;
  char kb[1024], store[1024], copy[1024];
} opts_t;

static void die(const char *what, int rc) {
  fprintf(stderr, "kb_bench: %s: %s\n", what, px_strerror(rc));
  exit(1);
}

static void join(char *out, size_t cap, const char *a, const char *b) {
  snprintf(out, cap, "%s%c%s", a, px_kbfs_sep(), b);
}

static px_kbfs_dir_t *open_path(const char *path) {
  px_kbfs_dir_t *d = NULL;
  int rc = px_kbfs_open_root(path, &d);
  if (rc)
    die(path, rc);
  return d;
}

static void mkdir_in(const char *parent, const char *name) {
  px_kbfs_dir_t *d = open_path(parent);
  int rc = px_kbfs_mkdir(d, name);
  if (rc && rc != PX_EEXIST)
    die("mkdir", rc);
  px_kbfs_close_dir(&d);
}

/* Remove everything below d (a scratch tree of our own). */
static int rm_entry(void *ctx, const char *name, const px_kbfs_stat_t *st);
static void rm_tree_in(px_kbfs_dir_t *d) {
  int rc = px_kbfs_list(d, rm_entry, d);
  if (rc)
    die("list", rc);
}
static int rm_entry(void *ctx, const char *name, const px_kbfs_stat_t *st) {
  px_kbfs_dir_t *d = ctx, *sub = NULL;
  if (st->type == PX_KBFS_DIR && px_kbfs_open_dir(d, name, &sub) == 0) {
    rm_tree_in(sub);
    px_kbfs_close_dir(&sub);
  }
  return px_kbfs_remove(d, name) == 0 ? 0 : 0; /* best effort */
}
static void rm_tree(const char *parent, const char *name) {
  px_kbfs_dir_t *d = open_path(parent), *sub = NULL;
  if (px_kbfs_open_dir(d, name, &sub) == 0) {
    rm_tree_in(sub);
    px_kbfs_close_dir(&sub);
    px_kbfs_remove(d, name);
  }
  px_kbfs_close_dir(&d);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static void write_file(px_kbfs_dir_t *d, const char *name, size_t size,
                       unsigned char *buf) {
  px_kbfs_file_t *f = NULL;
  size_t i;
  int rc;
  for (i = 0; i + 8 <= size; i += 8) {
    uint64_t r = rng();
    memcpy(buf + i, &r, 8);
  }
  for (; i < size; i++)
    buf[i] = (unsigned char)rng();
  rc = px_kbfs_create_temp(d, &f);
  if (rc == 0)
    rc = px_kbfs_write(f, buf, size);
  if (rc == 0)
    rc = px_kbfs_commit(&f, name);
  if (rc)
    die("write", rc);
}

static void make_kb(const opts_t *o, size_t fsize, unsigned char *buf) {
  px_kbfs_dir_t *root = open_path(o->kb), *d = NULL;
  unsigned i;
  for (i = 0; i < o->files; i++) {
    char name[32];
    if (i % PER_DIR == 0) {
      px_kbfs_close_dir(&d);
      snprintf(name, sizeof name, "d%04u", i / PER_DIR);
      px_kbfs_mkdir(root, name);
      if (px_kbfs_open_dir(root, name, &d) != 0)
        die("open dir", PX_EIO);
    }
    snprintf(name, sizeof name, "f%06u.dat", i);
    write_file(d, name, fsize, buf);
  }
  px_kbfs_close_dir(&d);
  px_kbfs_close_dir(&root);
}

/* Change `n` files, spread over the KB. */
static void change_files(const opts_t *o, unsigned n, size_t fsize,
                         unsigned char *buf) {
  px_kbfs_dir_t *root = open_path(o->kb), *d = NULL;
  unsigned k, step = o->files / n ? o->files / n : 1;
  for (k = 0; k < n; k++) {
    unsigned i = (k * step) % o->files;
    char dn[32], fn[32];
    snprintf(dn, sizeof dn, "d%04u", i / PER_DIR);
    snprintf(fn, sizeof fn, "f%06u.dat", i);
    if (px_kbfs_open_dir(root, dn, &d) != 0)
      die("open dir", PX_EIO);
    write_file(d, fn, fsize, buf);
    px_kbfs_close_dir(&d);
  }
  px_kbfs_close_dir(&root);
}

/* --- the plain copy: list with kb_fs, copy bytes with stdio --- */

typedef struct {
  const char *src, *dst;
  unsigned char *buf;
} copy_t;

static void copy_tree(const char *src, const char *dst, unsigned char *buf);

static int copy_entry(void *ctx, const char *name, const px_kbfs_stat_t *st) {
  copy_t *c = ctx;
  char s[1024], t[1024];
  join(s, sizeof s, c->src, name);
  join(t, sizeof t, c->dst, name);
  if (st->type == PX_KBFS_DIR) {
    mkdir_in(c->dst, name);
    copy_tree(s, t, c->buf);
  } else if (st->type == PX_KBFS_FILE) {
    FILE *in = fopen(s, "rb"), *out = fopen(t, "wb");
    size_t n;
    if (!in || !out)
      die("fopen", PX_EIO);
    while ((n = fread(c->buf, 1, 1 << 20, in)) > 0)
      if (fwrite(c->buf, 1, n, out) != n)
        die("fwrite", PX_EIO);
    fclose(in);
    if (fclose(out) != 0)
      die("fclose", PX_EIO);
  }
  return 0;
}

static void copy_tree(const char *src, const char *dst, unsigned char *buf) {
  copy_t c;
  px_kbfs_dir_t *d = open_path(src);
  c.src = src, c.dst = dst, c.buf = buf;
  px_kbfs_list(d, copy_entry, &c);
  px_kbfs_close_dir(&d);
}

/* --- timing --- */

typedef struct {
  const char *name;
  double ms[MAX_ROUNDS];
  unsigned n;
} row_t;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(row_t *r) {
  qsort(r->ms, r->n, sizeof r->ms[0], cmp_double);
  return r->n % 2 ? r->ms[r->n / 2]
                  : (r->ms[r->n / 2 - 1] + r->ms[r->n / 2]) / 2;
}

static double ms_since(uint64_t t0) {
  return (double)(px_now_ns() - t0) / 1e6;
}

static px_kb_t *open_kb(const opts_t *o) {
  px_kb_root_t root;
  px_kb_opts_t ko;
  px_kb_t *kb = NULL;
  int rc;
  root.name = "mind";
  root.path = o->kb;
  px_kb_opts_default(&ko);
  ko.roots = &root;
  ko.nroots = 1;
  ko.store = o->store;
  ko.keep = 1000;
  rc = px_kb_open(&ko, &kb);
  if (rc)
    die("px_kb_open", rc);
  return kb;
}

static void timed_restore(px_kb_t *kb, row_t *row, const char *what) {
  px_kb_result_t r;
  uint64_t t0 = px_now_ns();
  int rc = px_kb_restore(kb, NULL, &r);
  row->ms[row->n++] = ms_since(t0);
  if (rc || !r.verified)
    die(what, rc ? rc : PX_EINTEGRITY);
  px_kb_result_free(&r);
}

static void parse(int argc, char **argv, opts_t *o) {
  int i;
  o->files = 10000, o->mb = 200, o->rounds = 5, o->dir = "kb-bench";
  for (i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--files") == 0)
      o->files = (unsigned)strtoul(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--mb") == 0)
      o->mb = (unsigned)strtoul(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--rounds") == 0)
      o->rounds = (unsigned)strtoul(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--dir") == 0)
      o->dir = argv[i + 1];
    else
      break;
  }
  if (i < argc || !o->files || !o->rounds || o->rounds > MAX_ROUNDS) {
    fprintf(stderr, "usage: px_bench_kb [--files N] [--mb M] [--rounds R "
                    "(1-%d)] [--dir PATH]\n", MAX_ROUNDS);
    exit(2);
  }
}

/* Ratios against the copy's median and against its fastest round. */
static void print_row(row_t *r, double copy_med, double copy_min) {
  double med = median(r);
  printf("%-22s %10.1f %10.1f %10.1f %9.1f%% %9.1f%%\n", r->name, med,
         r->ms[0], r->ms[r->n - 1], 100.0 * med / copy_med,
         100.0 * med / copy_min);
}

int main(int argc, char **argv) {
  opts_t o;
  row_t copy = {"copy (plain, no fsync)", {0}, 0};
  row_t first = {"snapshot, first", {0}, 0};
  row_t unchanged = {"snapshot, unchanged", {0}, 0};
  row_t reader = {"reader hooks, no change", {0}, 0};
  row_t writer = {"writer hooks, no change", {0}, 0};
  row_t r0 = {"rollback, 0 changed", {0}, 0};
  row_t r1 = {"rollback, 1 changed", {0}, 0};
  row_t rk = {"rollback, K changed", {0}, 0};
  static char rk_name[48];
  unsigned char *buf = malloc(1 << 20);
  size_t fsize;
  unsigned i, k;
  double copy_ms;
  px_kb_t *kb;
  parse(argc, argv, &o);
  fsize = (size_t)((uint64_t)o.mb * 1024 * 1024 / o.files);
  if (!buf || fsize > (1u << 20))
    die("file size must be 1 MiB at most", PX_EINVAL);
  k = o.files >= 10000 ? 1000 : (o.files / 10 ? o.files / 10 : 1);
  snprintf(rk_name, sizeof rk_name, "rollback, %u changed", k);
  rk.name = rk_name;
  mkdir_in(".", o.dir);
  join(o.kb, sizeof o.kb, o.dir, "kb");
  mkdir_in(o.dir, "kb");
  printf("kb_bench: %u files of %zu bytes (%u MB) in %u dirs, %u rounds\n",
         o.files, fsize, o.mb, (o.files + PER_DIR - 1) / PER_DIR, o.rounds);
  make_kb(&o, fsize, buf);
  for (i = 0; i < o.rounds; i++) {
    uint64_t t0;
    rm_tree(o.dir, "copy");
    mkdir_in(o.dir, "copy");
    join(o.copy, sizeof o.copy, o.dir, "copy");
    t0 = px_now_ns();
    copy_tree(o.kb, o.copy, buf);
    copy.ms[copy.n++] = ms_since(t0);
  }
  rm_tree(o.dir, "copy");
  for (i = 0; i < o.rounds && i < 3; i++) { /* each into an empty store */
    char name[16];
    uint64_t t0;
    snprintf(name, sizeof name, "store%u", i);
    rm_tree(o.dir, name);
    mkdir_in(o.dir, name);
    join(o.store, sizeof o.store, o.dir, name);
    kb = open_kb(&o);
    t0 = px_now_ns();
    if (px_kb_snapshot(kb, NULL) != 0)
      die("first snapshot", PX_EIO);
    first.ms[first.n++] = ms_since(t0);
    if (i + 1 < o.rounds && i + 1 < 3) {
      px_kb_close(&kb);
      rm_tree(o.dir, name);
    }
  }
  for (i = 0; i < o.rounds; i++) {
    px_kb_stats_t s0, s1;
    uint64_t t0;
    px_kb_get_stats(kb, &s0);
    t0 = px_now_ns();
    if (px_kb_snapshot(kb, NULL) != 0)
      die("snapshot", PX_EIO);
    unchanged.ms[unchanged.n++] = ms_since(t0);
    px_kb_get_stats(kb, &s1);
    if (s1.files_hashed != s0.files_hashed)
      fprintf(stderr, "kb_bench: unchanged snapshot hashed %llu files\n",
              (unsigned long long)(s1.files_hashed - s0.files_hashed));
  }
  /* A kb:write job's snapshot + finish around nothing (the sweeps before
   * and after it, issue 24, are the difference from "unchanged"). */
  for (i = 0; i < 2 * o.rounds; i++) {
    px_kb_hooks_t h = px_kb_hooks(kb);
    px_job_spec_t spec;
    px_kb_result_t res;
    row_t *row = i % 2 ? &writer : &reader;
    void *snap = NULL;
    uint64_t t0;
    memset(&spec, 0, sizeof spec);
    spec.caps = i % 2 ? PX_CAP_KB_WRITE : PX_CAP_KB_READ;
    t0 = px_now_ns();
    if (h.snapshot(h.ctx, &spec, &snap) != 0)
      die("hook snapshot", PX_EIO);
    h.finish(h.ctx, snap, 0, &res);
    row->ms[row->n++] = ms_since(t0);
    px_kb_result_free(&res);
  }
  /* As the engine does it: snapshot before the "job", the job changes
   * files, then the rollback (timed). */
  for (i = 0; i < o.rounds; i++) {
    if (px_kb_snapshot(kb, NULL) != 0)
      die("snapshot", PX_EIO);
    timed_restore(kb, &r0, "rollback 0");
    if (px_kb_snapshot(kb, NULL) != 0)
      die("snapshot", PX_EIO);
    change_files(&o, 1, fsize, buf);
    timed_restore(kb, &r1, "rollback 1");
    if (px_kb_snapshot(kb, NULL) != 0)
      die("snapshot", PX_EIO);
    change_files(&o, k, fsize, buf);
    timed_restore(kb, &rk, "rollback K");
  }
  copy_ms = median(&copy);
  printf("\n%-22s %10s %10s %10s %10s %10s\n", "operation", "median ms",
         "min ms", "max ms", "/copy med", "/copy min");
  print_row(&copy, copy_ms, copy.ms[0]);
  print_row(&first, copy_ms, copy.ms[0]);
  print_row(&unchanged, copy_ms, copy.ms[0]);
  print_row(&reader, copy_ms, copy.ms[0]);
  print_row(&writer, copy_ms, copy.ms[0]);
  print_row(&r0, copy_ms, copy.ms[0]);
  print_row(&r1, copy_ms, copy.ms[0]);
  print_row(&rk, copy_ms, copy.ms[0]);
  printf("\nrollback, %u changed / rollback, 1 changed: %.1fx "
         "(minus the 0-changed walk: %.1f ms vs %.1f ms)\n",
         k, median(&rk) / median(&r1), median(&rk) - median(&r0),
         median(&r1) - median(&r0));
  px_kb_close(&kb);
  rm_tree(".", o.dir);
  free(buf);
  return 0;
}
