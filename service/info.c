/* info.c - the `describe`, `metrics` and `status` answers (docs/protocol.md
 * 4.5, 4.6, 4.2). Read-only views a client may ask for at any time:
 * describe tells a client (an agent's tool schema, phoenixctl's runtime
 * choice) what the service offers and what this client may use; metrics
 * copies the engine's counters for a scraper; status is the engine's
 * state (queue, counters, pool, containers, attestation). They are the
 * service's, not the codec's: they read the engine's and the config's
 * types, which the protocol library does not know.
 *
 * Integers go out as exact decimal text (as in encode.c); strings from
 * the configuration are quoted with px_json_quote.
 */
#include "service_int.h"

#include "px/px_error.h"
#include "px/px_metrics.h"
#include "px/px_request.h"
#include "px/px_encode.h"
#include "px/px_engine.h"

#include <cjson/cJSON.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each add_* returns 0, or 1 on OOM. */
static int add_u64(cJSON *o, const char *name, uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "%" PRIu64, v);
  return cJSON_AddRawToObject(o, name, buf) ? 0 : 1;
}

static int add_bool(cJSON *o, const char *name, int v) {
  return cJSON_AddRawToObject(o, name, v ? "true" : "false") ? 0 : 1;
}

static int quote_raw(px_buf_t *b, const char *s) {
  return px_json_quote(b, s ? s : "", s ? strlen(s) : 0, NULL);
}

static int add_str(cJSON *o, const char *name, const char *s) {
  px_buf_t b = {0};
  int bad = quote_raw(&b, s) != 0 ||
            !cJSON_AddRawToObject(o, name, px_buf_cstr(&b));
  px_buf_free(&b);
  return bad;
}

static int add_str_item(cJSON *arr, const char *s) {
  px_buf_t b = {0};
  cJSON *it = NULL;
  int bad = quote_raw(&b, s) != 0 || !(it = cJSON_CreateRaw(px_buf_cstr(&b)));
  if (!bad && !cJSON_AddItemToArray(arr, it)) {
    cJSON_Delete(it);
    bad = 1;
  }
  px_buf_free(&b);
  return bad;
}

static cJSON *add_object(cJSON *o, const char *name) {
  cJSON *c = cJSON_CreateObject();
  if (c && !cJSON_AddItemToObject(o, name, c)) {
    cJSON_Delete(c);
    return NULL;
  }
  return c;
}

static char *finish(cJSON *o, int bad) {
  char *text = (o && !bad) ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  return text;
}

static int add_limits(cJSON *o, const char *name, const px_limits_t *l) {
  cJSON *lo = add_object(o, name);
  if (!lo)
    return 1;
  return add_u64(lo, "cpu_ms", l->cpu_ms) || add_u64(lo, "wall_ms", l->wall_ms) ||
         add_u64(lo, "memory_bytes", l->memory_bytes) ||
         add_u64(lo, "processes", l->processes) ||
         add_u64(lo, "output_bytes", l->output_bytes) ||
         add_u64(lo, "disk_bytes", l->disk_bytes);
}

/* limits: {default, max, max_large_mem, max_high_cpu} as in the config. */
static int add_limit_policy(cJSON *o, const px_limits_config_t *l) {
  cJSON *lo = add_object(o, "limits"), *x;
  if (!lo || add_limits(lo, "default", &l->def) || add_limits(lo, "max", &l->max))
    return 1;
  if (!(x = add_object(lo, "max_large_mem")) ||
      add_u64(x, "memory_bytes", l->large_mem_bytes))
    return 1;
  if (!(x = add_object(lo, "max_high_cpu")))
    return 1;
  return add_u64(x, "cpu_ms", l->high_cpu_ms) || add_u64(x, "wall_ms", l->high_cpu_wall_ms);
}

/* runtimes: [{name, extension, capability, allowed}] in config order. */
static int add_runtimes(cJSON *o, const px_config_t *cfg,
                        const px_client_policy_t *pol) {
  cJSON *arr = cJSON_AddArrayToObject(o, "runtimes");
  size_t i;
  if (!arr)
    return 1;
  for (i = 0; i < cfg->nruntimes; i++) {
    const px_runtime_t *rt = &cfg->runtimes[i];
    cJSON *ro = cJSON_CreateObject();
    if (!ro || !cJSON_AddItemToArray(arr, ro)) {
      cJSON_Delete(ro);
      return 1;
    }
    if (add_str(ro, "name", rt->name) || add_str(ro, "extension", rt->extension) ||
        add_str(ro, "capability", rt->capability) ||
        add_bool(ro, "allowed", px_client_allows(cfg, pol, rt->capability)))
      return 1;
  }
  return 0;
}

/* client: {policy, admin, capabilities, max_priority, max_concurrent}. */
static int add_client(cJSON *o, const px_config_t *cfg, const px_client_policy_t *pol) {
  cJSON *co = add_object(o, "client"), *caps;
  unsigned i;
  size_t k;
  if (!co)
    return 1;
  if (pol ? add_str(co, "policy", pol->name)
          : !cJSON_AddRawToObject(co, "policy", "null"))
    return 1;
  if (add_bool(co, "admin", pol && pol->admin) ||
      !(caps = cJSON_AddArrayToObject(co, "capabilities")))
    return 1;
  for (i = 0; pol && i < PX_CAP_COUNT; i++)
    if ((pol->caps & (1u << i)) && add_str_item(caps, px_policy_cap_name(1u << i)))
      return 1;
  for (k = 0; pol && k < cfg->nruntimes; k++)
    if (px_client_allows(cfg, pol, cfg->runtimes[k].capability) &&
        add_str_item(caps, cfg->runtimes[k].capability))
      return 1;
  return add_str(co, "max_priority",
                 pol ? px_policy_priority_name(pol->max_priority) : "low") ||
         add_u64(co, "max_concurrent", pol ? pol->max_concurrent : 0);
}

static int add_request_bounds(cJSON *o, const px_request_limits_t *r) {
  cJSON *ro = add_object(o, "request");
  if (!ro)
    return 1;
  return add_u64(ro, "max_code_bytes", r->max_code_bytes) ||
         add_u64(ro, "max_files", r->max_files) ||
         add_u64(ro, "max_file_bytes", r->max_file_bytes) ||
         add_u64(ro, "max_total_bytes", r->max_total_bytes) ||
         add_u64(ro, "max_args", r->max_args) || add_u64(ro, "max_env", r->max_env);
}

char *px__svc_encode_describe(const px_service_t *svc,
                              const px_client_policy_t *pol,
                              const char *backend) {
  const px_config_t *cfg = svc->cfg;
  cJSON *o = cJSON_CreateObject();
  int bad = !o;
  if (o)
    bad = add_str(o, "type", "describe") || add_str(o, "version", svc->version) ||
          add_str(o, "backend", backend) || add_runtimes(o, cfg, pol) ||
          add_limit_policy(o, &cfg->limits) || add_client(o, cfg, pol) ||
          add_request_bounds(o, &cfg->request) ||
          add_bool(o, "kb", svc->kb != NULL);
  return finish(o, bad);
}

/* {"le":[5,...],"counts":[cumulative..., +Inf last],"count":N,"sum_ms":S} */
static int add_histogram(cJSON *o, const char *name, const px_histogram_t *h) {
  cJSON *ho = add_object(o, name), *le, *counts;
  uint64_t cum = 0;
  unsigned i;
  char buf[24];
  if (!ho || !(le = cJSON_AddArrayToObject(ho, "le_ms")) ||
      !(counts = cJSON_AddArrayToObject(ho, "cumulative")))
    return 1;
  for (i = 0; i <= PX_METRICS_NBUCKETS; i++) {
    cJSON *a = NULL, *b;
    cum += h->bucket[i];
    if (i < PX_METRICS_NBUCKETS) {
      snprintf(buf, sizeof buf, "%" PRIu64, px_metrics_bucket_ms[i]);
      if (!(a = cJSON_CreateRaw(buf)) || !cJSON_AddItemToArray(le, a)) {
        cJSON_Delete(a);
        return 1;
      }
    }
    snprintf(buf, sizeof buf, "%" PRIu64, cum);
    if (!(b = cJSON_CreateRaw(buf)) || !cJSON_AddItemToArray(counts, b)) {
      cJSON_Delete(b);
      return 1;
    }
  }
  return add_u64(ho, "count", h->count) || add_u64(ho, "sum_ms", h->sum_ms);
}

static int add_by_name(cJSON *o, const char *name, const uint64_t *v, unsigned n,
                       const char *(*namer)(unsigned)) {
  cJSON *x = add_object(o, name);
  unsigned i;
  if (!x)
    return 1;
  for (i = 0; i < n; i++) {
    const char *k = namer(i);
    if (k && add_u64(x, k, v[i]))
      return 1;
  }
  return 0;
}

static const char *status_namer(unsigned i) { return px_status_name((px_status_t)i); }
static const char *limit_namer(unsigned i) { return px_limit_name((px_limit_t)i); }

/* metrics.cluster.worker: the worker's counters (docs/protocol.md 4.6). */
static int add_cluster_worker(cJSON *c, const px_cluster_metrics_t *m) {
  cJSON *w = add_object(c, "worker");
  if (!w)
    return 1;
  return add_bool(w, "connected", m->worker_connected) ||
         add_u64(w, "reconnects", m->worker_reconnects) ||
         add_u64(w, "in_flight", m->worker_in_flight) ||
         add_u64(w, "jobs_taken", m->jobs_taken) ||
         add_u64(w, "results_published", m->results_published) ||
         add_u64(w, "results_duplicate", m->results_duplicate) ||
         add_u64(w, "result_retries", m->result_retries) ||
         add_u64(w, "results_unpublished", m->results_unpublished) ||
         add_u64(w, "executor_lost", m->executor_lost) ||
         add_u64(w, "invalid_terminated", m->invalid_terminated);
}

/* metrics.cluster.gateway: the gateway's counters. */
static int add_cluster_gateway(cJSON *c, const px_cluster_metrics_t *m) {
  cJSON *g = add_object(c, "gateway"), *r;
  if (!g)
    return 1;
  return add_bool(g, "connected", m->gateway_connected) ||
         add_u64(g, "reconnects", m->gateway_reconnects) ||
         add_u64(g, "in_flight", m->gateway_in_flight) ||
         add_u64(g, "forwarded", m->forwarded) ||
         add_u64(g, "publish_retries", m->publish_retries) ||
         add_u64(g, "results_relayed", m->results_relayed) ||
         add_u64(g, "results_recovered", m->results_recovered) ||
         !(r = add_object(g, "refused")) ||
         add_u64(r, "cluster_unavailable", m->refused_unavailable) ||
         add_u64(r, "bad_request", m->refused_too_large) ||
         add_u64(r, "queue_full", m->refused_queue_full) ||
         add_u64(r, "other", m->refused_other);
}

/* "cluster": {"worker": {...}, "gateway": {...}}, the parts there are;
 * nothing at all without one (cluster.mode off: the answer is a single
 * host's, byte for byte as before). */
static int add_cluster_metrics(cJSON *o, const px_cluster_metrics_t *m) {
  cJSON *c;
  if (!m || (!m->has_worker && !m->has_gateway))
    return 0;
  if (!(c = add_object(o, "cluster")))
    return 1;
  return (m->has_worker && add_cluster_worker(c, m)) ||
         (m->has_gateway && add_cluster_gateway(c, m));
}

char *px__svc_encode_metrics(const px_metrics_t *m, const px_status_info_t *st,
                             const px_cluster_metrics_t *cl) {
  static const char *const prio[PX_PRIO_COUNT] = {"critical", "high", "normal", "low"};
  cJSON *o = cJSON_CreateObject(), *q, *kb;
  unsigned i;
  int bad = !o;
  if (!bad)
    bad = add_str(o, "type", "metrics") || add_u64(o, "uptime_ms", st->uptime_ms) ||
          add_u64(o, "accepted", st->accepted) ||
          add_by_name(o, "results", m->results, PX_STATUS_COUNT_, status_namer) ||
          add_by_name(o, "kills", m->kills, PX_METRICS_NLIMITS, limit_namer) ||
          !(q = add_object(o, "queue"));
  for (i = 0; !bad && i < PX_PRIO_COUNT; i++)
    bad = add_u64(q, prio[i], st->queue[i]);
  if (!bad)
    bad = add_u64(q, "max", st->queue_max) || add_u64(o, "running", st->running) ||
          add_u64(o, "workers", st->workers) || add_bool(o, "paused", st->paused) ||
          !(kb = add_object(o, "kb")) || add_u64(kb, "rollbacks", m->kb_rollbacks) ||
          add_u64(kb, "rollback_failures", m->kb_rollback_failures) ||
          add_histogram(o, "queue_wait", &m->queue_wait) ||
          add_histogram(o, "run_wall", &m->run_wall) || add_cluster_metrics(o, cl);
  return finish(o, bad);
}

/* ---- cluster_status ---- */

/* An integer the heartbeat may lack: null then. */
static int add_i64_or_null(cJSON *o, const char *name, int64_t v) {
  return v < 0 ? (cJSON_AddRawToObject(o, name, "null") ? 0 : 1)
               : add_u64(o, name, (uint64_t)v);
}

static int add_str_or_null(cJSON *o, const char *name, const char *s) {
  return s[0] ? add_str(o, name, s) : (cJSON_AddRawToObject(o, name, "null") ? 0 : 1);
}

/* {name, pool, slots, in_flight, free, attestation, accepting, version,
 * heartbeat_ms, age_ms, stale}: stale after PX__CL_STALE_BEATS of the
 * worker's heartbeat periods without one. */
static int add_node(cJSON *arr, const px_cluster_node_t *nd) {
  cJSON *w = cJSON_CreateObject();
  int64_t beat = nd->heartbeat_ms > 0 ? nd->heartbeat_ms : PX__CL_DEFAULT_HEARTBEAT_MS;
  int64_t free_slots = -1;
  if (!w || !cJSON_AddItemToArray(arr, w)) {
    cJSON_Delete(w);
    return 1;
  }
  if (nd->slots >= 0 && nd->in_flight >= 0)
    free_slots = nd->slots > nd->in_flight ? nd->slots - nd->in_flight : 0;
  return add_str(w, "name", nd->name) || add_str_or_null(w, "pool", nd->pool) ||
         add_i64_or_null(w, "slots", nd->slots) ||
         add_i64_or_null(w, "in_flight", nd->in_flight) ||
         add_i64_or_null(w, "free", free_slots) ||
         add_str_or_null(w, "attestation", nd->attestation) ||
         (nd->accepting < 0 ? !cJSON_AddRawToObject(w, "accepting", "null")
                            : add_bool(w, "accepting", nd->accepting)) ||
         add_str_or_null(w, "version", nd->version) ||
         add_i64_or_null(w, "heartbeat_ms", nd->heartbeat_ms) ||
         add_u64(w, "age_ms", nd->age_ms) ||
         add_bool(w, "stale", nd->age_ms > (uint64_t)beat * PX__CL_STALE_BEATS);
}

char *px__svc_encode_cluster_status(const px_cluster_status_t *self,
                                    const px_cluster_node_t *nodes, size_t n) {
  cJSON *o = cJSON_CreateObject(), *arr = NULL;
  size_t i;
  int bad = !o;
  if (!bad)
    bad = add_str(o, "type", "cluster_status") ||
          add_str(o, "mode", self->mode ? self->mode : "") ||
          add_bool(o, "connected", self->connected) || add_str(o, "pool", self->pool) ||
          !(arr = cJSON_AddArrayToObject(o, "workers"));
  for (i = 0; !bad && i < n; i++)
    bad = add_node(arr, &nodes[i]);
  return finish(o, bad);
}

/* ---- status ---- */

/* The report as its own object (px_attest_to_json). */
static int add_attestation(cJSON *o, const char *name,
                           const px_attest_report_t *r) {
  char *json = px_attest_to_json(r);
  int bad = json ? (cJSON_AddRawToObject(o, name, json) ? 0 : 1) : 1;
  free(json);
  return bad;
}

static int add_queue(cJSON *o, const px_status_info_t *s) {
  static const char *const names[PX_PRIO_COUNT] = {"critical", "high", "normal",
                                                   "low"};
  cJSON *q = add_object(o, "queue");
  int bad = !q, i;
  for (i = 0; q && i < PX_PRIO_COUNT; i++)
    bad |= add_u64(q, names[i], s->queue[i]);
  if (q)
    bad |= add_u64(q, "max", s->queue_max);
  return bad;
}

static int add_counters(cJSON *o, const px_status_info_t *s) {
  static const px_status_t order[] = {PX_STATUS_OK,     PX_STATUS_NONZERO_EXIT,
                                      PX_STATUS_KILLED, PX_STATUS_REJECTED,
                                      PX_STATUS_ERROR,  PX_STATUS_CANCELLED,
                                      PX_STATUS_ABORTED};
  cJSON *c = add_object(o, "counters");
  int bad;
  size_t i;
  if (!c)
    return 1;
  bad = add_u64(c, "accepted", s->accepted);
  for (i = 0; i < sizeof order / sizeof order[0]; i++)
    bad |= add_u64(c, px_status_name(order[i]), s->counters[order[i]]);
  return bad;
}

/* "gate": {"path", "state": "ok"|"unusable"|"unchecked", "reason"}: the
 * gate's check at start ("unchecked": the engine did not answer). */
static int add_gate(cJSON *c, const px_status_info_t *s) {
  cJSON *g = add_object(c, "gate");
  const char *st = !s->container_gate_checked ? "unchecked"
                   : s->container_gate_error  ? "unusable"
                                              : "ok";
  if (!g)
    return 1;
  return add_str(g, "path", s->container_gate ? s->container_gate : "") |
         add_str(g, "state", st) |
         (s->container_gate_error ? add_str(g, "reason", s->container_gate_error)
                                  : 0);
}

/* "containers": {"engine": "ok"|"unavailable", "available": bool, "gate":
 * {...}, "images_missing": [{"runtime", "image"}]}: image runtimes whose
 * jobs will fail ("available" false: all of them). */
static int add_containers(cJSON *o, const px_status_info_t *s) {
  cJSON *c = add_object(o, "containers"), *arr;
  size_t i;
  int bad;
  if (!c)
    return 1;
  bad = add_str(c, "engine", s->container_engine_up ? "ok" : "unavailable");
  bad |= add_bool(c, "available",
                  s->container_engine_up && !s->container_gate_error);
  bad |= add_gate(c, s);
  arr = cJSON_AddArrayToObject(c, "images_missing");
  bad |= !arr;
  for (i = 0; arr && i < s->nmissing; i++) {
    cJSON *m = cJSON_CreateObject();
    if (!m || !cJSON_AddItemToArray(arr, m)) {
      cJSON_Delete(m);
      return 1;
    }
    bad |= add_str(m, "runtime", s->missing_runtime[i]) |
           add_str(m, "image", s->missing_image[i]);
  }
  return bad;
}

static int add_cluster(cJSON *o, const px_cluster_status_t *cl) {
  cJSON *c = add_object(o, "cluster");
  if (!c)
    return 1;
  return add_str(c, "mode", cl->mode ? cl->mode : "") |
         add_bool(c, "connected", cl->connected) | add_str(c, "pool", cl->pool) |
         add_i64_or_null(c, "pending", cl->pending) | add_u64(c, "in_flight", cl->in_flight);
}

char *px__svc_encode_status(const px_status_info_t *s,
                            const px_cluster_status_t *cl) {
  cJSON *o = cJSON_CreateObject();
  int bad;
  if (!o)
    return NULL;
  bad = add_str(o, "type", "status");
  bad |= add_str(o, "version", s->version ? s->version : "");
  bad |= add_str(o, "backend", s->backend ? s->backend : "");
  bad |= px_encode_add_enforcement(o, "enforcement_available", s->enforcement_available);
  bad |= add_queue(o, s);
  bad |= add_u64(o, "running", s->running);
  bad |= add_u64(o, "workers", s->workers);
  bad |= add_bool(o, "paused", s->paused);
  bad |= add_counters(o, s);
  bad |= add_u64(o, "uptime_ms", s->uptime_ms);
  if (s->has_pool) {
    cJSON *p = add_object(o, "pool");
    bad |= !p;
    if (p)
      bad |= add_u64(p, "size", s->pool_size) |
             add_u64(p, "ready", s->pool_ready) |
             add_u64(p, "taken", s->pool_taken) |
             add_u64(p, "cold", s->pool_cold);
  }
  if (s->has_containers)
    bad |= add_containers(o, s);
  if (s->attestation)
    bad |= add_attestation(o, "attestation", s->attestation);
  if (cl)
    bad |= add_cluster(o, cl);
  return finish(o, bad);
}
