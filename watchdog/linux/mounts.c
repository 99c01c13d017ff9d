/* mounts.c - the filesystem a job sees (its directory on the host:
 * jobdir.c).
 *
 * DESIGN
 * Inside the child's new mount namespace (propagation made private first):
 * a small tmpfs is mounted on the staging dir <work_root>/.px-root and
 * filled from a plan of operations computed by the parent: mkdirs, the
 * read-only bind list (symlinks such as /lib -> usr/lib are recreated as
 * symlinks, not bound), a minimal /dev (tmpfs with null, zero, full, random,
 * urandom bound from the host, a tmpfs /dev/shm for POSIX shared memory
 * and semaphores, a new devpts instance on /dev/pts with /dev/ptmx, then
 * read-only), generated /etc/passwd, group, nsswitch.conf and hosts naming
 * the job's uid and localhost (getpwuid() works; the host's user list stays
 * outside), a fresh /proc (the child is
 * pid 1 of a new pid namespace, so it shows only the job), /tmp -> /job,
 * the job dir at /job (rw only with fs:write_tmp) and KB roots at
 * /kb/<name>. No host /sys. The root tmpfs is remounted read-only, then
 * pivot_root and the old root is detached. The skeleton part of the plan
 * is built once per backend; a job adds only its own binds.
 *
 * On the host the job dir is work_root/<key> (jobdir.c).
 */
#include "linux_int.h"

#include "px/px_error.h"
#include "px/px_fence.h"
#include "px/px_log.h"
#include "px/px_util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <linux/mount.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

const char *const px__lnx_default_binds[] = {
    "/bin", "/sbin", "/usr", "/lib", "/lib64", "/lib32", "/libx32",
    "/etc/alternatives", "/etc/ld.so.cache", "/etc/localtime",
    "/etc/ssl/certs", "/etc/services", "/etc/protocols", NULL};

static const char *const dev_nodes[] = {"null", "zero", "full", "random",
                                        "urandom", NULL};

int px__lnx_mnt_add(px__lnx_mnt_plan_t *plan, px__lnx_mnt_kind_t kind, int step,
                const char *src, const char *dst) {
  px__lnx_mnt_op_t *op;
  if (px_array_reserve(&plan->ops, &plan->cap, plan->n + 1, sizeof *plan->ops,
                       32))
    return PX_ENOMEM;
  op = &plan->ops[plan->n];
  memset(op, 0, sizeof *op);
  op->kind = kind;
  op->step = step;
  op->src = src ? px_strdup(src) : NULL;
  op->dst = px_strdup(dst);
  if ((src && !op->src) || !op->dst) {
    free(op->src);
    free(op->dst);
    return PX_ENOMEM;
  }
  plan->n++;
  return 0;
}

void px__lnx_mnt_plan_free(px__lnx_mnt_plan_t *plan) {
  size_t i;
  for (i = 0; i < plan->n; i++) {
    if (plan->ops[i].kind == PX_MNT_ATTACH && plan->ops[i].fd >= 0)
      close(plan->ops[i].fd);
    free(plan->ops[i].src);
    free(plan->ops[i].dst);
  }
  free(plan->ops);
  memset(plan, 0, sizeof *plan);
}

static int have_dir(const px__lnx_mnt_plan_t *plan, const char *dst) {
  size_t i;
  for (i = 0; i < plan->n; i++)
    if (plan->ops[i].kind == PX_MNT_MKDIR && strcmp(plan->ops[i].dst, dst) == 0)
      return 1;
  return 0;
}

/* mkdir ops for each parent of dst below its first component's parent. */
static int add_parents(px__lnx_mnt_plan_t *plan, int step, const char *dst,
                       size_t root_len) {
  char p[PX_LNX_PATH_MAX];
  char *s;
  int rc;
  if (px_strlcpy(p, dst, sizeof p) != 0)
    return PX_ERANGE;
  for (s = p + root_len + 1; (s = strchr(s, '/')) != NULL; s++) {
    *s = '\0';
    if (!have_dir(plan, p) && (rc = px__lnx_mnt_add(plan, PX_MNT_MKDIR, step,
                                                NULL, p)) != 0)
      return rc;
    *s = '/';
  }
  return 0;
}

static unsigned long kept_flags(const char *src) {
  struct statvfs sv;
  unsigned long f = 0;
  if (statvfs(src, &sv) != 0)
    return 0;
  if (sv.f_flag & ST_NOEXEC)
    f |= MS_NOEXEC;
  if (sv.f_flag & ST_NOATIME)
    f |= MS_NOATIME;
  if (sv.f_flag & ST_NODIRATIME)
    f |= MS_NODIRATIME;
  if (sv.f_flag & ST_RELATIME)
    f |= MS_RELATIME;
  return f;
}

int px__lnx_mnt_add_bind(px__lnx_mnt_plan_t *plan, int step, const char *src,
                     const char *stage, const char *rel, int rw) {
  struct stat st;
  char target[PX_LNX_PATH_MAX], dst[PX_LNX_PATH_MAX];
  int rc;
  if (lstat(src, &st) != 0)
    return 0; /* not on this host */
  if (rel[0] != '/' || px_snprintf(dst, sizeof dst, "%s%s", stage, rel) != 0)
    return PX_EINVAL;
  if ((rc = add_parents(plan, step, dst, strlen(stage))) != 0)
    return rc;
  if (S_ISLNK(st.st_mode)) {
    ssize_t n = readlink(src, target, sizeof target - 1);
    if (n <= 0)
      return 0;
    target[n] = '\0';
    return px__lnx_mnt_add(plan, PX_MNT_SYMLINK, step, target, dst);
  }
  if (S_ISDIR(st.st_mode)) {
    if (!have_dir(plan, dst) &&
        (rc = px__lnx_mnt_add(plan, PX_MNT_MKDIR, step, NULL, dst)) != 0)
      return rc;
  } else if ((rc = px__lnx_mnt_add(plan, PX_MNT_FILE, step, NULL, dst)) != 0) {
    return rc;
  }
  rc = px__lnx_mnt_add(plan, rw ? PX_MNT_BIND_RW : PX_MNT_BIND_RO, step, src,
                       dst);
  if (rc == 0)
    plan->ops[plan->n - 1].flags = kept_flags(src);
  return rc;
}

static int add_at(px__lnx_mnt_plan_t *plan, px__lnx_mnt_kind_t kind, int step,
                  const char *src, const char *stage, const char *rel) {
  char p[PX_LNX_PATH_MAX];
  if (px_snprintf(p, sizeof p, "%s%s", stage, rel) != 0)
    return PX_ERANGE;
  return px__lnx_mnt_add(plan, kind, step, src, p);
}

/* /dev/shm and /dev/pts: POSIX shared memory and semaphores
 * (multiprocessing) and pseudo-terminals (openpty, pty.spawn). /dev/shm is
 * the job's own tmpfs (mode 1777, capped at shm_bytes, its pages charged to
 * the job's memory cgroup); writable where Landlock allows (fs:write_tmp).
 * /dev/pts is a new devpts instance: the job sees only its own terminals,
 * and TIOCSTI stays refused by seccomp. */
static int skeleton_shm_pts(const char *stage, uint64_t shm_bytes,
                            px__lnx_mnt_plan_t *plan) {
  char opts[96];
  int rc;
  px_snprintf(opts, sizeof opts, "size=%" PRIu64 ",nr_inodes=1024,mode=1777",
              shm_bytes);
  rc = add_at(plan, PX_MNT_MKDIR, PX_STEP_MOUNT_DEV, NULL, stage, "/dev/shm");
  if (rc == 0)
    rc = add_at(plan, PX_MNT_MKDIR, PX_STEP_MOUNT_DEV, NULL, stage,
                "/dev/pts");
  if (rc == 0)
    rc = add_at(plan, PX_MNT_SYMLINK, PX_STEP_MOUNT_DEV, "pts/ptmx", stage,
                "/dev/ptmx");
  if (rc == 0)
    rc = add_at(plan, PX_MNT_TMPFS, PX_STEP_MOUNT_DEV, opts, stage,
                "/dev/shm");
  if (rc == 0)
    rc = add_at(plan, PX_MNT_DEVPTS, PX_STEP_MOUNT_DEV,
                "newinstance,ptmxmode=0666,mode=0620", stage, "/dev/pts");
  return rc;
}

static int skeleton_dev(const char *stage, uint64_t shm_bytes,
                        px__lnx_mnt_plan_t *plan) {
  char src[64], rel[64];
  size_t i;
  int rc = 0;
  static const char *const links[][2] = {{"/proc/self/fd", "/dev/fd"},
                                         {"/proc/self/fd/0", "/dev/stdin"},
                                         {"/proc/self/fd/1", "/dev/stdout"},
                                         {"/proc/self/fd/2", "/dev/stderr"}};
  rc = add_at(plan, PX_MNT_MKDIR, PX_STEP_MOUNT_DEV, NULL, stage, "/dev");
  if (rc == 0)
    rc = add_at(plan, PX_MNT_TMPFS, PX_STEP_MOUNT_DEV,
                "size=64k,nr_inodes=64,mode=0755", stage, "/dev");
  for (i = 0; rc == 0 && dev_nodes[i]; i++) {
    px_snprintf(src, sizeof src, "/dev/%s", dev_nodes[i]);
    px_snprintf(rel, sizeof rel, "/dev/%s", dev_nodes[i]);
    rc = add_at(plan, PX_MNT_FILE, PX_STEP_MOUNT_DEV, NULL, stage, rel);
    if (rc == 0)
      rc = add_at(plan, PX_MNT_BIND_DEV, PX_STEP_MOUNT_DEV, src, stage, rel);
  }
  for (i = 0; rc == 0 && i < sizeof links / sizeof links[0]; i++)
    rc = add_at(plan, PX_MNT_SYMLINK, PX_STEP_MOUNT_DEV, links[i][0], stage,
                links[i][1]);
  if (rc == 0)
    rc = skeleton_shm_pts(stage, shm_bytes, plan);
  if (rc == 0)
    rc = add_at(plan, PX_MNT_REMOUNT_RO, PX_STEP_MOUNT_DEV, NULL, stage,
                "/dev");
  return rc;
}

/* 1 when a bind (or an earlier generated file) already covers stage+rel:
 * the admin's bind list wins over a generated file. */
static int covered(const px__lnx_mnt_plan_t *plan, const char *stage,
                   const char *rel) {
  size_t i, sl = strlen(stage);
  for (i = 0; i < plan->n; i++) {
    const px__lnx_mnt_op_t *op = &plan->ops[i];
    const char *d = op->dst + sl;
    size_t dl = strlen(d);
    if (op->kind == PX_MNT_MKDIR || op->kind == PX_MNT_TMPFS ||
        strncmp(op->dst, stage, sl) != 0)
      continue;
    if (strncmp(rel, d, dl) == 0 && (rel[dl] == '\0' || rel[dl] == '/'))
      return 1;
  }
  return 0;
}

/* Write text to dir_fd/name (0644), replacing a previous copy; no link
 * is followed (the directory is the daemon's own). */
static int write_host_file(int dir_fd, const char *name, const char *text) {
  size_t len = strlen(text), off = 0;
  int fd, rc = 0;
  px_fence_write_begin(); /* px_fence.h */
  fd = openat(dir_fd, name,
              O_CREAT | O_TRUNC | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    px_fence_write_end();
    return PX_LOG_ERRNO(PX_EIO, errno, "open(etc file)");
  }
  while (rc == 0 && off < len) {
    ssize_t n = write(fd, text + off, len - off);
    if (n <= 0)
      rc = PX_LOG_ERRNO(PX_EIO, n < 0 ? errno : EIO, "write(etc file)");
    else
      off += (size_t)n;
  }
  fchmod(fd, 0644);
  close(fd);
  px_fence_write_end();
  return rc;
}

/* /etc/passwd, group, nsswitch.conf, hosts: who the job is and where
 * localhost is, so getpwuid(getuid()), getpass.getuser(), ~ expansion and
 * "localhost" work as outside. The home is the job dir. Written once into
 * the daemon's etc_dir and bound read-only (a job's setup writes no file:
 * a warm slot's stub shares the daemon's descriptor table, and a file open
 * for writing there could be copied into a concurrent child and make a
 * read-only remount fail). */
static int skeleton_etc(const char *stage, const char *etc_dir, uid_t uid,
                        gid_t gid, px__lnx_mnt_plan_t *plan) {
  char passwd[256], group[128], src[PX_LNX_PATH_MAX], dst[64];
  static const char nss[] = "passwd: files\ngroup: files\nshadow: files\n"
                            "hosts: files\nnetworks: files\n"
                            "protocols: files\nservices: files\n";
  static const char hosts[] = "127.0.0.1\tlocalhost\n127.0.1.1\tpx\n"
                              "::1\tlocalhost ip6-localhost ip6-loopback\n";
  const char *files[4][2];
  size_t i;
  int rc = 0, dfd;
  px_snprintf(passwd, sizeof passwd,
              "root:x:0:0:root:/root:/bin/sh\n"
              "nobody:x:%lu:%lu:sandbox job:%s:/bin/sh\n",
              (unsigned long)uid, (unsigned long)gid, PX_LNX_JOB_MNT);
  px_snprintf(group, sizeof group, "root:x:0:\nnogroup:x:%lu:\n",
              (unsigned long)gid);
  files[0][0] = "passwd", files[0][1] = passwd;
  files[1][0] = "group", files[1][1] = group;
  files[2][0] = "nsswitch.conf", files[2][1] = nss;
  files[3][0] = "hosts", files[3][1] = hosts;
  if (mkdir(etc_dir, 0755) != 0 && errno != EEXIST)
    return PX_LOG_ERRNO(PX_EIO, errno, "mkdir(etc dir)");
  dfd = open(etc_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0)
    return PX_LOG_ERRNO(PX_EIO, errno, "open(etc dir)");
  for (i = 0; rc == 0 && i < 4; i++) {
    px_snprintf(dst, sizeof dst, "/etc/%s", files[i][0]);
    if (covered(plan, stage, dst))
      continue;
    if ((rc = write_host_file(dfd, files[i][0], files[i][1])) == 0 &&
        px_snprintf(src, sizeof src, "%s/%s", etc_dir, files[i][0]) == 0)
      rc = px__lnx_mnt_add_bind(plan, PX_STEP_ETC_FILES, src, stage, dst, 0);
  }
  close(dfd);
  return rc;
}

int px__lnx_mnt_skeleton(const char *stage, const char *etc_dir,
                     const char *const *binds, uint64_t shm_bytes, uid_t uid,
                     gid_t gid, px__lnx_mnt_plan_t *plan) {
  char tmp[PX_LNX_PATH_MAX];
  size_t i;
  int rc = 0;
  for (i = 0; rc == 0 && binds[i]; i++) {
    if (binds[i][0] != '/' || strstr(binds[i], "..") ||
        strcmp(binds[i], "/") == 0) {
      PX_LOG(PX_LOG_ERROR, "ro bind must be an absolute path below /");
      return PX_EINVAL;
    }
    rc = px__lnx_mnt_add_bind(plan, PX_STEP_BIND_RO, binds[i], stage, binds[i],
                              0);
  }
  if (rc == 0)
    rc = skeleton_etc(stage, etc_dir, uid, gid, plan);
  if (rc == 0)
    rc = skeleton_dev(stage, shm_bytes, plan);
  if (rc == 0)
    rc = add_at(plan, PX_MNT_MKDIR, PX_STEP_MOUNT_PROC, NULL, stage, "/proc");
  if (rc == 0)
    rc = add_at(plan, PX_MNT_PROC, PX_STEP_MOUNT_PROC, NULL, stage, "/proc");
  if (rc == 0)
    rc = add_at(plan, PX_MNT_MKDIR, PX_STEP_MOUNT_JOB, NULL, stage,
                PX_LNX_JOB_MNT);
  if (rc == 0)
    rc = add_at(plan, PX_MNT_MKDIR, PX_STEP_MOUNT_KB, NULL, stage,
                PX_LNX_KB_MNT);
  if (rc == 0 && px_snprintf(tmp, sizeof tmp, "%s/tmp", stage) == 0 &&
      !have_dir(plan, tmp))
    rc = add_at(plan, PX_MNT_SYMLINK, PX_STEP_MOUNT_JOB, PX_LNX_JOB_MNT,
                stage, "/tmp");
  return rc;
}

/* --- daemon side, warm slots ------------------------------------------- */

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif

struct px_mount_attr {
  uint64_t attr_set, attr_clr, propagation, userns_fd;
};

int px__lnx_mnt_add_detached(px__lnx_mnt_plan_t *plan, int step,
                             const char *src, const char *dst, int rw,
                             int idmap_fd) {
  struct px_mount_attr attr;
  int t, rc;
  if (PX_LNX_INJECTED(step))
    return PX_LOG_ERRNO(PX_ESANDBOX, EPERM, "open_tree [injected]");
  t = (int)syscall(SYS_open_tree, AT_FDCWD, src,
                   OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
  if (t < 0)
    return PX_LOG_ERRNO(PX_ESANDBOX, errno, "open_tree(job mount)");
  memset(&attr, 0, sizeof attr);
  attr.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                  (rw ? 0 : MOUNT_ATTR_RDONLY);
  if (idmap_fd >= 0) {
    attr.attr_set |= MOUNT_ATTR_IDMAP;
    attr.userns_fd = (uint64_t)idmap_fd;
    if (syscall(SYS_mount_setattr, t, "", AT_EMPTY_PATH, &attr, sizeof attr) ==
        0)
      goto add;
    /* no idmapped mounts on this file system: plainly, as the cold path */
    attr.attr_set &= ~(uint64_t)MOUNT_ATTR_IDMAP;
    attr.userns_fd = 0;
  }
  if (syscall(SYS_mount_setattr, t, "", AT_EMPTY_PATH, &attr, sizeof attr)) {
    rc = PX_LOG_ERRNO(PX_ESANDBOX, errno, "mount_setattr(job mount)");
    close(t);
    return rc;
  }
add:
  if ((rc = px__lnx_mnt_add(plan, PX_MNT_ATTACH, step, NULL, dst)) != 0) {
    close(t);
    return rc;
  }
  plan->ops[plan->n - 1].fd = t;
  return 0;
}

/* --- child side (async-signal-safe) ------------------------------------ */

/* A KB root seen through an idmapped mount: files the daemon owns on disk
 * appear (and are created) as the job's own, so kb:write works without
 * handing the tree to uid 65534 on the host. Returns 1 when the file
 * system cannot do it (the caller binds plainly), 0 or -errno. */
static int idmap_bind(const px__lnx_mnt_op_t *op) {
  struct px_mount_attr attr;
  int t, rc = 0;
  t = (int)syscall(SYS_open_tree, AT_FDCWD, op->src,
                   OPEN_TREE_CLONE | O_CLOEXEC);
  if (t < 0)
    return errno == ENOSYS ? 1 : -errno;
  memset(&attr, 0, sizeof attr);
  attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                  (op->kind == PX_MNT_IDMAP_RO ? MOUNT_ATTR_RDONLY : 0);
  attr.userns_fd = (uint64_t)op->fd;
  if (syscall(SYS_mount_setattr, t, "", AT_EMPTY_PATH, &attr, sizeof attr))
    rc = (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP) ? 1
                                                                      : -errno;
  else if (syscall(SYS_move_mount, t, "", AT_FDCWD, op->dst,
                   MOVE_MOUNT_F_EMPTY_PATH) != 0)
    rc = -errno;
  close(t);
  return rc;
}

static int run_op(const px__lnx_mnt_op_t *op) {
  unsigned long base = MS_REMOUNT | MS_BIND | MS_NOSUID | op->flags;
  if (PX_LNX_INJECTED(op->step))
    return -EPERM;
  switch (op->kind) {
  case PX_MNT_MKDIR:
    if (mkdir(op->dst, 0755) != 0 && errno != EEXIST)
      return -errno;
    return 0;
  case PX_MNT_FILE: /* no descriptor (see skeleton_etc) */
    if (mknod(op->dst, S_IFREG | 0644, 0) != 0 && errno != EEXIST)
      return -errno;
    return 0;
  case PX_MNT_SYMLINK:
    return symlink(op->src, op->dst) == 0 ? 0 : -errno;
  case PX_MNT_IDMAP_RO:
  case PX_MNT_IDMAP_RW: {
    int rc = idmap_bind(op);
    if (rc <= 0)
      return rc;
    /* no idmapped mounts here: a plain bind (writes may then be denied) */
    if (mount(op->src, op->dst, NULL, MS_BIND, NULL) != 0)
      return -errno;
    base |= MS_NODEV | (op->kind == PX_MNT_IDMAP_RO ? MS_RDONLY : 0);
    return mount(NULL, op->dst, NULL, base, NULL) == 0 ? 0 : -errno;
  }
  case PX_MNT_BIND_RO:
  case PX_MNT_BIND_RW:
  case PX_MNT_BIND_DEV:
    if (mount(op->src, op->dst, NULL, MS_BIND, NULL) != 0)
      return -errno;
    /* A device node needs no remount: nosuid/noexec mean nothing for it
     * and the bind keeps the host /dev mount's flags. */
    if (op->kind == PX_MNT_BIND_DEV)
      return 0;
    base |= MS_NODEV | (op->kind == PX_MNT_BIND_RO ? MS_RDONLY : 0);
    return mount(NULL, op->dst, NULL, base, NULL) == 0 ? 0 : -errno;
  case PX_MNT_TMPFS:
    return mount("tmpfs", op->dst, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                 op->src) == 0
               ? 0
               : -errno;
  case PX_MNT_PROC:
    return mount("proc", op->dst, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                 NULL) == 0
               ? 0
               : -errno;
  case PX_MNT_DEVPTS:
    return mount("devpts", op->dst, "devpts", MS_NOSUID | MS_NOEXEC,
                 op->src) == 0
               ? 0
               : -errno;
  case PX_MNT_ATTACH:
    return syscall(SYS_move_mount, op->fd, "", AT_FDCWD, op->dst,
                   MOVE_MOUNT_F_EMPTY_PATH) == 0
               ? 0
               : -errno;
  case PX_MNT_REMOUNT_RO:
    return mount(NULL, op->dst, NULL,
                 MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                 NULL) == 0
               ? 0
               : -errno;
  }
  return -EINVAL;
}

static int run_plan(const px__lnx_mnt_plan_t *p, int *step) {
  size_t i;
  int rc;
  for (i = 0; i < p->n; i++) {
    if ((rc = run_op(&p->ops[i])) != 0) {
      *step = p->ops[i].step;
      return rc;
    }
  }
  return 0;
}

#define FAIL_STEP(s)                                                         \
  do {                                                                       \
    *step = (s);                                                             \
    return -errno; /* the call's, or the injected fault's */                 \
  } while (0)

int px__lnx_mnt_stub(const char *stage, const px__lnx_mnt_plan_t *skel,
                     int *step) {
  char kb[PX_LNX_PATH_MAX];
  size_t i, n = strlen(stage);
  int rc;
  if (n + sizeof PX_LNX_KB_MNT > sizeof kb) {
    *step = PX_STEP_MOUNT_KB;
    return -ENAMETOOLONG;
  }
  memcpy(kb, stage, n);
  memcpy(kb + n, PX_LNX_KB_MNT, sizeof PX_LNX_KB_MNT);
  if (PX_LNX_INJECTED(PX_STEP_MOUNT_PRIVATE) ||
      mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
    FAIL_STEP(PX_STEP_MOUNT_PRIVATE);
  if (PX_LNX_INJECTED(PX_STEP_MOUNT_ROOT) ||
      mount("px-root", stage, "tmpfs", MS_NOSUID | MS_NODEV,
            "size=1m,nr_inodes=1024,mode=0755") != 0)
    FAIL_STEP(PX_STEP_MOUNT_ROOT);
  for (i = 0; i < skel->n; i++) {
    if (skel->ops[i].kind == PX_MNT_PROC)
      continue; /* the job's own pid namespace: mounted by its pid 1 */
    if ((rc = run_op(&skel->ops[i])) != 0) {
      *step = skel->ops[i].step;
      return rc;
    }
  }
  /* Mount points for the job's KB roots are made per job: a small tmpfs,
   * made read-only by the child once they exist. */
  if (mount("px-kb", kb, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
            "size=64k,nr_inodes=64,mode=0755") != 0)
    FAIL_STEP(PX_STEP_MOUNT_KB);
  if (mount(NULL, stage, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
            NULL) != 0)
    FAIL_STEP(PX_STEP_ROOT_RO);
  if (chdir(stage) != 0 || syscall(SYS_pivot_root, ".", ".") != 0 ||
      umount2(".", MNT_DETACH) != 0 || chdir("/") != 0)
    FAIL_STEP(PX_STEP_PIVOT_ROOT);
  return 0;
}

/* Mounts of the skeleton that must be a fresh instance in every sandbox
 * (a writable tmpfs, a devpts instance, proc): never part of the shared
 * template. The /dev tmpfs itself is made read-only and may be shared. */
static int per_instance(const px__lnx_mnt_op_t *op, const char *stage) {
  const char *rel = op->dst + strlen(stage);
  return op->kind == PX_MNT_PROC || op->kind == PX_MNT_DEVPTS ||
         (op->kind == PX_MNT_TMPFS && strcmp(rel, "/dev") != 0);
}

int px__lnx_mnt_template(const char *stage, const px__lnx_mnt_plan_t *skel,
                     int *ns_fd, int *step) {
  size_t i;
  int rc;
  if (PX_LNX_INJECTED(PX_STEP_MOUNT_PRIVATE) || unshare(CLONE_NEWNS) != 0)
    FAIL_STEP(PX_STEP_MOUNT_PRIVATE);
  /* Before the pivot, while the host's /proc is still reachable. */
  *ns_fd = open("/proc/thread-self/ns/mnt", O_RDONLY | O_CLOEXEC);
  if (*ns_fd < 0)
    FAIL_STEP(PX_STEP_MOUNT_PRIVATE);
  /* Private: nothing propagates between the copies made from it. */
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
    FAIL_STEP(PX_STEP_MOUNT_PRIVATE);
  if (PX_LNX_INJECTED(PX_STEP_MOUNT_ROOT) ||
      mount("px-root", stage, "tmpfs", MS_NOSUID | MS_NODEV,
            "size=1m,nr_inodes=1024,mode=0755") != 0)
    FAIL_STEP(PX_STEP_MOUNT_ROOT);
  for (i = 0; i < skel->n; i++) {
    if (per_instance(&skel->ops[i], stage))
      continue;
    if ((rc = run_op(&skel->ops[i])) != 0) {
      *step = skel->ops[i].step;
      return rc;
    }
  }
  /* Read-only at the superblock: every copy shares this root unchanged. */
  if (mount(NULL, stage, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
            NULL) != 0)
    FAIL_STEP(PX_STEP_ROOT_RO);
  if (chdir(stage) != 0 || syscall(SYS_pivot_root, ".", ".") != 0 ||
      umount2(".", MNT_DETACH) != 0 || chdir("/") != 0)
    FAIL_STEP(PX_STEP_PIVOT_ROOT);
  return 0;
}

int px__lnx_mnt_stub_from(int tmpl_fd, const char *stage,
                      const px__lnx_mnt_plan_t *skel, int *step) {
  char dst[PX_LNX_PATH_MAX];
  size_t i, n = strlen(stage);
  int rc;
  /* Into the template (root and cwd become its root), then a private
   * copy of it: a few dozen mounts, none of the host's. */
  if (PX_LNX_INJECTED(PX_STEP_MOUNT_PRIVATE) ||
      setns(tmpl_fd, CLONE_NEWNS) != 0 || unshare(CLONE_NEWNS) != 0)
    FAIL_STEP(PX_STEP_MOUNT_PRIVATE);
  for (i = 0; i < skel->n; i++) {
    px__lnx_mnt_op_t op = skel->ops[i];
    if (!per_instance(&op, stage) || op.kind == PX_MNT_PROC)
      continue; /* proc: the job's own pid namespace, by its pid 1 */
    if (strlen(op.dst) - n + 1 > sizeof dst) {
      *step = op.step;
      return -ENAMETOOLONG;
    }
    memcpy(dst, op.dst + n, strlen(op.dst) - n + 1);
    op.dst = dst;
    if ((rc = run_op(&op)) != 0) {
      *step = op.step;
      return rc;
    }
  }
  if (mount("px-kb", PX_LNX_KB_MNT, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
            "size=64k,nr_inodes=64,mode=0755") != 0)
    FAIL_STEP(PX_STEP_MOUNT_KB);
  if (chdir("/") != 0)
    FAIL_STEP(PX_STEP_PIVOT_ROOT);
  return 0;
}

int px__lnx_mnt_child_pooled(const px__lnx_mnt_plan_t *job, int *step) {
  int rc;
  if (PX_LNX_INJECTED(PX_STEP_MOUNT_PROC) ||
      mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
    FAIL_STEP(PX_STEP_MOUNT_PROC);
  if ((rc = run_plan(job, step)) != 0)
    return rc;
  if (PX_LNX_INJECTED(PX_STEP_ROOT_RO) ||
      mount(NULL, PX_LNX_KB_MNT, NULL,
            MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
            NULL) != 0)
    FAIL_STEP(PX_STEP_ROOT_RO);
  if (PX_LNX_INJECTED(PX_STEP_PIVOT_ROOT) || chdir(PX_LNX_JOB_MNT) != 0)
    FAIL_STEP(PX_STEP_PIVOT_ROOT);
  return 0;
}

int px__lnx_mnt_child(const char *stage, const px__lnx_mnt_plan_t *skel,
                  const px__lnx_mnt_plan_t *job, int *step) {
  int rc;
  /* Nothing we mount may propagate back to the host. */
  if (PX_LNX_INJECTED(PX_STEP_MOUNT_PRIVATE) ||
      mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
    FAIL_STEP(PX_STEP_MOUNT_PRIVATE);
  if (PX_LNX_INJECTED(PX_STEP_MOUNT_ROOT) ||
      mount("px-root", stage, "tmpfs", MS_NOSUID | MS_NODEV,
            "size=1m,nr_inodes=1024,mode=0755") != 0)
    FAIL_STEP(PX_STEP_MOUNT_ROOT);
  if ((rc = run_plan(skel, step)) != 0 || (rc = run_plan(job, step)) != 0)
    return rc;
  if (PX_LNX_INJECTED(PX_STEP_ROOT_RO) ||
      mount(NULL, stage, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
            NULL) != 0)
    FAIL_STEP(PX_STEP_ROOT_RO);
  /* pivot_root(".", "."): the old root is stacked under the new one and
   * detached at once; no directory for it needed. */
  if (PX_LNX_INJECTED(PX_STEP_PIVOT_ROOT) || chdir(stage) != 0 ||
      syscall(SYS_pivot_root, ".", ".") != 0 ||
      umount2(".", MNT_DETACH) != 0 || chdir(PX_LNX_JOB_MNT) != 0)
    FAIL_STEP(PX_STEP_PIVOT_ROOT);
  return 0;
}
