/* spawn.c - create a job's first process inside every control.
 *
 * DESIGN
 * The parent precomputes an exec plan (argv, envp, mount ops, Landlock
 * rules; the seccomp BPF is the backend's), then clone3() with CLONE_PIDFD
 * and new pid, mount, IPC, UTS and (without net:egress) its own net namespace, plus
 * a user namespace when the daemon is not root; CLONE_INTO_CGROUP puts the
 * child in its v2 cgroup at birth. The child blocks on a sync pipe while the
 * parent writes it into its v1 cgroups (and uid/gid maps). Released, the
 * child runs the steps below, each checked; a failure writes (step, errno)
 * to the error pipe and exits 127, and the parent kills and reaps it:
 *
 *   signals reset, stdio, netns (loopback up in the job's own one),
 *   hostname, mounts + pivot_root (mounts.c),
 *   rlimits (CORE 0, NOFILE, FSIZE, CPU above the policy; never AS/NPROC),
 *   nice PX_LNX_JOB_NICE with RLIMIT_NICE 0 (jobs yield the CPU),
 *   close_range, capability bounding set, setgroups/setresgid/setresuid
 *   to the job uid, capabilities cleared, no_new_privs, Landlock, seccomp
 *   (last), execve.
 *
 * The error pipe is O_CLOEXEC: EOF on it means execve succeeded. The child
 * is a fork of a threaded process: it only makes system calls.
 */
#include "linux_int.h"

#include "px/px_error.h"
#include "px/px_fault.h"
#include "px/px_log.h"
#include "px/px_util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE 2
#endif

#define DEFAULT_SEARCH "/usr/local/bin:/usr/bin:/bin"
#define SETUP_TIMEOUT_MS 10000

/* --- plan ---------------------------------------------------------------- */

static char *env_pair(const char *name, const char *value) {
  px_buf_t b = {0};
  if (px_buf_printf(&b, "%s=%s", name, value) != 0) {
    px_buf_free(&b);
    return NULL;
  }
  return px_buf_take(&b, NULL);
}

static int kb_name_ok(const char *n) {
  size_t i, len = strlen(n);
  if (len == 0 || len > 64)
    return 0;
  for (i = 0; i < len; i++) {
    char c = n[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return 0;
  }
  return 1;
}

static int build_env(px__lnx_plan_t *p, const px_job_spec_t *spec) {
  size_t i, k, n = 0, cap = spec->envc + spec->nkb + 5;
  char **envp = calloc(cap, sizeof *envp);
  static const char *const ours[] = {"HOME", "TMPDIR", "TMP", "TEMP"};
  if (!envp)
    return PX_ENOMEM;
  p->envp = envp;
  for (i = 0; i < spec->envc; i++) {
    const char *name = spec->env[i].name;
    /* What the backend sets itself (the one list, px_job.h) is dropped. */
    if (!name || !*name || strchr(name, '=') ||
        (px_env_reserved(name) & PX_ENV_SET_BY_BACKEND))
      continue;
    if (strcmp(name, "PATH") == 0 && spec->env[i].value && !p->search_path)
      if (!(p->search_path = px_strdup(spec->env[i].value)))
        return PX_ENOMEM;
    if (!(envp[n++] = env_pair(name, spec->env[i].value
                                         ? spec->env[i].value : "")))
      return PX_ENOMEM;
  }
  for (k = 0; k < 4; k++)
    if (!(envp[n++] = env_pair(ours[k], PX_LNX_JOB_MNT)))
      return PX_ENOMEM;
  for (i = 0; i < spec->nkb; i++) {
    char name[80], val[96];
    size_t j;
    px_snprintf(name, sizeof name, "PX_KB_%s", spec->kb[i].name);
    for (j = 6; name[j]; j++) {
      char c = name[j];
      if (c >= 'a' && c <= 'z')
        name[j] = (char)(c - 'a' + 'A');
      else if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
        name[j] = '_';
    }
    px_snprintf(val, sizeof val, "%s/%s", PX_LNX_KB_MNT, spec->kb[i].name);
    if (!(envp[n++] = env_pair(name, val)))
      return PX_ENOMEM;
  }
  if (!p->search_path && !(p->search_path = px_strdup(DEFAULT_SEARCH)))
    return PX_ENOMEM;
  return 0;
}

/* A job in a warm slot: its root is built and pivoted already; the job
 * dir and KB roots come as detached trees made here (the slot's mount
 * namespace predates the job dir's tmpfs) and attached by the child. */
static int build_mounts_pooled(px__lnx_plan_t *p, px_sandbox_t *sb, int rw) {
  const px_job_spec_t *spec = sb->spec;
  size_t i;
  int rc;
  rc = px__lnx_mnt_add_detached(&p->mnt, PX_STEP_MOUNT_JOB, sb->job_dir,
                            PX_LNX_JOB_MNT, rw, -1);
  for (i = 0; rc == 0 && i < spec->nkb; i++) {
    char rel[96];
    const px_job_kb_t *kb = &spec->kb[i];
    if (!kb_name_ok(kb->name) || !kb->host_path || kb->host_path[0] != '/' ||
        i >= 16)
      return PX_EINVAL;
    px_snprintf(rel, sizeof rel, "%s/%s", PX_LNX_KB_MNT, kb->name);
    if ((rc = px__lnx_mnt_add(&p->mnt, PX_MNT_MKDIR, PX_STEP_MOUNT_KB, NULL,
                          rel)) != 0 ||
        (rc = px__lnx_mnt_add_detached(&p->mnt, PX_STEP_MOUNT_KB, kb->host_path,
                                   rel, kb->writable, sb->be->idmap_fd)) != 0)
      return rc;
    if (kb->writable) {
      p->ll[p->nll].path = p->mnt.ops[p->mnt.n - 1].dst;
      p->ll[p->nll++].rw = 1;
    }
  }
  return rc;
}

static int build_mounts(px__lnx_plan_t *p, px_sandbox_t *sb) {
  const px_job_spec_t *spec = sb->spec;
  const char *stage = sb->be->stage;
  int rw = (spec->caps & PX_CAP_FS_WRITE_TMP) != 0;
  size_t i;
  int rc;
  p->nll = 0;
  if (rw) {
    p->ll[p->nll].path = PX_LNX_JOB_MNT;
    p->ll[p->nll++].rw = 1;
    p->ll[p->nll].path = "/dev/shm"; /* POSIX shm and semaphores */
    p->ll[p->nll++].rw = 1;
  }
  if (p->pooled)
    return build_mounts_pooled(p, sb, rw);
  rc = px__lnx_mnt_add_bind(&p->mnt, PX_STEP_MOUNT_JOB, sb->job_dir, stage,
                        PX_LNX_JOB_MNT, rw);
  if (rc != 0)
    return rc;
  for (i = 0; i < spec->nkb; i++) {
    char rel[96];
    const px_job_kb_t *kb = &spec->kb[i];
    if (!kb_name_ok(kb->name) || !kb->host_path || kb->host_path[0] != '/' ||
        i >= 16)
      return PX_EINVAL;
    px_snprintf(rel, sizeof rel, "%s/%s", PX_LNX_KB_MNT, kb->name);
    rc = px__lnx_mnt_add_bind(&p->mnt, PX_STEP_MOUNT_KB, kb->host_path, stage,
                              rel, kb->writable);
    if (rc != 0)
      return rc;
    if (sb->be->idmap_fd >= 0 && p->mnt.n > 0 &&
        (p->mnt.ops[p->mnt.n - 1].kind == PX_MNT_BIND_RO ||
         p->mnt.ops[p->mnt.n - 1].kind == PX_MNT_BIND_RW)) {
      px__lnx_mnt_op_t *op = &p->mnt.ops[p->mnt.n - 1];
      op->kind = kb->writable ? PX_MNT_IDMAP_RW : PX_MNT_IDMAP_RO;
      op->fd = sb->be->idmap_fd;
    }
    if (kb->writable) {
      /* The op list owns a copy of the in-sandbox path. */
      p->ll[p->nll].path = p->mnt.ops[p->mnt.n - 1].dst + strlen(stage);
      p->ll[p->nll++].rw = 1;
    }
  }
  return 0;
}

int px__lnx_plan_build(px_sandbox_t *sb) {
  px__lnx_plan_t *p = &sb->plan;
  const px_job_spec_t *spec = sb->spec;
  size_t i;
  int rc;
  p->be = sb->be;
  p->sync_rd = p->err_wr = p->in_rd = p->out_wr = p->errout_wr = -1;
  if (spec->argc == 0 || !spec->argv || !spec->argv[0] || !spec->argv[0][0])
    return PX_EINVAL;
  p->pooled = sb->slot != NULL;
  p->argv = calloc(spec->argc + 1, sizeof *p->argv);
  if (!p->argv ||
      (p->pooled && !(p->child_stack = malloc(PX_LNX_CHILD_STACK))))
    return PX_ENOMEM;
  for (i = 0; i < spec->argc; i++)
    p->argv[i] = spec->argv[i]; /* borrowed from the spec */
  if ((rc = build_env(p, spec)) != 0 || (rc = build_mounts(p, sb)) != 0)
    return rc;
  p->cpu_rlimit_s =
      spec->limits.cpu_ms ? (spec->limits.cpu_ms + 999) / 1000 + 1 : 0;
  /* The backstop for files written outside the job dir's own cap; a
   * disk-backed job dir lifts it to its size. */
  p->fsize = sb->dir_bytes ? sb->dir_bytes : sb->be->tmpfs_bytes;
  p->egress = (spec->caps & PX_CAP_NET_EGRESS) != 0;
  p->userns = !sb->be->is_root;
  return 0;
}

void px__lnx_plan_free(px__lnx_plan_t *p) {
  size_t i;
  free(p->argv);
  if (p->envp)
    for (i = 0; p->envp[i]; i++)
      free(p->envp[i]);
  free(p->envp);
  free(p->search_path);
  free(p->child_stack); /* the child has exec'd or is dead */
  p->child_stack = NULL;
  px__lnx_mnt_plan_free(&p->mnt);
  p->argv = p->envp = NULL;
  p->search_path = NULL;
}

/* --- child (async-signal-safe only) ------------------------------------ */

static PX_LNX_NO_ASAN __attribute__((noreturn)) void child_fail(int fd,
                                                                int step,
                                                                int err) {
  px__lnx_child_err_t e;
  e.step = step;
  e.err = err;
  if (write(fd, &e, sizeof e) < 0) {
    /* nothing more to do: the parent sees EOF and a 127 exit */
  }
  _exit(127);
}

#define CHILD_STEP(p, step, ok)                                              \
  do {                                                                       \
    if (PX_LNX_INJECTED(step))                                               \
      child_fail((p)->err_wr, (step), errno);                                \
    if (!(ok))                                                               \
      child_fail((p)->err_wr, (step), errno);                                \
  } while (0)

static int set_rl(int res, rlim_t soft, rlim_t hard) {
  struct rlimit rl;
  rl.rlim_cur = soft;
  rl.rlim_max = hard;
  return setrlimit(res, &rl);
}

static int child_rlimits(const px__lnx_plan_t *p) {
  if (set_rl(RLIMIT_CORE, 0, 0) != 0 ||
      set_rl(RLIMIT_NOFILE, PX_LNX_NOFILE, PX_LNX_NOFILE) != 0 ||
      set_rl(RLIMIT_FSIZE, p->fsize, p->fsize) != 0 ||
      set_rl(RLIMIT_NICE, 0, 0) != 0 ||
      setpriority(PRIO_PROCESS, 0, PX_LNX_JOB_NICE) != 0)
    return -1;
  /* Per process, above the job's total: the watchdog acts first. */
  if (p->cpu_rlimit_s &&
      set_rl(RLIMIT_CPU, p->cpu_rlimit_s, p->cpu_rlimit_s + 1) != 0)
    return -1;
  return 0;
}

static int child_close_fds(int keep) {
  if (keep > 3 && syscall(SYS_close_range, 3, keep - 1, 0) != 0)
    return -1;
  return (int)syscall(SYS_close_range, keep + 1, ~0U, 0);
}

static int child_drop_caps(void) {
  struct __user_cap_header_struct hdr;
  struct __user_cap_data_struct data[2];
  memset(&hdr, 0, sizeof hdr);
  memset(data, 0, sizeof data);
  hdr.version = _LINUX_CAPABILITY_VERSION_3;
  if (syscall(SYS_capset, &hdr, data) != 0)
    return -1;
  return prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
}

static int child_bounding(int cap_last) {
  int c;
  for (c = 0; c <= cap_last; c++)
    if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0 && errno != EINVAL)
      return -1;
  return 0;
}

/* Wait for the go byte on sync_rd, or for the daemon's end (its pidfd
 * readable). 0 with the byte read; -1 when the daemon gave up or died. */
static int child_park(const px__lnx_plan_t *p, char *go) {
  struct pollfd f[2];
  int n = p->be->self_pidfd >= 0 ? 2 : 1;
  f[0].fd = p->sync_rd;
  f[0].events = POLLIN;
  f[1].fd = p->be->self_pidfd;
  f[1].events = POLLIN;
  for (;;) {
    f[0].revents = f[1].revents = 0;
    if (poll(f, (nfds_t)n, -1) < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    if (n == 2 && f[1].revents)
      return -1; /* the daemon is gone */
    if (f[0].revents)
      return read(p->sync_rd, go, 1) == 1 ? 0 : -1;
  }
}

static int child_pdeathsig(int err_wr) {
  struct pollfd pfd;
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
    return -1;
  pfd.fd = err_wr;
  pfd.events = POLLOUT;
  pfd.revents = 0;
  if (poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLERR)) {
    errno = ESRCH;
    return -1;
  }
  return 0;
}

static void child_signals(void) {
  sigset_t none;
  int s;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  for (s = 1; s < NSIG; s++)
    if (s != SIGKILL && s != SIGSTOP)
      signal(s, SIG_DFL); /* ignored dispositions survive execve */
}

static size_t cat(char *dst, size_t off, size_t cap, const char *s,
                  size_t n) {
  if (off + n >= cap)
    return cap;
  memcpy(dst + off, s, n);
  dst[off + n] = '\0';
  return off + n;
}

/* execve argv[0], searching PATH for a bare name like execvp. */
static int child_exec(const px__lnx_plan_t *p) {
  const char *prog = p->argv[0], *dir = p->search_path;
  char buf[PX_LNX_PATH_MAX];
  int err = ENOENT;
  if (strchr(prog, '/')) {
    execve(prog, p->argv, p->envp);
    return errno;
  }
  while (dir && *dir) {
    const char *colon = strchr(dir, ':');
    size_t len = colon ? (size_t)(colon - dir) : strlen(dir), off;
    off = cat(buf, 0, sizeof buf, len ? dir : ".", len ? len : 1);
    off = cat(buf, off, sizeof buf, "/", 1);
    off = cat(buf, off, sizeof buf, prog, strlen(prog));
    if (off < sizeof buf) {
      execve(buf, p->argv, p->envp);
      if (errno != ENOENT && errno != ENOTDIR)
        err = errno;
    }
    dir = colon ? colon + 1 : NULL;
  }
  return err;
}

static PX_LNX_NO_ASAN __attribute__((noreturn)) void
child_main(const px__lnx_plan_t *p) {
  const px__lnx_backend_t *be = p->be;
  char go;
  int step = 0, rc;

  /* Parked until the parent placed us in our cgroups (EOF: it gave up),
   * or until the daemon dies: PDEATHSIG is not set yet (the uid change
   * below clears it), and this copy of the daemon's descriptor table
   * holds the sync pipe's write end, so EOF would never come. */
  if (child_park(p, &go) != 0)
    _exit(127);
  CHILD_STEP(p, PX_STEP_SYNC, 1);
  child_signals();
  CHILD_STEP(p, PX_STEP_SIGNALS, 1);
  CHILD_STEP(p, PX_STEP_STDIO,
             dup2(p->in_rd, 0) == 0 && dup2(p->out_wr, 1) == 1 &&
                 dup2(p->errout_wr, 2) == 2);
  /* A slot's stub brought lo up and named the host already. */
  CHILD_STEP(p, PX_STEP_NETNS,
             p->egress || p->pooled || px__lnx_loopback_up() == 0);
  CHILD_STEP(p, PX_STEP_HOSTNAME, p->pooled || sethostname("px", 2) == 0);
  rc = p->pooled ? px__lnx_mnt_child_pooled(&p->mnt, &step)
                 : px__lnx_mnt_child(be->stage, &be->skel, &p->mnt, &step);
  if (rc != 0)
    child_fail(p->err_wr, step, -rc);
  CHILD_STEP(p, PX_STEP_RLIMITS, child_rlimits(p) == 0);
  CHILD_STEP(p, PX_STEP_CLOSE_RANGE, child_close_fds(p->err_wr) == 0);
  CHILD_STEP(p, PX_STEP_CAPS_BOUNDING, child_bounding(be->cap_last) == 0);
  /* Raw system calls: glibc's set*id wrappers broadcast to every thread
   * the parent had, and wait for threads that do not exist in this copy.
   * In a user namespace setgroups is denied (we wrote "deny"): the only
   * group is the mapped one. */
  CHILD_STEP(p, PX_STEP_SETGROUPS,
             p->userns || syscall(SYS_setgroups, 0, NULL) == 0);
  /* Not dumpable, before and after the id change: a warm slot's child
   * runs until execve in the daemon's memory (CLONE_VM, shared mm), and
   * once it is the job's uid, only this flag keeps host processes of that
   * uid from ptrace and /proc/<pid>/mem. The kernel's own reset at the id
   * change sets fs.suid_dumpable, which a host may have set to 1 or 2.
   * The flag belongs to the mm: the daemon is non-dumpable too. execve
   * gives the job a fresh mm (dumpable again, its own memory only). */
  CHILD_STEP(p, PX_STEP_SETGID,
             prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 &&
                 syscall(SYS_setresgid, be->run_gid, be->run_gid,
                         be->run_gid) == 0);
  CHILD_STEP(p, PX_STEP_SETUID,
             syscall(SYS_setresuid, be->run_uid, be->run_uid, be->run_uid) ==
                     0 &&
                 prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0);
  CHILD_STEP(p, PX_STEP_CAPS, child_drop_caps() == 0);
  /* After the uid change (which clears it): die with the spawner thread,
   * i.e. with the daemon. If it is already gone, the error pipe has no
   * reader left. */
  CHILD_STEP(p, PX_STEP_PDEATHSIG, child_pdeathsig(p->err_wr) == 0);
  CHILD_STEP(p, PX_STEP_NO_NEW_PRIVS,
             prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
  if (be->landlock_abi > 0) {
    rc = px__lnx_landlock_apply(be->landlock_abi, p->ll, p->nll, p->egress);
    if (PX_LNX_INJECTED(PX_STEP_LANDLOCK))
      rc = -EPERM;
    if (rc != 0)
      child_fail(p->err_wr, PX_STEP_LANDLOCK, -rc);
  }
  rc = px__lnx_seccomp_load(&be->bpf[p->egress ? 1 : 0]);
  if (PX_LNX_INJECTED(PX_STEP_SECCOMP))
    rc = -EPERM;
  if (rc != 0)
    child_fail(p->err_wr, PX_STEP_SECCOMP, -rc);
  if (PX_LNX_INJECTED(PX_STEP_EXECVE))
    child_fail(p->err_wr, PX_STEP_EXECVE, EPERM);
  child_fail(p->err_wr, PX_STEP_EXECVE, child_exec(p));
}

/* --- parent -------------------------------------------------------------- */

static void close_fd(int *fd) {
  if (*fd >= 0)
    close(*fd);
  *fd = -1;
}

/* A pipe whose ends are >= 3 (fds 0-2 are the child's stdio). */
static int make_pipe(int fds[2]) {
  int i;
  if (pipe2(fds, O_CLOEXEC) != 0)
    return -1;
  for (i = 0; i < 2; i++) {
    if (fds[i] < 3) {
      int hi = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
      if (hi < 0)
        return -1;
      close(fds[i]);
      fds[i] = hi;
    }
  }
  return 0;
}

static int write_file(const char *path, const char *s) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  ssize_t n;
  if (fd < 0)
    return -1;
  n = write(fd, s, strlen(s));
  close(fd);
  return n == (ssize_t)strlen(s) ? 0 : -1;
}

static int write_id_maps(const px__lnx_backend_t *be, pid_t pid) {
  char path[64], map[64];
  if (PX_LNX_INJECTED(PX_STEP_ID_MAP))
    return PX_LOG_ERRNO(PX_ESANDBOX, EPERM, "uid_map [injected]");
  px_snprintf(path, sizeof path, "/proc/%ld/uid_map", (long)pid);
  px_snprintf(map, sizeof map, "%lu %lu 1\n", (unsigned long)be->run_uid,
              (unsigned long)be->outer_uid);
  if (write_file(path, map) != 0)
    return PX_LOG_ERRNO(PX_ESANDBOX, errno, "write(uid_map)");
  px_snprintf(path, sizeof path, "/proc/%ld/setgroups", (long)pid);
  if (write_file(path, "deny") != 0)
    return PX_LOG_ERRNO(PX_ESANDBOX, errno, "write(setgroups)");
  px_snprintf(path, sizeof path, "/proc/%ld/gid_map", (long)pid);
  px_snprintf(map, sizeof map, "%lu %lu 1\n", (unsigned long)be->run_gid,
              (unsigned long)be->outer_gid);
  if (write_file(path, map) != 0)
    return PX_LOG_ERRNO(PX_ESANDBOX, errno, "write(gid_map)");
  return 0;
}

static pid_t do_clone3(uint64_t flags, int *pidfd, int cgfd) {
  struct clone_args ca;
  memset(&ca, 0, sizeof ca);
  ca.flags = flags | CLONE_PIDFD;
  ca.pidfd = (uint64_t)(uintptr_t)pidfd;
  /* With CLONE_PARENT the kernel takes the caller's exit signal (SIGCHLD
   * for a stub) and clone3 refuses any other value than 0. */
  ca.exit_signal = (flags & CLONE_PARENT) ? 0 : SIGCHLD;
  if (cgfd >= 0) {
    ca.flags |= CLONE_INTO_CGROUP;
    ca.cgroup = (uint64_t)cgfd;
  }
  return (pid_t)syscall(SYS_clone3, &ca, sizeof ca);
}

static void kill_and_reap(px_sandbox_t *sb) {
  siginfo_t si;
  if (sb->pidfd < 0)
    return;
  syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
  memset(&si, 0, sizeof si);
  while (waitid((idtype_t)P_PIDFD, (id_t)sb->pidfd, &si, WEXITED) != 0 &&
         errno == EINTR) {
  }
  close_fd(&sb->pidfd);
}

/* Wait for the child's verdict on its setup: EOF = exec'd. */
static int read_setup(px_sandbox_t *sb, int err_rd) {
  px__lnx_child_err_t ce;
  struct pollfd pfd;
  ssize_t n;
  pfd.fd = err_rd;
  pfd.events = POLLIN;
  if (poll(&pfd, 1, SETUP_TIMEOUT_MS) <= 0) {
    px_snprintf(sb->outcome.error_msg, sizeof sb->outcome.error_msg,
                "sandbox setup timed out");
    return PX_LOG_ERRNO(PX_ETIMEDOUT, ETIMEDOUT, "sandbox setup");
  }
  do
    n = read(err_rd, &ce, sizeof ce);
  while (n < 0 && errno == EINTR);
  if (n == 0)
    return 0;
  if (n != (ssize_t)sizeof ce) {
    ce.step = PX_STEP_NONE_;
    ce.err = n < 0 ? errno : EIO;
  }
  px_snprintf(sb->outcome.error_msg, sizeof sb->outcome.error_msg,
              "sandbox setup step %s failed: %s", px__lnx_step_name(ce.step),
              strerrordesc_np(ce.err) ? strerrordesc_np(ce.err) : "?");
  PX_LOG(PX_LOG_ERROR, "job %s: setup step %s failed: errno %d",
         sb->spec->key, px__lnx_step_name(ce.step), ce.err);
  return ce.step == PX_STEP_EXECVE && ce.err == ENOENT ? PX_ENOENT
                                                       : PX_ESANDBOX;
}

static uint64_t clone_flags(const px__lnx_plan_t *p) {
  uint64_t f = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS;
  if (p->pooled) /* the slot's stub made every namespace ahead of time */
    return 0;
  if (!p->egress)
    f |= CLONE_NEWNET;
  if (p->userns)
    f |= CLONE_NEWUSER;
  return f;
}

/* On the spawner thread: clone the job's pid 1 (cold path). */
static pid_t clone_job(void *arg) {
  px_sandbox_t *sb = arg;
  pid_t pid;
  sb->placed_v2 = sb->cg.v2_fd >= 0;
  pid = do_clone3(clone_flags(&sb->plan), &sb->pidfd, sb->cg.v2_fd);
  if (pid < 0 && sb->placed_v2) {
    sb->placed_v2 = 0; /* kernels before 5.7: place by writing cgroup.procs */
    pid = do_clone3(clone_flags(&sb->plan), &sb->pidfd, -1);
  }
  if (pid == 0)
    child_main(&sb->plan); /* never returns */
  return pid;
}

static PX_LNX_NO_ASAN int stub_child(void *arg) {
  child_main(&((px_sandbox_t *)arg)->plan); /* never returns */
  return 127;
}

/* In a pool stub: the job's parent becomes the stub's parent (the spawner
 * thread) through CLONE_PARENT; the child is born in the stub's cgroups
 * and network namespace. CLONE_VM, as posix_spawn's vfork child: until
 * its execve the child runs our setup steps (system calls only) on its
 * own stack in the memory the stub shares with the daemon, instead of
 * copying the daemon's page tables for an exec that throws them away. */
static PX_LNX_NO_ASAN pid_t spawn_from_stub(px_sandbox_t *sb) {
  return (pid_t)clone(stub_child,
                      (char *)sb->plan.child_stack + PX_LNX_CHILD_STACK,
                      CLONE_VM | CLONE_PARENT | CLONE_PIDFD | SIGCHLD, sb,
                      &sb->pidfd);
}

/* The pipes of a spawn: [i][0] read end, [i][1] write end. */
enum { P_SYNC, P_ERR, P_IN, P_OUT, P_EOUT, P_COUNT };

static int open_pipes(int fds[P_COUNT][2]) {
  int i;
  if (PX_LNX_INJECTED(PX_STEP_PIPES))
    return PX_LOG_ERRNO(PX_ESPAWN, EPERM, "pipe2 [injected]");
  for (i = 0; i < P_COUNT; i++)
    if (make_pipe(fds[i]) != 0)
      return PX_LOG_ERRNO(PX_ESPAWN, errno, "pipe2");
  return 0;
}

/* Parent side once the child exists and waits on the sync pipe: the
 * job's limits (the only place they are written, cold or warm: a slot's
 * stub has left its cgroups by now), the cold child's placement (a slot's
 * child is born in its cgroups), id maps, release, verdict of its setup. */
static int release_child(px_sandbox_t *sb, int fds[P_COUNT][2]) {
  int rc = px__lnx_cg_job_limits(&sb->be->cg, &sb->cg, &sb->spec->limits);
  if (rc == 0 && !sb->slot)
    rc = px__lnx_cg_job_place(&sb->be->cg, &sb->cg, sb->pid, sb->placed_v2);
  if (rc != 0 ||
      (sb->plan.userns && (rc = write_id_maps(sb->be, sb->pid)) != 0))
    return rc;
  sb->start_ms = px_now_ms();
  PX__STAMP(sb, PX_T_PLACED);
#ifdef PX_TEST_SEAMS
  /* Tests: the daemon is held here, its job child parked, to be killed
   * (faults_parked_child_dies_with_daemon). */
  if (px_fault_hit("linux.hold_before_sync"))
    px_sleep_ms(60000);
#endif
  if (write(fds[P_SYNC][1], "g", 1) != 1)
    return PX_LOG_ERRNO(PX_ESPAWN, errno, "write(sync)");
  close_fd(&fds[P_SYNC][1]);
  rc = read_setup(sb, fds[P_ERR][0]);
  PX__STAMP(sb, PX_T_EXECED);
  return rc;
}

/* The job's pid 1, from the slot's stub or cold on the spawner thread:
 * 0 with sb->pid set; PX_EPROCESS when the kernel refused the clone
 * (EAGAIN at a pids or RLIMIT_NPROC limit, ENOMEM, ENOSPC for namespaces:
 * the OS did not create the job's process, process_create_failed; the
 * injected fault stands for that refusal and takes the same answer);
 * PX_ESPAWN when the stub is gone (not the kernel's doing). */
static int clone_child(px_sandbox_t *sb) {
  pid_t pid;
  int rc;
  if (PX_LNX_INJECTED(PX_STEP_CLONE))
    return PX_LOG_ERRNO(PX_EPROCESS, errno, "clone3 [injected]");
  if (sb->slot)
    pid = px__lnx_slot_spawn(sb->slot, sb, spawn_from_stub);
  else
    pid = px__lnx_spawner_call(sb->be->spawner, clone_job, sb);
  if (pid >= 0) {
    sb->pid = pid;
    return 0;
  }
  if (pid == PX_LNX_SLOT_LOST)
    rc = PX_LOG_ERRNO(PX_ESPAWN, errno, "pool stub");
  else
    rc = PX_LOG_ERRNO(PX_EPROCESS, errno,
                      sb->slot ? "clone (pool)" : "clone3");
  kill_and_reap(sb); /* a slot's child may exist with its pid unknown */
  return rc;
}

int px__lnx_spawn(px_sandbox_t *sb) {
  px__lnx_plan_t *p = &sb->plan;
  int fds[P_COUNT][2];
  int rc, i;

  memset(fds, 0xff, sizeof fds); /* all -1 */
  if ((rc = open_pipes(fds)) != 0)
    goto cleanup;
  p->sync_rd = fds[P_SYNC][0];
  p->err_wr = fds[P_ERR][1];
  p->in_rd = fds[P_IN][0];
  p->out_wr = fds[P_OUT][1];
  p->errout_wr = fds[P_EOUT][1];
  if ((rc = clone_child(sb)) != 0)
    goto cleanup;
  PX__STAMP(sb, PX_T_CLONED);
  close_fd(&fds[P_SYNC][0]);
  close_fd(&fds[P_ERR][1]);
  close_fd(&fds[P_IN][0]);
  close_fd(&fds[P_OUT][1]);
  close_fd(&fds[P_EOUT][1]);
  if ((rc = release_child(sb, fds)) != 0) {
    if (!sb->outcome.error_msg[0])
      px_snprintf(sb->outcome.error_msg, sizeof sb->outcome.error_msg,
                  "sandbox setup failed: %s", px_strerror(rc));
    kill_and_reap(sb);
    goto cleanup;
  }
  sb->in_fd = fds[P_IN][1];         /* ownership moves to the sandbox */
  sb->out_fd[0] = fds[P_OUT][0];
  sb->out_fd[1] = fds[P_EOUT][0];
  fds[P_IN][1] = fds[P_OUT][0] = fds[P_EOUT][0] = -1;
cleanup:
  px__lnx_slot_discard(sb->be, sb->slot); /* used once; its cgroups are ours */
  sb->slot = NULL;
  for (i = 0; i < P_COUNT; i++) {
    close_fd(&fds[i][0]);
    close_fd(&fds[i][1]);
  }
  p->sync_rd = p->err_wr = p->in_rd = p->out_wr = p->errout_wr = -1;
  return rc;
}
