/* job_helpers.c - see job_helpers.h. */
#include "tests/linux/job_helpers.h"

#include "px/px_fault.h"
#include "px/px_log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "watchdog/linux/linux_int.h"

static int on_output(void *ctx, px_stream_t stream, const char *data,
                     size_t len) {
  th_run_t *r = ctx;
  px_buf_t *b = stream == PX_STREAM_STDOUT ? &r->out : &r->err;
  r->outputs++;
  if (r->killed_by_output) {
    r->calls_after_kill++;
    return PX_OUTPUT_KILL;
  }
  if (b->len < (8u << 20))
    px_buf_append(b, data, len);
  else
    b->len += len; /* count only */
  __atomic_store_n(&r->any_output, 1, __ATOMIC_RELEASE);
  if (r->kill_after && r->out.len + r->err.len >= r->kill_after) {
    r->killed_by_output = 1;
    return PX_OUTPUT_KILL;
  }
  if (r->pause_ms && !r->paused_once) {
    r->paused_once = 1;
    return r->pause_ms;
  }
  return PX_OUTPUT_CONTINUE;
}

static void on_started(void *ctx) { ((th_run_t *)ctx)->started = 1; }

int th_open(th_backend_t *b, const char *const *extra, int degraded) {
  /* PX_TEST_POOL=N runs the suite with N warm slots (ctest's *_pooled
   * entries): the sandbox must behave the same with and without. */
  const char *pool = getenv("PX_TEST_POOL");
  unsigned n = pool ? (unsigned)strtoul(pool, NULL, 10) : 0;
  int rc = th_open_pool(b, extra, degraded, n);
  if (rc == 0 && n)
    th_pool_wait(b, n);
  return rc;
}

static int open_with(th_backend_t *b, const char *const *extra, int degraded,
                     unsigned pool, uint32_t uid, uint32_t gid,
                     uint64_t disk_inodes, uint64_t disk_default) {
  px_backend_opts_t o;
  size_t n = 0, i;
  char *slash;
  memset(b, 0, sizeof *b);
  b->ops = px_backend_native();
  snprintf(b->work_root, sizeof b->work_root, "%swork", px_test_tmpdir());
  snprintf(b->probe_dir, sizeof b->probe_dir, "%s", px_test_self_dir());
  slash = strrchr(b->probe_dir, '/');
  if (slash && slash != b->probe_dir)
    *slash = '\0';
  for (i = 0; px__lnx_default_binds[i]; i++)
    b->binds[n++] = px__lnx_default_binds[i];
  b->binds[n++] = b->probe_dir;
  for (i = 0; extra && extra[i] && n + 1 < 24; i++)
    b->binds[n++] = extra[i];
  b->binds[n] = NULL;
  memset(&o, 0, sizeof o);
  o.work_root = b->work_root;
  o.tick_ms = 20;
  o.ro_binds = b->binds;
  o.allow_degraded = degraded;
  o.pool_size = pool;
  o.sandbox_uid = uid;
  o.sandbox_gid = gid;
  o.job_dir_disk = disk_inodes != 0;
  o.job_dir_inodes = disk_inodes;
  o.job_dir_default_bytes = disk_default;
  px_log_set_level(PX_LOG_WARN);
  return b->ops->open(&o, &b->state);
}

int th_open_pool(th_backend_t *b, const char *const *extra, int degraded,
                 unsigned pool) {
  return open_with(b, extra, degraded, pool, 0, 0, 0, 0);
}

int th_open_uid(th_backend_t *b, const char *const *extra, unsigned pool,
                uint32_t uid, uint32_t gid, int degraded) {
  return open_with(b, extra, degraded, pool, uid, gid, 0, 0);
}

int th_open_disk(th_backend_t *b, uint64_t inodes) {
  return open_with(b, NULL, 0, 0, 0, 0, inodes, 0);
}

int th_open_disk_pool(th_backend_t *b, uint64_t inodes, unsigned pool,
                      uint64_t bytes) {
  return open_with(b, NULL, 0, pool, 0, 0, inodes, bytes);
}

int th_pool_wait(th_backend_t *b, unsigned n) {
  px__lnx_pool_stats_t st;
  int i;
  for (i = 0; i < 1000; i++) {
    px__lnx_pool_stats(((px__lnx_backend_t *)b->state)->pool, &st);
    if (st.ready >= n)
      return 0;
    px_sleep_ms(5);
  }
  return PX_ETIMEDOUT;
}

void th_close(th_backend_t *b) {
  if (b->state)
    b->ops->close(b->state);
  b->state = NULL;
}

const char *th_probe(void) {
  static char p[600];
  snprintf(p, sizeof p, "%spx_probe", px_test_self_dir());
  return p;
}

void th_spec(px_job_spec_t *s, const char *const *argv) {
  static unsigned seq;
  unsigned n = __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED);
  memset(s, 0, sizeof *s);
  snprintf(s->id, sizeof s->id, "t%u", n);
  snprintf(s->key, sizeof s->key, "t-%lu-%u", (unsigned long)getpid(), n);
  s->argv = (char **)argv;
  while (argv[s->argc])
    s->argc++;
  s->limits.wall_ms = 20000;
  s->limits.cpu_ms = 20000;
  s->limits.memory_bytes = 512u << 20;
  s->limits.processes = 64;
}

int th_begin(th_backend_t *b, const px_job_spec_t *spec, th_run_t *r,
             px_sandbox_t **sb) {
  px_sandbox_events_t ev;
  ev.ctx = r;
  ev.on_output = on_output;
  ev.on_started = on_started;
  *sb = NULL;
  r->prepare_rc = b->ops->prepare(b->state, spec, &ev, sb);
  if (r->prepare_rc != 0)
    return r->prepare_rc;
  r->start_rc = b->ops->start(*sb);
  return r->start_rc;
}

int th_run(th_backend_t *b, const px_job_spec_t *spec, th_run_t *r) {
  px_sandbox_t *sb = NULL;
  int rc = th_begin(b, spec, r, &sb);
  if (sb) {
    r->wait_rc = b->ops->wait(sb, &r->o);
    b->ops->release(sb);
  }
  px_buf_cstr(&r->out);
  px_buf_cstr(&r->err);
  return rc;
}

int th_kill(th_backend_t *b, px_sandbox_t *sb) { return b->ops->kill(sb); }

void th_free(th_run_t *r) {
  px_buf_free(&r->out);
  px_buf_free(&r->err);
}

int th_has(const char *text, const char *check, const char *verdict) {
  char line[128];
  const char *p = text;
  size_t n;
  snprintf(line, sizeof line, "%s %s", check, verdict);
  n = strlen(line);
  while ((p = strstr(p, line)) != NULL) {
    if ((p == text || p[-1] == '\n') && (p[n] == ' ' || p[n] == '\n' ||
                                         p[n] == '\0'))
      return 1;
    p += n;
  }
  return 0;
}

int th_fault_step(const char *step) {
  char site[64];
  int i;
  if (!step) {
    px_fault_reset();
    return 0;
  }
  for (i = 1; i < PX_STEP_COUNT_; i++)
    if (strcmp(px__lnx_step_name(i), step) == 0) {
      snprintf(site, sizeof site, "linux.%s", step);
      return px_fault_arm(site, PX_FAULT_ALWAYS, EPERM);
    }
  return PX_EINVAL;
}
