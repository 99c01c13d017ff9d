/* filecheck.c (Linux) - open the configuration or a secrets file and check
 * it before trusting it (fail closed).
 *
 * The file is opened once with O_NOFOLLOW (a symlink as the last component
 * is refused: ELOOP) and O_NONBLOCK (a FIFO cannot hang us), and every
 * check is made with fstat on that descriptor; the contents are read from
 * the same descriptor, so nothing can swap the file between the check and
 * the use. Rules: a regular file with one link, owned by root or by the
 * service's effective uid, not writable by group or others, in a directory
 * nobody else may write (unless sticky); a secrets file is also not
 * readable by group or others.
 */
#include "config_int.h"

#include "px/px_error.h"
#include "px/px_fault.h"
#include "px/px_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Test seam (px/px_fault.h; 0 in release builds): 1 when a test armed
 * the site, with errno set to the armed value as the failed call would. */
static int fault(const char *site) {
  int e = px_fault_hit(site);
  if (e == 0)
    return 0;
  errno = e;
  return 1;
}

static int refuse(char *err, size_t errsz, int rc, const char *path,
                  const char *why) {
  if (err && errsz)
    snprintf(err, errsz, "%s: %s", path, why);
  return rc;
}

/* The directory holding path, opened (O_DIRECTORY) and checked: someone
 * who may write it could swap the file between two starts. Owner root or
 * the service user, not writable by group or others unless sticky (then
 * nobody but the owner of our file can replace it). *base receives the
 * last component. An unsafe directory returns PX_EACCES with *dfd_out
 * still open, so the caller can tell "no file" (defaults) from "a file we
 * must not trust". */
static int open_parent(const char *path, int *dfd_out, const char **base,
                       char *err, size_t errsz) {
  char dir[4096];
  const char *slash = strrchr(path, '/');
  struct stat st;
  int dfd;
  *dfd_out = -1;
  if (!slash) {
    snprintf(dir, sizeof dir, ".");
    *base = path;
  } else {
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    if (n >= sizeof dir)
      return refuse(err, errsz, PX_EINVAL, path, "path too long");
    memcpy(dir, path, n);
    dir[n] = '\0';
    *base = slash + 1;
  }
  if (!**base)
    return refuse(err, errsz, PX_EINVAL, path, "not a file name");
  dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return refuse(err, errsz, errno == ENOENT ? PX_ENOENT : PX_EIO, path,
                  errno == ENOENT ? "no such file"
                                  : "cannot open its "
                                    "directory");
  *dfd_out = dfd;
  if (fstat(dfd, &st) != 0 || (st.st_uid != 0 && st.st_uid != geteuid()) ||
      ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)))
    return refuse(err, errsz, PX_EACCES, path,
                  "its directory is writable by others (or not owned by "
                  "root or the service user)");
  return 0;
}

/* The rules on the opened file itself. */
static int check_stat(const struct stat *st, unsigned flags, const char *path,
                      char *err, size_t errsz) {
  if (!S_ISREG(st->st_mode))
    return refuse(err, errsz, PX_EACCES, path, "not a regular file");
  if (fault("config.filecheck_security") ||
      (st->st_uid != 0 && st->st_uid != geteuid()))
    return refuse(err, errsz, PX_EACCES, path,
                  "owner is neither root nor the service user");
  if (st->st_nlink != 1)
    return refuse(err, errsz, PX_EACCES, path,
                  "has other hard links (one could be swapped in)");
  if (st->st_mode & (S_IWGRP | S_IWOTH))
    return refuse(err, errsz, PX_EACCES, path,
                  "writable by group or others (chmod go-w)");
  if ((flags & PX_FILECHECK_SECRET) && (st->st_mode & (S_IRGRP | S_IROTH)))
    return refuse(err, errsz, PX_EACCES, path,
                  "secrets readable by group or others (chmod 600)");
  return 0;
}

/* Open path and check it; *fd_out is the checked descriptor. */
static int open_checked(const char *path, unsigned flags, int *fd_out,
                        char *err, size_t errsz) {
  const char *base = NULL;
  struct stat st;
  int dfd = -1, fd, e, rc;
  *fd_out = -1;
  rc = open_parent(path, &dfd, &base, err, errsz);
  if (dfd < 0)
    return rc;
  if (rc != 0) { /* unsafe directory: refuse, unless there is no file */
    int rc2 =
        faccessat(dfd, base, F_OK, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT
            ? refuse(err, errsz, PX_ENOENT, path, "no such file")
            : rc;
    close(dfd);
    return rc2;
  }
  fd = fault("config.filecheck_open")
           ? -1
           : openat(dfd, base,
                    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  e = errno;
  close(dfd);
  if (fd < 0) {
    if (e == ENOENT)
      return refuse(err, errsz, PX_ENOENT, path, "no such file");
    if (e == ELOOP)
      return refuse(err, errsz, PX_ELOOP, path, "is a symbolic link");
    PX_LOG(PX_LOG_ERROR, "open(%s) failed: errno %d", path, e);
    return refuse(err, errsz, e == EACCES ? PX_EACCES : PX_EIO, path,
                  strerror(e));
  }
  if (fault("config.filecheck_stat") || fstat(fd, &st) != 0)
    rc = refuse(err, errsz, PX_EIO, path, "fstat failed");
  else
    rc = check_stat(&st, flags, path, err, errsz);
  if (rc != 0) {
    close(fd);
    return rc;
  }
  *fd_out = fd;
  return 0;
}

int px_config_check_file(const char *path, unsigned flags, char *err,
                         size_t errsz) {
  int fd = -1, rc = open_checked(path, flags, &fd, err, errsz);
  if (fd >= 0)
    close(fd);
  return rc;
}

int px_config_read_file(const char *path, unsigned flags, size_t max_bytes,
                        char **data, size_t *len, char *err, size_t errsz) {
  char *buf = NULL;
  size_t got = 0;
  ssize_t n;
  int fd = -1, rc;
  *data = NULL;
  *len = 0;
  if ((rc = open_checked(path, flags, &fd, err, errsz)) != 0)
    return rc;
  if (!(buf = malloc(max_bytes + 1))) {
    rc = PX_ENOMEM;
    goto cleanup;
  }
  for (;;) {
    n = fault("config.filecheck_read")
            ? -1
            : read(fd, buf + got, max_bytes + 1 - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      rc = refuse(err, errsz, PX_EIO, path, "read failed");
      goto cleanup;
    }
    if (n == 0)
      break;
    got += (size_t)n;
    if (got > max_bytes) {
      rc = refuse(err, errsz, PX_ERANGE, path, "file too large");
      goto cleanup;
    }
  }
  buf[got] = '\0';
  *data = buf;
  *len = got;
  buf = NULL;
cleanup:
  free(buf);
  close(fd);
  return rc;
}
