/* nats_link.c - the cluster worker's link to NATS: the connection, the
 * JetStream objects it creates or checks, fetching and publishing
 * (docs/cluster-protocol.md, "Streams, consumers, buckets").
 *
 * Every JetStream object is added idempotently at each (re)connect until it
 * works: an add with the same settings is a no-op on the server; a stream
 * or bucket that exists with other settings is used as it is, and logged;
 * a durable consumer that exists is updated to this worker's settings
 * (nats-server 2.9 does that on an add: the last worker of a pool to
 * connect sets its ack wait). Durations in libnats' JetStream configs are
 * nanoseconds.
 */
#include "cluster/cluster_int.h"

#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_os.h"
#include "px/px_util.h"

#include <stdlib.h>
#include <string.h>

#define NS_PER_MS INT64_C(1000000)
#define DUP_WINDOW_NS (INT64_C(120000) * NS_PER_MS)   /* 2 min */
#define RESULTS_AGE_NS (INT64_C(3600000) * NS_PER_MS) /* 1 h */
#define STARTED_TTL_NS (INT64_C(86400000) * NS_PER_MS) /* 24 h */
#define NODES_TTL_NS (INT64_C(30000) * NS_PER_MS)     /* 30 s */
#define RECONNECT_MAX_MS 5000
#define JS_WAIT_MS 5000

static const char *const prio_names[PX__CL_NPRIO] = {"high", "normal", "low"};

static int nats_fail(natsStatus s, const char *what) {
  PX_LOG(PX_LOG_ERROR, "cluster: %s failed: %s (%s)", what, natsStatus_GetText(s),
         nats_GetLastError(NULL) ? nats_GetLastError(NULL) : "");
  return s == NATS_NO_MEMORY ? PX_ENOMEM : PX_EIO;
}

static void on_disconnected(natsConnection *nc, void *ctx) {
  (void)nc;
  (void)ctx;
  PX_LOG(PX_LOG_WARN, "cluster: disconnected from NATS; reconnecting with backoff");
}

static void on_connected(natsConnection *nc, void *ctx) {
  char url[256] = "";
  (void)ctx;
  natsConnection_GetConnectedUrl(nc, url, sizeof url);
  PX_LOG(PX_LOG_WARN, "cluster: connected to NATS at %s", url);
}

/* A connection closed for good: libnats gives up reconnecting when a
 * server refuses the same credentials twice in a row (an auth violation
 * is not a passing fault). Nothing is fetched or published after this;
 * status.cluster says disconnected until the daemon is restarted. Also
 * called at our own close, where a connection that was failing logs its
 * last error once more. */
static void on_closed(natsConnection *nc, void *ctx) {
  const char *why = NULL;
  (void)ctx; /* none: this may run after px__svc_cl_link_close returned */
  if (natsConnection_GetLastError(nc, &why) == NATS_OK || !why)
    return; /* our own close of a healthy connection */
  PX_LOG(PX_LOG_ERROR, "cluster: the NATS connection is closed (last error: %s); it "
                       "is not retried: no cluster work until a restart", why);
}

/* Backoff: 250 ms doubling to RECONNECT_MAX_MS (libnats adds no jitter to
 * a custom delay: the random part is ours). Logged: attempts 1, 2, 10,
 * 100, 200..., and any attempt whose error differs from the last one
 * logged, with that error: libnats calls this on its reconnect thread
 * (one per outage), unlocked, right after a failed attempt, so that
 * thread's last error is the attempt's (a refused connection, a TLS
 * verification, a refused credential). Attempt 1 has none yet. */
static int64_t reconnect_delay(natsConnection *nc, int attempts, void *ctx) {
  static _Thread_local char logged[256]; /* this outage's last logged error */
  unsigned char r = 0;
  const char *why = nats_GetLastError(NULL);
  int64_t d = attempts >= 6 ? RECONNECT_MAX_MS
                            : (int64_t)250 << (attempts > 1 ? attempts - 1 : 0);
  (void)nc;
  (void)ctx;
  if (!why)
    why = "";
  if (d > RECONNECT_MAX_MS)
    d = RECONNECT_MAX_MS;
  if (attempts <= 2 || attempts == 10 || attempts % 100 == 0 ||
      strncmp(why, logged, sizeof logged - 1) != 0) {
    PX_LOG(PX_LOG_WARN, "cluster: NATS unreachable, reconnect attempt %d%s%s", attempts,
           why[0] ? "; last error: " : "", why);
    px_strlcpy(logged, why, sizeof logged);
  }
  px_random_bytes(&r, 1);
  return d + r;
}

static natsStatus set_options(natsOptions *o, const px_cluster_config_t *c,
                              const char *name, int shared_delivery) {
  natsStatus s = natsOptions_SetServers(o, (const char **)c->servers, (int)c->nservers);
  /* A subscriber per job (the gateway): libnats' shared delivery threads,
   * not a thread each; the order per subscription is kept. */
  if (s == NATS_OK && shared_delivery)
    s = natsOptions_UseGlobalMessageDelivery(o, true);
  if (s == NATS_OK) s = natsOptions_SetName(o, name);
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(o, -1);
  if (s == NATS_OK) s = natsOptions_SetCustomReconnectDelay(o, reconnect_delay, NULL);
  if (s == NATS_OK) s = natsOptions_SetDisconnectedCB(o, on_disconnected, NULL);
  if (s == NATS_OK) s = natsOptions_SetReconnectedCB(o, on_connected, NULL);
  if (s == NATS_OK) s = natsOptions_SetClosedCB(o, on_closed, NULL);
  if (s == NATS_OK && c->credentials)
    s = natsOptions_SetUserCredentialsFromFiles(o, c->credentials, NULL);
  if (s == NATS_OK && c->tls)
    s = natsOptions_SetSecure(o, true);
  if (s == NATS_OK && c->tls_ca_file)
    s = natsOptions_LoadCATrustedCertificates(o, c->tls_ca_file);
  return s;
}

/* The first connection. One pass over the servers first, without
 * libnats' retry: a server that answered and refused us (its certificate
 * not verified by tls_ca_file or the system's store, its host not in the
 * certificate, no TLS where tls is on, credentials refused or unreadable)
 * is a configuration fault, not an outage: its reason (libnats' error,
 * which the retrying connect clears) is logged and the link is not opened,
 * so the daemon does not start (fail closed). libnats 3.4 would not retry
 * such a failure anyway: it closes the connection at once. Servers that
 * cannot be reached (refused, timed out): connect again, retried in the
 * background forever (reconnect_delay logs each attempt's reason); a
 * server that times out (2 s, libnats' default) costs that twice at
 * start. */
static natsStatus connect_first(natsOptions *o, natsConnection **nc) {
  natsStatus s = natsOptions_SetRetryOnFailedConnect(o, false, NULL, NULL);
  if (s == NATS_OK)
    s = natsConnection_Connect(nc, o);
  if (s == NATS_NO_SERVER || s == NATS_TIMEOUT || s == NATS_IO_ERROR) {
    if ((s = natsOptions_SetRetryOnFailedConnect(o, true, on_connected, NULL)) == NATS_OK)
      s = natsConnection_Connect(nc, o);
    if (s == NATS_NOT_YET_CONNECTED) {
      PX_LOG(PX_LOG_WARN, "cluster: NATS not reachable yet; retrying in the background");
      return NATS_OK;
    }
  }
  if (s == NATS_OK) {
    char url[256] = "";
    natsConnection_GetConnectedUrl(*nc, url, sizeof url);
    PX_LOG(PX_LOG_INFO, "cluster: NATS connection up at %s", url);
  } else {
    PX_LOG(PX_LOG_ERROR, "cluster: the NATS servers refused this executor: %s (%s); "
                         "check cluster.tls, tls_ca_file, the servers' host names "
                         "and credentials",
           natsStatus_GetText(s), nats_GetLastError(NULL) ? nats_GetLastError(NULL) : "");
  }
  return s;
}

int px__svc_cl_link_open(const px_config_t *cfg, const char *name, int shared_delivery,
                         px__svc_cl_link_t *l) {
  natsOptions *o = NULL;
  natsStatus s;
  int rc = 0;
  memset(l, 0, sizeof *l);
  if ((s = natsOptions_Create(&o)) != NATS_OK || (s = set_options(o, &cfg->cluster, name, shared_delivery)) != NATS_OK) {
    rc = nats_fail(s, "NATS options");
    goto cleanup;
  }
  if ((s = connect_first(o, &l->nc)) != NATS_OK)
    rc = s == NATS_NO_MEMORY ? PX_ENOMEM : PX_EIO; /* logged */
  else if ((s = natsConnection_JetStream(&l->js, l->nc, NULL)) != NATS_OK)
    rc = nats_fail(s, "natsConnection_JetStream");
cleanup:
  natsOptions_Destroy(o);
  if (rc != 0)
    px__svc_cl_link_close(l);
  return rc;
}

int px__svc_cl_link_connected(const px__svc_cl_link_t *l) {
  return l->nc && natsConnection_Status(l->nc) == NATS_CONN_STATUS_CONNECTED;
}

static int add_stream(jsCtx *js, const char *name, const char *subject,
                      int workqueue, int64_t max_age, int replicas) {
  jsStreamConfig sc;
  jsErrCode jerr = 0;
  natsStatus s;
  const char *subjects[1];
  subjects[0] = subject;
  jsStreamConfig_Init(&sc);
  sc.Name = name;
  sc.Subjects = subjects;
  sc.SubjectsLen = 1;
  sc.Retention = workqueue ? js_WorkQueuePolicy : js_LimitsPolicy;
  sc.Storage = js_FileStorage;
  sc.Replicas = replicas;
  sc.Duplicates = DUP_WINDOW_NS;
  sc.MaxAge = max_age;
  s = js_AddStream(NULL, js, &sc, NULL, &jerr);
  if (s == NATS_OK)
    return 0;
  if (jerr == JSStreamNameExistErr) {
    PX_LOG(PX_LOG_WARN, "cluster: stream %s exists with other settings: used as it is", name);
    return 0;
  }
  return nats_fail(s, name);
}

static int open_bucket(jsCtx *js, const char *bucket, int64_t ttl, int replicas,
                       kvStore **kv) {
  kvConfig kc;
  natsStatus s;
  kvStore_Destroy(*kv); /* again after a reconnect: the server may be new */
  *kv = NULL;
  kvConfig_Init(&kc);
  kc.Bucket = bucket;
  kc.History = 1;
  kc.TTL = ttl;
  kc.Replicas = replicas;
  kc.StorageType = js_FileStorage;
  if (js_CreateKeyValue(kv, js, &kc) == NATS_OK)
    return 0;
  /* Created elsewhere with other settings: use it as it is. */
  if ((s = js_KeyValue(kv, js, bucket)) == NATS_OK) {
    PX_LOG(PX_LOG_WARN, "cluster: bucket %s exists with other settings: used as it is", bucket);
    return 0;
  }
  return nats_fail(s, bucket);
}

static int add_consumer(jsCtx *js, const char *durable, const char *filter,
                        int64_t ack_wait_ms) {
  jsConsumerConfig cc;
  jsErrCode jerr = 0;
  natsStatus s;
  jsConsumerConfig_Init(&cc);
  cc.Durable = durable;
  cc.FilterSubject = filter;
  cc.AckPolicy = js_AckExplicit;
  cc.AckWait = ack_wait_ms * NS_PER_MS;
  cc.MaxDeliver = -1;
  s = js_AddConsumer(NULL, js, "PX_JOBS", &cc, NULL, &jerr);
  if (s == NATS_OK)
    return 0;
  if (jerr == JSConsumerNameExistErr || jerr == 10148 /* already exists */) {
    PX_LOG(PX_LOG_WARN, "cluster: consumer %s exists with other settings: used as it is", durable);
    return 0;
  }
  return nats_fail(s, durable);
}

static int subscribe_pulls(const px_cluster_config_t *c, px__svc_cl_link_t *l) {
  char durable[96], filter[128];
  jsSubOptions so;
  jsErrCode jerr = 0;
  natsStatus s;
  int i, rc;
  for (i = 0; i < PX__CL_NPRIO; i++) {
    px_snprintf(durable, sizeof durable, "px-%s-%s", c->pool, prio_names[i]);
    px_snprintf(filter, sizeof filter, "px.jobs.%s.%s", c->pool, prio_names[i]);
    if ((rc = add_consumer(l->js, durable, filter, (int64_t)c->ack_wait_ms)) != 0)
      return rc;
    if (l->pull[i])
      continue; /* bound by name: it follows the consumer */
    jsSubOptions_Init(&so);
    so.Stream = "PX_JOBS";
    so.Consumer = durable;
    if ((s = js_PullSubscribe(&l->pull[i], l->js, filter, durable, NULL, &so, &jerr)) != NATS_OK)
      return nats_fail(s, durable);
  }
  return 0;
}

static void on_cancel_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg,
                          void *closure) {
  px__svc_cl_link_t *l = closure;
  const char *subj = natsMsg_GetSubject(msg);
  (void)nc;
  (void)sub;
  if (subj && strncmp(subj, "px.cancel.", 10) == 0 && px__svc_cl_id_ok(subj + 10))
    l->on_cancel(l->cancel_ctx, subj + 10);
  natsMsg_Destroy(msg);
}

static void on_bell_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg,
                        void *closure) {
  px__svc_cl_link_t *l = closure;
  const char *subj = natsMsg_GetSubject(msg), *last;
  int i;
  (void)nc;
  (void)sub;
  last = subj ? strrchr(subj, '.') : NULL;
  if ((int)PX_LOG_TRACE >= px_log_threshold) {
    const char *cid = NULL;
    natsMsgHeader_Get(msg, "Nats-Msg-Id", &cid);
    PX__CL_LAT(cid ? cid : "?", "bell");
  }
  for (i = 0; last && i < PX__CL_NPRIO; i++)
    if (strcmp(last + 1, prio_names[i]) == 0 && l->on_bell)
      l->on_bell(l->cancel_ctx, i);
  natsMsg_Destroy(msg);
}

int px__svc_cl_link_streams(const px_config_t *cfg, px__svc_cl_link_t *l) {
  int r = (int)cfg->cluster.replicas, rc;
  if ((rc = add_stream(l->js, "PX_JOBS", "px.jobs.>", 1, 0, r)) != 0 ||
      (rc = add_stream(l->js, "PX_RESULTS", "px.results.>", 0, RESULTS_AGE_NS, r)) != 0)
    return rc;
  return 0;
}

int px__svc_cl_link_setup(const px_config_t *cfg, px__svc_cl_link_t *l) {
  const px_cluster_config_t *c = &cfg->cluster;
  int r = (int)c->replicas, rc;
  natsStatus s;
  if (l->ready)
    return 0;
  if ((rc = px__svc_cl_link_streams(cfg, l)) != 0 ||
      (rc = open_bucket(l->js, "PX_STARTED", STARTED_TTL_NS, r, &l->started)) != 0 ||
      (rc = open_bucket(l->js, "PX_NODES", NODES_TTL_NS, r, &l->nodes)) != 0 ||
      (rc = subscribe_pulls(c, l)) != 0)
    return rc;
  if (!l->cancel) {
    if ((s = natsConnection_Subscribe(&l->cancel, l->nc, "px.cancel.*", on_cancel_msg,
                                      l)) != NATS_OK)
      return nats_fail(s, "subscribe px.cancel.*");
  }
  if (!l->bell) {
    char bell[96];
    px_snprintf(bell, sizeof bell, "px.jobs.%s.*", c->pool);
    if ((s = natsConnection_Subscribe(&l->bell, l->nc, bell, on_bell_msg, l)) !=
        NATS_OK)
      return nats_fail(s, "subscribe px.jobs.<pool>.*");
  }
  l->ready = 1;
  PX_LOG(PX_LOG_INFO, "cluster: streams, buckets and consumers of pool %s ready", c->pool);
  return 0;
}

/* One pull request for one message, answered within wait_ms (libnats
 * 3.4.1 answers a NoWait request only at its expiry, so a short expiry it
 * is). 0 with *msg or NULL; PX_EIO. */
static int fetch_one(natsSubscription *sub, int64_t wait_ms, natsMsg **msg) {
  jsFetchRequest req;
  natsMsgList list = {NULL, 0};
  natsStatus s;
  jsFetchRequest_Init(&req);
  req.Batch = 1;
  req.Expires = wait_ms * NS_PER_MS;
  s = natsSubscription_FetchRequest(&list, sub, &req);
  if (s == NATS_OK && list.Count > 0) {
    *msg = list.Msgs[0];
    list.Msgs[0] = NULL; /* kept: the list frees the rest */
  }
  natsMsgList_Destroy(&list);
  return s == NATS_OK || s == NATS_TIMEOUT || s == NATS_NOT_FOUND ? 0
                                                                  : nats_fail(s, "fetch");
}

int px__svc_cl_link_fetch_prio(px__svc_cl_link_t *l, int prio, natsMsg **msg) {
  *msg = NULL;
  return fetch_one(l->pull[prio], PX__CL_FETCH_WAIT_MS, msg);
}

int px__svc_cl_link_fetch(px__svc_cl_link_t *l, natsMsg **msg) {
  int i, rc;
  *msg = NULL;
  for (i = 0; i < PX__CL_NPRIO; i++)
    if ((rc = fetch_one(l->pull[i], PX__CL_FETCH_WAIT_MS, msg)) != 0 || *msg)
      return rc;
  return 0;
}

int px__svc_cl_link_result(px__svc_cl_link_t *l, const char *id,
                           const char *json, int *duplicate) {
  char subject[96];
  jsPubOptions po;
  jsPubAck *pa = NULL;
  jsErrCode jerr = 0;
  natsStatus s;
  *duplicate = 0;
  px_snprintf(subject, sizeof subject, "px.results.%s", id ? id : "_invalid");
  jsPubOptions_Init(&po);
  po.MsgId = id;
  po.MaxWait = JS_WAIT_MS;
  s = js_Publish(&pa, l->js, subject, json, (int)strlen(json), &po, &jerr);
  if (s != NATS_OK)
    return nats_fail(s, "publish of a result");
  *duplicate = pa->Duplicate;
  jsPubAck_Destroy(pa);
  return 0;
}

uint64_t px__svc_cl_deliveries(natsMsg *m, uint64_t *stream_seq) {
  jsMsgMetaData *meta = NULL;
  uint64_t n = 0;
  *stream_seq = 0;
  if (natsMsg_GetMetaData(&meta, m) == NATS_OK) {
    n = meta->NumDelivered;
    *stream_seq = meta->Sequence.Stream;
    jsMsgMetaData_Destroy(meta);
  }
  return n;
}

void px__svc_cl_link_close(px__svc_cl_link_t *l) {
  int i;
  for (i = 0; i < PX__CL_NPRIO; i++) {
    natsSubscription_Destroy(l->pull[i]); /* the durable consumer stays */
    l->pull[i] = NULL;
  }
  if (l->cancel) {
    natsSubscription_Unsubscribe(l->cancel);
    natsSubscription_Destroy(l->cancel);
    l->cancel = NULL;
  }
  if (l->bell) {
    natsSubscription_Unsubscribe(l->bell);
    natsSubscription_Destroy(l->bell);
    l->bell = NULL;
  }
  kvStore_Destroy(l->started);
  kvStore_Destroy(l->nodes);
  l->started = l->nodes = NULL;
  jsCtx_Destroy(l->js);
  l->js = NULL;
  if (l->nc) {
    natsConnection_Close(l->nc);
    natsConnection_Destroy(l->nc);
  }
  l->nc = NULL;
  l->ready = 0;
}

int px__svc_cl_consumer_pending(jsCtx *js, const char *pool, const char *prio,
                                int64_t wait_ms, uint64_t *n) {
  char durable[96];
  jsConsumerInfo *ci = NULL;
  jsOptions o;
  px_snprintf(durable, sizeof durable, "px-%s-%s", pool, prio);
  jsOptions_Init(&o);
  o.Wait = wait_ms;
  *n = 0;
  if (js_GetConsumerInfo(&ci, js, "PX_JOBS", durable, &o, NULL) != NATS_OK)
    return PX_EIO;
  *n = ci->NumPending;
  jsConsumerInfo_Destroy(ci);
  return 0;
}

int64_t px__svc_cl_pool_pending(jsCtx *js, const char *pool, int64_t wait_ms) {
  uint64_t n, sum = 0;
  int p;
  for (p = 0; p < PX__CL_NPRIO; p++) {
    if (px__svc_cl_consumer_pending(js, pool, prio_names[p], wait_ms, &n) != 0)
      return -1;
    sum += n;
  }
  return (int64_t)sum;
}
