/* gateway.c - the cluster gateway (cluster.mode submit or both): a run
 * with placement "cluster" (or "any" with no free local slot) that passed
 * this daemon's policy, audit and caps is forwarded to the NATS JetStream
 * cluster, and its events and one result are relayed back to the client
 * on its own connection under its own id (docs/cluster-protocol.md,
 * "Gateway"; docs/cluster.md).
 *
 * DESIGN
 * A table of forwarded jobs, each: the client's session and id, the
 * cluster id "<node>-<16 hex>", one core subscription on px.*.<cid> (it
 * carries px.events.<cid> and px.results.<cid>, and our own px.cancel.<cid>,
 * which is ignored; one subscription, so started < output < result keep
 * their order), the job's sequence in PX_JOBS.
 *
 *   session thread: submit -> checks -> table + subscribe -> JetStream
 *     publish (Nats-Msg-Id = cid) -> `accepted` (pending count)
 *   NATS thread: px.events.<cid> -> relayed (id rewritten);
 *     px.results.<cid> -> taken out of the table, relayed: exactly once
 *   gateway thread: streams set up after each (re)connect; after a
 *     reconnect, and every SWEEP_MS for jobs older than that, the stored
 *     result of each outstanding job is looked up in PX_RESULTS
 *     (js_GetLastMsg): one that came while we were cut off is not lost.
 *
 * Whoever takes a job out of the table under g->lock is the one that
 * answers it (result relayed, stored result found, service stop, a cancel
 * that deleted the unfetched message). Frames go to a session while
 * g->lock is held, so a session's detach (which takes g->lock) cannot
 * return while one is being sent. Lock order: g->lock, then the session's.
 */
#include "cluster/cluster.h"
#include "cluster/cluster_int.h"

#include "px/px_encode.h"
#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_os.h"
#include "px/px_util.h"

#include <cjson/cJSON.h>

#include <stdlib.h>
#include <string.h>

#define TICK_MS 50
#define SWEEP_MS 5000
#define PUB_WAIT_MS 5000        /* one publish's wait for the stream's ack */
#define PUB_RETRY_MS 15000      /* publishing again for up to this */
#define PUB_RETRY_PAUSE_MS 250
#define PENDING_WAIT_MS 1000

typedef struct frame_s { /* an event that came before `accepted` went out */
  struct frame_s *next;
  char *json;
} frame_t;

typedef struct gjob_s {
  struct gjob_s *next;
  char cid[PX__CL_ID_MAX + 1];
  char id[PX_JOB_ID_MAX + 1];  /* the client's */
  px_session_t *sess;          /* borrowed; its detach takes the job out */
  natsSubscription *sub;       /* px.*.<cid>, owned */
  uint64_t seq;                /* in PX_JOBS; 0 until published */
  uint64_t since_ms;
  int accepted, started;
  int done;                    /* its result is among the early frames */
  frame_t *early, *early_tail; /* owned */
} gjob_t;

struct px_cluster_gateway_s {
  const px_config_t *cfg; /* borrowed */
  px_service_t *svc;      /* borrowed */
  char node[41];          /* the cluster id's prefix */
  px__svc_cl_link_t link;
  px_gateway_ops_t ops;
  px_thread_t thread;
  px_mutex_t lock;        /* guards all below */
  px_cond_t wake;
  gjob_t *jobs;
  unsigned njobs;
  int stopping;           /* no new forwards; relays ended */
  int64_t pool_pending;   /* status.cluster.pending; -1 unknown */
  int stop;               /* the thread ends */
  px_cluster_metrics_t ctr; /* its gateway half: metrics.cluster.gateway */
};

static const char *prio_subject(px_priority_t p) {
  return p <= PX_PRIO_HIGH ? "high" : p == PX_PRIO_NORMAL ? "normal" : "low";
}

/* ---- the table (g->lock held) ---- */

static gjob_t **find_cid(px_cluster_gateway_t *g, const char *cid) {
  gjob_t **pp;
  for (pp = &g->jobs; *pp; pp = &(*pp)->next)
    if (strcmp((*pp)->cid, cid) == 0)
      return pp;
  return NULL;
}

static gjob_t **find_client(px_cluster_gateway_t *g, px_session_t *s, const char *id) {
  gjob_t **pp;
  for (pp = &g->jobs; *pp; pp = &(*pp)->next)
    if ((*pp)->sess == s && strcmp((*pp)->id, id) == 0)
      return pp;
  return NULL;
}

static gjob_t *unlink_job(px_cluster_gateway_t *g, gjob_t **pp) {
  gjob_t *j = *pp;
  *pp = j->next;
  j->next = NULL;
  g->njobs--;
  return j;
}

static unsigned session_jobs(px_cluster_gateway_t *g, px_session_t *s) {
  gjob_t *j;
  unsigned n = 0;
  for (j = g->jobs; j; j = j->next)
    n += j->sess == s;
  return n;
}

/* Free a job taken out of the table (no lock needed: nobody finds it). */
static void job_free(gjob_t *j) {
  frame_t *f;
  if (!j)
    return;
  if (j->sub) {
    natsSubscription_Unsubscribe(j->sub);
    natsSubscription_Destroy(j->sub);
  }
  while ((f = j->early) != NULL) {
    j->early = f->next;
    free(f->json);
    free(f);
  }
  free(j);
}

/* ---- frames to the client (g->lock held) ---- */

/* json with "id" set to the client's id; "submitter" (ours) dropped.
 * malloc'd; NULL on a bad frame or OOM. */
static char *client_frame(const char *data, int len, const char *id, const char **type) {
  cJSON *o = cJSON_ParseWithLength(data, (size_t)(len > 0 ? len : 0));
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
  char *out = NULL;
  *type = "";
  if (cJSON_IsObject(o) && cJSON_IsString(t)) {
    static const char *const known[] = {"started", "output", "result", NULL};
    int i;
    for (i = 0; known[i] && strcmp(known[i], t->valuestring) != 0; i++)
      ;
    *type = known[i] ? known[i] : "";
    cJSON_DeleteItemFromObjectCaseSensitive(o, "submitter");
    if (known[i] && cJSON_ReplaceItemInObjectCaseSensitive(o, "id", cJSON_CreateString(id)))
      out = cJSON_PrintUnformatted(o);
  }
  cJSON_Delete(o);
  return out;
}

static void send_frame(gjob_t *j, char *json) {
  frame_t *f;
  if (j->accepted) {
    px_session_send_json(j->sess, json);
    free(json);
  } else if ((f = calloc(1, sizeof *f)) != NULL) { /* after `accepted` */
    f->json = json;
    if (j->early_tail)
      j->early_tail->next = f;
    else
      j->early = f;
    j->early_tail = f;
  } else {
    free(json);
  }
}

/* One of our own results (aborted, cancelled, error) for job j. */
static void send_own_result(gjob_t *j, px_status_t st, px_code_t code, const char *why) {
  px_result_t r;
  char *json;
  memset(&r, 0, sizeof r);
  px_strlcpy(r.id, j->id, sizeof r.id);
  r.status = st;
  r.exit_code = -1;
  r.error_code = code;
  r.error_message = (char *)why; /* borrowed: not freed here */
  if ((json = px_encode_result(&r)) != NULL) {
    j->accepted = 1; /* the early frames are dropped with the job */
    px_session_send_json(j->sess, json);
    free(json);
  }
}

/* A frame from the cluster for job cid (NATS thread or the sweep). 1
 * when it was the job's result (relayed now or once `accepted` is out). */
static int relay(px_cluster_gateway_t *g, const char *cid, const char *data, int len) {
  gjob_t **pp, *done = NULL;
  const char *type;
  char *json;
  gjob_t *j;
  int answered = 0;
  px_mutex_lock(&g->lock);
  if ((pp = find_cid(g, cid)) != NULL &&
      (json = client_frame(data, len, (*pp)->id, &type)) != NULL) {
    j = *pp;
    if (j->done) { /* answered; waiting for its `accepted` to go out */
      free(json);
    } else {
      j->started |= strcmp(type, "started") == 0;
      if (strcmp(type, "result") == 0 && j->accepted)
        done = unlink_job(g, pp); /* exactly once: whoever unlinks answers */
      else if (strcmp(type, "result") == 0)
        j->done = 1; /* the submit thread unlinks it after `accepted` */
      if ((answered = strcmp(type, "result") == 0) != 0)
        g->ctr.results_relayed++;
      if (done)
        PX_LOG(PX_LOG_INFO, "cluster: job %s (cluster %s) answered", j->id, cid);
      send_frame(j, json);
    }
  }
  px_mutex_unlock(&g->lock);
  job_free(done);
  return answered;
}

static void on_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure) {
  const char *subj = natsMsg_GetSubject(msg), *cid;
  (void)nc;
  (void)sub;
  if (subj && (strncmp(subj, "px.events.", 10) == 0 || strncmp(subj, "px.results.", 11) == 0)) {
    cid = strchr(subj + 3, '.') + 1;
    relay(closure, cid, natsMsg_GetData(msg), natsMsg_GetDataLength(msg));
  } /* px.cancel.<cid>: our own */
  natsMsg_Destroy(msg);
}

/* A core message on px.cancel.<cid>: the worker holding the job cancels
 * it (nobody holds it: nothing happens). Buffered by libnats; does not
 * block. */
static void publish_cancel(px_cluster_gateway_t *g, const char *cid) {
  char subj[96];
  px_snprintf(subj, sizeof subj, "px.cancel.%s", cid);
  if (natsConnection_PublishString(g->link.nc, subj, "") != NATS_OK)
    PX_LOG(PX_LOG_WARN, "cluster: the cancel of %s was not published", cid);
}

/* ---- submit (the session's thread) ---- */

/* "<node>-<16 hex>": unique across the cluster (64 random bits). */
static void make_cid(const px_cluster_gateway_t *g, char *cid) {
  unsigned char r[8] = {0};
  char hex[17];
  size_t i;
  px_random_bytes(r, sizeof r);
  for (i = 0; i < sizeof r; i++)
    px_snprintf(hex + 2 * i, 3, "%02x", r[i]);
  px_snprintf(cid, PX__CL_ID_MAX + 1, "%s-%s", g->node, hex);
}

/* Whether the client may forward one more job now: PX_CODE_NONE, or the
 * refusal with why. */
static px_code_t admit(px_cluster_gateway_t *g, px_session_t *s, char *why, size_t whysz) {
  unsigned cap = px_session_max_concurrent(s), n;
  px_code_t code = PX_CODE_NONE;
  px_mutex_lock(&g->lock);
  n = session_jobs(g, s);
  if (g->stopping) {
    code = PX_CODE_PAUSED;
    px_snprintf(why, whysz, "the executor is stopping");
  } else if (!px__svc_cl_link_connected(&g->link) || !g->link.ready) {
    code = PX_CODE_CLUSTER_UNAVAILABLE;
    px_snprintf(why, whysz, "the NATS cluster is not reachable (cluster.servers): "
                "the job was not forwarded");
  } else if (cap && n + px_session_jobs(s) >= cap) {
    code = PX_CODE_QUEUE_FULL;
    px_snprintf(why, whysz, "this client has %u jobs in flight (%u in the cluster), "
                "its max_concurrent is %u", n + px_session_jobs(s), n, cap);
  }
  px_mutex_unlock(&g->lock);
  return code;
}

/* The job message: the client's `run` with the cluster id, without
 * placement, with the submitter ("<identity>@<node>"); refused when it is
 * over the server's max_payload. */
static px_code_t build_body(px_cluster_gateway_t *g, px_session_t *s, const char *payload,
                            size_t len, const char *cid, char **body, char *why,
                            size_t whysz) {
  cJSON *o = cJSON_ParseWithLength(payload, len);
  char ident[256], sub[PX__CL_SUBMITTER_MAX + 1];
  int64_t max = natsConnection_GetMaxPayload(g->link.nc);
  *body = NULL;
  px_peer_identity(px_session_peer(s), ident, sizeof ident);
  px_snprintf(sub, sizeof sub, "%s@%s", ident, g->node);
  if (o && cJSON_ReplaceItemInObjectCaseSensitive(o, "id", cJSON_CreateString(cid)) &&
      cJSON_AddStringToObject(o, "submitter", sub)) {
    cJSON_DeleteItemFromObjectCaseSensitive(o, "placement");
    *body = cJSON_PrintUnformatted(o);
  }
  cJSON_Delete(o);
  if (!*body) {
    px_snprintf(why, whysz, "out of memory");
    return PX_CODE_INTERNAL;
  }
  if (max > 0 && (int64_t)strlen(*body) > max) {
    px_snprintf(why, whysz, "the job message is %zu bytes, over the NATS server's "
                "max_payload of %lld bytes", strlen(*body), (long long)max);
    free(*body);
    *body = NULL;
    return PX_CODE_BAD_REQUEST;
  }
  return PX_CODE_NONE;
}

/* Into the table, subscribed to px.*.<cid> before the job is published
 * (events are core messages: not stored). */
static px_code_t add_job(px_cluster_gateway_t *g, px_session_t *s, const char *id,
                         const char *cid, char *why, size_t whysz) {
  gjob_t *j = calloc(1, sizeof *j);
  char subj[96];
  natsStatus st = NATS_NO_MEMORY;
  if (j) {
    px_strlcpy(j->cid, cid, sizeof j->cid);
    px_strlcpy(j->id, id, sizeof j->id);
    j->sess = s;
    j->since_ms = px_now_ms();
    px_snprintf(subj, sizeof subj, "px.*.%s", cid);
    st = natsConnection_Subscribe(&j->sub, g->link.nc, subj, on_msg, g);
  }
  if (st != NATS_OK) {
    px_snprintf(why, whysz, "subscribing to the job's events failed: %s",
                natsStatus_GetText(st));
    job_free(j);
    return st == NATS_NO_MEMORY ? PX_CODE_INTERNAL : PX_CODE_CLUSTER_UNAVAILABLE;
  }
  px_mutex_lock(&g->lock);
  j->next = g->jobs;
  g->jobs = j;
  g->njobs++;
  px_mutex_unlock(&g->lock);
  return PX_CODE_NONE;
}

static void drop_job(px_cluster_gateway_t *g, const char *cid) {
  gjob_t **pp, *j = NULL;
  px_mutex_lock(&g->lock);
  if ((pp = find_cid(g, cid)) != NULL)
    j = unlink_job(g, pp);
  px_mutex_unlock(&g->lock);
  job_free(j);
}

static int stopping(px_cluster_gateway_t *g) {
  int yes;
  px_mutex_lock(&g->lock);
  yes = g->stopping;
  px_mutex_unlock(&g->lock);
  return yes;
}

/* JetStream publish on px.jobs.<pool>.<prio>, Nats-Msg-Id = cid: *seq
 * its sequence in PX_JOBS. Retried for up to PUB_RETRY_MS while the
 * cluster elects a stream leader after a node died ("no responders") or
 * the connection moves to another server (no ack): stored or not, the
 * same Nats-Msg-Id again is deduplicated within the stream's window, and
 * its ack says where the job is. Without an ack in that time the job is
 * refused (cluster_unavailable), which says it was not forwarded; docs/
 * cluster.md states the one case where that may not hold (every attempt
 * stored but not acked). */
static px_code_t publish_job(px_cluster_gateway_t *g, const char *cid, px_priority_t prio,
                             const char *body, uint64_t *seq, char *why, size_t whysz) {
  char subj[128];
  jsPubOptions po;
  jsPubAck *pa = NULL;
  jsErrCode jerr = 0;
  natsStatus st;
  uint64_t t0 = px_now_ms();
  int tries = 0;
  px_snprintf(subj, sizeof subj, "px.jobs.%s.%s", g->cfg->cluster.pool, prio_subject(prio));
  jsPubOptions_Init(&po);
  po.MsgId = cid;
  po.MaxWait = PUB_WAIT_MS;
  for (;;) {
    jerr = 0;
    st = js_Publish(&pa, g->link.js, subj, body, (int)strlen(body), &po, &jerr);
    tries++;
    if (st == NATS_OK || st == NATS_CONNECTION_CLOSED || st == NATS_MAX_PAYLOAD ||
        stopping(g) || px_now_ms() - t0 >= PUB_RETRY_MS)
      break;
    if (tries == 1)
      PX_LOG(PX_LOG_WARN, "cluster: %s: PX_JOBS did not take it (%s, JetStream error %d); "
             "publishing again for up to %d s", cid, natsStatus_GetText(st), (int)jerr,
             PUB_RETRY_MS / 1000);
    px_mutex_lock(&g->lock);
    g->ctr.publish_retries++; /* the next attempt */
    px_mutex_unlock(&g->lock);
    px_sleep_ms(PUB_RETRY_PAUSE_MS);
  }
  if (st != NATS_OK) {
    px_snprintf(why, whysz, "the stream PX_JOBS did not take the job (%d attempts in %llu ms): %s",
                tries, (unsigned long long)(px_now_ms() - t0), natsStatus_GetText(st));
    return PX_CODE_CLUSTER_UNAVAILABLE;
  }
  if (tries > 1)
    PX_LOG(PX_LOG_INFO, "cluster: %s: PX_JOBS took it at attempt %d", cid, tries);
  *seq = pa->Sequence;
  jsPubAck_Destroy(pa);
  return PX_CODE_NONE;
}

/* The queue position: messages of this pool and priority not yet
 * delivered to a worker, ours excluded (0 when it cannot be read within
 * PENDING_WAIT_MS: `accepted` is not held back by a stream leader's
 * election). */
static uint64_t pending(px_cluster_gateway_t *g, px_priority_t prio) {
  uint64_t n = 0;
  if (px__svc_cl_consumer_pending(g->link.js, g->cfg->cluster.pool, prio_subject(prio),
                                  PENDING_WAIT_MS, &n) != 0)
    return 0;
  return n > 0 ? n - 1 : 0;
}

/* `accepted`, then whatever came before it; a job answered meanwhile (or
 * caught by the stop) leaves the table here. */
static void accept_job(px_cluster_gateway_t *g, const char *cid, uint64_t seq, uint64_t pos) {
  gjob_t **pp, *j, *done = NULL;
  frame_t *f;
  char *json;
  px_mutex_lock(&g->lock);
  if ((pp = find_cid(g, cid)) != NULL) {
    j = *pp;
    j->seq = seq;
    j->accepted = 1;
    if ((json = px_encode_accepted(j->id, pos, cid)) != NULL)
      px_session_send_json(j->sess, json);
    free(json);
    while ((f = j->early) != NULL) { /* in their order, then freed */
      j->early = f->next;
      px_session_send_json(j->sess, f->json);
      free(f->json);
      free(f);
    }
    j->early_tail = NULL;
    if (j->done || g->stopping)
      done = unlink_job(g, pp);
    if (!j->done && g->stopping) {
      publish_cancel(g, cid);
      send_own_result(j, PX_STATUS_ABORTED, PX_CODE_NONE, NULL);
    }
  }
  px_mutex_unlock(&g->lock);
  job_free(done);
}

/* A forward, or its refusal by code, counted. */
static void count_submit(px_cluster_gateway_t *g, px_code_t code) {
  px_mutex_lock(&g->lock);
  if (code == PX_CODE_NONE)
    g->ctr.forwarded++;
  else if (code == PX_CODE_CLUSTER_UNAVAILABLE)
    g->ctr.refused_unavailable++;
  else if (code == PX_CODE_BAD_REQUEST)
    g->ctr.refused_too_large++;
  else if (code == PX_CODE_QUEUE_FULL)
    g->ctr.refused_queue_full++;
  else
    g->ctr.refused_other++;
  px_mutex_unlock(&g->lock);
}

static void gw_submit(void *ctx, px_session_t *s, const char *id, px_priority_t prio,
                      const char *payload, size_t len) {
  px_cluster_gateway_t *g = ctx;
  char why[256] = "", cid[PX__CL_ID_MAX + 1];
  char *body = NULL;
  uint64_t seq = 0;
  px_code_t code;
  make_cid(g, cid);
  code = admit(g, s, why, sizeof why);
  if (code == PX_CODE_NONE)
    code = build_body(g, s, payload, len, cid, &body, why, sizeof why);
  if (code == PX_CODE_NONE)
    code = add_job(g, s, id, cid, why, sizeof why);
  if (code == PX_CODE_NONE &&
      (code = publish_job(g, cid, prio, body, &seq, why, sizeof why)) != PX_CODE_NONE)
    drop_job(g, cid);
  free(body);
  count_submit(g, code);
  if (code != PX_CODE_NONE) {
    PX_LOG(PX_LOG_WARN, "cluster: job %s not forwarded: %s", id, why);
    px_session_reject(s, id, code, why);
    return;
  }
  PX_LOG(PX_LOG_INFO, "cluster: job %s forwarded as %s", id, cid);
  accept_job(g, cid, seq, pending(g, prio));
}

/* ---- holds, cancel, detach (the session's thread) ---- */

static unsigned gw_jobs(void *ctx, px_session_t *s) {
  px_cluster_gateway_t *g = ctx;
  unsigned n;
  px_mutex_lock(&g->lock);
  n = session_jobs(g, s);
  px_mutex_unlock(&g->lock);
  return n;
}

static int gw_holds(void *ctx, px_session_t *s, const char *id) {
  px_cluster_gateway_t *g = ctx;
  int yes;
  px_mutex_lock(&g->lock);
  yes = find_client(g, s, id) != NULL;
  px_mutex_unlock(&g->lock);
  return yes;
}

/* A job no worker has started yet may still be in PX_JOBS: deleting its
 * message keeps it from running later (a cancel reaches only a job a
 * worker holds). 1 when the message was deleted here. */
static int delete_unfetched(px_cluster_gateway_t *g, uint64_t seq) {
  jsErrCode jerr = 0;
  return seq && js_DeleteMsg(g->link.js, "PX_JOBS", seq, NULL, &jerr) == NATS_OK;
}

static int gw_cancel(void *ctx, px_session_t *s, const char *id) {
  px_cluster_gateway_t *g = ctx;
  gjob_t **pp, *done = NULL;
  char cid[PX__CL_ID_MAX + 1];
  uint64_t seq = 0;
  px_mutex_lock(&g->lock);
  if ((pp = find_client(g, s, id)) == NULL || !(*pp)->accepted) {
    px_mutex_unlock(&g->lock);
    return PX_ENOENT;
  }
  px_strlcpy(cid, (*pp)->cid, sizeof cid);
  seq = (*pp)->started ? 0 : (*pp)->seq;
  publish_cancel(g, cid);
  px_mutex_unlock(&g->lock);
  PX_LOG(PX_LOG_INFO, "cluster: cancel of job %s (cluster %s)", id, cid);
  if (!delete_unfetched(g, seq))
    return 0; /* the worker answers cancelled */
  px_mutex_lock(&g->lock);
  if ((pp = find_cid(g, cid)) != NULL) {
    done = unlink_job(g, pp);
    send_own_result(done, PX_STATUS_CANCELLED, PX_CODE_NONE, NULL);
  }
  px_mutex_unlock(&g->lock);
  job_free(done);
  return 0;
}

static void gw_detach(void *ctx, px_session_t *s, int cancel_jobs) {
  px_cluster_gateway_t *g = ctx;
  gjob_t **pp, *gone = NULL, *j;
  px_mutex_lock(&g->lock);
  for (pp = &g->jobs; *pp;) {
    if ((*pp)->sess != s) {
      pp = &(*pp)->next;
      continue;
    }
    j = unlink_job(g, pp);
    if (cancel_jobs)
      publish_cancel(g, j->cid);
    j->next = gone;
    gone = j;
  }
  px_mutex_unlock(&g->lock);
  while ((j = gone) != NULL) {
    gone = j->next;
    PX_LOG(PX_LOG_INFO, "cluster: client of job %s (cluster %s) gone: %s", j->id,
           j->cid, cancel_jobs ? "cancelled" : "left to finish");
    if (cancel_jobs && !j->started)
      delete_unfetched(g, j->seq);
    job_free(j);
  }
}

/* ---- the gateway thread ---- */

/* The stored result of every outstanding job accepted before `older`
 * (ms since boot; UINT64_MAX: all), relayed if there is one. */
static void sweep(px_cluster_gateway_t *g, uint64_t older) {
  char (*cids)[PX__CL_ID_MAX + 1] = NULL, subj[96];
  unsigned n = 0, i;
  gjob_t *j;
  natsMsg *m;
  px_mutex_lock(&g->lock);
  if (g->njobs && (cids = calloc(g->njobs, sizeof *cids)) != NULL)
    for (j = g->jobs; j; j = j->next)
      if (j->accepted && j->since_ms < older)
        px_strlcpy(cids[n++], j->cid, sizeof cids[0]);
  px_mutex_unlock(&g->lock);
  for (i = 0; i < n; i++) {
    jsErrCode jerr = 0;
    m = NULL;
    px_snprintf(subj, sizeof subj, "px.results.%s", cids[i]);
    if (js_GetLastMsg(&m, g->link.js, "PX_RESULTS", subj, NULL, &jerr) == NATS_OK) {
      PX_LOG(PX_LOG_INFO, "cluster: the result of %s found in PX_RESULTS", cids[i]);
      if (relay(g, cids[i], natsMsg_GetData(m), natsMsg_GetDataLength(m))) {
        px_mutex_lock(&g->lock);
        g->ctr.results_recovered++;
        px_mutex_unlock(&g->lock);
      }
    }
    natsMsg_Destroy(m);
  }
  free(cids);
}

static uint64_t reconnects(px_cluster_gateway_t *g) {
  return px__svc_cl_reconnects(g->link.nc);
}

/* Streams after each (re)connect; a sweep of all outstanding jobs after
 * a reconnect, of those older than SWEEP_MS every SWEEP_MS. */
static void tick(px_cluster_gateway_t *g, uint64_t *last_rc, uint64_t *next_sweep,
                 uint64_t *next_pending) {
  uint64_t now = px_now_ms(), rc;
  int up = px__svc_cl_link_connected(&g->link), ready;
  int64_t pend = -1;
  int read = up && g->link.ready && now >= *next_pending; /* ready: this thread's */
  if (read) { /* for status: -1 when it cannot be read */
    *next_pending = now + PX__CL_PENDING_EVERY_MS;
    pend = px__svc_cl_pool_pending(g->link.js, g->cfg->cluster.pool, PENDING_WAIT_MS);
  }
  px_mutex_lock(&g->lock);
  if (read || !up)
    g->pool_pending = pend;
  if (!up)
    g->link.ready = 0;
  ready = g->link.ready;
  px_mutex_unlock(&g->lock);
  if (!up)
    return;
  if (!ready && px__svc_cl_link_streams(g->cfg, &g->link) == 0) {
    PX_LOG(PX_LOG_INFO, "cluster: gateway of pool %s ready", g->cfg->cluster.pool);
    px_mutex_lock(&g->lock);
    g->link.ready = ready = 1;
    px_mutex_unlock(&g->lock);
  }
  if (!ready)
    return;
  if ((rc = reconnects(g)) != *last_rc) {
    *last_rc = rc;
    sweep(g, UINT64_MAX);
  } else if (now >= *next_sweep) {
    *next_sweep = now + SWEEP_MS;
    sweep(g, now - SWEEP_MS);
  }
}

static void gateway_main(void *arg) {
  px_cluster_gateway_t *g = arg;
  uint64_t last_rc = 0, next_sweep = px_now_ms() + SWEEP_MS, next_pending = 0;
  int stop = 0;
  while (!stop) {
    tick(g, &last_rc, &next_sweep, &next_pending);
    px_mutex_lock(&g->lock);
    if (!(stop = g->stop))
      px_cond_timedwait(&g->wake, &g->lock, TICK_MS);
    px_mutex_unlock(&g->lock);
  }
}

/* ---- status, open, stop, close ---- */

static void status_fn(void *ctx, px_cluster_status_t *out) {
  px_cluster_gateway_t *g = ctx;
  out->mode = "submit";
  out->connected = px__svc_cl_link_connected(&g->link);
  px_strlcpy(out->pool, g->cfg->cluster.pool, sizeof out->pool);
  px_mutex_lock(&g->lock);
  out->in_flight = g->njobs;
  out->pending = out->connected ? g->pool_pending : -1;
  px_mutex_unlock(&g->lock);
}

/* metrics.cluster.gateway (the service's cluster lock held). */
static void metrics_fn(void *ctx, px_cluster_metrics_t *m) {
  px_cluster_gateway_t *g = ctx;
  px_mutex_lock(&g->lock);
  m->has_gateway = 1;
  m->gateway_in_flight = g->njobs;
  m->forwarded = g->ctr.forwarded;
  m->publish_retries = g->ctr.publish_retries;
  m->results_relayed = g->ctr.results_relayed;
  m->results_recovered = g->ctr.results_recovered;
  m->refused_unavailable = g->ctr.refused_unavailable;
  m->refused_too_large = g->ctr.refused_too_large;
  m->refused_queue_full = g->ctr.refused_queue_full;
  m->refused_other = g->ctr.refused_other;
  px_mutex_unlock(&g->lock);
  m->gateway_connected = px__svc_cl_link_connected(&g->link);
  m->gateway_reconnects = px__svc_cl_reconnects(g->link.nc);
}

/* cluster_status's reader in submit mode (in both, the worker's). */
static int nodes_fn(void *ctx, px_cluster_node_t **nodes, size_t *n, char *why,
                    size_t whysz) {
  px_cluster_gateway_t *g = ctx;
  return px__svc_cl_read_nodes(&g->link, nodes, n, why, whysz);
}

/* The cluster id's prefix: the name, only [A-Za-z0-9_-], 40 at most. */
static void node_name(const char *name, char *out, size_t outsz) {
  size_t i;
  px_strlcpy(out, name, outsz);
  for (i = 0; out[i]; i++)
    if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-", out[i]))
      out[i] = '_';
}

static px_cluster_gateway_t *gateway_new(const px_config_t *cfg, px_service_t *svc,
                                         const char *host_name) {
  px_cluster_gateway_t *g = calloc(1, sizeof *g);
  if (!g)
    return NULL;
  g->pool_pending = -1;
  g->cfg = cfg;
  g->svc = svc;
  node_name(cfg->cluster.name ? cfg->cluster.name : host_name, g->node, sizeof g->node);
  g->ops.submit = gw_submit;
  g->ops.holds = gw_holds;
  g->ops.jobs = gw_jobs;
  g->ops.cancel = gw_cancel;
  g->ops.detach = gw_detach;
  px_mutex_init(&g->lock);
  px_cond_init(&g->wake);
  return g;
}

static void gateway_free(px_cluster_gateway_t *g) {
  gjob_t *j;
  while ((j = g->jobs) != NULL) { /* none once every session closed */
    g->jobs = j->next;
    job_free(j);
  }
  px__svc_cl_link_close(&g->link);
  px_cond_destroy(&g->wake);
  px_mutex_destroy(&g->lock);
  free(g);
}

int px_cluster_gateway_open(const px_config_t *cfg, px_service_t *svc,
                            const char *host_name, px_cluster_gateway_t **out) {
  px_cluster_gateway_t *g = NULL;
  char err[256] = "", name[PX__CL_ID_MAX + 1];
  int rc;
  *out = NULL;
  if (cfg->cluster.mode != PX_CLUSTER_SUBMIT && cfg->cluster.mode != PX_CLUSTER_BOTH)
    return 0;
  if (cfg->cluster.credentials &&
      (rc = px_config_check_file(cfg->cluster.credentials, PX_FILECHECK_SECRET, err,
                                 sizeof err)) != 0) {
    PX_LOG(PX_LOG_ERROR, "cluster.credentials %s refused: %s", cfg->cluster.credentials,
           err[0] ? err : px_strerror(rc));
    return rc;
  }
  if (!(g = gateway_new(cfg, svc, host_name)))
    return PX_ENOMEM;
  px_snprintf(name, sizeof name, "%s-gateway", g->node);
  if ((rc = px__svc_cl_link_open(cfg, name, 1, &g->link)) != 0 ||
      (rc = px_thread_create(&g->thread, gateway_main, g)) != 0) {
    gateway_free(g);
    return rc;
  }
  px_service_set_gateway(svc, &g->ops, g);
  if (cfg->cluster.mode == PX_CLUSTER_SUBMIT) { /* both: the worker reports */
    px_service_set_cluster(svc, status_fn, g);
    px_service_set_cluster_nodes(svc, nodes_fn, g);
  }
  px_service_set_cluster_metrics(svc, 1, metrics_fn, g);
  PX_LOG(PX_LOG_INFO, "cluster: gateway %s for pool %s started", g->node, cfg->cluster.pool);
  *out = g;
  return 0;
}

void px_cluster_gateway_stop(px_cluster_gateway_t *g) {
  gjob_t **pp, *gone = NULL, *j;
  if (!g)
    return;
  px_mutex_lock(&g->lock);
  g->stopping = 1;
  for (pp = &g->jobs; *pp;) {
    if (!(*pp)->accepted) { /* its submit answers it (accept_job) */
      pp = &(*pp)->next;
      continue;
    }
    j = unlink_job(g, pp);
    publish_cancel(g, j->cid);
    send_own_result(j, PX_STATUS_ABORTED, PX_CODE_NONE, NULL);
    j->next = gone;
    gone = j;
  }
  px_mutex_unlock(&g->lock);
  while ((j = gone) != NULL) {
    gone = j->next;
    PX_LOG(PX_LOG_WARN, "cluster: job %s (cluster %s) aborted: the service stops; "
                        "its cancel was published", j->id, j->cid);
    job_free(j);
  }
  natsConnection_FlushTimeout(g->link.nc, 1000); /* the cancels go out */
}

void px_cluster_gateway_close(px_cluster_gateway_t *g) {
  if (!g)
    return;
  px_cluster_gateway_stop(g);
  if (g->cfg->cluster.mode == PX_CLUSTER_SUBMIT) {
    px_service_set_cluster(g->svc, NULL, NULL);
    px_service_set_cluster_nodes(g->svc, NULL, NULL);
  }
  px_service_set_cluster_metrics(g->svc, 1, NULL, NULL);
  px_service_set_gateway(g->svc, NULL, NULL);
  px_mutex_lock(&g->lock);
  g->stop = 1;
  px_cond_signal(&g->wake);
  px_mutex_unlock(&g->lock);
  px_thread_join(g->thread);
  gateway_free(g);
}
