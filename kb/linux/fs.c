/* fs.c (Linux) - the KB filesystem layer on *at() calls.
 *
 * Every directory is an O_DIRECTORY|O_NOFOLLOW descriptor and every entry
 * is reached from its parent descriptor, so a symlink planted anywhere in a
 * KB root is seen as a symlink and never traversed. Files are opened with
 * O_NOFOLLOW|O_NONBLOCK (a planted fifo must not block us) and checked
 * with fstat to be regular files before use.
 */
#include "kb_fs.h"
#include "linux/fs_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_os.h"
#include "px/px_util.h"

static int valid_name(const char *name) {
  return name && name[0] && strcmp(name, ".") != 0 &&
         strcmp(name, "..") != 0 && !strchr(name, '/');
}

static int64_t ts_ns(struct timespec t) {
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void fill_stat(const struct stat *s, px_kbfs_stat_t *st) {
  memset(st, 0, sizeof *st);
  if (S_ISREG(s->st_mode))
    st->type = PX_KBFS_FILE;
  else if (S_ISDIR(s->st_mode))
    st->type = PX_KBFS_DIR;
  else if (S_ISLNK(s->st_mode))
    st->type = PX_KBFS_LINK;
  else
    st->type = PX_KBFS_OTHER;
  st->size = (uint64_t)s->st_size;
  st->mtime_ns = ts_ns(s->st_mtim);
  st->ctime_ns = ts_ns(s->st_ctim);
  st->dev = (uint64_t)s->st_dev;
  st->ino = (uint64_t)s->st_ino;
  st->nlink = (uint32_t)s->st_nlink;
  st->perm = (uint32_t)(s->st_mode & 07777);
  st->uid = (uint32_t)s->st_uid;
  st->gid = (uint32_t)s->st_gid;
}

#define SETID_BITS ((uint32_t)(S_ISUID | S_ISGID))

static int new_dir(int fd, const char *parent, const char *name,
                   px_kbfs_dir_t **out) {
  px_kbfs_dir_t *d = calloc(1, sizeof *d);
  px_buf_t b = {0};
  if (!d || px_buf_printf(&b, "%s%s%s", parent, name ? "/" : "",
                          name ? name : "") != 0) {
    free(d);
    px_buf_free(&b);
    close(fd);
    return PX_ENOMEM;
  }
  d->fd = fd;
  d->path = px_buf_take(&b, NULL);
  *out = d;
  return 0;
}

int px_kbfs_open_root(const char *path, px_kbfs_dir_t **out) {
  int fd;
  *out = NULL;
  /* The path comes from the config (trusted); only its last component is
   * checked to be a real directory. */
  fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (e == ELOOP)
      return PX_ELOOP;
    if (e == ENOENT)
      return PX_ENOENT;
    return PX_LOG_ERRNO(px_err_from_errno(e), e, "open(kb root)");
  }
  return new_dir(fd, path, NULL, out);
}

int px_kbfs_open_dir(px_kbfs_dir_t *parent, const char *name,
                     px_kbfs_dir_t **out) {
  int fd, rc;
  *out = NULL;
  if (!valid_name(name))
    return PX_EINVAL;
  fd = openat(parent->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (e == ELOOP)
      return PX_ELOOP; /* a symlink: never traversed */
    if (e == ENOTDIR) {
      struct stat s;
      if (fstatat(parent->fd, name, &s, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(s.st_mode))
        return PX_ELOOP;
      return PX_EINVAL;
    }
    if (e == ENOENT)
      return PX_ENOENT;
    return PX_LOG_ERRNO(px_err_from_errno(e), e, "openat(dir)");
  }
  rc = new_dir(fd, parent->path, name, out);
  if (rc == 0)
    px_kbfs_dir_set_owner(*out, (uint32_t)parent->uid, (uint32_t)parent->gid);
  return rc;
}

void px_kbfs_dir_set_owner(px_kbfs_dir_t *d, uint32_t uid, uint32_t gid) {
  /* Only root can give files away; a daemon in user-namespace mode maps
   * its jobs to its own uid, which owns what it creates anyway. */
  d->uid = geteuid() == 0 ? (uid_t)uid : 0;
  d->gid = geteuid() == 0 ? (gid_t)gid : 0;
}

/* Give what fd is to the KB owner of d (when one is set). */
static int give_to_owner(const px_kbfs_dir_t *d, int fd, const char *what) {
  if (d->uid == 0 || fchown(fd, d->uid, d->gid) == 0)
    return 0;
  return PX_LOG_ERRNO(px_err_from_errno(errno), errno, what);
}

void px_kbfs_close_dir(px_kbfs_dir_t **d) {
  if (!d || !*d)
    return;
  if ((*d)->fd >= 0)
    close((*d)->fd);
  free((*d)->path);
  free(*d);
  *d = NULL;
}

const char *px_kbfs_dir_path(const px_kbfs_dir_t *d) {
  return d->path;
}

int px_kbfs_dir_stat(px_kbfs_dir_t *d, px_kbfs_stat_t *st) {
  struct stat s;
  if (fstat(d->fd, &s) != 0)
    return PX_LOG_ERRNO(px_err_from_errno(errno), errno, "fstat(dir)");
  fill_stat(&s, st);
  return 0;
}

int px_kbfs_list(px_kbfs_dir_t *d, px_kbfs_list_fn fn, void *ctx) {
  DIR *dir;
  struct dirent *de;
  int fd, rc = 0;
  /* fdopendir takes the descriptor: give it a fresh one that reads from
   * the start of the directory. */
  fd = openat(d->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return PX_LOG_ERRNO(px_err_from_errno(errno), errno, "openat(.)");
  dir = fdopendir(fd);
  if (!dir) {
    int e = errno;
    close(fd);
    return PX_LOG_ERRNO(px_err_from_errno(e), e, "fdopendir");
  }
  for (;;) {
    struct stat s;
    px_kbfs_stat_t st;
    errno = 0;
    de = readdir(dir);
    if (!de) {
      if (errno)
        rc = PX_LOG_ERRNO(px_err_from_errno(errno), errno, "readdir");
      break;
    }
    if (!valid_name(de->d_name))
      continue;
    if (fstatat(d->fd, de->d_name, &s, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT)
        continue; /* gone meanwhile */
      rc = PX_LOG_ERRNO(px_err_from_errno(errno), errno, "fstatat");
      break;
    }
    fill_stat(&s, &st);
    rc = fn(ctx, de->d_name, &st);
    if (rc)
      break;
  }
  closedir(dir);
  return rc;
}

int px_kbfs_stat_at(px_kbfs_dir_t *d, const char *name, px_kbfs_stat_t *st) {
  struct stat s;
  if (!valid_name(name))
    return PX_EINVAL;
  if (fstatat(d->fd, name, &s, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT)
      return PX_ENOENT;
    return PX_LOG_ERRNO(px_err_from_errno(errno), errno, "fstatat");
  }
  fill_stat(&s, st);
  return 0;
}

int px_kbfs_open_read(px_kbfs_dir_t *d, const char *name, int meta,
                      px_kbfs_file_t **out, px_kbfs_stat_t *st) {
  px_kbfs_file_t *f;
  struct stat s;
  int fd;
  (void)meta; /* the owner may futimens/fchmod a read-only descriptor */
  *out = NULL;
  if (!valid_name(name))
    return PX_EINVAL;
  fd = openat(d->fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (e == ELOOP)
      return PX_ELOOP;
    if (e == ENOENT)
      return PX_ENOENT;
    return PX_LOG_ERRNO(px_err_from_errno(e), e, "openat(read)");
  }
  if (fstat(fd, &s) != 0 || !S_ISREG(s.st_mode)) {
    close(fd);
    return PX_EINVAL;
  }
  f = calloc(1, sizeof *f);
  if (!f) {
    close(fd);
    return PX_ENOMEM;
  }
  f->fd = fd;
  if (st)
    fill_stat(&s, st);
  *out = f;
  return 0;
}

int px_kbfs_create_temp(px_kbfs_dir_t *d, px_kbfs_file_t **out) {
  px_kbfs_file_t *f;
  int i;
  *out = NULL;
  f = calloc(1, sizeof *f);
  if (!f)
    return PX_ENOMEM;
  f->fd = -1;
  for (i = 0; i < 16 && f->fd < 0; i++) {
    unsigned char r[8];
    if (px_random_bytes(r, sizeof r) != 0)
      break;
    snprintf(f->tmp, sizeof f->tmp, ".px-kb-tmp-%02x%02x%02x%02x%02x%02x%02x%02x",
             r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
    f->fd = openat(d->fd, f->tmp,
                   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (f->fd < 0 && errno != EEXIST) {
      int e = errno;
      free(f);
      return PX_LOG_ERRNO(px_err_from_errno(e), e, "openat(temp)");
    }
  }
  if (f->fd < 0) {
    free(f);
    return PX_EEXIST;
  }
  f->dir = d;
  {
    int rc = give_to_owner(d, f->fd, "fchown(temp)");
    if (rc) {
      px_kbfs_abort(&f);
      return rc;
    }
  }
  *out = f;
  return 0;
}

int px_kbfs_read(px_kbfs_file_t *f, void *buf, size_t cap, size_t *got) {
  for (;;) {
    ssize_t n = read(f->fd, buf, cap);
    if (n >= 0) {
      *got = (size_t)n;
      return 0;
    }
    if (errno != EINTR)
      return PX_LOG_ERRNO(px_err_from_errno(errno), errno, "read");
  }
}

int px_kbfs_write(px_kbfs_file_t *f, const void *buf, size_t len) {
  const char *p = buf;
  while (len) {
    ssize_t n = write(f->fd, p, len);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return PX_LOG_ERRNO(px_err_from_errno(errno), errno, "write");
    }
    p += n, len -= (size_t)n;
  }
  return 0;
}

int px_kbfs_fstat(px_kbfs_file_t *f, px_kbfs_stat_t *st) {
  struct stat s;
  if (fstat(f->fd, &s) != 0)
    return PX_LOG_ERRNO(px_err_from_errno(errno), errno, "fstat");
  fill_stat(&s, st);
  return 0;
}

int px_kbfs_set_meta(px_kbfs_file_t *f, int64_t mtime_ns, uint32_t perm) {
  struct timespec ts[2];
  ts[0].tv_sec = 0;
  ts[0].tv_nsec = UTIME_OMIT; /* atime: leave */
  ts[1].tv_sec = (time_t)(mtime_ns / 1000000000);
  ts[1].tv_nsec = (long)(mtime_ns % 1000000000);
  if (ts[1].tv_nsec < 0) {
    ts[1].tv_nsec += 1000000000;
    ts[1].tv_sec -= 1;
  }
  /* Never a set-id bit: a KB file is data, and a set-id file on the
   * host is a privilege for whoever can run it (issue 24). */
  if (fchmod(f->fd, (mode_t)(perm & 07777 & ~SETID_BITS)) != 0)
    return PX_LOG_ERRNO(px_err_from_errno(errno), errno, "fchmod");
  if (futimens(f->fd, ts) != 0)
    return PX_LOG_ERRNO(px_err_from_errno(errno), errno, "futimens");
  return 0;
}

int px_kbfs_commit(px_kbfs_file_t **fp, const char *name) {
  px_kbfs_file_t *f = *fp;
  int rc = 0;
  if (!valid_name(name)) {
    px_kbfs_abort(fp);
    return PX_EINVAL;
  }
  if (fsync(f->fd) != 0)
    rc = PX_LOG_ERRNO(px_err_from_errno(errno), errno, "fsync");
  /* renameat replaces the directory entry `name` itself: a symlink or hard
   * link there is unlinked, its target never opened. */
  if (rc == 0 && renameat(f->dir->fd, f->tmp, f->dir->fd, name) != 0)
    rc = PX_LOG_ERRNO(px_err_from_errno(errno), errno, "renameat");
  if (rc) {
    px_kbfs_abort(fp);
    return rc;
  }
  close(f->fd);
  free(f);
  *fp = NULL;
  return 0;
}

void px_kbfs_abort(px_kbfs_file_t **fp) {
  px_kbfs_file_t *f = fp ? *fp : NULL;
  if (!f)
    return;
  if (f->fd >= 0)
    close(f->fd);
  if (f->tmp[0] && f->dir)
    unlinkat(f->dir->fd, f->tmp, 0);
  free(f);
  *fp = NULL;
}

void px_kbfs_close(px_kbfs_file_t **fp) {
  if (!fp || !*fp)
    return;
  if ((*fp)->tmp[0]) {
    px_kbfs_abort(fp);
    return;
  }
  if ((*fp)->fd >= 0)
    close((*fp)->fd);
  free(*fp);
  *fp = NULL;
}

int px_kbfs_remove(px_kbfs_dir_t *d, const char *name) {
  struct stat s;
  if (!valid_name(name))
    return PX_EINVAL;
  if (fstatat(d->fd, name, &s, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT)
      return PX_ENOENT;
    return PX_LOG_ERRNO(px_err_from_errno(errno), errno, "fstatat(remove)");
  }
  /* unlinkat without AT_REMOVEDIR removes a symlink itself, never what it
   * points to; a hard link loses one name, its other names are untouched. */
  if (unlinkat(d->fd, name, S_ISDIR(s.st_mode) ? AT_REMOVEDIR : 0) != 0) {
    if (errno == ENOENT)
      return PX_ENOENT;
    return PX_LOG_ERRNO(px_err_from_errno(errno), errno, "unlinkat");
  }
  return 0;
}

int px_kbfs_mkdir(px_kbfs_dir_t *d, const char *name) {
  if (!valid_name(name))
    return PX_EINVAL;
  if (mkdirat(d->fd, name, 0755) != 0) {
    if (errno == EEXIST)
      return PX_EEXIST;
    return PX_LOG_ERRNO(px_err_from_errno(errno), errno, "mkdirat");
  }
  /* The new directory is ours (the job is gone, writers take turns):
   * AT_SYMLINK_NOFOLLOW all the same. */
  if (d->uid != 0 &&
      fchownat(d->fd, name, d->uid, d->gid, AT_SYMLINK_NOFOLLOW) != 0)
    return PX_LOG_ERRNO(px_err_from_errno(errno), errno, "fchownat(mkdir)");
  return 0;
}

/* Clear the set-id bits of what fd is (its stat in s) and give it to the
 * owner of d if it has another one. */
static int sanitize_fd(const px_kbfs_dir_t *d, int fd, const struct stat *s,
                       uint64_t *fixed) {
  int mine = d->uid == 0 || (s->st_uid == d->uid && s->st_gid == d->gid);
  if (S_ISREG(s->st_mode) && s->st_nlink > 1 && !mine) {
    PX_LOG(PX_LOG_WARN, "kb: a file of %s has %lu links and another owner: "
                        "left as it is", d->path, (unsigned long)s->st_nlink);
    return 0; /* another name may be outside the KB */
  }
  if (s->st_mode & (S_ISUID | S_ISGID)) {
    if (fchmod(fd, s->st_mode & 07777 & ~(mode_t)SETID_BITS) != 0)
      return PX_LOG_ERRNO(px_err_from_errno(errno), errno, "fchmod(kb)");
    (*fixed)++;
  }
  if (!mine) {
    /* chown clears set-id bits of files as well; done above regardless. */
    if (fchown(fd, d->uid, d->gid) != 0)
      return PX_LOG_ERRNO(px_err_from_errno(errno), errno, "fchown(kb)");
    (*fixed)++;
  }
  return 0;
}

int px_kbfs_sanitize_dir(px_kbfs_dir_t *d, uint64_t *fixed) {
  struct stat s;
  if (fstat(d->fd, &s) != 0)
    return PX_LOG_ERRNO(px_err_from_errno(errno), errno, "fstat(dir)");
  return sanitize_fd(d, d->fd, &s, fixed);
}

int px_kbfs_sanitize_at(px_kbfs_dir_t *d, const char *name,
                        const px_kbfs_stat_t *st, uint64_t *fixed) {
  struct stat s;
  int fd, rc;
  if (!valid_name(name))
    return PX_EINVAL;
  if (st->type != PX_KBFS_FILE) {
    /* A link or special entry: never opened (a fifo would block, a link
     * would be followed); only its owner, as itself. Its mode bits do
     * not matter: nothing runs a fifo or a link. */
    if (st->type == PX_KBFS_DIR || d->uid == 0 ||
        (st->uid == (uint32_t)d->uid && st->gid == (uint32_t)d->gid))
      return 0;
    if (fchownat(d->fd, name, d->uid, d->gid, AT_SYMLINK_NOFOLLOW) != 0)
      return errno == ENOENT ? 0
                             : PX_LOG_ERRNO(px_err_from_errno(errno), errno,
                                            "fchownat(kb)");
    (*fixed)++;
    return 0;
  }
  if ((st->perm & SETID_BITS) == 0 &&
      (d->uid == 0 || (st->uid == (uint32_t)d->uid && st->gid == (uint32_t)d->gid)))
    return 0; /* the common case: nothing to open */
  fd = openat(d->fd, name,
              O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? 0
                           : PX_LOG_ERRNO(px_err_from_errno(errno), errno,
                                          "openat(kb sanitize)");
  if (fstat(fd, &s) != 0 || !S_ISREG(s.st_mode) || s.st_ino != st->ino ||
      s.st_dev != st->dev)
    rc = PX_EAGAIN; /* swapped since it was listed: the caller fails */
  else
    rc = sanitize_fd(d, fd, &s, fixed);
  close(fd);
  return rc;
}

int px_kbfs_rename(px_kbfs_dir_t *d, const char *from, const char *to) {
  if (!valid_name(from) || !valid_name(to))
    return PX_EINVAL;
  if (renameat(d->fd, from, d->fd, to) != 0) {
    if (errno == ENOENT)
      return PX_ENOENT;
    return PX_LOG_ERRNO(px_err_from_errno(errno), errno, "renameat");
  }
  return 0;
}

int px_kbfs_move(px_kbfs_dir_t *from, const char *name, px_kbfs_dir_t *to,
                 const char *newname) {
  if (!valid_name(name) || !valid_name(newname))
    return PX_EINVAL;
  /* renameat2(RENAME_NOREPLACE) moves the entry itself; a symlink is moved,
   * not followed. */
  if (renameat2(from->fd, name, to->fd, newname, RENAME_NOREPLACE) != 0) {
    if (errno == EEXIST)
      return PX_EEXIST;
    if (errno == ENOENT)
      return PX_ENOENT;
    return PX_LOG_ERRNO(px_err_from_errno(errno), errno, "renameat2");
  }
  return 0;
}

int px_kbfs_sync_dir(px_kbfs_dir_t *d) {
  if (fsync(d->fd) != 0)
    return PX_LOG_ERRNO(px_err_from_errno(errno), errno, "fsync(dir)");
  return 0;
}

int px_kbfs_set_size(px_kbfs_file_t *f, uint64_t size) {
  if (ftruncate(f->fd, (off_t)size) != 0)
    return PX_LOG_ERRNO(px_err_from_errno(errno), errno, "ftruncate");
  return 0;
}

char px_kbfs_sep(void) {
  return '/';
}
