/* kb_fs_test.c (Linux) - the KB filesystem layer's test helpers on Linux
 * (kb_fs_test.h): plant links, chmod, write in place through a KB
 * directory handle. Linked into the test binaries only, never the KB. */
#include "tests/support/kb_fs_test.h"
#include "kb/linux/fs_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "px/px_error.h"

int px_kbfs_test_symlink(px_kbfs_dir_t *d, const char *name,
                         const char *target, int target_is_dir) {
  (void)target_is_dir;
  if (symlinkat(target, d->fd, name) != 0)
    return px_err_from_errno(errno);
  return 0;
}

int px_kbfs_test_hardlink(px_kbfs_dir_t *d, const char *name,
                          const char *target) {
  if (linkat(AT_FDCWD, target, d->fd, name, 0) != 0)
    return px_err_from_errno(errno);
  return 0;
}

int px_kbfs_test_junction(px_kbfs_dir_t *d, const char *name,
                          const char *target) {
  (void)d, (void)name, (void)target;
  return PX_ENOTSUP; /* junctions are a Windows thing */
}

int px_kbfs_test_set_mode(px_kbfs_dir_t *d, const char *name, uint32_t mode) {
  /* fchmodat cannot refuse a link before fchmodat2: the tests never plant
   * one where they chmod. */
  if (fchmodat(d->fd, name, (mode_t)(mode & 07777), 0) != 0)
    return px_err_from_errno(errno);
  return 0;
}

int px_kbfs_test_open_write(px_kbfs_dir_t *d, const char *name, int truncate,
                            px_kbfs_file_t **out) {
  int fd = openat(d->fd, name,
                  O_WRONLY | O_NOFOLLOW | O_CLOEXEC | (truncate ? O_TRUNC : 0));
  *out = NULL;
  if (fd < 0)
    return px_err_from_errno(errno);
  *out = calloc(1, sizeof **out);
  if (!*out) {
    close(fd);
    return PX_ENOMEM;
  }
  (*out)->fd = fd;
  return 0;
}
