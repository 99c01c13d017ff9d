/* landlock.c - Landlock rules for a job, applied by the child after
 * pivot_root and before seccomp.
 *
 * DESIGN
 * Raw system calls (glibc has no wrappers; Debian 12's headers stop at ABI
 * 2, so the newer constants live here). The ABI is read once at open; each
 * job handles every access right its ABI knows, then allows:
 *   - read, read-dir and execute beneath "/" (everything mounted is ro);
 *   - all file rights beneath each rw rule (the job dir with fs:write_tmp,
 *     KB roots with kb:write) and write on /dev (null, zero...);
 *   - ABI >= 4, with net:egress (the host's network): TCP bind denied, so
 *     no listening sockets (UDP is not covered by Landlock). Without it the
 *     job's own network namespace, with only loopback, is the control: a
 *     server and its client inside one job must work;
 *   - ABI >= 6: abstract UNIX sockets and signals scoped to the job.
 * Everything here is async-signal-safe (the child of a threaded parent).
 */
#include "linux_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif

/* ABI 3-6 rights (newer than this system's headers). */
#define LL_FS_TRUNCATE (1ULL << 14)   /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15)  /* ABI 5 */
#define LL_NET_BIND_TCP (1ULL << 0)   /* ABI 4 */
#define LL_SCOPE_ABSTRACT_UNIX (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)

struct ll_ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

#define LL_READ                                                              \
  (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE |               \
   LANDLOCK_ACCESS_FS_READ_DIR)

int px__lnx_landlock_abi(void) {
  long abi = syscall(__NR_landlock_create_ruleset, NULL, 0,
                     LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : (int)abi;
}

static uint64_t fs_rights(int abi) {
  uint64_t r = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1; /* ABI 1: bits 0-12 */
  if (abi >= 2)
    r |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3)
    r |= LL_FS_TRUNCATE;
  if (abi >= 5)
    r |= LL_FS_IOCTL_DEV;
  return r;
}

static int add_path(int ruleset, const char *path, uint64_t access) {
  struct landlock_path_beneath_attr pb;
  int fd = open(path, O_PATH | O_CLOEXEC);
  long rc;
  if (fd < 0)
    return -errno;
  pb.allowed_access = access;
  pb.parent_fd = fd;
  rc = syscall(__NR_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH,
               &pb, 0);
  if (rc != 0)
    rc = -errno;
  close(fd);
  return (int)rc;
}

int px__lnx_landlock_apply(int abi, const px__lnx_ll_rule_t *rules, size_t n,
                       int egress) {
  struct ll_ruleset_attr attr;
  size_t attr_size = sizeof(uint64_t);
  uint64_t all = fs_rights(abi);
  int rs, rc = 0;
  size_t i;

  memset(&attr, 0, sizeof attr);
  attr.handled_access_fs = all;
  if (abi >= 4 && egress) {
    attr.handled_access_net = LL_NET_BIND_TCP;
    attr_size = 2 * sizeof(uint64_t);
  }
  if (abi >= 6) {
    attr_size = 3 * sizeof(uint64_t);
    attr.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
  }
  rs = (int)syscall(__NR_landlock_create_ruleset, &attr, attr_size, 0);
  if (rs < 0)
    return -errno;
  rc = add_path(rs, "/", LL_READ);
  /* /dev: programs open /dev/null and friends for writing. */
  if (rc == 0)
    rc = add_path(rs, "/dev",
                  LL_READ | LANDLOCK_ACCESS_FS_WRITE_FILE |
                      (abi >= 3 ? LL_FS_TRUNCATE : 0) |
                      (abi >= 5 ? LL_FS_IOCTL_DEV : 0));
  for (i = 0; rc == 0 && i < n; i++)
    rc = add_path(rs, rules[i].path,
                  rules[i].rw ? all & ~(uint64_t)LL_FS_IOCTL_DEV : LL_READ);
  if (rc == 0 && syscall(__NR_landlock_restrict_self, rs, 0) != 0)
    rc = -errno;
  close(rs);
  return rc;
}
