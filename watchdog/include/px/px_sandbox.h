/* px_sandbox.h - the seam between the portable engine and a platform
 * backend (Windows Job Objects, Linux namespaces/cgroups, or the in-process
 * fake used by the engine's tests).
 *
 * Life of a job, as the engine drives it from one worker thread:
 *
 *     prepare(spec, events) -> sb      job dir created, files written,
 *                                      limits/token/cgroup ready, child
 *                                      created suspended where the OS can
 *     start(sb)                        child placed under every control,
 *                                      checked, then resumed
 *     wait(sb, &outcome)               blocks until every process of the job
 *                                      is gone and its output drained
 *     collect(sb, collector)           (when the run asked for files) walks
 *                                      the job dir, nothing running in it
 *     release(sb)                      kills anything left, removes the dir
 *
 * The kill operation may be called from any thread at any time between prepare and
 * release (cancel, scram, service stop, output overflow); it is idempotent.
 * Security setup fails closed: if any control cannot be applied, prepare or
 * start returns an error, nothing runs, and release cleans up.
 */
#ifndef PX_SANDBOX_H
#define PX_SANDBOX_H

#include "px/px_collect.h"
#include "px/px_job.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct px_sandbox_s px_sandbox_t;

typedef enum { PX_STREAM_STDOUT = 1, PX_STREAM_STDERR = 2 } px_stream_t;

/* What the on_output callback tells the backend to do next. */
#define PX_OUTPUT_CONTINUE 0 /* keep reading */
#define PX_OUTPUT_KILL (-1)  /* kill the job now (the engine records why) */

/* The KB owner uid/gid on disk when px_backend_opts_t leaves it 0 (the
 * config's default, kb.owner_uid): unprivileged, unused on Debian. */
#define PX_KB_OWNER_DEFAULT 65533u
/* A positive value N: pause reading this stream for N ms (back-pressure:
 * the pipe fills and the child blocks). */

typedef struct {
  void *ctx; /* borrowed; passed back to every callback */
  /* Output bytes as they are read, on a backend thread, never concurrently
   * for the same job. Returns PX_OUTPUT_CONTINUE, PX_OUTPUT_KILL or a pause
   * in ms. May be NULL (output discarded). */
  int (*on_output)(void *ctx, px_stream_t stream, const char *data,
                   size_t len);
  /* The job's processes started running (after start's checks). */
  void (*on_started)(void *ctx);
} px_sandbox_events_t;

/* A backend's warm pool (prepared sandboxes), for `status`. */
typedef struct {
  uint64_t size;   /* slots kept ready (configured) */
  uint64_t ready;  /* ready now */
  uint64_t taken;  /* jobs that ran in a slot */
  uint64_t cold;   /* jobs that took the cold path */
} px_pool_info_t;

/* Backend-wide settings, filled by the engine from the policy. */
typedef struct {
  const char *work_root;   /* jobs' directories live below it */
  uint64_t tick_ms;        /* watchdog re-check period (default 50) */
  int ui_restrictions;     /* Windows: JOB_OBJECT_LIMIT UI (default 1) */
  int untrusted_integrity; /* Windows: Untrusted instead of Low */
  int kill_grace_ms;       /* unused by kills (always hard); reserved */
  const char *const *ro_binds; /* Linux: host paths the runtime needs,
                                  NULL-terminated; NULL = built-in list */
  uint64_t tmpfs_bytes;    /* Linux: job dir size cap when the job has no
                              limits.disk_bytes, and the ceiling of a
                              tmpfs job dir (default 64 MiB) */
  uint32_t sandbox_uid;    /* Linux: uid/gid jobs run as (0: 65534,   */
  uint32_t sandbox_gid;    /*   nobody/nogroup); linux.sandbox_uid/gid */
  int job_dir_disk;        /* Linux: 1 = a disk-backed job dir (an ext4
                              image on a loop device, disk.c), 0 = a
                              tmpfs (the default of direct users) */
  uint64_t job_dir_inodes; /* Linux: files of a disk-backed job dir
                              (default 65536) */
  uint64_t job_dir_default_bytes; /* Linux: limits.default.disk_bytes: the
                                     warm pool (pool_size) makes disk-backed
                                     job dirs of this size ahead (0: none) */
  uint64_t job_dir_bytes;  /* Windows: job dir bytes the watchdog allows:
                              the ceiling of a job's limits.disk_bytes, the
                              cap when it has none (default 64 MiB) */
  uint64_t job_dir_files;  /* Windows: job dir entries (default 16384) */
  uint64_t job_handles;    /* Windows: open handles of a job's processes
                              together (default 20000) */
  const char *cgroup_root; /* Linux: override cgroup mount root (a test
                              seam: refused without PX_TEST_SEAMS) */
  int allow_degraded;      /* run when a control is unavailable on this
                              host (reported as "degraded"); default 0 */
  const char *container_endpoint; /* container backend: the Docker Engine
                                     ("unix:///var/run/docker.sock") */
  const char *container_gate;     /* host path of px-ctr-gate */
  const char *container_user;     /* "uid:gid" jobs run as in a container */
  int container_allow_degraded;   /* run containers whose controls cannot
                                     be read back (reported "degraded") */
  const char *const *container_images; /* the image runtimes' images,
                                          NULL-terminated: checked (and
                                          pulled if allowed) at open */
  int container_pull;             /* 1: pull a missing image at open */
  unsigned container_pool;        /* warm containers per image and job-dir
                                     mode (0: none) */
  px_limits_t container_slot_limits; /* what warm containers are made with
                                        (limits.default): a job with these
                                        needs no update */
  unsigned pool_size;      /* Linux: warm sandboxes kept ready (0 = none) */
  uint32_t kb_owner_uid;   /* Linux, root: the on-disk owner a kb:write
                              job's uid is mapped to by the idmapped KB
                              mount (kb.owner_uid); 0 = PX_KB_OWNER_DEFAULT */
  uint32_t kb_owner_gid;
  const char *const *container_runtimes; /* the runtime of each
                                            container_images entry, same
                                            order (for `status`); may be
                                            NULL */
} px_backend_opts_t;

/* A backend is a table of operations plus its own state. */
typedef struct px_backend_ops_s {
  const char *name; /* "windows", "linux", "fake" */
  int (*open)(const px_backend_opts_t *opts, void **state);
  void (*close)(void *state);
  /* Mechanisms this host can apply (PX_ENF bits), for `status`. */
  uint64_t (*enforcement_available)(void *state);
  /* PX_ERANGE from prepare means "the command line built from argv is
   * longer than this platform allows": the engine rejects the job with
   * argv_too_long. PX_EPROCESS from prepare or start means "the OS call
   * that creates or starts the job's process failed" (CreateProcessAsUserW,
   * ResumeThread, clone3): the engine answers process_create_failed; a
   * missing program is PX_ENOENT, other spawn set-up PX_ESPAWN
   * (spawn_failed). */
  int (*prepare)(void *state, const px_job_spec_t *spec,
                 const px_sandbox_events_t *events, px_sandbox_t **out);
  int (*start)(px_sandbox_t *sb);
  /* Blocks until the job has ended; fills *out exactly once. */
  int (*wait)(px_sandbox_t *sb, px_outcome_t *out);
  int (*kill)(px_sandbox_t *sb);
  void (*release)(px_sandbox_t *sb);
  /* Warm-pool counters for `status` (Linux); NULL: the backend has none. */
  void (*pool_stats)(void *state, px_pool_info_t *out);
  /* The run's output files (px_collect.h): walk the job directory and
   * feed the collector. Called after wait returned 0, before release, so
   * no process of the job runs; never follows a link out of the job
   * directory. Returns 0, or an error after telling the collector why
   * (px_collector_stopped); the result then lists what was gathered.
   * NULL: this backend cannot collect (the result says so). */
  int (*collect)(px_sandbox_t *sb, px_collector_t *c);
  /* Backends of image runtimes (NULL for the others), for `status`: 1
   * when `image` (a configured one) is not present on the engine (its
   * runtime's jobs fail; the list is fixed at open); and why the gate
   * (containers.gate) failed its check at open, or NULL when it is usable
   * (image jobs are then refused with PX_ENOENGINE; owned by the state). */
  int (*image_missing)(void *state, const char *image);
  const char *(*gate_error)(void *state);
} px_backend_ops_t;

/* The backends built into this binary (NULL where not built). The fake
 * one, which runs nothing, exists only in test-seam builds
 * (tests/support/fake_backend.c): a release binary cannot name it. */
#ifdef PX_TEST_SEAMS
extern const px_backend_ops_t px_backend_fake;
#endif
extern const px_backend_ops_t px_backend_linux;
extern const px_backend_ops_t px_backend_windows;
/* Jobs of image runtimes, through the Docker Engine API (Linux builds;
 * watchdog/container/). */
extern const px_backend_ops_t px_backend_container;
/* Its image_missing and gate_error (the ops above), by name. */
int px_container_image_missing(void *state, const char *image);
const char *px_container_gate_error(void *state);

/* The real backend of this platform. */
const px_backend_ops_t *px_backend_native(void);

#ifdef __cplusplus
}
#endif
#endif /* PX_SANDBOX_H */
