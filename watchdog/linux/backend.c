/* backend.c - the Linux backend's operations table (px_sandbox.h).
 *
 * DESIGN
 * open detects what the host offers once (cgroup controllers per
 * hierarchy, Landlock ABI, root or user-namespace mode), builds what every
 * job shares (the mount skeleton, the seccomp BPF with and without
 * net:egress) and starts the watchdog thread. prepare makes the job dir
 * (tmpfs, files), the job's cgroups with their limits and the exec plan;
 * start spawns (spawn.c) and hands the job to the watchdog; wait blocks on
 * the job's condition until the watchdog retired it; kill is
 * px__lnx_job_kill; release kills leftovers and removes cgroups and job dir.
 *
 * Fail closed: a limit the policy sets that this host cannot apply makes
 * prepare fail with PX_ENOTSUP, unless allow_degraded (then rlimit
 * backstops and the pid-namespace kill remain, and "degraded" is reported).
 * A failed prepare cleans up after itself and returns no sandbox; a failed
 * start leaves an outcome with error set for wait().
 */
#include "linux_int.h"
#include "px/px_idmap.h"

#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_util.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* --- open / close -------------------------------------------------------- */

static int read_cap_last(void) {
  FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
  int v = 63;
  if (f) {
    if (fscanf(f, "%d", &v) != 1)
      v = 63;
    fclose(f);
  }
  return v;
}

static uint64_t host_available(const px__lnx_backend_t *be) {
  uint64_t a = PX_ENF(PX_ENF_PID_NAMESPACE) | PX_ENF(PX_ENF_MOUNT_NAMESPACE) |
               PX_ENF(PX_ENF_NET_NAMESPACE) | PX_ENF(PX_ENF_IPC_NAMESPACE) |
               PX_ENF(PX_ENF_UTS_NAMESPACE) | PX_ENF(PX_ENF_PIVOT_ROOT) |
               PX_ENF(PX_ENF_SECCOMP) | PX_ENF(PX_ENF_NO_NEW_PRIVS) |
               PX_ENF(PX_ENF_UID_DROP) | PX_ENF(PX_ENF_CAPS_DROPPED) |
               PX_ENF(PX_ENF_RLIMITS) | PX_ENF(PX_ENF_WATCHDOG_POLL);
  if (be->is_root)
    a |= PX_ENF(PX_ENF_TMPFS_WORKDIR);
  if (be->is_root && be->job_dir_disk && be->mkfs)
    a |= PX_ENF(PX_ENF_DISK_WORKDIR);
  else
    a |= PX_ENF(PX_ENF_USER_NAMESPACE);
  if (be->landlock_abi > 0)
    a |= PX_ENF(PX_ENF_LANDLOCK);
  if (be->cg.memory != PX_CG_NONE)
    a |= PX_ENF(PX_ENF_CGROUP_MEMORY);
  if (be->cg.pids != PX_CG_NONE)
    a |= PX_ENF(PX_ENF_CGROUP_PIDS);
  if (be->cg.cpu != PX_CG_NONE)
    a |= PX_ENF(PX_ENF_CGROUP_CPU);
  if (be->cg.v2_kill)
    a |= PX_ENF(PX_ENF_CGROUP_KILL);
  return a;
}

/* Create the missing parents of path (0755, like mkdir -p): the default
 * work root /var/lib/phoenix-executor/jobs must work on a fresh machine. */
static int make_parents(const char *path) {
  char buf[PX_LNX_PATH_MAX];
  char *p;
  if (px_strlcpy(buf, path, sizeof buf) != 0)
    return PX_ERANGE;
  for (p = buf + 1; (p = strchr(p, '/')) != NULL; p++) {
    *p = '\0';
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
      return PX_LOG_ERRNO(PX_EIO, errno, "mkdir(work_root parent)");
    *p = '/';
  }
  return 0;
}

static int open_work_root(px__lnx_backend_t *be, const char *root) {
  char stage[PX_LNX_PATH_MAX], etc[PX_LNX_PATH_MAX];
  int rc;
  if (!root || root[0] != '/')
    return PX_EINVAL;
  if ((rc = make_parents(root)) != 0)
    return rc;
  if (mkdir(root, 0711) != 0 && errno != EEXIST)
    return PX_LOG_ERRNO(PX_EIO, errno, "mkdir(work_root)");
  be->work_root_fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (be->work_root_fd < 0)
    return PX_LOG_ERRNO(PX_EIO, errno, "open(work_root)");
  if (!(be->work_root = px_strdup(root)) ||
      px_snprintf(stage, sizeof stage, "%s/.px-root", root) != 0 ||
      !(be->stage = px_strdup(stage)) ||
      px_snprintf(etc, sizeof etc, "%s/.px-etc", root) != 0 ||
      !(be->etc_dir = px_strdup(etc)))
    return PX_ENOMEM;
  if (mkdir(stage, 0755) != 0 && errno != EEXIST)
    return PX_LOG_ERRNO(PX_EIO, errno, "mkdir(stage)");
  return 0;
}

static void lnx_close(void *state);

/* Job dirs left in work_root by a daemon that died: kill what still runs
 * in their cgroups, remove the cgroups, unmount and remove the dirs. Only
 * names found in this backend's own work_root are touched, so backends
 * sharing a cgroup never reap each other's jobs. */
static void recover_one(px__lnx_backend_t *be, const char *key) {
  char p[PX_LNX_PATH_MAX];
  px__lnx_cg_job_t j;
  int i;
  px__lnx_cg_job_init(&j);
  if (be->cg.v2_base &&
      px_snprintf(p, sizeof p, "%s/px-%s", be->cg.v2_base, key) == 0 &&
      access(p, F_OK) == 0)
    j.v2 = px_strdup(p);
  for (i = 0; i < PX_CG1_COUNT; i++)
    if (be->cg.v1_base[i] &&
        px_snprintf(p, sizeof p, "%s/px-%s", be->cg.v1_base[i], key) == 0 &&
        access(p, F_OK) == 0)
      j.v1[i] = px_strdup(p);
  px__lnx_cg_job_destroy(&be->cg, &j);
  px__lnx_jobdir_remove(be->work_root_fd, be->work_root, key, 1);
}

static void recover_leftovers(px__lnx_backend_t *be) {
  int fd = fcntl(be->work_root_fd, F_DUPFD_CLOEXEC, 0), n = 0;
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  struct dirent *de;
  if (!d) {
    if (fd >= 0)
      close(fd);
    return;
  }
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.' || de->d_type != DT_DIR)
      continue; /* ".", "..", ".px-root": never a job key */
    recover_one(be, de->d_name);
    n++;
  }
  closedir(d);
  if (n)
    PX_LOG(PX_LOG_WARN, "recovered %d leftover job(s) of a previous run in %s",
           n, be->work_root);
}

/* A user namespace whose only mapping is "KB owner uid/gid on disk = job
 * uid/gid", for idmapped KB mounts (root mode; in user-namespace mode the
 * job's own mapping does this already). The owner is kb.owner_uid, an
 * unprivileged uid of its own: never the daemon's uid 0, or every file a
 * kb:write job wrote would be root's on the host, and a set-uid one a root
 * shell for whoever runs it (issue 24). Made by a child that unshares and
 * waits while we write its maps; its namespace outlives it through the fd.
 * Without it (old kernel), KB roots are bound plainly. */
static void make_idmap(px__lnx_backend_t *be, const px_backend_opts_t *opts) {
  unsigned long uid = opts->kb_owner_uid ? opts->kb_owner_uid
                                         : PX_KB_OWNER_DEFAULT;
  unsigned long gid = opts->kb_owner_uid && opts->kb_owner_gid
                          ? opts->kb_owner_gid
                          : PX_KB_OWNER_DEFAULT;
  if (!be->is_root)
    return;
  be->idmap_fd = px_os_idmap_userns(uid, be->run_uid, gid, be->run_gid);
  if (be->idmap_fd < 0)
    PX_LOG(PX_LOG_WARN, "no idmap user namespace: KB roots bound plainly");
}

static int lnx_open(const px_backend_opts_t *opts, void **state) {
  px__lnx_backend_t *be = calloc(1, sizeof *be);
  int rc;
  if (!be)
    return PX_ENOMEM;
  be->work_root_fd = -1;
  be->idmap_fd = -1;
  /* A job child parked before its cgroups holds a copy of every
   * descriptor the daemon had, its sync pipe's write end included: only
   * this tells it the daemon died (spawn.c, child_park). */
  be->self_pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
  if (be->self_pidfd < 0)
    PX_LOG(PX_LOG_WARN, "pidfd_open(self) failed (%s): a job child parked when "
                        "the daemon is killed may outlive it",
           strerror(errno));
  be->tick_ms = opts->tick_ms ? opts->tick_ms : 50;
  be->tmpfs_bytes = opts->tmpfs_bytes ? opts->tmpfs_bytes : 64u << 20;
  be->allow_degraded = opts->allow_degraded;
  be->job_dir_disk = opts->job_dir_disk;
  be->job_dir_inodes = opts->job_dir_inodes ? opts->job_dir_inodes : 65536;
  be->is_root = geteuid() == 0;
  be->outer_uid = geteuid();
  be->outer_gid = getegid();
  be->run_uid = opts->sandbox_uid ? (uid_t)opts->sandbox_uid : PX_LNX_RUN_UID;
  be->run_gid = opts->sandbox_gid ? (gid_t)opts->sandbox_gid : PX_LNX_RUN_GID;
  be->cap_last = read_cap_last();
  be->landlock_abi = px__lnx_landlock_abi();
  if ((rc = open_work_root(be, opts->work_root)) != 0 ||
      (rc = px__lnx_cg_detect(&be->cg, opts->cgroup_root)) != 0 ||
      (rc = px__lnx_mnt_skeleton(be->stage, be->etc_dir,
                             opts->ro_binds ? opts->ro_binds
                                            : px__lnx_default_binds,
                             be->tmpfs_bytes, be->run_uid, be->run_gid,
                             &be->skel)) != 0 ||
      (rc = px__lnx_seccomp_build(0, &be->bpf[0])) != 0 ||
      (rc = px__lnx_seccomp_build(1, &be->bpf[1])) != 0)
    goto fail;
  make_idmap(be, opts);
  /* Unusable disk-backed job dirs do not stop the daemon: every job that
   * needs one fails (fail closed), and the log says why. */
  if (be->is_root && be->job_dir_disk && px__lnx_disk_probe(be) == 0) {
    px__lnx_disk_recover(be);
    if ((rc = px__lnx_disk_template(
             be, opts->job_dir_default_bytes,
             px__lnx_disk_inodes(opts->job_dir_default_bytes,
                             be->job_dir_inodes))) != 0)
      goto fail;
  }
  /* Orphans of a job's processes would come to us, not to init. */
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    rc = PX_LOG_ERRNO(PX_EOS, errno, "prctl(PR_SET_CHILD_SUBREAPER)");
    goto fail;
  }
  be->available = host_available(be);
  recover_leftovers(be);
  px__lnx_pool_recover(be);
  if ((rc = px__lnx_wd_open(be, &be->wd)) != 0 ||
      (rc = px__lnx_spawner_open(&be->spawner)) != 0 ||
      (rc = px__lnx_reaper_open(be, &be->reaper)) != 0 ||
      (be->is_root &&
       (rc = px__lnx_pool_open(be, opts->pool_size, &be->pool)) != 0) ||
      (rc = px__lnx_dpool_open(be, opts->pool_size, opts->job_dir_default_bytes,
                           px__lnx_disk_inodes(opts->job_dir_default_bytes,
                                           be->job_dir_inodes),
                           &be->dpool)) != 0)
    goto fail;
  if (be->landlock_abi < 4)
    PX_LOG(PX_LOG_WARN, "landlock ABI %d has no network rules: net:egress "
           "jobs may bind host ports (results lack \"landlock_net\")",
           be->landlock_abi);
  PX_LOG(PX_LOG_INFO, "linux backend: %s, landlock ABI %d, work root %s",
         be->is_root ? "root" : "user namespace", be->landlock_abi,
         be->work_root);
  *state = be;
  return 0;
fail:
  lnx_close(be);
  return rc;
}

static void lnx_close(void *state) {
  px__lnx_backend_t *be = state;
  if (!be)
    return;
  px__lnx_pool_close(be->pool); /* before the spawner: stubs are its children */
  px__lnx_dpool_close(be->dpool);
  px__lnx_disk_template_free(be);
  px__lnx_spawner_close(be->spawner);
  px__lnx_wd_close(be->wd);
  px__lnx_reaper_close(be->reaper); /* drains: uses cg and work_root below */
  px__lnx_seccomp_free(&be->bpf[0]);
  px__lnx_seccomp_free(&be->bpf[1]);
  px__lnx_mnt_plan_free(&be->skel);
  px__lnx_cg_host_free(&be->cg);
  if (be->stage)
    rmdir(be->stage);
  if (be->etc_dir && be->work_root_fd >= 0) {
    static const char *const etc[] = {"passwd", "group", "nsswitch.conf",
                                      "hosts"};
    int dfd = openat(be->work_root_fd, ".px-etc",
                     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), i;
    for (i = 0; dfd >= 0 && i < 4; i++)
      unlinkat(dfd, etc[i], 0);
    if (dfd >= 0)
      close(dfd);
    unlinkat(be->work_root_fd, ".px-etc", AT_REMOVEDIR);
  }
  free(be->etc_dir);
  if (be->work_root_fd >= 0)
    close(be->work_root_fd);
  if (be->idmap_fd >= 0)
    close(be->idmap_fd);
  if (be->self_pidfd >= 0)
    close(be->self_pidfd);
  free(be->stage);
  free(be->work_root);
  free(be);
}

static uint64_t lnx_available(void *state) {
  return ((px__lnx_backend_t *)state)->available;
}

/* --- prepare ------------------------------------------------------------- */

static int key_ok(const char *key) {
  size_t i, n = strlen(key);
  if (n == 0 || n > 90 || key[0] == '.')
    return 0;
  for (i = 0; i < n; i++) {
    char c = key[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
      return 0;
  }
  return 1;
}

/* Fail closed when the policy sets a limit this host cannot apply. */
static int check_degraded(px_sandbox_t *sb) {
  const px__lnx_backend_t *be = sb->be;
  const px_limits_t *l = &sb->spec->limits;
  const char *missing = NULL;
  if (l->memory_bytes && be->cg.memory == PX_CG_NONE)
    missing = "memory";
  else if (l->processes && be->cg.pids == PX_CG_NONE)
    missing = "pids";
  else if (l->cpu_ms && be->cg.cpu == PX_CG_NONE)
    missing = "cpu accounting";
  if (!missing)
    return 0;
  if (!be->allow_degraded) {
    PX_LOG(PX_LOG_ERROR, "job %s: no cgroup %s controller and degraded mode "
           "is off", sb->spec->key, missing);
    return PX_ENOTSUP;
  }
  sb->enf |= PX_ENF(PX_ENF_DEGRADED);
  return 0;
}

static uint64_t job_enforcement(const px_sandbox_t *sb) {
  uint64_t e = sb->enf | sb->cg.enf | PX_ENF(PX_ENF_PID_NAMESPACE) |
               PX_ENF(PX_ENF_MOUNT_NAMESPACE) | PX_ENF(PX_ENF_IPC_NAMESPACE) |
               PX_ENF(PX_ENF_UTS_NAMESPACE) | PX_ENF(PX_ENF_PIVOT_ROOT) |
               PX_ENF(PX_ENF_SECCOMP) | PX_ENF(PX_ENF_NO_NEW_PRIVS) |
               PX_ENF(PX_ENF_UID_DROP) | PX_ENF(PX_ENF_CAPS_DROPPED) |
               PX_ENF(PX_ENF_RLIMITS) | PX_ENF(PX_ENF_WATCHDOG_POLL);
  if (!sb->plan.egress)
    e |= PX_ENF(PX_ENF_NET_NAMESPACE);
  if (sb->plan.userns)
    e |= PX_ENF(PX_ENF_USER_NAMESPACE);
  if (sb->job_dir_mounted)
    e |= sb->job_dir_disk ? PX_ENF(PX_ENF_DISK_WORKDIR)
                          : PX_ENF(PX_ENF_TMPFS_WORKDIR);
  if (sb->be->landlock_abi > 0)
    e |= PX_ENF(PX_ENF_LANDLOCK);
  /* net:egress shares the host's network: Landlock's TCP bind rule (ABI
   * 4) is what keeps its ports; without it the result says so by the
   * missing bit (listening stays refused by seccomp either way). */
  if (sb->plan.egress && sb->be->landlock_abi >= 4)
    e |= PX_ENF(PX_ENF_LANDLOCK_NET);
  return e;
}

static void lnx_release(px_sandbox_t *sb);

/* The job dir's kind and caps. Root mode: a disk-backed file system of
 * limits.disk_bytes (linux.tmpfs_bytes when the job has none), or a tmpfs
 * of that size at most linux.tmpfs_bytes (its pages are the job's memory).
 * User-namespace mode: a plain directory, no cap of its own. */
static void job_dir_caps(px_sandbox_t *sb) {
  const px__lnx_backend_t *be = sb->be;
  uint64_t d = sb->spec->limits.disk_bytes;
  if (!be->is_root)
    return;
  sb->job_dir_disk = be->job_dir_disk;
  if (sb->job_dir_disk) {
    sb->dir_bytes = d ? d : be->tmpfs_bytes;
    sb->dir_inodes = px__lnx_disk_inodes(sb->dir_bytes, be->job_dir_inodes);
  } else {
    sb->dir_bytes = d && d < be->tmpfs_bytes ? d : be->tmpfs_bytes;
    sb->dir_inodes = PX_LNX_TMPFS_INODES;
  }
}

/* execve's limits (fs/exec.c): one string at most MAX_ARG_STRLEN (32
 * pages), argv and envp together within ARG_MAX. Checked up front so the
 * job is refused as argv_too_long (PX_ERANGE, px_sandbox.h) instead of
 * failing at exec inside the sandbox. 4 KiB of slack covers what the
 * backend adds (HOME, TMPDIR, PX_KB_*). */
static int argv_fits(const px_job_spec_t *spec) {
  const size_t max_str = 32u * 4096u;
  long arg_max = sysconf(_SC_ARG_MAX);
  size_t i, total = 4096, len;
  for (i = 0; i < spec->argc; i++) {
    len = strlen(spec->argv[i]) + 1;
    if (len > max_str)
      return 0;
    total += len + sizeof(char *);
  }
  for (i = 0; i < spec->envc; i++) {
    len = strlen(spec->env[i].name) + strlen(spec->env[i].value) + 2;
    if (len > max_str)
      return 0;
    total += len + sizeof(char *);
  }
  return arg_max <= 0 || total <= (size_t)arg_max;
}

static int prepare_steps(px_sandbox_t *sb) {
  px__lnx_backend_t *be = sb->be;
  const px_job_spec_t *spec = sb->spec;
  char cgname[128];
  int rc;
  if (!key_ok(spec->key))
    return PX_EINVAL;
  if (!argv_fits(spec)) {
    PX_LOG(PX_LOG_INFO, "job %s: command line over execve's limits", spec->key);
    return PX_ERANGE;
  }
  if ((rc = check_degraded(sb)) != 0)
    return rc;
  PX__STAMP(sb, PX_T_PREPARE);
  job_dir_caps(sb);
  if ((rc = px__lnx_jobdir_create(be->work_root_fd, be->work_root, spec->key,
                              sb->dir_bytes, be->is_root && !sb->job_dir_disk,
                              be->run_uid, be->run_gid, &sb->job_dir)) != 0)
    return rc;
  if (sb->job_dir_disk &&
      (rc = px__lnx_disk_mount(be, spec->key, sb->job_dir, sb->dir_bytes,
                           sb->dir_inodes, be->run_uid, be->run_gid)) != 0)
    return rc;
  sb->job_dir_mounted = be->is_root;
  PX__STAMP(sb, PX_T_JOBDIR);
  if ((rc = px__lnx_jobdir_write(sb->job_dir, spec->files, spec->nfiles,
                             spec->first_file_executable,
                             be->run_uid, be->run_gid)) != 0)
    return rc;
  PX__STAMP(sb, PX_T_FILES);
  /* A warm slot (pool.c) when one fits: its cgroups are made and its stub
   * placed in them. Either way the limits are written at start, by
   * spawn.c's release_child, the one writer of a job's limits. */
  sb->slot = px__lnx_pool_take(be->pool, be->is_root &&
                                         !(spec->caps & PX_CAP_NET_EGRESS));
  if (sb->slot) {
    sb->cg = *px__lnx_slot_cgroups(sb->slot); /* moved */
    px__lnx_cg_job_init(px__lnx_slot_cgroups(sb->slot));
  } else {
    px_snprintf(cgname, sizeof cgname, "px-%s", spec->key);
    if ((rc = px__lnx_cg_job_create(&be->cg, cgname, &sb->cg)) != 0)
      return rc;
  }
  PX__STAMP(sb, PX_T_CGROUPS);
  rc = px__lnx_plan_build(sb);
  PX__STAMP(sb, PX_T_PLAN);
  return rc;
}

static int lnx_prepare(void *state, const px_job_spec_t *spec,
                       const px_sandbox_events_t *events,
                       px_sandbox_t **out) {
  px_sandbox_t *sb;
  int rc;
  *out = NULL;
  if (!spec)
    return PX_EINVAL;
  sb = calloc(1, sizeof *sb);
  if (!sb)
    return PX_ENOMEM;
  sb->be = state;
  sb->spec = spec;
  if (events)
    sb->ev = *events;
  sb->pidfd = sb->in_fd = sb->wall_tfd = sb->slot_mnt_fd = -1;
  sb->out_fd[0] = sb->out_fd[1] = sb->pause_tfd[0] = sb->pause_tfd[1] = -1;
  px__lnx_cg_job_init(&sb->cg);
  if (px_mutex_init(&sb->mu) != 0 || px_cond_init(&sb->cv) != 0) {
    free(sb);
    return PX_ENOMEM;
  }
  rc = prepare_steps(sb);
  if (rc != 0) {
    PX_LOG(PX_LOG_ERROR, "job %s: prepare failed: %s", spec->key,
           px_strerror(rc));
    lnx_release(sb);
    return rc;
  }
  *out = sb;
  return 0;
}

/* --- start / wait / kill / release -------------------------------------- */

static int start_failed(px_sandbox_t *sb, int rc) {
  px_mutex_lock(&sb->mu);
  sb->outcome.error = rc;
  if (!sb->outcome.error_msg[0])
    px_snprintf(sb->outcome.error_msg, sizeof sb->outcome.error_msg,
                "%s", px_strerror(rc));
  sb->outcome.enforcement = sb->enf;
  sb->state = PX_SB_DONE;
  px_cond_broadcast(&sb->cv);
  px_mutex_unlock(&sb->mu);
  return rc;
}

static int lnx_start(px_sandbox_t *sb) {
  int rc, cancelled;
  px_mutex_lock(&sb->mu);
  cancelled = sb->kill_requested;
  if (sb->state != PX_SB_PREPARED) {
    px_mutex_unlock(&sb->mu);
    return PX_EINVAL;
  }
  if (cancelled) {
    sb->outcome.killed = 1;
    sb->state = PX_SB_DONE;
    px_cond_broadcast(&sb->cv);
  }
  px_mutex_unlock(&sb->mu);
  if (cancelled)
    return PX_ECANCELED;
  PX__STAMP(sb, PX_T_START);
  if ((rc = px__lnx_spawn(sb)) != 0)
    return start_failed(sb, rc);
  sb->enf = job_enforcement(sb);
  px_mutex_lock(&sb->mu);
  sb->state = PX_SB_RUNNING;
  px_mutex_unlock(&sb->mu);
  if ((rc = px__lnx_wd_add(sb->be->wd, sb)) != 0) {
    /* The watchdog reaps it through the tick once killed. */
    px_snprintf(sb->outcome.error_msg, sizeof sb->outcome.error_msg,
                "watchdog registration failed");
    sb->outcome.error = rc;
    px__lnx_job_kill(sb);
    return rc;
  }
  PX__STAMP(sb, PX_T_WATCHED);
  if (sb->ev.on_started)
    sb->ev.on_started(sb->ev.ctx);
  px_mutex_lock(&sb->mu);
  cancelled = sb->kill_requested;
  px_mutex_unlock(&sb->mu);
  if (cancelled)
    px__lnx_job_kill(sb); /* kill() raced with start */
  return 0;
}

static int lnx_wait(px_sandbox_t *sb, px_outcome_t *out) {
  px_mutex_lock(&sb->mu);
  if (sb->state == PX_SB_PREPARED) {
    px_mutex_unlock(&sb->mu);
    return PX_EINVAL;
  }
  while (sb->state != PX_SB_DONE)
    px_cond_wait(&sb->cv, &sb->mu);
  *out = sb->outcome;
  px_mutex_unlock(&sb->mu);
  PX__STAMP(sb, PX_T_EXITED);
  return 0;
}

static int lnx_kill(px_sandbox_t *sb) {
  px__lnx_job_kill(sb);
  return 0;
}

static void lnx_release(px_sandbox_t *sb) {
  px__lnx_backend_t *be;
  if (!sb)
    return;
  be = sb->be;
  PX__STAMP(sb, PX_T_RELEASE);
  px__lnx_slot_discard(be, sb->slot); /* prepared, never started */
  sb->slot = NULL;
  px__lnx_job_kill(sb);
  px_mutex_lock(&sb->mu);
  while (sb->state == PX_SB_RUNNING)
    px_cond_wait(&sb->cv, &sb->mu);
  px_mutex_unlock(&sb->mu);
  px__lnx_reaper_take_fd(be->reaper, &sb->slot_mnt_fd);
  /* Every process is dead now: the rest is bookkeeping the reaper does
   * while the engine delivers the result (inline if it cannot take it). */
  if (px__lnx_reaper_take(be->reaper, &sb->cg,
                          sb->job_dir ? sb->spec->key : NULL,
                          sb->job_dir_mounted) != 0) {
    px__lnx_cg_job_destroy(&be->cg, &sb->cg);
    if (sb->job_dir)
      px__lnx_jobdir_remove(be->work_root_fd, be->work_root, sb->spec->key,
                        sb->job_dir_mounted);
  }
  PX__STAMP(sb, PX_T_RELEASED);
  px__lnx_stamps_log(sb);
  free(sb->job_dir);
  px__lnx_plan_free(&sb->plan);
  px_cond_destroy(&sb->cv);
  px_mutex_destroy(&sb->mu);
  free(sb);
}

static void lnx_pool_stats(void *state, px_pool_info_t *out) {
  px__lnx_pool_stats_t st;
  px__lnx_pool_stats(((px__lnx_backend_t *)state)->pool, &st);
  out->size = st.size;
  out->ready = st.ready;
  out->taken = st.taken;
  out->cold = st.cold;
}

const px_backend_ops_t px_backend_linux = {
    .name = "linux",
    .open = lnx_open,
    .close = lnx_close,
    .enforcement_available = lnx_available,
    .prepare = lnx_prepare,
    .start = lnx_start,
    .wait = lnx_wait,
    .kill = lnx_kill,
    .release = lnx_release,
    .pool_stats = lnx_pool_stats,
    .collect = px__lnx_collect};

const px_backend_ops_t *px_backend_native(void) { return &px_backend_linux; }
