/* jobdir.c - the job directory on the host side: made (a tmpfs of the
 * job's size when root, else a plain directory), the job's files written
 * into it (inside the clone fence, px_fence.h), removed without following
 * a link the job planted; and the check of a job file's relative path.
 * What the job sees of it is mounts.c's.
 *
 * On the host the job dir is work_root/<key>, a size-capped tmpfs mounted
 * by the daemon (so the cap and inode limit hold and removal is one
 * umount: a job's symlinks are never followed), or a disk-backed image
 * (disk.c). Without privilege (user namespace mode) it is a plain
 * directory removed with a no-follow walk. */
#include "linux_int.h"

#include "px/px_error.h"
#include "px/px_fence.h"
#include "px/px_log.h"
#include "px/px_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

int px__lnx_relpath_ok(const char *path) {
  const char *p = path, *slash;
  if (!path || !*path || *path == '/' || strlen(path) > 1024)
    return 0;
  for (;;) {
    size_t len;
    slash = strchr(p, '/');
    len = slash ? (size_t)(slash - p) : strlen(p);
    if (len == 0 || (len == 1 && p[0] == '.') ||
        (len == 2 && p[0] == '.' && p[1] == '.'))
      return 0;
    if (!slash)
      return 1;
    p = slash + 1;
  }
}

/* Remove dir entry `name` of dirfd and everything below it, never
 * following a symlink (a job may have planted any). */
static void rm_tree_at(int parent, const char *name, int depth) {
  int fd;
  DIR *d;
  struct dirent *de;
  if (unlinkat(parent, name, 0) == 0 || errno == ENOENT)
    return;
  if (depth > 64)
    return;
  fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return;
  d = fdopendir(fd);
  if (!d) {
    close(fd);
    return;
  }
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    rm_tree_at(dirfd(d), de->d_name, depth + 1);
  }
  closedir(d);
  unlinkat(parent, name, AT_REMOVEDIR);
}

void px__lnx_jobdir_remove(int root_fd, const char *root_path, const char *key,
                       int mounted) {
  char p[PX_LNX_PATH_MAX];
  if (px_snprintf(p, sizeof p, "%s/%s", root_path, key) != 0)
    return;
  if (mounted && umount2(p, MNT_DETACH | UMOUNT_NOFOLLOW) != 0 &&
      errno != EINVAL)
    PX_LOG(PX_LOG_WARN, "umount2(job dir) failed: errno %d", errno);
  rm_tree_at(root_fd, key, 0);
}

int px__lnx_jobdir_create(int root_fd, const char *root_path, const char *key,
                      uint64_t tmpfs_bytes, int use_tmpfs, uid_t uid,
                      gid_t gid, char **out_path) {
  char p[PX_LNX_PATH_MAX], opts[160];
  if (px_snprintf(p, sizeof p, "%s/%s", root_path, key) != 0)
    return PX_ERANGE;
  if (PX_LNX_INJECTED(PX_STEP_JOB_DIR))
    return PX_LOG_ERRNO(PX_ESANDBOX, EPERM, "mkdir(job dir) [injected]");
  if (mkdirat(root_fd, key, 0700) != 0) {
    if (errno != EEXIST)
      return PX_LOG_ERRNO(PX_ESANDBOX, errno, "mkdirat(job dir)");
    /* A leftover of a crashed daemon: clear it, then start fresh. */
    px__lnx_jobdir_remove(root_fd, root_path, key, 1);
    if (mkdirat(root_fd, key, 0700) != 0)
      return PX_LOG_ERRNO(PX_ESANDBOX, errno, "mkdirat(job dir)");
  }
  if (use_tmpfs) {
    px_snprintf(opts, sizeof opts,
                "size=%" PRIu64 ",nr_inodes=%u,mode=0700,uid=%lu,gid=%lu",
                tmpfs_bytes, PX_LNX_TMPFS_INODES, (unsigned long)uid, (unsigned long)gid);
    if (PX_LNX_INJECTED(PX_STEP_TMPFS) ||
        mount("px-job", p, "tmpfs", MS_NOSUID | MS_NODEV, opts) != 0) {
      int e = errno; /* the mount's, or the injected fault's */
      unlinkat(root_fd, key, AT_REMOVEDIR);
      return PX_LOG_ERRNO(PX_ESANDBOX, e, "mount(tmpfs job dir)");
    }
  } else if (fchownat(root_fd, key, uid, gid, AT_SYMLINK_NOFOLLOW) != 0 &&
             errno != EPERM) {
    return PX_LOG_ERRNO(PX_ESANDBOX, errno, "fchownat(job dir)");
  }
  *out_path = px_strdup(p);
  return *out_path ? 0 : PX_ENOMEM;
}

/* Open (creating) the directory part of `rel` below dirfd. */
static int open_parent(int top, char *rel, char **base, uid_t uid,
                       gid_t gid) {
  int fd = fcntl(top, F_DUPFD_CLOEXEC, 0);
  char *p = rel, *slash;
  while (fd >= 0 && (slash = strchr(p, '/')) != NULL) {
    int next;
    *slash = '\0';
    if (mkdirat(fd, p, 0755) == 0)
      fchownat(fd, p, uid, gid, AT_SYMLINK_NOFOLLOW);
    next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(fd);
    fd = next;
    *slash = '/';
    p = slash + 1;
  }
  *base = p;
  return fd;
}

/* All of f's data to fd. */
static int write_data(int fd, const px_job_file_t *f) {
  size_t off = 0;
  while (off < f->len) {
    ssize_t n = write(fd, f->data + off, f->len - off);
    if (n <= 0)
      return PX_LOG_ERRNO(errno == ENOSPC ? PX_ENOSPC : PX_EIO,
                          n < 0 ? errno : EIO, "write(job file)");
    off += (size_t)n;
  }
  return 0;
}

/* One job file, inside the fence (px_fence.h): no process cloned meanwhile
 * holds its write descriptor when the job executes it. */
static int write_one(int top, const px_job_file_t *f, int exec, uid_t uid,
                     gid_t gid) {
  char rel[1100];
  char *base;
  int pfd, fd, rc;
  if (!px__lnx_relpath_ok(f->path) || px_strlcpy(rel, f->path, sizeof rel) != 0)
    return PX_EINVAL;
  pfd = open_parent(top, rel, &base, uid, gid);
  if (pfd < 0)
    return PX_LOG_ERRNO(PX_ESANDBOX, errno, "openat(job subdir)");
  px_fence_write_begin();
  fd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              exec ? 0755 : 0644);
  close(pfd);
  if (fd < 0) {
    px_fence_write_end();
    return PX_LOG_ERRNO(PX_ESANDBOX, errno, "openat(job file)");
  }
  rc = write_data(fd, f);
  if (rc == 0 && fchown(fd, uid, gid) != 0 && errno != EPERM)
    rc = PX_LOG_ERRNO(PX_ESANDBOX, errno, "fchown(job file)");
  close(fd);
  px_fence_write_end();
  return rc;
}

int px__lnx_jobdir_write(const char *dir, const px_job_file_t *files, size_t n,
                     int first_exec, uid_t uid, gid_t gid) {
  size_t i;
  int dfd, rc = 0;
  if (PX_LNX_INJECTED(PX_STEP_FILES))
    return PX_LOG_ERRNO(PX_ESANDBOX, EPERM, "write(job files) [injected]");
  dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0)
    return PX_LOG_ERRNO(PX_ESANDBOX, errno, "open(job dir)");
  for (i = 0; rc == 0 && i < n; i++)
    rc = write_one(dfd, &files[i], i == 0 && first_exec, uid, gid);
  close(dfd);
  return rc;
}
