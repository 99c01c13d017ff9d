/* disk.c - disk-backed job directories: a fresh ext4 file system per job,
 * on a loop device over an image file in the work root.
 *
 * DESIGN
 * A tmpfs job directory keeps its files in memory charged to the job, so
 * its size must stay small (linux.tmpfs_bytes); `python -m venv` plus a
 * `pip install` does not fit. Here the job's files live on the host's disk:
 *
 *   image   <work_root>/.px-img/<key>.img, O_EXCL, sparse, of the cap's
 *           size; the host must have that much free when the job is
 *           prepared, else the job fails here (statvfs). Not reserved with
 *           fallocate: every job dir not yet torn down would hold its full
 *           cap of real disk (1 GiB by default), and a reaper behind under
 *           load (or dirs a killed daemon left to crash recovery) filled a
 *           250 GB disk in one soak run. A host that fills up while jobs
 *           write gives them ENOSPC/EIO inside their own file system;
 *   mkfs    mke2fs: ext4 without a journal (nothing in it outlives the job),
 *           -N inodes = the file-count cap, -m 0, root owned by the job uid,
 *           inode tables left to be zeroed lazily (noinit_itable: never);
 *   loop    LOOP_CONFIGURE with LO_FLAGS_AUTOCLEAR and LO_FLAGS_DIRECT_IO:
 *           the loop device detaches itself at the last unmount (or when
 *           the daemon dies holding it unmounted), and its reads and
 *           writes bypass the host's page cache, so the job's file data
 *           is cached once, in the job's own memory cgroup, where it is
 *           reclaimable page cache (unlike tmpfs pages);
 *   mount   ext4 on the job directory, nosuid, nodev; the image file is
 *           unlinked at once: the loop device holds the only reference.
 *
 * So nothing the job wrote outlives its directory's unmount (release, or
 * crash recovery, which unmounts every job directory it finds), and no
 * image or loop device outlives the daemon: an image left between create
 * and unlink by a crash is removed by px__lnx_disk_recover at the next open.
 *
 * The size cap is the file system's size (the kernel answers ENOSPC, and
 * EDQUOT never arises), the file cap its inode count (ENOSPC too). Fail
 * closed: when any step fails the job does not start (PX_ESANDBOX, logged
 * with the call that failed); nothing falls back to an unlimited directory.
 * The project-quota alternative needs CONFIG_QUOTA, which this kernel
 * lacks (bench/README.md has the measurements).
 */
#include "linux_int.h"

#include "px/px_error.h"
#include "px/px_fence.h"
#include "px/px_log.h"
#include "px/px_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/loop.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/mount.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#define IMG_DIR ".px-img"

static const char *const mkfs_paths[] = {"/usr/sbin/mke2fs", "/sbin/mke2fs",
                                         NULL};

int px__lnx_disk_probe(px__lnx_backend_t *be) {
  size_t i;
  int fd;
  be->mkfs = NULL;
  for (i = 0; mkfs_paths[i]; i++)
    if (access(mkfs_paths[i], X_OK) == 0) {
      be->mkfs = mkfs_paths[i];
      break;
    }
  if (!be->mkfs) {
    PX_LOG(PX_LOG_ERROR, "disk-backed job directories: no mke2fs "
           "(e2fsprogs) found; jobs will fail (linux.job_dir \"tmpfs\" "
           "selects a tmpfs)");
    return PX_ENOTSUP;
  }
  fd = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    PX_LOG(PX_LOG_ERROR, "disk-backed job directories need loop devices: "
           "open(/dev/loop-control): errno %d; jobs will fail (linux.job_dir "
           "\"tmpfs\" selects a tmpfs)", e);
    be->mkfs = NULL;
    return PX_ENOTSUP;
  }
  close(fd);
  if (mkdirat(be->work_root_fd, IMG_DIR, 0700) != 0 && errno != EEXIST)
    return PX_LOG_ERRNO(PX_EIO, errno, "mkdir(" IMG_DIR ")");
  return 0;
}

/* Images left by a daemon that died between creating and unlinking one.
 * Their loop devices, if any, detached themselves when its fds closed
 * (LO_FLAGS_AUTOCLEAR). */
void px__lnx_disk_recover(const px__lnx_backend_t *be) {
  int fd = openat(be->work_root_fd, IMG_DIR,
                  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), n = 0;
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  struct dirent *de;
  if (!d) {
    if (fd >= 0)
      close(fd);
    return;
  }
  while ((de = readdir(d)) != NULL)
    if (de->d_name[0] != '.' && unlinkat(dirfd(d), de->d_name, 0) == 0)
      n++;
  closedir(d);
  if (n)
    PX_LOG(PX_LOG_WARN, "removed %d leftover job image(s) of a previous run",
           n);
}

/* mke2fs on the image; its output goes nowhere (it logs on failure). */
static int run_mkfs(const px__lnx_backend_t *be, const char *img,
                    uint64_t bytes, uint64_t inodes, uid_t uid, gid_t gid) {
  char n[32], e[96], sz[32];
  char *argv[] = {(char *)be->mkfs, "-q", "-F", "-t", "ext4", "-b", "4096",
                  "-m", "0", "-N", n, "-O", "^has_journal,^resize_inode",
                  "-E", e, "-L", "px-job", (char *)img, sz, NULL};
  char *envp[] = {NULL};
  posix_spawn_file_actions_t fa;
  pid_t pid;
  int rc, st;
  px_snprintf(n, sizeof n, "%" PRIu64, inodes);
  px_snprintf(e, sizeof e,
              "lazy_itable_init=1,nodiscard,root_owner=%lu:%lu",
              (unsigned long)uid, (unsigned long)gid);
  px_snprintf(sz, sizeof sz, "%" PRIu64 "k", bytes / 1024u);
  if (posix_spawn_file_actions_init(&fa) != 0)
    return PX_ENOMEM;
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  px_fence_clone_begin();
  rc = posix_spawn(&pid, be->mkfs, &fa, NULL, argv, envp);
  px_fence_clone_end();
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    return PX_LOG_ERRNO(PX_ESANDBOX, rc, "posix_spawn(mke2fs)");
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR)
      return PX_LOG_ERRNO(PX_ESANDBOX, errno, "waitpid(mke2fs)");
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    PX_LOG(PX_LOG_ERROR, "mke2fs failed (status 0x%x) on %s", st, img);
    return PX_ESANDBOX;
  }
  return 0;
}

/* Bind the image to a free loop device: its fd (O_CLOEXEC), or PX_E*. A
 * device another process claims between GET_FREE and CONFIGURE answers
 * EBUSY: take the next one, after a millisecond from the second try on
 * (GET_FREE hands every racer the same number until one has configured
 * it; three daemons and other tests attaching at once used up 16 tries
 * in a tight loop: a job failed sandbox_failed). At most LOOP_TRIES. */
#define LOOP_TRIES 1000
static int loop_attach(int img_fd, char *dev, size_t devsz) {
  struct loop_config cfg;
  int ctl, lfd = -1, tries, num;
  ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
  if (ctl < 0)
    return PX_LOG_ERRNO(PX_ESANDBOX, errno, "open(/dev/loop-control)");
  for (tries = 0; tries < LOOP_TRIES; tries++) {
    if (tries > 0)
      px_sleep_ms(1);
    if ((num = ioctl(ctl, LOOP_CTL_GET_FREE)) < 0) {
      close(ctl);
      return PX_LOG_ERRNO(PX_ESANDBOX, errno, "ioctl(LOOP_CTL_GET_FREE)");
    }
    px_snprintf(dev, devsz, "/dev/loop%d", num);
    if ((lfd = open(dev, O_RDWR | O_CLOEXEC)) < 0) {
      close(ctl);
      return PX_LOG_ERRNO(PX_ESANDBOX, errno, "open(loop device)");
    }
    memset(&cfg, 0, sizeof cfg);
    cfg.fd = (uint32_t)img_fd;
    cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO;
    if (ioctl(lfd, LOOP_CONFIGURE, &cfg) == 0)
      break;
    num = errno;
    close(lfd);
    lfd = -1;
    if (num != EBUSY) {
      close(ctl);
      return PX_LOG_ERRNO(PX_ESANDBOX, num, "ioctl(LOOP_CONFIGURE)");
    }
  }
  close(ctl);
  if (lfd < 0)
    PX_LOG(PX_LOG_ERROR, "no free loop device after %d tries", LOOP_TRIES);
  return lfd >= 0 ? lfd : PX_ESANDBOX;
}

/* 1 when the file system under dfd has `bytes` free for root. */
static int host_has_room(int dfd, uint64_t bytes) {
  struct statvfs v;
  if (fstatvfs(dfd, &v) != 0)
    return PX_LOG_ERRNO(0, errno, "fstatvfs(" IMG_DIR ")");
  return (uint64_t)v.f_bfree * v.f_frsize >= bytes;
}

/* The image file: created fresh and sparse, if the host has its size free. */
static int make_image(const px__lnx_backend_t *be, const char *name,
                      uint64_t bytes) {
  int fd, dfd = openat(be->work_root_fd, IMG_DIR,
                       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0)
    return PX_LOG_ERRNO(PX_ESANDBOX, errno, "open(" IMG_DIR ")");
  unlinkat(dfd, name, 0); /* a leftover of the same key */
  fd = openat(dfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              0600);
  if (fd < 0) {
    fd = PX_LOG_ERRNO(PX_ESANDBOX, errno, "openat(job image)");
  } else if (!host_has_room(dfd, bytes) ||
             ftruncate(fd, (off_t)bytes) != 0) {
    PX_LOG(PX_LOG_ERROR, "the host has no room for a %" PRIu64
           "-byte job directory", bytes);
    close(fd);
    unlinkat(dfd, name, 0);
    fd = PX_ESANDBOX;
  }
  close(dfd);
  return fd;
}

/* A detached mount of the ext4 on dev (new mount API): attached to the
 * job dir at take, unmounted by its close when nobody attached it. */
static int fs_mount_fd(const char *dev) {
  int fs, m = -1;
  fs = (int)syscall(SYS_fsopen, "ext4", FSOPEN_CLOEXEC);
  if (fs < 0)
    return PX_LOG_ERRNO(PX_ESANDBOX, errno, "fsopen(ext4)");
  /* noinit_itable: mkfs left the inode tables unzeroed (lazy_itable_init)
   * and nobody needs them zeroed for a file system that lives one job. */
  if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "source", dev, 0) != 0 ||
      syscall(SYS_fsconfig, fs, FSCONFIG_SET_FLAG, "noinit_itable", NULL,
              0) != 0 ||
      syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) != 0)
    m = PX_LOG_ERRNO(PX_ESANDBOX, errno, "fsconfig(ext4 job dir)");
  else if ((m = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
                             MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                 MOUNT_ATTR_NOATIME)) < 0)
    m = PX_LOG_ERRNO(PX_ESANDBOX, errno, "fsmount(ext4 job dir)");
  close(fs);
  return m;
}

/* The new file system's root as the job starts with it: empty (mke2fs's
 * lost+found removed), mode 0700. */
static int fs_root_ready(int m) {
  int dfd = openat(m, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;
  if (dfd < 0)
    return PX_LOG_ERRNO(PX_ESANDBOX, errno, "open(ext4 root)");
  unlinkat(dfd, "lost+found", AT_REMOVEDIR);
  if (fchmod(dfd, 0700) != 0)
    rc = PX_LOG_ERRNO(PX_ESANDBOX, errno, "fchmod(job dir)");
  close(dfd);
  return rc;
}

/* Copy the template's allocated extents into the new image (same size):
 * the file system mke2fs would have written, for a fraction of its cost.
 * Explicit offsets: threads share the template fd. */
static int clone_tmpl(const px__lnx_disk_tmpl_t *t, int img_fd) {
  size_t i;
  for (i = 0; i < t->n; i++) {
    loff_t in = (loff_t)t->ext[i].off, out = in;
    uint64_t left = t->ext[i].len;
    while (left > 0) {
      ssize_t k = copy_file_range(t->fd, &in, img_fd, &out, left, 0);
      if (k <= 0)
        return PX_LOG_ERRNO(PX_ESANDBOX, k < 0 ? errno : EIO,
                            "copy_file_range(job image)");
      left -= (uint64_t)k;
    }
  }
  return 0;
}

/* The template's fit: same size, files and owner. */
static const px__lnx_disk_tmpl_t *tmpl_for(const px__lnx_backend_t *be,
                                       uint64_t bytes, uint64_t inodes,
                                       uid_t uid, gid_t gid) {
  const px__lnx_disk_tmpl_t *t = be->dtmpl;
  return t && t->bytes == bytes && t->inodes == inodes &&
                 uid == be->run_uid && gid == be->run_gid
             ? t
             : NULL;
}

/* image + mkfs + loop + detached mount: its fd (O_CLOEXEC), or PX_E*.
 * The image is unlinked before it returns, in every case. */
static int make_fs(const px__lnx_backend_t *be, const char *name,
                   uint64_t bytes, uint64_t inodes, uid_t uid, gid_t gid) {
  char img[PX_LNX_PATH_MAX], dev[32];
  int img_fd = -1, lfd = -1, m = -1, rc;
  if (px_snprintf(img, sizeof img, "%s/" IMG_DIR "/%s", be->work_root,
                  name) != 0)
    return PX_ERANGE;
  if ((img_fd = make_image(be, name, bytes)) < 0)
    return img_fd;
  if (tmpl_for(be, bytes, inodes, uid, gid))
    rc = clone_tmpl(be->dtmpl, img_fd);
  else
    rc = run_mkfs(be, img, bytes, inodes, uid, gid);
  if (rc != 0)
    goto cleanup;
  if ((lfd = loop_attach(img_fd, dev, sizeof dev)) < 0) {
    rc = lfd;
    goto cleanup;
  }
  if ((m = fs_mount_fd(dev)) < 0) {
    rc = m;
    goto cleanup;
  }
  rc = fs_root_ready(m);
cleanup:
  if (m >= 0 && rc != 0)
    close(m);
  if (lfd >= 0)
    close(lfd); /* mounted: the mount holds the device; else detaches */
  if (img_fd >= 0)
    close(img_fd);
  unlinkat(be->work_root_fd, img + strlen(be->work_root) + 1, 0);
  return rc != 0 ? rc : m;
}

/* --- the template ------------------------------------------------------- */

int px__lnx_disk_template(px__lnx_backend_t *be, uint64_t bytes,
                          uint64_t inodes) {
  char img[PX_LNX_PATH_MAX];
  px__lnx_disk_tmpl_t *t;
  off_t off = 0, data, hole;
  int fd, rc;
  bytes &= ~(uint64_t)4095;
  if (!be->mkfs || bytes == 0 || be->dtmpl)
    return 0;
  if (!(t = calloc(1, sizeof *t)))
    return PX_ENOMEM;
  t->fd = -1;
  if (px_snprintf(img, sizeof img, "%s/" IMG_DIR "/tmpl@0.img",
                  be->work_root) != 0) {
    free(t);
    return PX_ERANGE;
  }
  if ((fd = make_image(be, "tmpl@0.img", bytes)) < 0) {
    free(t);
    return fd;
  }
  rc = run_mkfs(be, img, bytes, inodes, be->run_uid, be->run_gid);
  unlinkat(be->work_root_fd, img + strlen(be->work_root) + 1, 0);
  /* Its extents, once: what mke2fs wrote (a few hundred KiB) */
  while (rc == 0 && (data = lseek(fd, off, SEEK_DATA)) >= 0) {
    if ((hole = lseek(fd, data, SEEK_HOLE)) < 0 ||
        t->n == sizeof t->ext / sizeof t->ext[0]) {
      rc = PX_ESANDBOX; /* more extents than mke2fs writes: use mkfs */
      break;
    }
    t->ext[t->n].off = (uint64_t)data;
    t->ext[t->n++].len = (uint64_t)(hole - data);
    off = hole;
  }
  if (rc != 0) {
    PX_LOG(PX_LOG_WARN, "no job dir template: every job dir runs mke2fs");
    close(fd);
    free(t);
    return 0;
  }
  t->fd = fd;
  t->bytes = bytes;
  t->inodes = inodes;
  be->dtmpl = t;
  return 0;
}

void px__lnx_disk_template_free(px__lnx_backend_t *be) {
  if (!be->dtmpl)
    return;
  close(be->dtmpl->fd);
  free(be->dtmpl);
  be->dtmpl = NULL;
}

/* --- made ahead ---------------------------------------------------------- */

#define DPOOL_MAX 8

struct px__lnx_dpool_s {
  const px__lnx_backend_t *be; /* borrowed */
  uint64_t bytes, inodes;      /* what every ready one is */
  px_mutex_t mu;
  px_cond_t cv;
  int ready[DPOOL_MAX];        /* owned: detached mounts, guarded by mu */
  size_t n, want;
  uint64_t seq, taken;
  int stop;
  px_thread_t thread;
};

static void dpool_main(void *arg) {
  px__lnx_dpool_t *p = arg;
  char name[64];
  int m;
  for (;;) {
    px_mutex_lock(&p->mu);
    while (!p->stop && p->n >= p->want)
      px_cond_wait(&p->cv, &p->mu);
    if (p->stop) {
      px_mutex_unlock(&p->mu);
      return;
    }
    /* '@' is in no job key: the names never meet a job's image */
    px_snprintf(name, sizeof name, "pool@%" PRIu64 ".img", p->seq++);
    px_mutex_unlock(&p->mu);
    m = make_fs(p->be, name, p->bytes, p->inodes, p->be->run_uid,
                p->be->run_gid);
    px_mutex_lock(&p->mu);
    if (m >= 0 && !p->stop)
      p->ready[p->n++] = m;
    else if (m >= 0)
      close(m);
    else /* logged; try again later, jobs make their own meanwhile */
      px_cond_timedwait(&p->cv, &p->mu, 1000);
    px_mutex_unlock(&p->mu);
  }
}

uint64_t px__lnx_disk_inodes(uint64_t bytes, uint64_t want) {
  return want < bytes / 8192u ? want : bytes / 8192u;
}

int px__lnx_dpool_open(const px__lnx_backend_t *be, size_t want, uint64_t bytes,
                   uint64_t inodes, px__lnx_dpool_t **out) {
  px__lnx_dpool_t *p;
  int rc;
  *out = NULL;
  if (want == 0 || bytes == 0 || !be->mkfs)
    return 0;
  if (!(p = calloc(1, sizeof *p)))
    return PX_ENOMEM;
  p->be = be;
  p->want = want < DPOOL_MAX ? want : DPOOL_MAX;
  p->bytes = bytes & ~(uint64_t)4095;
  p->inodes = inodes;
  if ((rc = px_mutex_init(&p->mu)) != 0 || (rc = px_cond_init(&p->cv)) != 0 ||
      (rc = px_thread_create(&p->thread, dpool_main, p)) != 0) {
    free(p);
    return rc;
  }
  *out = p;
  return 0;
}

void px__lnx_dpool_close(px__lnx_dpool_t *p) {
  size_t i;
  if (!p)
    return;
  px_mutex_lock(&p->mu);
  p->stop = 1;
  px_cond_broadcast(&p->cv);
  px_mutex_unlock(&p->mu);
  px_thread_join(p->thread);
  for (i = 0; i < p->n; i++)
    close(p->ready[i]); /* unmounted: the loop device detaches */
  px_cond_destroy(&p->cv);
  px_mutex_destroy(&p->mu);
  free(p);
}

size_t px__lnx_dpool_ready(px__lnx_dpool_t *p, uint64_t *taken) {
  size_t n;
  if (taken)
    *taken = 0;
  if (!p)
    return 0;
  px_mutex_lock(&p->mu);
  n = p->n;
  if (taken)
    *taken = p->taken;
  px_mutex_unlock(&p->mu);
  return n;
}

/* A ready file system of this size, or -1. */
static int dpool_take(px__lnx_dpool_t *p, uint64_t bytes, uint64_t inodes) {
  int m = -1;
  if (!p || bytes != p->bytes || inodes != p->inodes)
    return -1;
  px_mutex_lock(&p->mu);
  if (p->n > 0) {
    m = p->ready[--p->n];
    p->taken++;
    px_cond_signal(&p->cv);
  }
  px_mutex_unlock(&p->mu);
  return m;
}

int px__lnx_disk_mount(const px__lnx_backend_t *be, const char *key,
                   const char *path, uint64_t bytes, uint64_t inodes,
                   uid_t uid, gid_t gid) {
  char name[128];
  int m, rc = 0;
  if (!be->mkfs) {
    PX_LOG(PX_LOG_ERROR, "job %s: disk-backed job directories are "
           "unavailable on this host (see the log at start)", key);
    return PX_ESANDBOX;
  }
  if (PX_LNX_INJECTED(PX_STEP_DISK))
    return PX_LOG_ERRNO(PX_ESANDBOX, EIO, "job image [injected]");
  bytes &= ~(uint64_t)4095;
  m = uid == be->run_uid && gid == be->run_gid
          ? dpool_take(be->dpool, bytes, inodes)
          : -1;
  if (m < 0) {
    if (px_snprintf(name, sizeof name, "%s.img", key) != 0)
      return PX_ERANGE;
    if ((m = make_fs(be, name, bytes, inodes, uid, gid)) < 0)
      return m;
  }
  if (syscall(SYS_move_mount, m, "", AT_FDCWD, path,
              MOVE_MOUNT_F_EMPTY_PATH) != 0)
    rc = PX_LOG_ERRNO(PX_ESANDBOX, errno, "move_mount(ext4 job dir)");
  close(m); /* attached: the mount lives on; else unmounted and freed */
  return rc;
}
