/* collect.c - a Linux job's output files (px_collect.h): the walk below
 * the job directory, by file descriptor, for the collector to judge.
 *
 * Called after the job's processes are gone (px_sandbox.h, collect), as
 * root, on a directory the job controlled: every entry is classified with
 * fstatat(AT_SYMLINK_NOFOLLOW) and opened relative to its parent's fd with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
 * RESOLVE_NO_XDEV) (plain openat with O_NOFOLLOW on kernels before 5.6),
 * O_NONBLOCK so that a FIFO can never block the walk; after the open the
 * fd's own fstat must name the same inode and type, so an entry swapped
 * between the two calls is skipped, never read. Links, special files,
 * files with more than one name and other mounts are listed as skipped by
 * the collector. Entries are visited in name order, so results repeat.
 */
#include "linux_int.h"

#include "px/px_collect.h"
#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* One entry below dirfd, never through a link or onto another mount. */
static int open_beneath(int dirfd, const char *name, int dir) {
  struct open_how how;
  int fd, flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
                  (dir ? O_DIRECTORY : 0);
  memset(&how, 0, sizeof how);
  how.flags = (uint64_t)flags;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
                RESOLVE_NO_XDEV;
  fd = (int)syscall(SYS_openat2, dirfd, name, &how, sizeof how);
  if (fd < 0 && (errno == ENOSYS || errno == E2BIG))
    fd = openat(dirfd, name, flags); /* before 5.6: one component, no-follow */
  return fd;
}

static px_entry_kind_t kind_of(const struct stat *st, dev_t dev) {
  if (S_ISLNK(st->st_mode))
    return PX_ENTRY_LINK;
  if (st->st_dev != dev)
    return PX_ENTRY_OTHER; /* another mount: never walked into */
  if (S_ISDIR(st->st_mode))
    return PX_ENTRY_DIR;
  if (S_ISREG(st->st_mode))
    return st->st_nlink > 1 ? PX_ENTRY_HARDLINK : PX_ENTRY_FILE;
  return PX_ENTRY_OTHER;
}

static int same_inode(int fd, const struct stat *want) {
  struct stat st;
  return fstat(fd, &st) == 0 && st.st_dev == want->st_dev &&
         st.st_ino == want->st_ino &&
         (st.st_mode & S_IFMT) == (want->st_mode & S_IFMT);
}

/* Read at most max bytes of a regular file below dirfd. */
static void read_one(px_collector_t *c, int dirfd, const char *name,
                     const char *rel, const struct stat *st, uint64_t max) {
  unsigned char *buf = NULL;
  size_t got = 0;
  ssize_t n;
  int fd = open_beneath(dirfd, name, 0);
  if (fd < 0 || !same_inode(fd, st)) {
    px_collector_skip(c, rel, (uint64_t)st->st_size,
                      "changed while it was collected");
    if (fd >= 0)
      close(fd);
    return;
  }
  if (max && !(buf = malloc((size_t)max))) {
    close(fd);
    px_collector_skip(c, rel, (uint64_t)st->st_size, "out of memory");
    return;
  }
  while (got < max && (n = read(fd, buf + got, (size_t)max - got)) != 0) {
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      break;
    got += (size_t)n;
  }
  close(fd);
  px_collector_take(c, rel, buf, got);
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of dirfd's entries, sorted; at most `room`. */
static int list_names(int dirfd, size_t room, char ***out, size_t *n,
                      int *cut) {
  DIR *d;
  struct dirent *de;
  size_t cap = 0;
  int fd = dup(dirfd);
  *out = NULL;
  *n = 0;
  *cut = 0;
  if (fd < 0 || !(d = fdopendir(fd))) {
    if (fd >= 0)
      close(fd);
    return PX_LOG_ERRNO(PX_EIO, errno, "fdopendir");
  }
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    if (*n >= room) {
      *cut = 1;
      break;
    }
    if (px_array_reserve(out, &cap, *n + 1, sizeof **out, 64) != 0 ||
        !((*out)[*n] = px_strdup(de->d_name)))
      break;
    (*n)++;
  }
  closedir(d);
  if (*n > 1)
    qsort(*out, *n, sizeof **out, by_name);
  return 0;
}

static void free_names(char **v, size_t n) {
  size_t i;
  for (i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

static int walk(px_collector_t *c, int dirfd, const char *prefix, int depth,
                dev_t dev);

/* One entry: classify, ask the collector, act. 1 to stop the walk. */
static int visit(px_collector_t *c, int dirfd, const char *name,
                 const char *prefix, int depth, dev_t dev) {
  char rel[PX_COLLECT_NAME_MAX + 256];
  struct stat st;
  uint64_t max;
  int sub, stop = 0;
  snprintf(rel, sizeof rel, "%s%s", prefix, name);
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
    return 0; /* gone: nothing runs here, but never fail the walk for it */
  switch (px_collector_visit(c, rel, kind_of(&st, dev), (uint64_t)st.st_size,
                             depth, &max)) {
  case PX_VISIT_STOP:
    return 1;
  case PX_VISIT_READ:
    read_one(c, dirfd, name, rel, &st, max);
    return 0;
  case PX_VISIT_DESCEND:
    if ((sub = open_beneath(dirfd, name, 1)) < 0 || !same_inode(sub, &st)) {
      px_collector_skip(c, rel, 0, "changed while it was collected");
    } else {
      size_t l = strlen(rel); /* rel has room: names are at most 255 */
      rel[l] = '/';
      rel[l + 1] = '\0';
      stop = walk(c, sub, rel, depth + 1, dev);
    }
    if (sub >= 0)
      close(sub);
    return stop;
  default:
    return 0;
  }
}

static int walk(px_collector_t *c, int dirfd, const char *prefix, int depth,
                dev_t dev) {
  char **names;
  size_t n, i;
  int cut, stop = 0;
  if (list_names(dirfd, PX_COLLECT_VISIT_MAX + 1, &names, &n, &cut) != 0) {
    px_collector_stopped(c, "walk: a directory could not be listed");
    return 1;
  }
  for (i = 0; i < n && !stop; i++)
    stop = visit(c, dirfd, names[i], prefix, depth, dev);
  free_names(names, n);
  return stop;
}

int px__lnx_collect(px_sandbox_t *sb, px_collector_t *c) {
  struct stat st;
  int fd;
  if (!sb->job_dir) {
    px_collector_stopped(c, "walk: the job has no directory");
    return 0;
  }
  fd = open(sb->job_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 || fstat(fd, &st) != 0) {
    px_collector_stopped(c, "walk: cannot open the job directory");
    if (fd >= 0)
      close(fd);
    return PX_LOG_ERRNO(PX_EIO, errno, "open(job dir)");
  }
  walk(c, fd, "", 0, st.st_dev);
  close(fd);
  return 0;
}
