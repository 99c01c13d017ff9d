/* test_kb_util.h - helpers for the kb tests: build trees through the KB
 * filesystem layer (so the same code runs natively and under Wine), take
 * a canonical digest of a tree, and open a KB over scratch directories. */
#ifndef PX_TEST_KB_UTIL_H
#define PX_TEST_KB_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "tests/support/kb_fs_test.h" /* and kb/kb_fs.h */
#include "px/px_kb.h"

/* A scratch KB: roots "mind" and "soul", a store, an "outside" dir. */
typedef struct {
  char mind[1024];
  char soul[1024];
  char store[1024];
  char outside[1024];
  px_kb_root_t roots[2];
  px_kb_opts_t opts;
} kbt_env_t;

/* Make fresh scratch dirs under px_test_tmpdir() (tag keeps them apart). */
void kbt_env_init(kbt_env_t *e, const char *tag);
/* Join base and a '/'-separated relative path with the host separator. */
void kbt_join(char *out, size_t cap, const char *base, const char *rel);

/* Write a file (parents created), content given. */
void kbt_write(const char *root, const char *rel, const void *data,
               size_t len);
void kbt_write_str(const char *root, const char *rel, const char *s);
/* Write in place (same inode), optionally truncating first. */
void kbt_write_inplace(const char *root, const char *rel, const char *s,
                       int truncate);
/* Create directories along rel. */
void kbt_mkdirs(const char *root, const char *rel);
/* Read a whole small file into buf (NUL-terminated); returns length or -1. */
long kbt_read(const char *root, const char *rel, char *buf, size_t cap);
/* Remove an entry (file, link, or empty directory). */
int kbt_remove(const char *root, const char *rel);
/* Rename within one directory: dir_rel "" is the root. */
int kbt_rename(const char *root, const char *dir_rel, const char *from,
               const char *to);
/* Set mtime and permissions of a file. */
void kbt_set_meta(const char *root, const char *rel, int64_t mtime_ns,
                  uint32_t perm);
/* Stat without following. 0 or PX_E*. */
int kbt_stat(const char *root, const char *rel, px_kbfs_stat_t *st);
/* Open the directory `rel` of root ("" = root); caller closes. */
px_kbfs_dir_t *kbt_open(const char *root, const char *rel);

/* Canonical text of a tree: one line per entry, sorted, with type, size,
 * permissions and the SHA-256 of file contents. Caller frees. */
char *kbt_digest(const char *root);

/* Objects in the store (files under objects/). */
uint64_t kbt_count_objects(const char *store);

#endif /* PX_TEST_KB_UTIL_H */
