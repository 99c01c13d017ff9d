/* cluster_int.h - internals shared by the cluster worker's files:
 * worker.c (the loop, the job table, the session's answers), nats_link.c
 * (connection, streams, consumers, buckets, publishing) and job_msg.c (a
 * job message's checks). Not a seam: main.c includes cluster/cluster.h. */
#ifndef PX_SVC_CLUSTER_INT_H
#define PX_SVC_CLUSTER_INT_H

#include "px/px_config.h"
#include "px/px_log.h"
#include "px/px_os.h"
#include "px/px_result.h"
#include "px/px_service.h"

#include <nats/nats.h>

#include <stddef.h>
#include <stdint.h>

#define PX__CL_ID_MAX 64
#define PX__CL_SUBMITTER_MAX 128
#define PX__CL_NPRIO 3 /* high, normal, low: fetched in this order */
#define PX__CL_FETCH_WAIT_MS 10 /* a pull request's expiry */

/* Latency stamps of a cluster job's steps (monotonic ns, comparable across
 * processes of one host), at log level trace only: the level test comes
 * first, so they cost nothing by default. bench/bench_cluster.c --trace
 * joins them with the submitter's own (bench/README.md, cluster). */
#define PX__CL_LAT(id, step)                                                 \
  PX_LOG(PX_LOG_TRACE, "cluster-lat %s %s %llu", (id), (step),              \
         (unsigned long long)px_now_ns())

/* The connection and everything bound on it. */
typedef struct {
  natsConnection *nc;                       /* owned */
  jsCtx *js;                                /* owned */
  kvStore *started;                         /* PX_STARTED, owned */
  kvStore *nodes;                           /* PX_NODES, owned */
  natsSubscription *pull[PX__CL_NPRIO];     /* px-<pool>-<prio>, owned */
  natsSubscription *cancel;                 /* px.cancel.*, owned */
  natsSubscription *bell;                   /* px.jobs.<pool>.*, owned */
  int ready;                                /* streams etc. are set up */
  void (*on_cancel)(void *ctx, const char *id); /* from a NATS thread */
  void *cancel_ctx;                         /* borrowed */
  /* The doorbell: a job was published on priority prio (0 high .. 2 low)
   * of the pool (a core subscription sees every publish on the stream's
   * subjects); from a NATS thread; ctx is cancel_ctx. */
  void (*on_bell)(void *ctx, int prio);
} px__svc_cl_link_t;

/* Connect to cfg->cluster.servers (credentials, TLS, reconnect forever
 * with backoff, every state change logged). A server that is down at start
 * is retried in the background: 0 then, with the link not yet connected.
 * shared_delivery: async subscriptions use libnats' shared delivery
 * threads (the gateway's one per job), not a thread each.
 * 0, PX_EIO or PX_ENOMEM (logged). */
int px__svc_cl_link_open(const px_config_t *cfg, const char *name, int shared_delivery,
                         px__svc_cl_link_t *l);
/* 1 while connected. */
int px__svc_cl_link_connected(const px__svc_cl_link_t *l);
/* Create or check the streams, buckets and consumers and subscribe (pull
 * consumers; the cancel subject: l->on_cancel(l->cancel_ctx, id), set by
 * the caller, runs on a NATS thread). Idempotent; call while connected
 * until it returns 0, and again after each reconnect (l->ready = 0: the
 * server may have lost its store). 0 or PX_EIO. */
int px__svc_cl_link_setup(const px_config_t *cfg, px__svc_cl_link_t *l);
/* Add (or check) the two streams PX_JOBS and PX_RESULTS alone: what the
 * gateway needs. Idempotent. 0 or PX_EIO. */
int px__svc_cl_link_streams(const px_config_t *cfg, px__svc_cl_link_t *l);
/* One job message, highest priority first, each priority's request
 * waiting at most PX__CL_FETCH_WAIT_MS. 0 with *msg (owned by the caller)
 * or NULL when none is pending; PX_EIO. */
int px__svc_cl_link_fetch(px__svc_cl_link_t *l, natsMsg **msg);
/* The same for one priority (0 high .. 2 low). */
int px__svc_cl_link_fetch_prio(px__svc_cl_link_t *l, int prio, natsMsg **msg);
/* Publish json on px.results.<id> through JetStream with Nats-Msg-Id id
 * (NULL: px.results._invalid, no id) and wait for the stream's ack.
 * *duplicate = 1 when the stream dropped it as a repeat. 0 or PX_EIO. */
int px__svc_cl_link_result(px__svc_cl_link_t *l, const char *id,
                           const char *json, int *duplicate);
/* The consumer px-<pool>-<prio>'s jobs not yet delivered to a worker
 * (num_pending), waiting at most wait_ms: 0 or PX_EIO. */
int px__svc_cl_consumer_pending(jsCtx *js, const char *pool, const char *prio,
                                int64_t wait_ms, uint64_t *n);
/* The same summed over the pool's three priorities: the number a status
 * shows, or -1 when a consumer could not be read. */
int64_t px__svc_cl_pool_pending(jsCtx *js, const char *pool, int64_t wait_ms);
#define PX__CL_PENDING_EVERY_MS 2000 /* status.cluster.pending is this fresh */

/* How many times this message was delivered (1 the first time, 0 when
 * its metadata cannot be read); *stream_seq its sequence in PX_JOBS. */
uint64_t px__svc_cl_deliveries(natsMsg *m, uint64_t *stream_seq);
/* Close everything; idempotent. */
void px__svc_cl_link_close(px__svc_cl_link_t *l);

/* A job message, checked (job_msg.c). */
typedef struct {
  char id[PX__CL_ID_MAX + 1]; /* "" when no valid id could be read */
  int idempotent;             /* "retry": "idempotent" */
  char submitter[PX__CL_SUBMITTER_MAX + 1]; /* "" if none */
  char *payload;              /* the `run` without submitter/retry; owned */
  size_t len;
  px_code_t code;             /* why it is not a valid job */
  char why[200];
} px__svc_cl_job_t;

/* Check a job message's body: JSON object, "type": "run", an id of
 * [A-Za-z0-9_-]{1,64}, optional submitter (string, at most 128 bytes) and
 * retry ("idempotent"), and the rest a `run` px_request_parse accepts
 * under lim. 0 with j->payload set; PX_EINVAL with j->code and j->why (and
 * j->id when one was readable); PX_ENOMEM. px__svc_cl_job_free after. */
int px__svc_cl_job_parse(const char *data, size_t len,
                         const px_request_limits_t *lim, px__svc_cl_job_t *j);
void px__svc_cl_job_free(px__svc_cl_job_t *j);
/* 1 if s is a cluster job id (a subject token and a KV key). */
int px__svc_cl_id_ok(const char *s);

/* The final answer of a job as a `result` frame: json itself when it is
 * one; an `error` frame naming the job (duplicate_id, internal: the engine
 * did not take it) becomes a result of status error with its code and
 * message. malloc'd; NULL on OOM. */
char *px__svc_cl_final_result(const char *json, size_t len);

/* json (a result or error frame) with "worker": name and, when submitter
 * is not "", "submitter" added. malloc'd; NULL on a bad frame or OOM. */
char *px__svc_cl_stamp(const char *json, size_t len, const char *name,
                       const char *submitter);

/* ---- PX_NODES and connection counts (nodes.c) ---- */

/* Every worker's heartbeat in PX_NODES, read through l's connection
 * (thread-safe) within a 2 s deadline: 0 with *nodes (malloc'd, sorted by
 * name; NULL and 0 when the bucket is missing or empty); PX_EIO with why
 * (not connected, or no answer); PX_ENOMEM. */
int px__svc_cl_read_nodes(const px__svc_cl_link_t *l, px_cluster_node_t **nodes, size_t *n,
                          char *why, size_t whysz);
/* One heartbeat (JSON, the worker's) of worker name stored age_ms ago
 * into *nd; a field missing or of the wrong type reads as unknown. */
void px__svc_cl_node_parse(const char *name, const char *data, size_t len,
                           uint64_t age_ms, px_cluster_node_t *nd);
/* libnats' count of the connection's reconnects (0 when unknown). */
uint64_t px__svc_cl_reconnects(natsConnection *nc);

#endif /* PX_SVC_CLUSTER_INT_H */
