/* px_service.h - the service core every transport drives.
 *
 * A px_service_t holds the immutable configuration, the engine (queue,
 * workers, backend), the KB layer and the counters. A transport (Unix
 * socket, named pipe, ZeroMQ) opens one px_session_t per client and feeds
 * it decoded payloads; the session answers through the transport's send
 * callback, from any thread. Framing is the transport's business: the
 * session sees and produces bare JSON objects.
 *
 *   transport thread                  engine worker threads
 *   ----------------                  ---------------------
 *   px_session_open(svc, peer, send)
 *   px_session_on_payload(...)  --->  accepted/started/output/result
 *                                     -> send(ctx, json, len)
 *   px_session_close(s)               (no send() after close returns)
 */
#ifndef PX_SERVICE_H
#define PX_SERVICE_H

#include "px/px_attest.h"
#include "px/px_job.h"
#include "px/px_result.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct px_service_s px_service_t;
typedef struct px_session_s px_session_t;
typedef struct px_config_s px_config_t;

/* Who is on the other end, as the transport established it. */
typedef enum {
  PX_PEER_UNIX = 1, /* SO_PEERCRED */
  PX_PEER_WINDOWS,  /* named-pipe client token */
  PX_PEER_ZMQ,      /* CURVE public key (Z85) */
  PX_PEER_CLUSTER   /* jobs pulled from the NATS cluster (worker mode):
                       the `clients` entry {"cluster": true}; no KB */
} px_peer_kind_t;

#define PX_PEER_MAX_GROUPS 64

typedef struct {
  px_peer_kind_t kind;
  unsigned long pid;           /* 0 if unknown */
  uint32_t uid;                /* unix */
  uint32_t gids[PX_PEER_MAX_GROUPS]; /* unix: primary first */
  size_t ngids;
  char user_sid[192];          /* windows */
  char group_sids[PX_PEER_MAX_GROUPS][192];
  size_t ngroup_sids;
  char zmq_key[41];            /* zmq: Z85 public key, "" if none */
} px_peer_t;

/* Called by a session to send one JSON object to its client. Thread-safe
 * on the transport side; json is not retained. Returns 0, or an error when
 * the client is gone (the message is dropped and logged by the caller). */
typedef int (*px_session_send_fn)(void *ctx, const char *json, size_t len);

typedef struct {
  const px_config_t *config; /* borrowed; must outlive the service */
  const char *version;       /* reported by `status` */
  int allow_degraded;        /* run where a sandbox control is missing on
                                this host (reported as "degraded") */
#ifdef PX_TEST_SEAMS
  /* Test seams (test builds only: a release build runs every job on the
   * native backend, gated on the attestation). */
  const void *backend_ops;   /* const px_backend_ops_t *; NULL: native */
  int attest_exempt;         /* in-process tests with the fake backend:
                                `run` is not gated on an attestation (see
                                px_service_attest) */
#endif
} px_service_opts_t;

/* Build the service: backend, KB layer, engine and workers. 0 or PX_E*
 * (logged). */
int px_service_open(const px_service_opts_t *opts, px_service_t **out);
/* Orderly stop: refuse new work, answer every queued job `aborted`, kill
 * running jobs (their results go out `aborted`), run KB rollbacks, join the
 * workers. Every session still open receives its results first. */
void px_service_stop(px_service_t *svc);
/* Free after stop and after every session is closed. */
void px_service_free(px_service_t *svc);

/* Attest the sandbox (px_attest.h): run the shipped probe as real jobs
 * through the engine and backend, decide enforced / degraded / failed,
 * log the summary and every failed check (Event Log / journal), make the
 * report what `status` shows and gate `run` on it. Until it has run once,
 * and while its state is failed, every `run` is refused with
 * sandbox_unverified. Takes at most PX_ATTEST_BUDGET_MS plus the jobs'
 * teardown; serialised (a second caller waits). *out (may be NULL) gets a
 * copy. 0 when the attestation ran (whatever its verdict), else PX_E*
 * (the state is then failed). Thread-safe; not from an engine callback. */
int px_service_attest(px_service_t *svc, px_attest_report_t *out);
/* A copy of the current report (state pending before the first run). */
void px_service_attestation(px_service_t *svc, px_attest_report_t *out);

/* What `status` shows of a cluster worker (status.cluster). */
typedef struct {
  const char *mode;   /* "worker" (static) */
  int connected;      /* 1 while the NATS connection is up */
  char pool[65];
  int64_t pending;    /* the pool's jobs not yet delivered to a worker, all
                         priorities, as read every 2 s; -1 unknown */
  unsigned in_flight; /* cluster jobs fetched and not yet answered */
} px_cluster_status_t;
/* Fills *out; called with the service's cluster lock held, from a
 * session's thread. Must not call back into the service. */
typedef void (*px_cluster_status_fn)(void *ctx, px_cluster_status_t *out);
/* Register (fn non-NULL) or remove (NULL) the cluster worker whose state
 * `status` reports; after a removal returns, fn is not called again.
 * Without one (cluster.mode off), status has no `cluster` key. */
void px_service_set_cluster(px_service_t *svc, px_cluster_status_fn fn,
                            void *ctx);

/* The cluster counters of `metrics` (metrics.cluster, docs/protocol.md
 * 4.6). Each part (the worker, the gateway) fills its own half; has_*
 * says which are there. Counted where the event happens, since start. */
typedef struct {
  int has_worker;
  int worker_connected;          /* its NATS connection is up now */
  uint64_t worker_reconnects;    /* libnats' reconnects of that connection */
  unsigned worker_in_flight;     /* cluster jobs held now */
  uint64_t jobs_taken;           /* job messages handed to the engine */
  uint64_t results_published;    /* final results PX_RESULTS stored */
  uint64_t results_duplicate;    /* ... that it dropped as a repeat */
  uint64_t result_retries;       /* result publishes tried again */
  uint64_t results_unpublished;  /* given up: left to redelivery */
  uint64_t executor_lost;        /* redeliveries answered executor_lost */
  uint64_t invalid_terminated;   /* invalid job messages terminated */
  int has_gateway;
  int gateway_connected;
  uint64_t gateway_reconnects;
  unsigned gateway_in_flight;    /* forwarded jobs not yet answered */
  uint64_t forwarded;            /* runs PX_JOBS stored (accepted) */
  uint64_t publish_retries;      /* job publishes sent again (no ack) */
  uint64_t results_relayed;      /* results relayed to their client */
  uint64_t results_recovered;    /* ... of those, found in PX_RESULTS */
  uint64_t refused_unavailable;  /* forwards refused cluster_unavailable */
  uint64_t refused_too_large;    /* ... bad_request (over max_payload) */
  uint64_t refused_queue_full;   /* ... queue_full (max_concurrent) */
  uint64_t refused_other;        /* ... paused, internal */
} px_cluster_metrics_t;
/* Adds its half to *m (service's cluster lock held, a session's thread).
 * Must not block or call back into the service. */
typedef void (*px_cluster_metrics_fn)(void *ctx, px_cluster_metrics_t *m);
/* Register (fn non-NULL) or remove (NULL) the worker's (gateway 0) or
 * the gateway's (gateway 1) counters; after a removal returns, fn is not
 * called again. None registered (cluster.mode off): `metrics` has no
 * `cluster` key. */
void px_service_set_cluster_metrics(px_service_t *svc, int gateway,
                                    px_cluster_metrics_fn fn, void *ctx);

/* One worker as its PX_NODES heartbeat says (`cluster_status`). */
typedef struct {
  char name[65];
  char pool[65];        /* "" when the entry has none */
  char attestation[16]; /* "" when the entry has none */
  char version[32];     /* "" when the entry has none */
  int64_t slots;        /* -1 when the entry has none (as below) */
  int64_t in_flight;
  int64_t heartbeat_ms; /* the worker's heartbeat period */
  int accepting;        /* 1/0: it takes cluster jobs; -1 unknown */
  uint64_t age_ms;      /* since the entry was stored (server's time) */
} px_cluster_node_t;
/* Read every worker's heartbeat (a session's thread, the service's nodes
 * lock held: one read at a time; bounded by its own deadline). 0 with
 * *nodes (malloc'd, sorted by name; NULL when none) and *n; PX_EIO with
 * why (NATS unreachable, or no answer in time); PX_ENOMEM. */
typedef int (*px_cluster_nodes_fn)(void *ctx, px_cluster_node_t **nodes, size_t *n,
                                   char *why, size_t whysz);
/* Register (fn non-NULL) or remove (NULL) the reader `cluster_status`
 * uses; after a removal returns, fn is not called again. None
 * (cluster.mode off, and always on Windows): `cluster_status` is
 * answered with the error cluster_off. */
void px_service_set_cluster_nodes(px_service_t *svc, px_cluster_nodes_fn fn, void *ctx);
/* The version this service reports (`status`); for the heartbeat. */
const char *px_service_version(const px_service_t *svc);

/* 1 when the engine would take a `run` now: not paused (scram), and its
 * queue below the maximum depth. A pulling transport
 * (the cluster worker) fetches nothing otherwise. Thread-safe. */
int px_service_would_admit(px_service_t *svc);

/* The cluster gateway (cluster.mode submit or both; service/cluster/
 * gateway.c): the sessions hand it the runs with placement cluster (or
 * any, when the engine has no free slot for the client) after the
 * client's policy, the code audit and the attestation gate passed. Every
 * function is called from a session's transport thread, never with a lock
 * of the session held. */
typedef struct {
  /* Forward the run (its payload as the client sent it; id, priority the
   * parsed ones). The gateway answers it on the session: `accepted` and
   * later the relayed events and its one `result`, or one rejection
   * (px_session_reject). */
  void (*submit)(void *ctx, px_session_t *s, const char *id, px_priority_t prio,
                 const char *payload, size_t len);
  /* 1 when s has a cluster job id in flight (duplicate_id for a local run
   * of the same id). */
  int (*holds)(void *ctx, px_session_t *s, const char *id);
  /* How many cluster jobs of s are in flight (they count against its
   * max_concurrent). */
  unsigned (*jobs)(void *ctx, px_session_t *s);
  /* Cancel s's cluster job id: 0, or PX_ENOENT when s has none. */
  int (*cancel)(void *ctx, px_session_t *s, const char *id);
  /* s is closing: its relays end; cancel_jobs (on_disconnect "cancel")
   * cancels its cluster jobs. Nothing is sent on s after this returns. */
  void (*detach)(void *ctx, px_session_t *s, int cancel_jobs);
} px_gateway_ops_t;

/* Register the gateway (ops and ctx borrowed) before any session opens;
 * remove it (NULL) after every session is closed. Without one, a run with
 * placement cluster or any is refused cluster_unavailable. */
void px_service_set_gateway(px_service_t *svc, const px_gateway_ops_t *ops,
                            void *ctx);

/* For the gateway: send one JSON frame to the session's client (dropped
 * once the session is closing); json is not retained. */
void px_session_send_json(px_session_t *s, const char *json);
/* For the gateway: the one `result` (status rejected, code and message)
 * of a run refused before it left, delivered and counted by the engine as
 * for a local refusal (duplicate_id instead when the client has a local
 * job with this id in flight). */
void px_session_reject(px_session_t *s, const char *id, px_code_t code,
                       const char *msg);
/* The session's client: its peer, and its policy's max_concurrent (0:
 * none). */
const px_peer_t *px_session_peer(const px_session_t *s);
unsigned px_session_max_concurrent(const px_session_t *s);

/* The knowledge-base layer, or NULL when no KB roots are configured. */
struct px_kb_s *px_service_kb(px_service_t *svc);

/* Frame limits for transports (max payload, read timeout). */
uint32_t px_service_max_frame(const px_service_t *svc);
uint64_t px_service_read_timeout_ms(const px_service_t *svc);

/* A client connection. NULL on OOM. peer is copied. */
px_session_t *px_session_open(px_service_t *svc, const px_peer_t *peer,
                              px_session_send_fn send, void *ctx);
/* One complete payload from the client (already de-framed). */
void px_session_on_payload(px_session_t *s, const char *payload, size_t len);
/* A framing failure the transport detected (bad_frame, frame_too_large,
 * bad_crc): sends the `error` message. The transport closes the
 * connection itself for the fatal ones. */
void px_session_on_frame_error(px_session_t *s, px_code_t code);
/* 1 when the session's client policy is an admin one. */
int px_session_is_admin(const px_session_t *s);
/* Its jobs in flight (accepted, result not yet delivered). */
unsigned px_session_jobs(px_session_t *s);
/* The identity caps count by: "uid:N" (Unix), "sid:S-1-..." (Windows
 * user SID), "zmq:KEY", "cluster". */
void px_peer_identity(const px_peer_t *p, char *out, size_t outsz);

/* The client went away (or the transport drops it). Its running jobs are
 * cancelled or left to finish per config `on_disconnect`; their results
 * are logged. After this returns the send callback is never called again
 * for this session. Frees the session. */
void px_session_close(px_session_t *s);

#ifdef __cplusplus
}
#endif
#endif /* PX_SERVICE_H */
