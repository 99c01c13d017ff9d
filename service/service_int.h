/* service_int.h - internals shared by service.c and session.c. */
#ifndef PX_SERVICE_INT_H
#define PX_SERVICE_INT_H

#include "px/px_config.h"
#include "px/px_engine.h"
#include "px/px_kb.h"
#include "px/px_os.h"
#include "px/px_service.h"

struct px_service_s {
  const px_config_t *cfg;   /* borrowed */
  px_engine_t *eng;         /* owned */
  px_kb_t *kb;              /* owned; NULL without KB roots */
  const char **ro_binds;    /* owned array, borrowed strings; NULL-ended */
  const char **images;      /* the same: image runtimes' images, or NULL */
  const char **image_runtimes; /* the same: the runtime of each image */
  char version[32];
  px_mutex_t attest_lock;   /* guards attest */
  px_mutex_t attest_run;    /* one attestation at a time */
  px_attest_report_t attest; /* the last verdict (state pending at first) */
#ifdef PX_TEST_SEAMS
  int attest_exempt;        /* px_service_opts_t.attest_exempt */
#endif
  int allow_degraded;       /* windows./linux.allow_degraded or opts */
  px_mutex_t cluster_lock;  /* guards cluster_fn, cluster_ctx */
  px_cluster_status_fn cluster_fn; /* NULL: no cluster worker */
  void *cluster_ctx;        /* the worker's, borrowed */
  px_cluster_metrics_fn cl_metrics[2]; /* worker, gateway; cluster_lock */
  void *cl_metrics_ctx[2];
  px_mutex_t nodes_lock;    /* guards nodes_fn, nodes_ctx; held while reading */
  px_cluster_nodes_fn nodes_fn; /* NULL: cluster_status answers cluster_off */
  void *nodes_ctx;
  const px_gateway_ops_t *gw; /* NULL: no gateway; set before sessions */
  void *gw_ctx;             /* the gateway's, borrowed */
};

struct px_session_s {
  px_service_t *svc;                  /* borrowed */
  px_peer_t peer;
  const px_client_policy_t *policy;   /* borrowed from cfg; NULL: none */
  px_session_send_fn send;
  void *ctx;                          /* the transport's, borrowed */
  px_engine_client_t *ec;             /* closed in px_session_close */
  px_mutex_t lock;                    /* guards closing and send */
  int closing;
};

/* 0 when `run` may go ahead; else PX_EACCES with the reason (the failed
 * checks) in why (attest.c). */
int px__svc_service_may_run(px_service_t *svc, char *why, size_t whysz);
/* The `describe` answer for a client with policy pol (NULL: none) and the
 * `metrics` answer (info.c). malloc'd JSON, NULL on OOM. */
char *px__svc_encode_describe(const px_service_t *svc,
                              const px_client_policy_t *pol,
                              const char *backend);
/* cl: the cluster block (NULL, or neither half there: no `cluster` key,
 * so a single host's answer is as before). */
char *px__svc_encode_metrics(const px_metrics_t *m, const px_status_info_t *st,
                             const px_cluster_metrics_t *cl);
/* The `cluster_status` answer (info.c): this executor's cluster state
 * (self) and the workers. malloc'd JSON, NULL on OOM. */
char *px__svc_encode_cluster_status(const px_cluster_status_t *self,
                                    const px_cluster_node_t *nodes, size_t n);
/* A worker is stale after this many of its heartbeat periods without one
 * (PX__CL_DEFAULT_HEARTBEAT_MS when its entry does not say). */
#define PX__CL_STALE_BEATS 3
#define PX__CL_DEFAULT_HEARTBEAT_MS 5000
/* The `status` answer (info.c): enforcement_available as a list of names,
 * queue as {critical, high, normal, low, max}, counters as {accepted, ok,
 * ...}. malloc'd JSON, NULL on OOM. */
char *px__svc_encode_status(const px_status_info_t *s,
                            const px_cluster_status_t *cl);

/* The engine event callback of every session (session.c). */
void px__svc_session_on_event(void *ctx, const px_engine_event_t *ev);

#endif
