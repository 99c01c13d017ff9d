/* jobdir.c - what the container backend mounts on the host for a job: the
 * job directory (a size-capped tmpfs of its own, so a job cannot fill the
 * host's disk and removing it is an unmount, never a walk over what the
 * job left), its files, and an idmapped view of each visible KB root.
 *
 * DESIGN. The engine binds these paths into the container from ITS mount
 * namespace. A daemon that systemd starts with hardening options gets a
 * mount namespace of its own (ProtectHome, ProtectKernelModules, ...):
 * mounts made there never reach the engine, which would bind an empty
 * directory. So every step here runs in the engine's mount namespace
 * (found at open through the socket's peer: px__ctr_dk_engine_pid): directly
 * when the daemon is already in it, else in a forked child that joins it
 * (setns(CLONE_NEWNS) refuses a multithreaded caller). The child does only system calls and reports a failure as
 * (step, errno) over a pipe; the parent logs it: no lock is taken after
 * fork. Files are written in the same step as they are needed, so the
 * daemon's own view of the directory never matters.
 */
#include "dk_int.h"

#include "px/px_error.h"
#include "px/px_fence.h"
#include "px/px_log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define SANDBOX_UID 65534

#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif

typedef struct {
  const char *step; /* a string literal: the same address after fork */
  int err;
} host_err_t;

typedef int (*host_fn)(void *arg, host_err_t *e); /* 0, or -1 with e set */

static int fail(host_err_t *e, const char *step) {
  e->step = step;
  e->err = errno;
  return -1;
}

/* The engine's mount namespace when it is not ours (-1: it is ours, or
 * unknown). Set once by px__ctr_dk_engine_ns before any job; read only. */
static int g_engine_ns = -1;

int px__ctr_dk_engine_ns(unsigned long engine_pid) {
  char path[64];
  struct stat a, b;
  int fd;
  snprintf(path, sizeof path, "/proc/%lu/ns/mnt", engine_pid);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return PX_LOG_ERRNO(PX_ESANDBOX, errno, "open(the engine's mount namespace)");
  if (fstat(fd, &a) == 0 && stat("/proc/self/ns/mnt", &b) == 0 &&
      a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
    close(fd); /* the same as ours: no helper needed */
    return 0;
  }
  if (g_engine_ns >= 0)
    close(g_engine_ns);
  g_engine_ns = fd;
  PX_LOG(PX_LOG_INFO, "container backend: the engine (pid %lu) has another "
                      "mount namespace; job directories are made in it",
         engine_pid);
  return 0;
}

/* The child's side: join the engine's mount namespace, run fn, report. */
static void child(host_fn fn, void *arg, int report) {
  host_err_t e = {NULL, 0};
  if (setns(g_engine_ns, CLONE_NEWNS) != 0)
    fail(&e, "setns(host mount namespace)");
  else if (fn(arg, &e) == 0)
    _exit(0);
  (void)!write(report, &e, sizeof e);
  _exit(1);
}

static int host_run(host_fn fn, void *arg) {
  host_err_t e = {NULL, 0};
  int p[2], st = 0, rc;
  pid_t pid;
  if (g_engine_ns < 0) {
    rc = fn(arg, &e);
  } else if (pipe2(p, O_CLOEXEC) != 0) {
    rc = fail(&e, "pipe2(host namespace helper)");
  } else {
    px_fence_clone_begin();
    pid = fork();
    if (pid == 0)
      child(fn, arg, p[1]);
    px_fence_clone_end();
    close(p[1]);
    rc = pid < 0 ? fail(&e, "fork(host namespace helper)") : 0;
    if (pid > 0 && read(p[0], &e, sizeof e) == (ssize_t)sizeof e)
      rc = -1;
    if (pid > 0 && (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
                    WEXITSTATUS(st) != 0) && rc == 0) {
      e.step = "host namespace helper";
      e.err = EIO;
      rc = -1;
    }
    close(p[0]);
  }
  if (rc)
    return PX_LOG_ERRNO(PX_ESANDBOX, e.err, e.step ? e.step : "?");
  return 0;
}

/* ---- the job directory ------------------------------------------------ */

typedef struct {
  const char *path;
  char opts[128];
} mk_t;

static int mk_fn(void *arg, host_err_t *e) {
  mk_t *m = arg;
  if (mkdir(m->path, 0700) != 0)
    return fail(e, "mkdir(container job dir)");
  if (mount("px-job", m->path, "tmpfs", MS_NOSUID | MS_NODEV, m->opts) != 0) {
    fail(e, "mount(tmpfs, container job dir)");
    rmdir(m->path);
    return -1;
  }
  return 0;
}

int px__ctr_dk_jobdir_create(const char *work_root, const char *key,
                         uint64_t max_bytes, int writable, char **path) {
  px_buf_t b = {0};
  mk_t m;
  int rc;
  *path = NULL;
  if (px_buf_printf(&b, "%s/%s", work_root, key))
    return PX_ENOMEM;
  m.path = b.data;
  /* The container's user owns it only when the job may write there (the
   * bind is read-only otherwise as well: spec.c). */
  snprintf(m.opts, sizeof m.opts,
           "size=%" PRIu64 ",nr_inodes=%d,mode=%s,uid=%d,gid=%d", max_bytes,
           PX_CTR_JOB_INODES, writable ? "0700" : "0755",
           writable ? SANDBOX_UID : 0, writable ? SANDBOX_UID : 0);
  if ((rc = host_run(mk_fn, &m))) {
    px_buf_free(&b);
    return rc;
  }
  *path = px_buf_take(&b, NULL);
  return 0;
}

typedef struct {
  const char *dir;
  const px_job_file_t *files;
  size_t n;
} wr_t;

/* mkdir -p of the file's directories, each owned like the job dir. */
static int parents(const char *dir, const char *rel, const struct stat *st,
                   host_err_t *e) {
  char buf[4096];
  char *s;
  if ((size_t)snprintf(buf, sizeof buf, "%s/%s", dir, rel) >= sizeof buf) {
    errno = ENAMETOOLONG;
    return fail(e, "job file path");
  }
  for (s = buf + strlen(dir) + 1; (s = strchr(s, '/')); s++) {
    *s = 0;
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
      return fail(e, "mkdir(job file dir)");
    if (lchown(buf, st->st_uid, st->st_gid) != 0)
      return fail(e, "lchown(job file dir)");
    *s = '/';
  }
  return 0;
}

static int write_one(const char *dir, const px_job_file_t *f,
                     const struct stat *st, host_err_t *e) {
  char path[4096];
  const unsigned char *p = f->data;
  size_t len = f->len;
  int fd;
  if (parents(dir, f->path, st, e))
    return -1;
  snprintf(path, sizeof path, "%s/%s", dir, f->path);
  fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail(e, "open(job file)");
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      fail(e, "write(job file)");
      close(fd);
      return -1;
    }
    p += w;
    len -= (size_t)w;
  }
  if (fchown(fd, st->st_uid, st->st_gid) != 0) {
    fail(e, "fchown(job file)");
    close(fd);
    return -1;
  }
  close(fd);
  return 0;
}

static int wr_fn(void *arg, host_err_t *e) {
  wr_t *w = arg;
  struct stat st;
  size_t i;
  if (stat(w->dir, &st) != 0)
    return fail(e, "stat(container job dir)");
  for (i = 0; i < w->n; i++)
    if (write_one(w->dir, &w->files[i], &st, e))
      return -1;
  return 0;
}

int px__ctr_dk_jobdir_write(const char *dir, const px_job_file_t *files,
                        size_t n) {
  wr_t w = {dir, files, n};
  return n ? host_run(wr_fn, &w) : 0;
}

static int rm_fn(void *arg, host_err_t *e) {
  const char *dir = arg;
  if (umount2(dir, MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT)
    return fail(e, "umount2(container job dir)");
  if (rmdir(dir) != 0 && errno != ENOENT)
    return fail(e, "rmdir(container job dir)");
  return 0;
}

void px__ctr_dk_jobdir_remove(const char *dir) {
  if (dir)
    host_run(rm_fn, (void *)(uintptr_t)dir);
}

/* ---- idmapped KB views ------------------------------------------------ */

struct px_dk_mount_attr {
  uint64_t attr_set, attr_clr, propagation, userns_fd;
};

typedef struct {
  int userns_fd, rw;
  const char *src, *dst;
} bind_t;

static int plain_bind(const bind_t *b, host_err_t *e) {
  if (mount(b->src, b->dst, NULL, MS_BIND, NULL) != 0)
    return fail(e, "mount(KB bind)");
  if (mount(NULL, b->dst, NULL,
            MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | (b->rw ? 0 : MS_RDONLY),
            NULL) != 0)
    return fail(e, "mount(KB bind, remount)");
  return 0;
}

/* dst's parent (the work root's PX_CTR_KB_VIEWS): made 0700, or found as
 * a directory of ours (never through a symlink) and set to 0700. */
static int private_parent(const char *dst, host_err_t *e) {
  char dir[4096];
  char *slash;
  struct stat st;
  if (snprintf(dir, sizeof dir, "%s", dst) >= (int)sizeof dir ||
      !(slash = strrchr(dir, '/'))) {
    errno = ENAMETOOLONG;
    return fail(e, "KB view path");
  }
  *slash = 0;
  if (mkdir(dir, 0700) != 0 && errno != EEXIST)
    return fail(e, "mkdir(container KB views dir)");
  if (lstat(dir, &st) != 0)
    return fail(e, "lstat(container KB views dir)");
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
    errno = EPERM;
    return fail(e, "container KB views dir: not a directory of ours");
  }
  if ((st.st_mode & 07777) != 0700 && chmod(dir, 0700) != 0)
    return fail(e, "chmod(container KB views dir)");
  return 0;
}

static int bind_fn(void *arg, host_err_t *e) {
  bind_t *b = arg;
  struct px_dk_mount_attr attr;
  int t, rc = 0;
  if (private_parent(b->dst, e))
    return -1;
  if (mkdir(b->dst, 0700) != 0)
    return fail(e, "mkdir(container KB view)");
  if (b->userns_fd < 0)
    return plain_bind(b, e);
  t = (int)syscall(SYS_open_tree, AT_FDCWD, b->src, OPEN_TREE_CLONE | O_CLOEXEC);
  if (t < 0)
    return fail(e, "open_tree(KB root)");
  memset(&attr, 0, sizeof attr);
  attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                  (b->rw ? 0 : MOUNT_ATTR_RDONLY);
  attr.userns_fd = (uint64_t)b->userns_fd;
  if (syscall(SYS_mount_setattr, t, "", AT_EMPTY_PATH, &attr, sizeof attr))
    rc = fail(e, "mount_setattr(KB idmap)");
  else if (syscall(SYS_move_mount, t, "", AT_FDCWD, b->dst,
                   MOVE_MOUNT_F_EMPTY_PATH) != 0)
    rc = fail(e, "move_mount(KB idmap)");
  close(t);
  return rc;
}

int px__ctr_dk_kb_view(int userns_fd, const char *src, const char *dst,
                       int rw) {
  bind_t b = {userns_fd, rw, src, dst};
  return host_run(bind_fn, &b);
}
