/* session.c - one client connection's protocol logic (px_service.h).
 *
 * DESIGN: a session turns each payload into exactly the answers the
 * protocol promises, then gets out of the way:
 *
 *   payload -> px_request_parse ---- bad ----> `error` (no valid id) or a
 *                 |                            `rejected` result (valid id)
 *                 v
 *   ping/status/cancel/scram/resume: answered here (admin checked)
 *   run: client policy -> px_policy_admit -> px_audit_run -> engine submit
 *        -> `accepted` now; `started`, `output`, `result` later from the
 *        engine's threads through engine_event().
 *
 * Thread safety: on_payload runs on the transport thread; engine events
 * arrive on worker threads. Both send through send_locked(), which holds
 * the session lock and drops everything once the session is closing, so a
 * transport never sees a send after px_session_close returns.
 */
#include "service_int.h"

#include "px/px_audit.h"

#include "px/px_error.h"
#include "px/px_events.h"
#include "px/px_log.h"
#include "px/px_util.h"
#include "px/px_policy.h"
#include "px/px_request.h"
#include "px/px_encode.h"
#include "px/px_engine.h"

#include <stdlib.h>
#include <string.h>

static void send_locked(px_session_t *s, char *json) {
  if (!json) {
    PX_LOG(PX_LOG_ERROR, "out of memory encoding a message for a client");
    return;
  }
  px_mutex_lock(&s->lock);
  if (!s->closing && s->send(s->ctx, json, strlen(json)) != 0)
    PX_LOG(PX_LOG_DEBUG, "client gone: a message was dropped");
  px_mutex_unlock(&s->lock);
  free(json);
}

static void send_error(px_session_t *s, const char *id, px_code_t code,
                       const char *msg) {
  send_locked(s, px_encode_error(id, code, msg));
}

/* A `run` refused before the engine: the engine delivers and counts its
 * one result (status rejected), findings included. */
static void reject(px_session_t *s, const char *id, px_code_t code,
                   const char *msg, px_result_t *findings) {
  px_audit_finding_t *audit = findings ? findings->audit : NULL;
  size_t naudit = findings ? findings->naudit : 0;
  if (findings) {
    findings->audit = NULL; /* moved */
    findings->naudit = 0;
  }
  if (code == PX_CODE_AUDIT_REJECTED)
    PX_LOG_EVENT(PX_LOG_WARN, PX_EVENT_AUDIT_REJECTED, "job %s rejected by the code audit: %s",
                 id, msg);
  else if (code == PX_CODE_FORBIDDEN)
    PX_LOG_EVENT(PX_LOG_WARN, PX_EVENT_CLIENT_FORBIDDEN, "job %s refused: %s (pid %lu)",
                 id, msg, s->peer.pid);
  else
    PX_LOG(PX_LOG_INFO, "job %s rejected: %s", id, px_code_name(code));
  switch (px_engine_reject(s->svc->eng, s->ec, id, code, msg, audit, naudit)) {
  case 0:
    break;
  case PX_EEXIST: /* the id is in flight: that job is not disturbed */
    send_error(s, id, PX_CODE_DUPLICATE_ID, "a job with this id is still in flight");
    break;
  default:
    PX_LOG(PX_LOG_ERROR, "could not deliver the rejection of job %s", id);
  }
}

static void on_parse_error(px_session_t *s, const px_parse_error_t *e) {
  if (e->has_id)
    reject(s, e->id, e->code, e->message, NULL);
  else
    send_error(s, e->id[0] ? e->id : NULL, e->code, e->message);
}

/* A cluster job may not ask for the knowledge base: it lives on the
 * agent's disk, not on the worker's (docs/cluster-protocol.md). That holds
 * for a job this worker took from the cluster and for a run this gateway
 * would forward (remote). NULL, or the first kb capability asked for. */
static const char *cluster_kb_cap(const px_session_t *s,
                                  const px_run_request_t *run, int remote) {
  size_t i;
  int cluster = remote || s->peer.kind == PX_PEER_CLUSTER;
  for (i = 0; cluster && i < run->ncapabilities; i++)
    if (strncmp(run->capabilities[i], "kb:", 3) == 0)
      return run->capabilities[i];
  return NULL;
}

/* "any" (a gateway is registered): 1 when the engine could start a job
 * now (a free worker, nothing queued) or is paused (scram, stop: the run
 * is refused `paused` here, not spilled), or when the client is at its
 * max_concurrent (the gateway would refuse it queue_full: it waits here
 * instead). */
static int local_slot_free(px_session_t *s) {
  px_status_info_t st;
  uint64_t queued = 0;
  int i;
  unsigned cap = s->policy ? s->policy->max_concurrent : 0;
  if (cap && px_session_jobs(s) + s->svc->gw->jobs(s->svc->gw_ctx, s) >= cap)
    return 1;
  px_engine_status(s->svc->eng, &st);
  for (i = 0; i < PX_PRIO_COUNT; i++)
    queued += st.queue[i];
  return st.paused || (st.running < st.workers && queued == 0);
}

static int engine_paused(px_session_t *s) {
  px_status_info_t st;
  px_engine_status(s->svc->eng, &st);
  return st.paused;
}

/* Where the run goes: 0 local, 1 the cluster (through the gateway), -1
 * refused here (cluster_unavailable: no gateway in this daemon). A job a
 * worker took from the cluster always runs here; so does an "any" run
 * that asks for a kb: capability (the KB is on this host only). */
static int placement(px_session_t *s, const px_run_request_t *run) {
  if (run->placement == PX_PLACEMENT_LOCAL || s->peer.kind == PX_PEER_CLUSTER)
    return 0;
  if (!s->svc->gw) { /* "any" too: the client asked for a cluster */
    reject(s, run->id, PX_CODE_CLUSTER_UNAVAILABLE,
           run->placement == PX_PLACEMENT_ANY
               ? "placement \"any\" needs cluster.mode \"submit\" or \"both\" on this daemon"
               : "placement \"cluster\" needs cluster.mode \"submit\" or \"both\" on this daemon",
           NULL);
    return -1;
  }
  if (run->placement == PX_PLACEMENT_ANY && cluster_kb_cap(s, run, 1))
    return 0;
  return run->placement == PX_PLACEMENT_CLUSTER || !local_slot_free(s);
}

/* A run that passed policy and audit goes to the gateway; an id the
 * client has in flight locally is a duplicate, as between local jobs. */
static void forward(px_session_t *s, const px_run_request_t *run,
                    const char *payload, size_t len) {
  if (px_engine_client_has(s->svc->eng, s->ec, run->id)) {
    send_error(s, run->id, PX_CODE_DUPLICATE_ID, "a job with this id is still in flight");
    return;
  }
  if (engine_paused(s)) { /* scram stops forwarding too */
    reject(s, run->id, PX_CODE_PAUSED, "the executor is paused or stopping", NULL);
    return;
  }
  s->svc->gw->submit(s->svc->gw_ctx, s, run->id, run->priority, payload, len);
}

static void handle_run(px_session_t *s, px_run_request_t *run,
                       const char *payload, size_t len) {
  const px_config_t *cfg = s->svc->cfg;
  px_engine_job_t job;
  px_result_t r;
  px_code_t refusal = PX_CODE_NONE;
  char why[256];
  const char *kbcap;
  int rc, remote;

  memset(&job, 0, sizeof job);
  memset(&r, 0, sizeof r);
  if (!s->policy) {
    reject(s, run->id, PX_CODE_FORBIDDEN, "this client may not run jobs", NULL);
    return;
  }
  if ((remote = placement(s, run)) < 0)
    return;
  if (s->svc->gw && s->svc->gw->holds(s->svc->gw_ctx, s, run->id)) {
    send_error(s, run->id, PX_CODE_DUPLICATE_ID,
               "a cluster job with this id is still in flight");
    return;
  }
  if ((kbcap = cluster_kb_cap(s, run, remote)) != NULL) {
    px_snprintf(why, sizeof why, "capability %.64s refused: cluster jobs get "
                "no knowledge-base access (the KB lives on the agent's disk)",
                kbcap);
    reject(s, run->id, PX_CODE_CAPABILITY_DENIED, why, NULL);
    return;
  }
  /* Fail closed: no job runs in a sandbox the attestation did not verify
   * (px_attest.h); a forwarded job runs under its worker's. */
  if (!remote && px__svc_service_may_run(s->svc, why, sizeof why) != 0) {
    reject(s, run->id, PX_CODE_SANDBOX_UNVERIFIED, why, NULL);
    return;
  }
  rc = px_policy_admit(cfg, s->policy, run, &job.spec, &r);
  if (rc == 0) /* findings go into r; high trust may turn them into a no */
    rc = px_audit_run(cfg, run->runtime, run->code, run->code_len,
                      run->high_trust, &r);
  if (rc == PX_EPOLICY) {
    reject(s, run->id, r.error_code, r.error_message ? r.error_message : "", &r);
  } else if (rc != 0) {
    reject(s, run->id, PX_CODE_INTERNAL, px_strerror(rc), &r);
  } else if (remote) {
    forward(s, run, payload, len);
  } else {
    job.stream = run->stream;
    job.kb_rollback = run->kb_rollback;
    job.audit = r.audit; /* moved */
    job.naudit = r.naudit;
    r.audit = NULL;
    r.naudit = 0;
    rc = px_engine_submit_take(s->svc->eng, s->ec, &job, NULL, &refusal);
    if (rc == PX_EEXIST)
      send_error(s, run->id, PX_CODE_DUPLICATE_ID,
                 "a job with this id is still in flight");
    else if (rc != 0 && rc != PX_EBUSY)
      send_error(s, run->id, PX_CODE_INTERNAL, px_strerror(rc));
  }
  px_engine_job_clear(&job); /* whatever submit did not take */
  px_result_free(&r);
}

static void send_status(px_session_t *s) {
  px_status_info_t st;
  px_cluster_status_t cl;
  int has_cluster;
  px_attest_report_t *a = malloc(sizeof *a);
  px_engine_status(s->svc->eng, &st);
  if (a) {
    px_service_attestation(s->svc, a);
    st.attestation = a;
  }
  memset(&cl, 0, sizeof cl);
  px_mutex_lock(&s->svc->cluster_lock);
  if ((has_cluster = s->svc->cluster_fn != NULL) != 0)
    s->svc->cluster_fn(s->svc->cluster_ctx, &cl);
  px_mutex_unlock(&s->svc->cluster_lock);
  send_locked(s, px__svc_encode_status(&st, has_cluster ? &cl : NULL));
  free(a);
}

static int is_admin(const px_session_t *s) { return s->policy && s->policy->admin; }

/* describe: what the service offers and what this client may use. */
static void send_describe(px_session_t *s) {
  px_status_info_t st;
  px_engine_status(s->svc->eng, &st);
  send_locked(s, px__svc_encode_describe(s->svc, s->policy, st.backend));
}

static void send_metrics(px_session_t *s) {
  px_status_info_t st;
  px_metrics_t m;
  px_cluster_metrics_t cl;
  int i;
  px_engine_status(s->svc->eng, &st);
  px_engine_metrics(s->svc->eng, &m);
  memset(&cl, 0, sizeof cl);
  px_mutex_lock(&s->svc->cluster_lock);
  for (i = 0; i < 2; i++)
    if (s->svc->cl_metrics[i])
      s->svc->cl_metrics[i](s->svc->cl_metrics_ctx[i], &cl);
  px_mutex_unlock(&s->svc->cluster_lock);
  send_locked(s, px__svc_encode_metrics(&m, &st, &cl));
}

/* cluster_status: any client, as status. The workers' heartbeats read
 * from PX_NODES (one read at a time, bounded by the reader's deadline);
 * cluster_off without a cluster (mode off; always on Windows). */
static void send_cluster_status(px_session_t *s) {
  px_cluster_status_t self;
  px_cluster_node_t *nodes = NULL;
  size_t n = 0;
  char why[200] = "";
  int has_self, rc = PX_ENOTSUP;
  memset(&self, 0, sizeof self);
  px_mutex_lock(&s->svc->cluster_lock);
  if ((has_self = s->svc->cluster_fn != NULL) != 0)
    s->svc->cluster_fn(s->svc->cluster_ctx, &self);
  px_mutex_unlock(&s->svc->cluster_lock);
  px_mutex_lock(&s->svc->nodes_lock);
  if (has_self && s->svc->nodes_fn)
    rc = s->svc->nodes_fn(s->svc->nodes_ctx, &nodes, &n, why, sizeof why);
  px_mutex_unlock(&s->svc->nodes_lock);
  if (rc == PX_ENOTSUP)
    send_error(s, NULL, PX_CODE_CLUSTER_OFF,
               "this executor is not in a cluster (cluster.mode is off)");
  else if (rc == PX_EIO)
    send_error(s, NULL, PX_CODE_CLUSTER_UNAVAILABLE, why[0] ? why : "NATS is not reachable");
  else if (rc != 0)
    send_error(s, NULL, PX_CODE_INTERNAL, px_strerror(rc));
  else
    send_locked(s, px__svc_encode_cluster_status(&self, nodes, n));
  free(nodes);
}

static void kb_error(px_session_t *s, int rc, const char *what) {
  px_code_t code = rc == PX_ENOENT ? PX_CODE_UNKNOWN_SNAPSHOT : PX_CODE_KB_FAILED;
  char msg[160];
  px_snprintf(msg, sizeof msg, "%s: %s", what, px_strerror(rc));
  send_error(s, NULL, code, msg);
}

/* kb_list / kb_diff / kb_restore / kb_gc: admin only (the KB is the
 * agent's memory; restoring rewrites it). */
static void handle_kb(px_session_t *s, const px_request_t *req) {
  px_kb_t *kb = s->svc->kb;
  int rc;
  if (!is_admin(s)) {
    send_error(s, NULL, PX_CODE_FORBIDDEN, "knowledge-base administration is for admins");
    return;
  }
  if (!kb) {
    send_error(s, NULL, PX_CODE_KB_UNAVAILABLE, "no knowledge base is configured (kb.roots)");
    return;
  }
  if (req->type == PX_MSG_KB_LIST) {
    px_kb_snapinfo_t *list = NULL;
    size_t n = 0;
    if ((rc = px_kb_list(kb, &list, &n)) != 0)
      kb_error(s, rc, "kb list");
    else
      send_locked(s, px_encode_kb_snapshots(list, n));
    px_kb_list_free(list, n);
  } else if (req->type == PX_MSG_KB_DIFF) {
    px_kb_change_t *ch = NULL;
    size_t n = 0;
    if ((rc = px_kb_diff(kb, req->snapshot, &ch, &n)) != 0)
      kb_error(s, rc, "kb diff");
    else
      send_locked(s, px_encode_kb_diff(req->snapshot, ch, n));
    px_kb_changes_free(ch, n);
  } else if (req->type == PX_MSG_KB_RESTORE) {
    px_kb_result_t r;
    memset(&r, 0, sizeof r);
    rc = px_kb_restore(kb, req->snapshot, &r);
    PX_LOG(rc == 0 ? PX_LOG_WARN : PX_LOG_ERROR,
           "kb restore to %s by pid %lu: %s (verified %d)", req->snapshot,
           s->peer.pid, px_strerror(rc), r.verified);
    if (rc != 0 && rc != PX_EINTEGRITY)
      kb_error(s, rc, "kb restore");
    else
      send_locked(s, px_encode_kb_restored(&r)); /* says verified or not */
    px_kb_result_free(&r);
  } else {
    px_kb_gc_stats_t g;
    memset(&g, 0, sizeof g);
    if ((rc = px_kb_gc(kb, &g)) != 0)
      kb_error(s, rc, "kb gc");
    else
      send_locked(s, px_encode_kb_gc(g.snapshots_removed, g.objects_removed,
                                     g.bytes_removed, g.objects_kept, g.bytes_kept));
  }
}

/* attest: admin only; reruns the attestation (blocking this transport
 * thread for at most its time budget) and answers with the report. */
static void handle_attest(px_session_t *s) {
  px_attest_report_t *r;
  if (!is_admin(s)) {
    send_error(s, NULL, PX_CODE_FORBIDDEN, "attest is for admins");
    return;
  }
  if (!(r = calloc(1, sizeof *r))) {
    send_error(s, NULL, PX_CODE_INTERNAL, "out of memory");
    return;
  }
  PX_LOG(PX_LOG_WARN, "attestation rerun by pid %lu", s->peer.pid);
  px_service_attest(s->svc, r);
  send_locked(s, px_encode_attestation(r));
  free(r);
}

static void handle_cancel(px_session_t *s, const char *id) {
  if (px_engine_cancel(s->svc->eng, s->ec, id) == 0)
    return;
  if (s->svc->gw && s->svc->gw->cancel(s->svc->gw_ctx, s, id) == 0)
    return; /* a cluster job: its result says cancelled */
  send_error(s, id, PX_CODE_UNKNOWN_ID, "no job with this id in flight");
}

static void dispatch(px_session_t *s, px_request_t *req, const char *payload,
                     size_t len) {
  switch (req->type) {
  case PX_MSG_PING:
    send_locked(s, px_encode_pong());
    break;
  case PX_MSG_STATUS:
    send_status(s);
    break;
  case PX_MSG_DESCRIBE:
    send_describe(s);
    break;
  case PX_MSG_METRICS:
    send_metrics(s);
    break;
  case PX_MSG_CLUSTER_STATUS:
    send_cluster_status(s);
    break;
  case PX_MSG_RUN:
    handle_run(s, &req->run, payload, len);
    break;
  case PX_MSG_CANCEL:
    handle_cancel(s, req->id);
    break;
  case PX_MSG_KB_LIST:
  case PX_MSG_KB_DIFF:
  case PX_MSG_KB_RESTORE:
  case PX_MSG_KB_GC:
    handle_kb(s, req);
    break;
  case PX_MSG_ATTEST:
    handle_attest(s);
    break;
  case PX_MSG_SCRAM:
  case PX_MSG_RESUME:
    if (!is_admin(s)) {
      send_error(s, NULL, PX_CODE_FORBIDDEN, "scram and resume are for admins");
      break;
    }
    if (req->type == PX_MSG_SCRAM) {
      unsigned n = px_engine_scram(s->svc->eng);
      PX_LOG(PX_LOG_WARN, "scram by pid %lu: %u jobs aborted", s->peer.pid, n);
    } else {
      px_engine_resume(s->svc->eng);
      PX_LOG(PX_LOG_WARN, "resume by pid %lu", s->peer.pid);
    }
    send_status(s); /* the answer: the new status (paused or not) */
    break;
  }
}

void px_session_on_payload(px_session_t *s, const char *payload, size_t len) {
  px_request_t req;
  px_parse_error_t err;
  memset(&err, 0, sizeof err);
  if (px_request_parse(payload, len, &s->svc->cfg->request, &req,
                       &err) != 0) {
    on_parse_error(s, &err);
    return;
  }
  dispatch(s, &req, payload, len);
  px_request_free(&req);
}

void px_session_on_frame_error(px_session_t *s, px_code_t code) {
  const char *msg = code == PX_CODE_BAD_CRC ? "payload CRC-32 mismatch; frame skipped"
                    : code == PX_CODE_FRAME_TOO_LARGE
                        ? "frame longer than max_frame_bytes; closing"
                        : "bad frame magic; closing";
  send_error(s, NULL, code, msg);
}

static void peer_to_client_id(const px_peer_t *p, px_client_id_t *id,
                              const char **groups) {
  size_t i;
  memset(id, 0, sizeof *id);
  switch (p->kind) {
  case PX_PEER_UNIX:
    id->kind = PX_CLIENT_UNIX;
    id->uid = p->uid;
    id->gids = p->gids;
    id->ngids = p->ngids;
    break;
  case PX_PEER_WINDOWS:
    id->kind = PX_CLIENT_WINDOWS;
    id->user_sid = p->user_sid;
    for (i = 0; i < p->ngroup_sids; i++)
      groups[i] = p->group_sids[i];
    id->group_sids = groups;
    id->ngroup_sids = p->ngroup_sids;
    break;
  case PX_PEER_ZMQ:
    id->kind = PX_CLIENT_ZMQ;
    id->zmq_key = p->zmq_key;
    break;
  case PX_PEER_CLUSTER:
    id->kind = PX_CLIENT_CLUSTER;
    break;
  }
}

void px__svc_session_on_event(void *ctx, const px_engine_event_t *ev) {
  px_session_t *s = ctx;
  switch (ev->type) {
  case PX_ENGINE_EV_ACCEPTED:
    send_locked(s, px_encode_accepted(ev->id, ev->queue_position, NULL));
    break;
  case PX_ENGINE_EV_STARTED:
    send_locked(s, px_encode_started(ev->id));
    break;
  case PX_ENGINE_EV_OUTPUT:
    send_locked(s, px_encode_output(ev->id, (int)ev->stream, ev->data, ev->len));
    break;
  case PX_ENGINE_EV_RESULT:
    send_locked(s, px_encode_result(ev->result));
    break;
  }
}

static void client_name(const px_peer_t *p, char *out, size_t outsz) {
  if (p->kind == PX_PEER_UNIX)
    px_snprintf(out, outsz, "uid %u pid %lu", (unsigned)p->uid, p->pid);
  else if (p->kind == PX_PEER_WINDOWS)
    px_snprintf(out, outsz, "%s pid %lu", p->user_sid, p->pid);
  else if (p->kind == PX_PEER_CLUSTER)
    px_snprintf(out, outsz, "cluster");
  else
    px_snprintf(out, outsz, "zmq %.8s...", p->zmq_key);
}

px_session_t *px_session_open(px_service_t *svc, const px_peer_t *peer,
                              px_session_send_fn send, void *ctx) {
  px_session_t *s = calloc(1, sizeof *s);
  const char *groups[PX_PEER_MAX_GROUPS];
  px_engine_client_opts_t eo;
  px_client_id_t id;
  char name[96], ident[256];

  if (!s)
    return NULL;
  s->svc = svc;
  s->peer = *peer;
  s->send = send;
  s->ctx = ctx;
  px_mutex_init(&s->lock);
  peer_to_client_id(peer, &id, groups);
  s->policy = px_config_match_client(svc->cfg, &id);
  client_name(peer, name, sizeof name);
  px_peer_identity(peer, ident, sizeof ident);
  memset(&eo, 0, sizeof eo);
  eo.on_event = px__svc_session_on_event;
  eo.ctx = s;
  eo.max_concurrent = s->policy ? s->policy->max_concurrent : 0;
  eo.name = name;
  eo.identity = ident;
  eo.exempt = is_admin(s); /* admins are not under the identity caps */
  if (px_engine_client_open(svc->eng, &eo, &s->ec) != 0) {
    px_mutex_destroy(&s->lock);
    free(s);
    return NULL;
  }
  PX_LOG(PX_LOG_DEBUG, "session opened: %s, policy %s", name,
         s->policy ? s->policy->name : "(none)");
  return s;
}

int px_session_is_admin(const px_session_t *s) { return is_admin(s); }

void px_session_send_json(px_session_t *s, const char *json) {
  px_mutex_lock(&s->lock);
  if (!s->closing && s->send(s->ctx, json, strlen(json)) != 0)
    PX_LOG(PX_LOG_DEBUG, "client gone: a message was dropped");
  px_mutex_unlock(&s->lock);
}

void px_session_reject(px_session_t *s, const char *id, px_code_t code,
                       const char *msg) {
  reject(s, id, code, msg, NULL);
}

const px_peer_t *px_session_peer(const px_session_t *s) { return &s->peer; }

unsigned px_session_max_concurrent(const px_session_t *s) {
  return s->policy ? s->policy->max_concurrent : 0;
}

unsigned px_session_jobs(px_session_t *s) {
  return px_engine_client_jobs(s->svc->eng, s->ec);
}

void px_peer_identity(const px_peer_t *p, char *out, size_t outsz) {
  if (p->kind == PX_PEER_UNIX)
    px_snprintf(out, outsz, "uid:%u", (unsigned)p->uid);
  else if (p->kind == PX_PEER_WINDOWS)
    px_snprintf(out, outsz, "sid:%s", p->user_sid);
  else if (p->kind == PX_PEER_CLUSTER)
    px_snprintf(out, outsz, "cluster");
  else
    px_snprintf(out, outsz, "zmq:%s", p->zmq_key);
}

void px_session_close(px_session_t *s) {
  int cancel;
  if (!s)
    return;
  cancel = s->svc->cfg->transports.on_disconnect == PX_DISCONNECT_CANCEL;
  if (s->svc->gw) /* its relays end before the session does */
    s->svc->gw->detach(s->svc->gw_ctx, s, cancel);
  /* After this returns the engine never calls on_event for s again. */
  px_engine_client_close(s->svc->eng, s->ec, cancel);
  px_mutex_lock(&s->lock);
  s->closing = 1;
  px_mutex_unlock(&s->lock);
  px_mutex_destroy(&s->lock);
  free(s);
}
