/* job_helpers.h - running real jobs through px_backend_linux in tests. */
#ifndef PX_TESTS_LINUX_JOB_HELPERS_H
#define PX_TESTS_LINUX_JOB_HELPERS_H

#include "task.h"

#include "px/px_error.h"
#include "px/px_sandbox.h"
#include "px/px_util.h"

typedef struct {
  const px_backend_ops_t *ops;
  void *state;
  char work_root[512];
  char probe_dir[512];      /* where px_probe lives (bound read-only) */
  const char *binds[24];
} th_backend_t;

/* What one run saw. */
typedef struct {
  px_buf_t out, err;
  size_t outputs;           /* on_output calls */
  size_t calls_after_kill;  /* on_output calls after we answered KILL */
  size_t kill_after;        /* answer KILL once this many bytes came (0: never) */
  int pause_ms;             /* answer a pause once, on the first chunk */
  int paused_once, killed_by_output, started;
  int any_output;           /* atomic: set after the first chunk stored */
  px_outcome_t o;
  int prepare_rc, start_rc, wait_rc;
} th_run_t;

/* Open the backend with a fresh work root below the test's tmpdir and the
 * default binds plus extra (NULL-terminated, may be NULL). */
int th_open(th_backend_t *b, const char *const *extra, int degraded);
/* The same with `pool` warm slots, not waited for (th_open takes the size
 * from $PX_TEST_POOL and waits for them). */
int th_open_pool(th_backend_t *b, const char *const *extra, int degraded,
                 unsigned pool);
/* The same with the job uid/gid linux.sandbox_uid/gid would give (0: the
 * backend's default). */
int th_open_uid(th_backend_t *b, const char *const *extra, unsigned pool,
                uint32_t uid, uint32_t gid, int degraded);
/* th_open without a pool and with disk-backed job dirs (an ext4 image
 * of the job's limits.disk_bytes with `inodes` files, disk.c). */
int th_open_disk(th_backend_t *b, uint64_t inodes);
/* The same with `pool` warm slots and as many job dirs of `bytes` made
 * ahead (not waited for). */
int th_open_disk_pool(th_backend_t *b, uint64_t inodes, unsigned pool,
                      uint64_t bytes);
void th_close(th_backend_t *b);
/* Wait (up to 5 s) until the backend's pool has n slots ready. */
int th_pool_wait(th_backend_t *b, unsigned n);

/* A spec with a unique key, argv (borrowed), generous limits. */
void th_spec(px_job_spec_t *s, const char *const *argv);
/* Path of px_probe (static). */
const char *th_probe(void);

/* prepare + start + wait + release; fills r. Returns 0 when it ran. */
int th_run(th_backend_t *b, const px_job_spec_t *spec, th_run_t *r);
/* prepare + start only (the caller waits and releases). */
int th_begin(th_backend_t *b, const px_job_spec_t *spec, th_run_t *r,
             px_sandbox_t **sb);
void th_free(th_run_t *r);
/* The kill operation (named here so only this file calls it). */
int th_kill(th_backend_t *b, px_sandbox_t *sb);
/* 1 when line "<check> ALLOWED|DENIED" is in text. */
int th_has(const char *text, const char *check, const char *verdict);
/* Make the backend step `step` (a name of PX_LNX_STEP_MAP, e.g.
 * "cgroup_place") fail with EPERM from now on: arms the fault site
 * "linux.<step>" (px/px_fault.h) with PX_FAULT_ALWAYS. NULL clears every
 * fault. 0, or PX_EINVAL for a name that is no step (a typo in a test must
 * not arm a site nothing hits). */
int th_fault_step(const char *step);

#define TH_REQUIRE_ROOT()                                                    \
  do {                                                                       \
    if (geteuid() != 0)                                                      \
      RETURN_SKIP("needs root (namespaces, cgroups, tmpfs mounts)");         \
  } while (0)

#endif
