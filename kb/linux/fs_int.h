/* fs_int.h (Linux) - what kb/linux/fs.c shares with the KB's test helpers
 * (tests/support/linux/kb_fs_test.c): the handles' insides. Internal to
 * kb/linux and its tests. */
#ifndef PX_KB_LINUX_FS_INT_H
#define PX_KB_LINUX_FS_INT_H

#include <sys/types.h>

#include "kb_fs.h"

struct px_kbfs_dir_s {
  int fd;     /* owned */
  char *path; /* owned, for logs */
  uid_t uid;  /* the KB owner for what we create, 0: leave (set_owner) */
  gid_t gid;
};

struct px_kbfs_file_s {
  int fd;            /* owned */
  px_kbfs_dir_t *dir; /* borrowed: temp files only */
  char tmp[40];      /* temp name, "" for files opened for reading */
};

#endif
