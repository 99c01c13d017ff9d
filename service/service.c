/* service.c - the service core shared by the Windows service and the Linux
 * daemon (px_service.h): configuration -> KB layer -> backend -> engine.
 *
 * DESIGN: px_service_open is a list of steps, each fatal:
 *   1. KB: open the store over the configured roots and complete any
 *      rollback a crashed run left in its journal, before any work.
 *   2. Engine: options from the configuration (queue, workers, output
 *      guard, admission floor), the platform backend (or a test's), and
 *      the KB hooks. Opening the backend does its own crash recovery
 *      (leftover cgroups / job directories).
 * Transports then open sessions (session.c) against it.
 */
#include "service_int.h"

#include "px/px_error.h"
#include "px/px_events.h"
#include "px/px_log.h"
#include "px/px_util.h"

#include <stdlib.h>
#include <string.h>

static int open_kb(px_service_t *svc) {
  const px_kb_config_t *k = &svc->cfg->kb;
  px_kb_root_t roots[16];
  px_kb_result_t rec;
  px_kb_opts_t o;
  size_t i;
  int rc;

  if (k->nroots == 0)
    return 0; /* no knowledge base configured: results carry "kb": null */
  if (k->nroots > sizeof roots / sizeof roots[0]) {
    PX_LOG(PX_LOG_ERROR, "kb.roots: at most %zu roots", sizeof roots / sizeof roots[0]);
    return PX_ECONFIG;
  }
  px_kb_opts_default(&o);
  for (i = 0; i < k->nroots; i++) {
    roots[i].name = k->roots[i].name;
    roots[i].path = k->roots[i].path;
  }
  o.roots = roots;
  o.nroots = k->nroots;
  o.store = k->store;
  o.snapshot = k->snapshot;
  o.keep = k->keep;
  o.max_store_bytes = k->max_store_bytes;
  o.owner_uid = k->owner_uid; /* the fs layer uses it only as root, Linux */
  o.owner_gid = k->owner_gid;
  o.job_max_bytes = k->job_max_bytes;
  o.job_max_files = k->job_max_files;
  if ((rc = px_kb_open(&o, &svc->kb)) != 0) {
    PX_LOG(PX_LOG_ERROR, "cannot open the knowledge-base store %s: %s", k->store,
           px_strerror(rc));
    return rc;
  }
  memset(&rec, 0, sizeof rec);
  rc = px_kb_recover(svc->kb, &rec);
  if (rc != 0) {
    PX_LOG_EVENT(PX_LOG_CRITICAL, PX_EVENT_RECOVERY_FAILED,
                 "knowledge-base crash recovery failed: %s",
           rec.error ? rec.error : px_strerror(rc));
  } else if (rec.rolled_back) {
    PX_LOG_EVENT(PX_LOG_WARN, PX_EVENT_RECOVERY_KB,
                 "crash recovery: completed rollback to %s (%llu restored, "
           "%llu removed, verified %d)", rec.snapshot ? rec.snapshot : "?",
           (unsigned long long)rec.files_restored,
           (unsigned long long)rec.files_removed, rec.verified);
  }
  px_kb_result_free(&rec);
  return rc;
}

/* The NULL-terminated read-only bind list the Linux backend wants. */
static int build_ro_binds(px_service_t *svc) {
  const px_linux_config_t *l = &svc->cfg->linux_;
  size_t i;
  if (l->nro_binds == 0)
    return 0; /* backend default */
  svc->ro_binds = calloc(l->nro_binds + 1, sizeof *svc->ro_binds);
  if (!svc->ro_binds)
    return PX_ENOMEM;
  for (i = 0; i < l->nro_binds; i++)
    svc->ro_binds[i] = l->ro_binds[i];
  return 0;
}

/* The image runtimes' images (svc->images, NULL-ended; NULL if none). */
static int build_images(px_service_t *svc) {
  const px_config_t *cfg = svc->cfg;
  size_t i, n = 0;
  for (i = 0; i < cfg->nruntimes; i++)
    n += cfg->runtimes[i].image != NULL;
  if (n == 0)
    return 0;
  if (!(svc->images = calloc(n + 1, sizeof *svc->images)) ||
      !(svc->image_runtimes = calloc(n + 1, sizeof *svc->image_runtimes)))
    return PX_ENOMEM;
  for (i = 0, n = 0; i < cfg->nruntimes; i++)
    if (cfg->runtimes[i].image) {
      svc->image_runtimes[n] = cfg->runtimes[i].name;
      svc->images[n++] = cfg->runtimes[i].image;
    }
  return 0;
}

/* The container backend, for image runtimes (built on Linux so far). */
static void container_opts(const px_service_t *svc, px_engine_opts_t *o) {
#ifdef PX_HAVE_CONTAINERS
  const px_config_t *cfg = svc->cfg;
  if (svc->images)
    o->container = &px_backend_container;
  o->backend_opts.container_endpoint = cfg->containers.endpoint;
  o->backend_opts.container_gate =
      cfg->containers.gate ? cfg->containers.gate : PX_CTR_GATE_DEFAULT;
  o->backend_opts.container_user = cfg->containers.user;
  o->backend_opts.container_allow_degraded = cfg->containers.allow_degraded;
  o->backend_opts.container_images = svc->images;
  o->backend_opts.container_runtimes = svc->image_runtimes;
  o->backend_opts.container_pull = cfg->containers.pull == PX_PULL_MISSING;
  o->backend_opts.container_pool = cfg->containers.pool;
  o->backend_opts.container_slot_limits = cfg->limits.def;
#else
  (void)o;
  if (svc->images)
    PX_LOG(PX_LOG_ERROR, "image runtimes are configured but this build has "
                         "no container backend: their jobs will fail");
#endif
}

static void engine_opts(const px_service_t *svc, const px_service_opts_t *so,
                        px_engine_opts_t *o) {
  const px_config_t *cfg = svc->cfg;
  px_engine_opts_default(o);
  o->workers = cfg->queue.workers;
  o->queue_max = cfg->queue.max_depth;
  o->aging_ms = cfg->queue.aging_ms;
  o->client_max_queued = cfg->queue.per_client_max;
  o->identity_max_queued = cfg->queue.per_identity_max;
  o->identity_max_running = cfg->queue.per_identity_running;
  o->min_free_memory_bytes = cfg->queue.min_free_memory_bytes;
  o->output.limit_bytes = cfg->limits.def.output_bytes;
  o->output.overflow = cfg->output.overflow;
  o->output.rate_bytes_per_s = cfg->output.rate_bytes_per_s;
  o->output.burst_bytes = cfg->output.burst_bytes;
  o->backend = px_backend_native();
#ifdef PX_TEST_SEAMS
  if (so->backend_ops)
    o->backend = (const px_backend_ops_t *)so->backend_ops;
#endif
  o->backend_opts.work_root = cfg->work_root;
  o->backend_opts.tick_ms = cfg->watchdog_tick_ms;
  o->backend_opts.ui_restrictions = cfg->windows.ui_restrictions;
  o->backend_opts.untrusted_integrity = cfg->windows.integrity == PX_INTEGRITY_UNTRUSTED;
  o->backend_opts.ro_binds = svc->ro_binds;
  o->backend_opts.tmpfs_bytes = cfg->linux_.tmpfs_bytes;
  o->backend_opts.sandbox_uid = cfg->linux_.sandbox_uid;
  o->backend_opts.sandbox_gid = cfg->linux_.sandbox_gid;
  o->backend_opts.job_dir_disk = cfg->linux_.job_dir == PX_JOB_DIR_DISK;
  o->backend_opts.job_dir_inodes = cfg->linux_.job_dir_files;
  o->backend_opts.job_dir_default_bytes = cfg->limits.def.disk_bytes;
  o->backend_opts.job_dir_bytes = cfg->windows.job_dir_bytes;
  o->backend_opts.job_dir_files = cfg->windows.job_dir_files;
  o->backend_opts.job_handles = cfg->windows.job_handles;
  o->backend_opts.allow_degraded = so->allow_degraded || cfg->linux_.allow_degraded ||
                                   cfg->windows.allow_degraded;
  o->backend_opts.pool_size = cfg->linux_.pool;
  o->backend_opts.kb_owner_uid = cfg->kb.owner_uid;
  o->backend_opts.kb_owner_gid = cfg->kb.owner_gid;
  container_opts(svc, o);
  if (svc->kb)
    o->kb = px_kb_hooks(svc->kb);
  o->version = svc->version;
}

int px_service_open(const px_service_opts_t *so, px_service_t **out) {
  px_service_t *svc = calloc(1, sizeof *svc);
  px_engine_opts_t eo;
  int rc;

  if (!svc)
    return PX_ENOMEM;
  svc->cfg = so->config;
  px_mutex_init(&svc->attest_lock);
  px_mutex_init(&svc->attest_run);
  px_mutex_init(&svc->cluster_lock);
  px_mutex_init(&svc->nodes_lock);
#ifdef PX_TEST_SEAMS
  svc->attest_exempt = so->attest_exempt;
#endif
  svc->allow_degraded = so->allow_degraded || so->config->windows.allow_degraded ||
                        so->config->linux_.allow_degraded;
  px_strlcpy(svc->version, so->version ? so->version : "0.0.0", sizeof svc->version);
  if ((rc = open_kb(svc)) != 0 || (rc = build_ro_binds(svc)) != 0 ||
      (rc = build_images(svc)) != 0)
    goto fail;
  engine_opts(svc, so, &eo);
  if (!eo.backend) {
    PX_LOG(PX_LOG_ERROR, "no sandbox backend is built for this platform");
    rc = PX_ENOTSUP;
    goto fail;
  }
  if ((rc = px_engine_new(&eo, &svc->eng)) != 0) {
    PX_LOG(PX_LOG_ERROR, "cannot start the engine (%s backend): %s",
           eo.backend->name, px_strerror(rc));
    goto fail;
  }
  PX_LOG(PX_LOG_INFO, "service core ready: backend %s, %s", eo.backend->name,
         svc->kb ? "knowledge base on" : "no knowledge base configured");
  *out = svc;
  return 0;

fail:
  px_kb_close(&svc->kb);
  free(svc->ro_binds);
  free(svc->images);
  free(svc->image_runtimes);
  px_mutex_destroy(&svc->attest_run);
  px_mutex_destroy(&svc->attest_lock);
  px_mutex_destroy(&svc->nodes_lock);
  px_mutex_destroy(&svc->cluster_lock);
  free(svc);
  return rc;
}

void px_service_stop(px_service_t *svc) {
  if (svc && svc->eng)
    px_engine_stop(svc->eng);
}

void px_service_free(px_service_t *svc) {
  if (!svc)
    return;
  px_engine_free(svc->eng); /* stops first if needed */
  px_kb_close(&svc->kb);
  free(svc->ro_binds);
  free(svc->images);
  free(svc->image_runtimes);
  px_mutex_destroy(&svc->attest_run);
  px_mutex_destroy(&svc->attest_lock);
  px_mutex_destroy(&svc->nodes_lock);
  px_mutex_destroy(&svc->cluster_lock);
  free(svc);
}

uint32_t px_service_max_frame(const px_service_t *svc) {
  return svc->cfg->transports.max_frame_bytes;
}

uint64_t px_service_read_timeout_ms(const px_service_t *svc) {
  return svc->cfg->transports.read_timeout_ms;
}

px_kb_t *px_service_kb(px_service_t *svc) { return svc->kb; }

int px_service_would_admit(px_service_t *svc) {
  px_status_info_t st;
  uint64_t queued = 0;
  int p;
  px_engine_status(svc->eng, &st);
  for (p = 0; p < PX_PRIO_COUNT; p++)
    queued += st.queue[p];
  return !st.paused && (st.queue_max == 0 || queued < st.queue_max);
}

void px_service_set_gateway(px_service_t *svc, const px_gateway_ops_t *ops,
                            void *ctx) {
  svc->gw = ops; /* before any session opens, after the last one closed */
  svc->gw_ctx = ops ? ctx : NULL;
}

void px_service_set_cluster(px_service_t *svc, px_cluster_status_fn fn,
                            void *ctx) {
  px_mutex_lock(&svc->cluster_lock);
  svc->cluster_fn = fn;
  svc->cluster_ctx = ctx;
  px_mutex_unlock(&svc->cluster_lock);
}

void px_service_set_cluster_metrics(px_service_t *svc, int gateway,
                                    px_cluster_metrics_fn fn, void *ctx) {
  px_mutex_lock(&svc->cluster_lock);
  svc->cl_metrics[gateway ? 1 : 0] = fn;
  svc->cl_metrics_ctx[gateway ? 1 : 0] = fn ? ctx : NULL;
  px_mutex_unlock(&svc->cluster_lock);
}

void px_service_set_cluster_nodes(px_service_t *svc, px_cluster_nodes_fn fn, void *ctx) {
  px_mutex_lock(&svc->nodes_lock); /* waits for a read in progress */
  svc->nodes_fn = fn;
  svc->nodes_ctx = fn ? ctx : NULL;
  px_mutex_unlock(&svc->nodes_lock);
}

const char *px_service_version(const px_service_t *svc) { return svc->version; }
