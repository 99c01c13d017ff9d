/* linux_error.h - the setup steps of the Linux backend, how a failed step
 * travels from the sandboxed child to the parent, and the fault-injection
 * hook that the fail-closed tests use.
 *
 * Every step that applies a control has a name. The child reports a failed
 * step over its error pipe as a px__lnx_child_err_t (step, errno) and exits;
 * the parent turns that into PX_ESANDBOX, an outcome.error and a log line
 * naming the step. Parent-side steps log at their failure site.
 *
 * Fault injection (test-seam builds only, px/px_fault.h): every step is
 * the fault site "linux.<name>"; a test arms it with
 * px_fault_arm("linux.cgroup_place", PX_FAULT_ALWAYS, EPERM) and the step
 * fails with that errno, parent or child side (the child works on its own
 * copy of the registry after clone). In a release build the checks
 * compile to 0.
 */
#ifndef PX_WATCHDOG_LINUX_ERROR_H
#define PX_WATCHDOG_LINUX_ERROR_H

/* X(enum, "name") in the order a job meets them. */
#define PX_LNX_STEP_MAP(X)                                                   \
  X(PX_STEP_JOB_DIR, "job_dir")                                              \
  X(PX_STEP_TMPFS, "tmpfs")                                                  \
  X(PX_STEP_DISK, "disk")                                                    \
  X(PX_STEP_FILES, "files")                                                  \
  X(PX_STEP_CGROUP_CREATE, "cgroup_create")                                  \
  X(PX_STEP_CGROUP_MEMORY, "cgroup_memory")                                  \
  X(PX_STEP_CGROUP_PIDS, "cgroup_pids")                                      \
  X(PX_STEP_CGROUP_EVENTS, "cgroup_events")                                  \
  X(PX_STEP_PIPES, "pipes")                                                  \
  X(PX_STEP_CLONE, "clone3")                                                 \
  X(PX_STEP_CGROUP_PLACE, "cgroup_place")                                    \
  X(PX_STEP_ID_MAP, "id_map")                                                \
  X(PX_STEP_SYNC, "sync")                                                    \
  X(PX_STEP_SIGNALS, "signals")                                              \
  X(PX_STEP_STDIO, "stdio")                                                  \
  X(PX_STEP_NETNS, "netns")                                                  \
  X(PX_STEP_HOSTNAME, "hostname")                                            \
  X(PX_STEP_MOUNT_PRIVATE, "mount_private")                                  \
  X(PX_STEP_MOUNT_ROOT, "mount_root")                                        \
  X(PX_STEP_BIND_RO, "bind_ro")                                              \
  X(PX_STEP_ETC_FILES, "etc_files")                                          \
  X(PX_STEP_MOUNT_JOB, "mount_job")                                          \
  X(PX_STEP_MOUNT_PROC, "mount_proc")                                        \
  X(PX_STEP_MOUNT_DEV, "mount_dev")                                          \
  X(PX_STEP_MOUNT_KB, "mount_kb")                                            \
  X(PX_STEP_ROOT_RO, "root_ro")                                              \
  X(PX_STEP_PIVOT_ROOT, "pivot_root")                                        \
  X(PX_STEP_RLIMITS, "rlimits")                                              \
  X(PX_STEP_CLOSE_RANGE, "close_range")                                      \
  X(PX_STEP_CAPS_BOUNDING, "caps_bounding")                                  \
  X(PX_STEP_SETGROUPS, "setgroups")                                          \
  X(PX_STEP_SETGID, "setgid")                                                \
  X(PX_STEP_SETUID, "setuid")                                                \
  X(PX_STEP_CAPS, "caps")                                                    \
  X(PX_STEP_PDEATHSIG, "pdeathsig")                                          \
  X(PX_STEP_NO_NEW_PRIVS, "no_new_privs")                                    \
  X(PX_STEP_LANDLOCK, "landlock")                                            \
  X(PX_STEP_SECCOMP, "seccomp")                                              \
  X(PX_STEP_EXECVE, "execve")

enum {
  PX_STEP_NONE_ = 0,
#define PX_STEP_ENUM_(e, s) e,
  PX_LNX_STEP_MAP(PX_STEP_ENUM_)
#undef PX_STEP_ENUM_
  PX_STEP_COUNT_
};

/* What the child writes to its error pipe before _exit(127). */
typedef struct {
  int step; /* PX_STEP_* */
  int err;  /* errno of the failed call */
} px__lnx_child_err_t;

/* Name of a step ("pivot_root"), "?" when out of range (steps.c). */
const char *px__lnx_step_name(int step);

#ifdef PX_TEST_SEAMS
/* The fault site of a step ("linux.pivot_root"), "linux.?" out of range. */
const char *px__lnx_step_site(int step);
/* 1 when a test armed a fault for `step` (site "linux.<name>"); errno is
 * then the armed value, as the failed call would leave it. Lock-free and
 * allocation-free: safe in the child between clone and execve. */
int px__lnx_injected(int step);
#define PX_LNX_INJECTED(step) px__lnx_injected(step)
#else
#define PX_LNX_INJECTED(step) 0
#endif

#endif /* PX_WATCHDOG_LINUX_ERROR_H */
