/* kb_fs_test.h - test helpers of the KB filesystem layer (kb/kb_fs.h):
 * what a job or an attacker does to a KB directory, done through a KB
 * directory handle. One implementation per platform
 * (linux/kb_fs_test.c, win/kb_fs_test.c), linked into the test binaries
 * only: the KB library itself has no test code. */
#ifndef PX_TESTS_SUPPORT_KB_FS_TEST_H
#define PX_TESTS_SUPPORT_KB_FS_TEST_H

#include <stdint.h>

#include "kb/kb_fs.h"

/* Plant links. PX_ENOTSUP where the platform (or Wine) cannot make
 * one. `target` is an absolute host path. */
int px_kbfs_test_symlink(px_kbfs_dir_t *d, const char *name,
                         const char *target, int target_is_dir);
int px_kbfs_test_hardlink(px_kbfs_dir_t *d, const char *name,
                          const char *target);
int px_kbfs_test_junction(px_kbfs_dir_t *d, const char *name,
                          const char *target);
/* chmod entry `name` of d to mode (07777, set-id bits included: what a
 * job can do to its own files), without following a link. PX_ENOTSUP on
 * Windows. */
int px_kbfs_test_set_mode(px_kbfs_dir_t *d, const char *name, uint32_t mode);
/* Open an existing regular file for writing in place (what a job does;
 * tests only: the KB code never writes through an existing name). */
int px_kbfs_test_open_write(px_kbfs_dir_t *d, const char *name, int truncate,
                            px_kbfs_file_t **out);

#endif
