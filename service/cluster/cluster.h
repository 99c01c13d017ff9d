/* cluster.h - the cluster worker (service/cluster/): this daemon as a
 * worker of a NATS JetStream cluster (docs/cluster-protocol.md).
 *
 * A transport like the ZeroMQ endpoint: it opens one px_session_t whose
 * peer is PX_PEER_CLUSTER (policy: the `clients` entry {"cluster": true}),
 * pulls job messages of cluster.pool from the stream PX_JOBS while fewer
 * than cluster.slots of its jobs are in flight, hands each one's `run` to
 * the session and maps the session's answers back to NATS: `started` and
 * `output` on px.events.<id>, the one `result` through JetStream on
 * px.results.<id> (message id = job id), then the job message's ack.
 * Linux only for now (the Windows service is built without libnats); the
 * only file of the daemon that knows NATS is this folder.
 */
#ifndef PX_SVC_CLUSTER_H
#define PX_SVC_CLUSTER_H

#include "px/px_config.h"
#include "px/px_service.h"

#include <stdint.h>

typedef struct px_cluster_worker_s px_cluster_worker_t;

/* Start the worker when cfg->cluster.mode is "worker": check the
 * credentials file (px_config_check_file, PX_FILECHECK_SECRET), start
 * connecting (a server that is down is retried with backoff, logged), start
 * the worker thread, register status.cluster with svc. host_name is the
 * worker's name when cluster.name is null. cfg and svc are borrowed and
 * must outlive the worker.
 * Returns 0 with *out set; 0 with *out = NULL when the mode is "off";
 * PX_ECONFIG / PX_EACCES / PX_ENOENT / PX_ELOOP (options, the credentials
 * file), PX_EIO (the NATS client refused), PX_ENOMEM. Logged. */
int px_cluster_worker_open(const px_config_t *cfg, px_service_t *svc,
                           const char *host_name, px_cluster_worker_t **out);

/* Fetch no more jobs. Jobs in flight still get their results published.
 * Any thread; NULL is fine. */
void px_cluster_worker_stop_accept(px_cluster_worker_t *w);

/* After px_service_stop: publish the results still queued for at most
 * flush_timeout_ms, stop the thread, close the session and the connection,
 * free. A job whose result could not be published is not acked (its
 * redelivery answers executor_lost). NULL is fine. */
void px_cluster_worker_close(px_cluster_worker_t *w, uint64_t flush_timeout_ms);

/* ---- the gateway (gateway.c) ---- */

typedef struct px_cluster_gateway_s px_cluster_gateway_t;

/* Start the gateway when cfg->cluster.mode is "submit" or "both": check
 * the credentials file, start connecting (retried with backoff), start
 * its thread and register it with svc (px_service_set_gateway; status.
 * cluster too in submit mode). Call before any session opens. host_name
 * names the cluster ids ("<name>-<16 hex>") when cluster.name is null.
 * cfg and svc are borrowed. 0 with *out (NULL when the mode has no
 * gateway); PX_ECONFIG / PX_EACCES / PX_ENOENT / PX_ELOOP (credentials),
 * PX_EIO, PX_ENOMEM. Logged. */
int px_cluster_gateway_open(const px_config_t *cfg, px_service_t *svc,
                            const char *host_name, px_cluster_gateway_t **out);

/* The service stops: every forwarded job still in flight gets its result
 * `aborted` on its client's connection and its cancel is published; new
 * forwards are refused `paused`. Call after px_service_stop, before the
 * transports close their sessions. Idempotent; NULL is fine. */
void px_cluster_gateway_stop(px_cluster_gateway_t *g);

/* After every session is closed: stop (if not yet), unregister, close the
 * connection, free. NULL is fine. */
void px_cluster_gateway_close(px_cluster_gateway_t *g);

#endif /* PX_SVC_CLUSTER_H */
