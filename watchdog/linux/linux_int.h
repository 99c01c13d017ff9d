/* linux_int.h - what the files of the Linux backend share: the backend and
 * job structs and the px__ functions each mechanism file exports to the
 * others. Nothing outside watchdog/linux/ and tests/linux/ includes it.
 */
#ifndef PX_WATCHDOG_LINUX_INT_H
#define PX_WATCHDOG_LINUX_INT_H

#include "px/px_job.h"
#include "px/px_os.h"
#include "px/px_sandbox.h"

#include <linux/filter.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "linux_error.h"

/* Functions that run on a warm slot stub's stack (malloc'd, shared with
 * the daemon) or on its copy in the job's child and call a noreturn
 * function: AddressSanitizer cannot follow that stack and would warn at
 * every such call. They make only system calls. */
#if defined(__SANITIZE_ADDRESS__)
#define PX_LNX_NO_ASAN __attribute__((no_sanitize_address))
#else
#define PX_LNX_NO_ASAN
#endif

/* Where things appear inside the sandbox. */
#define PX_LNX_JOB_MNT "/job"
#define PX_LNX_KB_MNT "/kb"
/* The job uid/gid unless linux.sandbox_uid/gid say otherwise (opts). */
#define PX_LNX_RUN_UID 65534 /* nobody: owns nothing on the host */
#define PX_LNX_RUN_GID 65534
#define PX_LNX_NOFILE 1024
#define PX_LNX_TMPFS_INODES 16384 /* files of a tmpfs job dir */
/* Jobs run at this nice value and cannot lower it (RLIMIT_NICE 0, no
 * CAP_SYS_NICE): when the CPUs are contended, the daemon's watchdog and
 * workers, and the user's own programs, run before a job does. */
#define PX_LNX_JOB_NICE 10
#define PX_LNX_PATH_MAX 4096
/* Stack of a warm slot's child until its execve (CLONE_VM, spawn.c);
 * untouched pages cost nothing. */
#define PX_LNX_CHILD_STACK (256u * 1024u)

/* --- cgroup.c ----------------------------------------------------------- */

typedef enum { PX_CG_NONE = 0, PX_CG_V1 = 1, PX_CG_V2 = 2 } px__lnx_cg_mode_t;

enum { PX_CG1_MEMORY, PX_CG1_PIDS, PX_CG1_CPUACCT, PX_CG1_FREEZER,
       PX_CG1_COUNT };

/* What this host offers, detected once at open. */
typedef struct {
  int fake;                  /* root overridden (test seam): plain files */
  px__lnx_cg_mode_t memory;      /* limit + peak + OOM events */
  px__lnx_cg_mode_t pids;        /* pids.max + events */
  px__lnx_cg_mode_t cpu;         /* CPU time accounting (cpu_ms limit) */
  px__lnx_cg_mode_t freezer;     /* v1 freezer used for kill without v2 */
  int v2_kill;               /* cgroup.kill exists in v2 child cgroups */
  int v1_memsw;              /* memory.memsw.limit_in_bytes exists */
  int v1_kmem_tcp;           /* memory.kmem.tcp.limit_in_bytes exists */
  int v2_peak;               /* memory.peak exists (v2) */
  char *v2_base;             /* owned: daemon's v2 cgroup dir, or NULL */
  char *v1_base[PX_CG1_COUNT]; /* owned: daemon's v1 dirs, or NULL */
} px__lnx_cg_host_t;

/* One job's cgroups. */
typedef struct {
  char *v2;                  /* owned: job dir in the v2 tree, or NULL */
  char *v1[PX_CG1_COUNT];    /* owned: job dirs in v1 trees, or NULL */
  int v2_fd;                 /* owned: O_PATH dir fd for CLONE_INTO_CGROUP */
  int oom_efd;               /* owned: v1 OOM eventfd, or -1 */
  int mem_events_fd;         /* owned: v2 memory.events (EPOLLPRI), or -1 */
  uint64_t enf;              /* PX_ENF bits applied */
} px__lnx_cg_job_t;

typedef struct {
  int have_cpu, have_mem, have_pids;
  uint64_t cpu_ns, user_ns, sys_ns;
  uint64_t mem_peak, mem_current;
  uint64_t pids_current, pids_peak;
  uint64_t oom_kills;        /* OOM kills inside the job */
  uint64_t pids_max_hits;    /* forks refused at pids.max */
} px__lnx_cg_stat_t;

/* Detect controllers below `root_override` (NULL: /sys/fs/cgroup) into
 * *h (its strings are owned by h). Returns 0: absence is not an error. */
int px__lnx_cg_detect(px__lnx_cg_host_t *h, const char *root_override);
/* Free what px__lnx_cg_detect allocated; idempotent. */
void px__lnx_cg_host_free(px__lnx_cg_host_t *h);
/* An empty job (no dirs, fds -1): safe to destroy. */
void px__lnx_cg_job_init(px__lnx_cg_job_t *j);
/* Create the job's cgroups named `name` below the daemon's own. */
int px__lnx_cg_job_create(const px__lnx_cg_host_t *h, const char *name,
                      px__lnx_cg_job_t *j);
/* Write the limits of `lim` (0 = unlimited) and open event sources. */
int px__lnx_cg_job_limits(const px__lnx_cg_host_t *h, px__lnx_cg_job_t *j,
                      const px_limits_t *lim);
/* Put pid into every job cgroup it is not in yet (in_v2: placed by
 * CLONE_INTO_CGROUP already). */
int px__lnx_cg_job_place(const px__lnx_cg_host_t *h, px__lnx_cg_job_t *j,
                         pid_t pid, int in_v2);
/* Kill every process: cgroup.kill, else freezer + SIGKILL. Returns 0 when
 * a cgroup mechanism was used, PX_ENOTSUP when none exists. */
int px__lnx_cg_job_kill(const px__lnx_cg_host_t *h, px__lnx_cg_job_t *j);
/* 1 when no process is left in any of the job's cgroups. */
int px__lnx_cg_job_empty(const px__lnx_cg_host_t *h, const px__lnx_cg_job_t *j);
/* Read the job's accounting (fields left 0 where the host has none). */
int px__lnx_cg_job_stat(const px__lnx_cg_host_t *h, const px__lnx_cg_job_t *j,
                    px__lnx_cg_stat_t *st);
/* Close fds, remove the cgroups (kills leftovers first). Idempotent. */
void px__lnx_cg_job_destroy(const px__lnx_cg_host_t *h, px__lnx_cg_job_t *j);

/* --- seccomp.c / landlock.c --------------------------------------------- */

typedef struct {
  struct sock_filter *filter; /* owned */
  unsigned short len;
} px__lnx_bpf_t;

/* Build the deny-list filter once into *out (owned by the caller, freed
 * with px__lnx_seccomp_free); !egress (the job's own netns, loopback only)
 * also allows AF_NETLINK/NETLINK_ROUTE. 0 or PX_E*. */
int px__lnx_seccomp_build(int egress, px__lnx_bpf_t *out);
void px__lnx_seccomp_free(px__lnx_bpf_t *p);
/* Child side: load it (async-signal-safe). Returns 0 or -errno. */
int px__lnx_seccomp_load(const px__lnx_bpf_t *p);

/* Landlock ABI of this kernel, 0 when absent/disabled. */
int px__lnx_landlock_abi(void);
typedef struct {
  const char *path; /* inside the sandbox */
  int rw;
} px__lnx_ll_rule_t;
/* Child side, after pivot_root: read+exec everywhere, rw on rules with rw,
 * with egress (the host's network) TCP bind denied; scoping.
 * Returns 0 or -errno (async-signal-safe). */
int px__lnx_landlock_apply(int abi, const px__lnx_ll_rule_t *rules, size_t n,
                       int egress);

/* --- mounts.c ------------------------------------------------------------ */

typedef enum {
  PX_MNT_MKDIR,      /* mkdir dst */
  PX_MNT_FILE,       /* create empty file dst (a bind target) */
  PX_MNT_SYMLINK,    /* symlink src at dst */
  PX_MNT_BIND_RO,    /* bind src on dst, remount read-only */
  PX_MNT_BIND_RW,    /* bind src on dst, nosuid nodev */
  PX_MNT_BIND_DEV,   /* bind a device node (no nodev) */
  PX_MNT_IDMAP_RO,   /* bind src on dst through an idmapped mount (fd) */
  PX_MNT_IDMAP_RW,
  PX_MNT_TMPFS,      /* tmpfs on dst, options src */
  PX_MNT_PROC,       /* fresh proc on dst */
  PX_MNT_DEVPTS,     /* a new devpts instance on dst, options src */
  PX_MNT_ATTACH,     /* move the detached tree fd (owned) onto dst */
  PX_MNT_REMOUNT_RO  /* remount dst read-only */
} px__lnx_mnt_kind_t;

typedef struct {
  px__lnx_mnt_kind_t kind;
  int step;             /* PX_STEP_* reported when it fails */
  char *src;            /* owned: host path, symlink target or options */
  char *dst;            /* owned: absolute path in the staging root */
  unsigned long flags;  /* flags of the source mount to keep */
  int fd;               /* IDMAP kinds: the idmap user namespace
                           (borrowed); ATTACH: the detached tree (owned) */
} px__lnx_mnt_op_t;

typedef struct {
  px__lnx_mnt_op_t *ops;
  size_t n, cap;
} px__lnx_mnt_plan_t;

/* Backend-wide skeleton: the ro bind list, /dev (with /dev/shm, a tmpfs
 * of shm_bytes, and /dev/pts), /proc, /job, /tmp, and the generated /etc
 * identity files (passwd, group, nsswitch.conf, hosts) naming uid/gid,
 * written into etc_dir on the host and bound read-only, appended to *plan
 * (which owns its strings). 0 or PX_E*. */
int px__lnx_mnt_skeleton(const char *stage, const char *etc_dir,
                     const char *const *binds, uint64_t shm_bytes, uid_t uid,
                     gid_t gid, px__lnx_mnt_plan_t *plan);
/* Append one operation (src may be NULL; both strings are copied). */
int px__lnx_mnt_add(px__lnx_mnt_plan_t *plan, px__lnx_mnt_kind_t kind, int step,
                const char *src, const char *dst);
/* mkdir ops for every missing parent of stage+rel, then the bind of host
 * path src (directory, file or symlink) there. Missing src: nothing, 0. */
int px__lnx_mnt_add_bind(px__lnx_mnt_plan_t *plan, int step, const char *src,
                     const char *stage, const char *rel, int rw);
void px__lnx_mnt_plan_free(px__lnx_mnt_plan_t *plan);
/* Daemon side, for a job in a warm slot: a detached copy of host path src
 * (open_tree), made read-only unless rw, nosuid, nodev, idmapped through
 * idmap_fd when >= 0 and the file system can, to be attached at dst (a
 * path inside the job's root) by the child. 0 or PX_E*. */
int px__lnx_mnt_add_detached(px__lnx_mnt_plan_t *plan, int step,
                             const char *src, const char *dst, int rw,
                             int idmap_fd);
/* Stub side (warm slot): in the stub's new mount namespace, build the root
 * from the skeleton (all but /proc, which needs the job's pid namespace),
 * a small tmpfs on /kb for the job's mount points, make the root read-only
 * and pivot into it. 0 or -errno with *step set (async-signal-safe). */
int px__lnx_mnt_stub(const char *stage, const px__lnx_mnt_plan_t *skel,
                     int *step);
/* Pool, once (in a process of its own): a new mount namespace holding
 * the sandbox root built from the skeleton without the mounts that must
 * be fresh per sandbox (/dev/shm, /dev/pts, /proc), read-only, pivoted
 * into. *ns_fd (O_CLOEXEC, owned by the caller; it keeps the namespace
 * alive) is opened before the pivot. 0 or -errno with *step set
 * (async-signal-safe). */
int px__lnx_mnt_template(const char *stage, const px__lnx_mnt_plan_t *skel,
                     int *ns_fd, int *step);
/* Stub side (warm slot): enter the template, unshare a private copy of
 * it, mount the per-sandbox instances (/dev/shm tmpfs, /dev/pts devpts)
 * and a small tmpfs on /kb for the job's mount points. The same root as
 * px__lnx_mnt_stub makes, for a copy of a few dozen mounts instead of the
 * host's whole tree plus every bind. 0 or -errno with *step set. */
int px__lnx_mnt_stub_from(int tmpl_fd, const char *stage,
                      const px__lnx_mnt_plan_t *skel, int *step);
/* Child side in a warm slot: a fresh /proc, the job's attach operations
 * (paths inside the root), /kb read-only, cwd /job. 0 or -errno. */
int px__lnx_mnt_child_pooled(const px__lnx_mnt_plan_t *job, int *step);
/* Child side: build the root from skeleton + job ops and pivot into it.
 * Returns 0 or -errno with *step set (async-signal-safe). */
int px__lnx_mnt_child(const char *stage, const px__lnx_mnt_plan_t *skel,
                  const px__lnx_mnt_plan_t *job, int *step);

/* Host side job dir: root_path/key created fresh (a leftover is removed
 * first), a size-capped tmpfs mounted on it when use_tmpfs, owned by
 * uid/gid. *out_path (malloc'd, caller frees) is its host path. */
int px__lnx_jobdir_create(int root_fd, const char *root_path, const char *key,
                      uint64_t tmpfs_bytes, int use_tmpfs, uid_t uid,
                      gid_t gid, char **out_path);
/* Write the spec's files below dir (paths re-validated, no symlink
 * followed, O_EXCL; files[0] mode 0755 when first_exec, else 0644). 0,
 * PX_EINVAL for a bad path, or PX_E*. */
int px__lnx_jobdir_write(const char *dir, const px_job_file_t *files, size_t n,
                     int first_exec, uid_t uid, gid_t gid);
/* Unmount (when mounted) and remove root_path/key without following any
 * link the job planted. */
void px__lnx_jobdir_remove(int root_fd, const char *root_path, const char *key,
                       int mounted);
/* 1 when `path` is a safe relative file name (no "..", not absolute). */
int px__lnx_relpath_ok(const char *path);

/* --- disk.c ------------------------------------------------------------- */

typedef struct px__lnx_backend_s px__lnx_backend_t;

/* A file system made once by mke2fs and cloned into every job image of
 * its size (its allocated extents copied). */
typedef struct {
  int fd;                    /* owned: the image, unlinked */
  uint64_t bytes, inodes;
  struct {
    uint64_t off, len;
  } ext[64];
  size_t n;
} px__lnx_disk_tmpl_t;

/* At open: find mke2fs, check /dev/loop-control, make <work_root>/.px-img.
 * Sets be->mkfs (NULL when unusable: every disk-backed job then fails,
 * logged). 0 or PX_E*. */
int px__lnx_disk_probe(px__lnx_backend_t *be);
/* Remove job images a crashed daemon left in <work_root>/.px-img. */
void px__lnx_disk_recover(const px__lnx_backend_t *be);
/* Mount a fresh ext4 of `bytes` with `inodes` files, root owned by
 * uid:gid, mode 0700, on the existing empty directory `path` (the job dir
 * of `key`): one made ahead (be->dpool) when it fits, else made now.
 * Fail closed: 0, or PX_ESANDBOX (logged) with nothing left mounted,
 * attached or on disk. Unmounting `path` frees everything. */
int px__lnx_disk_mount(const px__lnx_backend_t *be, const char *key,
                   const char *path, uint64_t bytes, uint64_t inodes,
                   uid_t uid, gid_t gid);
/* Make the template for job dirs of `bytes` and `inodes` (the default
 * size), after px__lnx_disk_probe. Its absence is no error (logged): job
 * dirs then run mke2fs each. 0 or PX_ENOMEM. */
int px__lnx_disk_template(px__lnx_backend_t *be, uint64_t bytes,
                          uint64_t inodes);
void px__lnx_disk_template_free(px__lnx_backend_t *be);
/* Files of a disk-backed job dir of `bytes`: want, at most one per 8 KiB
 * (ext4's inode tables take 256 bytes an inode from the size). */
uint64_t px__lnx_disk_inodes(uint64_t bytes, uint64_t want);
/* The warm pool's part: a thread keeping `want` file systems of `bytes`
 * and `inodes` made ahead (detached mounts: nothing on any path, nothing
 * left by a crash). want 0, bytes 0 or no mkfs: none (*out NULL). */
typedef struct px__lnx_dpool_s px__lnx_dpool_t;
int px__lnx_dpool_open(const px__lnx_backend_t *be, size_t want, uint64_t bytes,
                   uint64_t inodes, px__lnx_dpool_t **out);
/* Stop the thread, release the ready ones, free. NULL is fine. */
void px__lnx_dpool_close(px__lnx_dpool_t *p);
/* How many are ready now, and (taken, when not NULL) how many jobs took
 * one so far (0 for NULL). */
size_t px__lnx_dpool_ready(px__lnx_dpool_t *p, uint64_t *taken);

/* --- the backend --------------------------------------------------------- */

typedef struct px__lnx_wd_s px__lnx_wd_t;
typedef struct px__lnx_spawner_s px__lnx_spawner_t;
typedef struct px__lnx_pool_s px__lnx_pool_t;
typedef struct px__lnx_slot_s px__lnx_slot_t;

/* Pool counters (pool.c), for status and the bench. */
typedef struct {
  uint64_t size, ready;   /* configured, ready now */
  uint64_t taken;         /* jobs that ran in a warm slot */
  uint64_t cold;          /* jobs that took the cold path (no slot fits,
                             or none was ready) */
  uint64_t made, failed;  /* slots made, slot makes that failed */
  uint64_t waited;        /* jobs that found none ready and waited for
                             one being made (taken or cold after) */
} px__lnx_pool_stats_t;

struct px__lnx_backend_s {
  char *work_root;           /* owned */
  int work_root_fd;          /* owned */
  char *stage;               /* owned: <work_root>/.px-root */
  char *etc_dir;             /* owned: <work_root>/.px-etc (generated /etc
                                files, bound read-only into every job) */
  uint64_t tick_ms, tmpfs_bytes;
  int job_dir_disk;          /* disk-backed job dirs (disk.c), root only */
  uint64_t job_dir_inodes;   /* their file cap */
  const char *mkfs;          /* mke2fs found at open (static string), or
                                NULL: disk-backed job dirs unavailable */
  struct px__lnx_dpool_s *dpool; /* owned: job dirs made ahead, or NULL */
  px__lnx_disk_tmpl_t *dtmpl;    /* owned: the default size's template, or
                                NULL */
  int allow_degraded;
  int is_root;               /* euid 0: no user namespace */
  uid_t run_uid, outer_uid;
  gid_t run_gid, outer_gid;
  int cap_last;
  int landlock_abi;
  int self_pidfd;            /* owned: a pidfd of the daemon itself, or -1:
                                a parked job child polls it (spawn.c) */
  int idmap_fd;              /* owned: userns mapping the KB owner uid to
                                the job uid (KB mounts), or -1 */
  px__lnx_cg_host_t cg;
  px__lnx_mnt_plan_t skel;
  px__lnx_bpf_t bpf[2];          /* [0] no egress, [1] egress */
  uint64_t available;        /* PX_ENF bits this host can apply */
  px__lnx_wd_t *wd;              /* owned */
  px__lnx_spawner_t *spawner; /* owned: the thread every job is cloned from */
  px__lnx_pool_t *pool;          /* owned: warm slots (pool.c), or NULL */
  struct px__lnx_reaper_s *reaper; /* owned: cleans finished jobs (reaper.c) */
};

/* reaper.c: finished jobs' cgroups and directories, removed off the job's
 * critical path (processes are already dead when they get here). */
typedef struct px__lnx_reaper_s px__lnx_reaper_t;
int px__lnx_reaper_open(px__lnx_backend_t *be, px__lnx_reaper_t **out);
/* Hand over a dead job's cgroups (moved: *cg is reset) and its job dir
 * key (copied; NULL: none). 0, or an error when the caller must clean up
 * itself (queue full, stopping, out of memory). */
int px__lnx_reaper_take(px__lnx_reaper_t *r, px__lnx_cg_job_t *cg,
                        const char *key, int mounted);
/* Hand over *fd to be closed by the reaper (a finished job's slot mount
 * namespace: its mounts are torn down at the close); closes it inline
 * when the reaper cannot take it. *fd is -1 afterwards. */
void px__lnx_reaper_take_fd(px__lnx_reaper_t *r, int *fd);
/* Finish every queued cleanup, stop the thread, free. NULL is fine. */
void px__lnx_reaper_close(px__lnx_reaper_t *r);

/* The exec plan a child follows: everything precomputed by the parent so
 * that the child only makes system calls (it is a fork of a threaded
 * process: no malloc, no locks). */
typedef struct {
  const px__lnx_backend_t *be;
  px__lnx_mnt_plan_t mnt;        /* job-specific mount ops */
  px__lnx_ll_rule_t ll[3 + 16];
  size_t nll;
  char **argv, **envp;       /* owned, NULL-terminated */
  char *search_path;         /* owned: PATH for argv[0] lookup */
  uint64_t cpu_rlimit_s;
  uint64_t fsize;
  int egress, userns;
  int pooled;                /* runs in a warm slot: no CLONE_NEWNET */
  void *child_stack;         /* owned: a slot child's stack until execve
                                (PX_LNX_CHILD_STACK bytes), or NULL */
  /* fds, child ends, set by spawn */
  int sync_rd, err_wr, in_rd, out_wr, errout_wr;
} px__lnx_plan_t;

typedef enum { PX_SB_PREPARED, PX_SB_RUNNING, PX_SB_DONE } px__lnx_sb_state_t;

/* Step stamps of one job's path through the backend (CLOCK_MONOTONIC ns),
 * logged at "trace" level when the job is released: the per-step costs
 * in bench/README.md come from them. A stamp is one vDSO clock read. */
typedef enum {
  PX_T_PREPARE,   /* prepare entered */
  PX_T_JOBDIR,    /* job dir made (tmpfs on the host, or the slot's) */
  PX_T_FILES,     /* job files written */
  PX_T_CGROUPS,   /* slot taken, or (cold) cgroups made and limited */
  PX_T_PLAN,      /* exec plan built: prepare done */
  PX_T_START,     /* start entered */
  PX_T_CLONED,    /* pid known (cold: clone3; slot: stub cloned, reaped) */
  PX_T_PLACED,    /* limits written (slot) / migrated (cold); released */
  PX_T_EXECED,    /* the child's setup ended in execve (EOF seen) */
  PX_T_WATCHED,   /* registered with the watchdog: start returns */
  PX_T_EXITED,    /* the watchdog saw the end: wait returns */
  PX_T_RELEASE,   /* release entered */
  PX_T_RELEASED,  /* release done (cleanup handed to the reaper) */
  PX_T_COUNT
} px__lnx_stamp_t;

#define PX__STAMP(sb, t) ((sb)->stamp[(t)] = px_now_ns())
/* Log sb's stamps as one trace line (nothing below the trace level). */
void px__lnx_stamps_log(const struct px_sandbox_s *sb);

typedef struct {
  px_sandbox_t *sb;
  int kind;
} px__lnx_wd_reg_t;

struct px_sandbox_s {
  px__lnx_backend_t *be;      /* borrowed */
  const px_job_spec_t *spec;  /* borrowed until release */
  px_sandbox_events_t ev;
  px_mutex_t mu;
  px_cond_t cv;
  px__lnx_sb_state_t state;
  int kill_sent, kill_requested, output_killed;
  char *job_dir;              /* owned: host path */
  int job_dir_mounted;
  int job_dir_disk;           /* an ext4 image, not a tmpfs */
  uint64_t dir_bytes, dir_inodes; /* the job dir's caps (0: none) */
  uint64_t dir_full_ms;       /* watchdog: when it was first seen full */
  px__lnx_cg_job_t cg;
  px__lnx_plan_t plan;
  px__lnx_slot_t *slot;           /* owned: the warm slot it runs in, or NULL */
  int slot_mnt_fd;            /* owned: its slot's mount ns, held until
                                 release (px__lnx_reaper_take_fd), or -1 */
  int placed_v2;              /* born in its v2 cgroup (CLONE_INTO_CGROUP) */
  /* process */
  int pidfd;                  /* owned */
  pid_t pid;
  int exited_seen;
  int wstatus_code, wstatus_kind; /* from waitid */
  struct rusage ru;           /* of pid 1 and its reaped children */
  /* streams (parent ends, owned) */
  int out_fd[2];              /* stdout, stderr */
  int in_fd;
  size_t in_off;
  int wall_tfd, pause_tfd[2];
  int paused[2];
  px__lnx_wd_reg_t reg[10];       /* epoll keys, by watchdog.c REG_* kind */
  /* accounting */
  uint64_t start_ms, end_ms;
  uint64_t peak_mem, peak_pids;
  uint64_t enf;
  int finishing;
  int reg_failed;             /* some fds not in epoll: the tick polls */
  int wd_listed;              /* atomic: registered and in the watchdog's
                                 list; before it, events are ignored */
  px_outcome_t outcome;
  struct px_sandbox_s *next;  /* watchdog's running list */
  uint64_t stamp[PX_T_COUNT]; /* PX__STAMP: step times, 0 = not reached */
};

/* collect.c: the job directory's output files for the collector
 * (px_sandbox.h, collect). */
int px__lnx_collect(px_sandbox_t *sb, px_collector_t *c);

/* spawn.c: fill sb->plan from sb->spec (0, PX_EINVAL, PX_ENOMEM); free
 * it (idempotent). */
int px__lnx_plan_build(px_sandbox_t *sb);
void px__lnx_plan_free(px__lnx_plan_t *p);
/* clone3 + placement + release; fills sb->pidfd/pid and the stream fds.
 * On failure the child is dead and reaped; returns PX_E*. */
int px__lnx_spawn(px_sandbox_t *sb);
/* spawner.c: the backend's spawner thread (parent of every job's pid 1). */
int px__lnx_spawner_open(px__lnx_spawner_t **out);
void px__lnx_spawner_close(px__lnx_spawner_t *sp);
/* Run fn(arg) on the spawner thread, one call at a time; its result and
 * errno come back. */
pid_t px__lnx_spawner_call(px__lnx_spawner_t *sp, pid_t (*fn)(void *),
                           void *arg);
/* Bring lo up in the caller's network namespace (async-signal-safe).
 * 0, or -1 with errno. */
int px__lnx_loopback_up(void);

/* pool.c: warm slots. open with size 0 makes none (*out NULL). */
int px__lnx_pool_open(px__lnx_backend_t *be, size_t size, px__lnx_pool_t **out);
void px__lnx_pool_close(px__lnx_pool_t *p);
/* "px-slot-<tag>-": the prefix of this work root's slot cgroups. */
void px__lnx_pool_prefix(const px__lnx_backend_t *be, char *out, size_t n);
/* Remove the slot cgroups a crashed daemon left for this work root. */
void px__lnx_pool_recover(const px__lnx_backend_t *be);
/* A ready slot for a job, or NULL (cold path; counted). eligible: the job
 * can run in a slot at all (root mode, no net:egress). With none ready
 * while one is being made (and making works), waits for it, bounded
 * (POOL_WAIT_MS, pool.c). NULL pool: NULL. */
px__lnx_slot_t *px__lnx_pool_take(px__lnx_pool_t *p, int eligible);
void px__lnx_pool_stats(px__lnx_pool_t *p, px__lnx_pool_stats_t *out);
/* The slot's cgroups (moved into the sandbox at take). */
px__lnx_cg_job_t *px__lnx_slot_cgroups(px__lnx_slot_t *s);
/* Hand sb to the slot's stub, which clones the job's pid 1 with
 * from_stub (spawn.c's: a sibling through CLONE_PARENT, in the stub's
 * cgroups and network namespace; the pid, or -1 with errno): the job's
 * pid (its pidfd in sb->pidfd), -1 with errno when the stub's clone
 * failed (the kernel refused the process), or PX_LNX_SLOT_LOST when the
 * stub took no command or gave no answer. The stub has exited when it
 * returns. */
#define PX_LNX_SLOT_LOST ((pid_t)-2)
pid_t px__lnx_slot_spawn(px__lnx_slot_t *s, px_sandbox_t *sb,
                     pid_t (*from_stub)(px_sandbox_t *sb));
/* Kill the stub if alive and free the slot (and its cgroups if it still
 * owns them). NULL is fine. */
void px__lnx_slot_discard(const px__lnx_backend_t *be, px__lnx_slot_t *s);

/* watchdog.c: start the watchdog thread (*out owned by the backend);
 * stop and free it (jobs must have been released). */
int px__lnx_wd_open(px__lnx_backend_t *be, px__lnx_wd_t **out);
void px__lnx_wd_close(px__lnx_wd_t *wd);
/* Hand a started job to the watchdog thread (registers its fds). */
int px__lnx_wd_add(px__lnx_wd_t *wd, px_sandbox_t *sb);
/* Record a violation (first wins) and kill; thread-safe. */
void px__lnx_job_violation(px_sandbox_t *sb, px_limit_t limit,
                           uint64_t configured, uint64_t observed,
                           px_detector_t by);
/* Kill every process of the job; thread-safe, idempotent. */
void px__lnx_job_kill(px_sandbox_t *sb);

/* Default ro bind list (NULL-terminated). */
extern const char *const px__lnx_default_binds[];

#endif /* PX_WATCHDOG_LINUX_INT_H */
