/* px_engine.h - the engine: turns a validated job into exactly one result.
 *
 * The transport parses and policy-checks a `run`, builds a px_job_spec_t and
 * submits it here. The engine queues it (service/engine/queue.h), runs it on a worker
 * through a backend (px_sandbox.h) with the output guard (px_outguard.h)
 * and the knowledge-base hooks (px_kb_hooks.h) around it, and delivers
 * events to the submitting client:
 *
 *     accepted  <  started  <  output*  <  result        (per job)
 *
 * Every accepted job gets EXACTLY ONE result event, whatever happens
 * (completion racing cancel, scram racing start, service stop, backend
 * failures). Jobs refused at submit get their one `result` (rejected) from
 * the engine too, except duplicate_id, which is an `error` frame the
 * transport sends (the first job is not disturbed).
 *
 * Verdicts (result.status), first match wins:
 *   scram or stop killed/dequeued it             aborted
 *   cancelled (px_engine_cancel, client close)   cancelled
 *   prepare failed with PX_ERANGE (the command   rejected (argv_too_long);
 *   line is too long for the platform)           nothing ran
 *   KB snapshot, prepare or start failed         error (sandbox_failed, or
 *                                                process_create_failed for
 *                                                PX_EPROCESS, spawn_failed
 *                                                for PX_ESPAWN / PX_ENOENT,
 *                                                internal for PX_ENOMEM);
 *                                                not retried
 *   outcome.error (the backend lost the job)     error (sandbox_failed)
 *   the output guard killed it                   killed, violation output
 *   outcome.violation set                        killed, that violation
 *   killed by the backend with no reason         error (sandbox_failed)
 *   exited 0                                     ok
 *   otherwise                                    nonzero_exit
 * exit_code is the job's for ok/nonzero_exit, -1 otherwise. usage and
 * enforcement come from the backend whenever the job ran (aborted jobs
 * included).
 * KB: snapshot runs before prepare (failure: result error, nothing runs);
 * finish runs after the job ended with rollback = kb_rollback is ALWAYS, or
 * ON_VIOLATION and the status is killed; NEVER never rolls back.
 *
 * THREADING
 * - All px_engine_* functions are thread-safe.
 * - Workers (opts.workers threads) own running jobs: KB hooks, prepare,
 *   start, wait and release run on the job's worker.
 * - on_event is called for one client by one thread at a time (a per-client
 *   lock serializes them), never with the engine lock held:
 *     accepted  on the thread calling px_engine_submit_take, before it
 *               returns;
 *     started   on the backend thread that called on_started (or the
 *               worker, when the backend called nothing before output);
 *     output    on the backend's output thread (streaming jobs only);
 *     result    on the job's worker, or on the thread of px_engine_cancel
 *               / px_engine_scram / px_engine_stop / px_engine_client_close
 *               for a job that was still queued, or of submit for a
 *               rejected job.
 *   on_event must not call back into the engine for the same client
 *   (submit, cancel, reject, client_close: they would wait for the
 *   client's lock); it should copy/encode what it needs and return.
 * - The backend kill op is called with the engine lock held (it must be quick
 *   and must not call the job's event callbacks synchronously).
 * - After px_engine_client_close returns, on_event is never called again
 *   for that client, and no call is in progress.
 */
#ifndef PX_ENGINE_H
#define PX_ENGINE_H

#include "px/px_job.h"
#include "px/px_kb_hooks.h"
#include "px/px_outguard.h"
#include "px/px_metrics.h"
#include "px/px_result.h"
#include "px/px_sandbox.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct px_engine_s px_engine_t;
typedef struct px_engine_client_s px_engine_client_t;

typedef struct {
  unsigned workers;            /* 0: px_cpu_count() */
  size_t queue_max;            /* 0: PX_QUEUE_DEFAULT_MAX_DEPTH (1000) */
  uint64_t aging_ms;           /* 0: no aging (see service/engine/queue.h) */
  unsigned client_max_concurrent; /* default running-jobs cap per client
                                     (px_engine_client_opts_t); 0: none */
  size_t client_max_queued;    /* queued jobs per client (config
                                  queue.per_client_max); past it a run gets
                                  queue_full. 0: no cap */
  /* Caps over all the clients of one identity (px_engine_client_opts_t
   * identity; exempt clients are not counted): queued jobs (config
   * queue.per_identity_max; past it: queue_full) and running jobs (config
   * queue.per_identity_running; more wait queued). 0: no cap. */
  size_t identity_max_queued;
  unsigned identity_max_running;
  /* Admission control: a job is not started while free memory is below
   * this floor; it stays queued and the check is repeated every
   * admission_poll_ms (default 250). 0 disables. A free-memory answer of 0
   * ("unknown") admits. */
  uint64_t min_free_memory_bytes;
  uint64_t admission_poll_ms;
  uint64_t (*free_memory)(void); /* NULL: px_free_memory_bytes (tests
                                    inject their own) */
  /* Output guard: limit_bytes is the default per-stream cap, used when a
   * job's limits.output_bytes is 0; emit/emit_ctx are ignored. */
  px_outguard_opts_t output;
  const px_backend_ops_t *backend; /* required; borrowed */
  px_backend_opts_t backend_opts;  /* copied; its strings are borrowed */
  /* Optional: the backend of jobs whose spec names an image (containers),
   * opened with backend_opts too. If it cannot be opened the engine still
   * starts; such jobs then end with error sandbox_failed. */
  const px_backend_ops_t *container;
  px_kb_hooks_t kb;                /* functions may be NULL; ctx borrowed */
  const char *version;             /* for status; borrowed; may be NULL */
} px_engine_opts_t;

/* Fill o with the defaults (backend NULL: the caller must set it). */
void px_engine_opts_default(px_engine_opts_t *o);

/* Open the backend and start the workers. 0, PX_EINVAL (no backend, or
 * one with a missing operation), the backend's open error, PX_ENOMEM.
 * *out owned by the caller: px_engine_stop then px_engine_free. */
int px_engine_new(const px_engine_opts_t *opts, px_engine_t **out);

/* Orderly stop: refuse new work (rejected `paused`), answer every queued
 * job `aborted`, kill every running job (aborted, with its usage; KB finish
 * hooks run), join the workers. Returns once every result is delivered.
 * Idempotent. */
void px_engine_stop(px_engine_t *eng);
/* Stop (if not yet) and free everything, clients the transport did not
 * close included. */
void px_engine_free(px_engine_t *eng);

/* ---- clients ---- */

typedef enum {
  PX_ENGINE_EV_ACCEPTED = 1,
  PX_ENGINE_EV_STARTED,
  PX_ENGINE_EV_OUTPUT,
  PX_ENGINE_EV_RESULT
} px_engine_event_type_t;

/* One event. Everything it points to is borrowed for the call only. */
typedef struct {
  px_engine_event_type_t type;
  const char *id;          /* the job's client id */
  uint64_t queue_position; /* ACCEPTED: estimated number of queued jobs
                              that start before it (0 = next); see
                              px_queue_position */
  px_stream_t stream;      /* OUTPUT */
  const char *data;        /* OUTPUT: valid UTF-8, never a split character */
  size_t len;
  const px_result_t *result; /* RESULT */
} px_engine_event_t;

typedef struct {
  void (*on_event)(void *ctx, const px_engine_event_t *ev); /* required */
  void *ctx;                /* borrowed until px_engine_client_close */
  unsigned max_concurrent;  /* running jobs at once; 0: the engine default */
  size_t max_queued;        /* queued jobs at once; 0: the engine default */
  const char *name;         /* for logs ("uid 1000", "pipe#3"); copied */
  const char *identity;     /* who the client is ("uid:1000", a SID):
                               the identity caps of px_engine_opts_t count
                               every client with the same one; NULL: none;
                               copied */
  int exempt;               /* 1: not under the identity caps (admins) */
} px_engine_client_opts_t;

/* Register a client (a connection). 0, PX_EINVAL, PX_ENOMEM. The handle
 * stays valid until px_engine_client_close. */
int px_engine_client_open(px_engine_t *eng, const px_engine_client_opts_t *o,
                          px_engine_client_t **out);

/* Jobs of client c in flight (accepted or refused, result not yet
 * delivered). */
unsigned px_engine_client_jobs(px_engine_t *eng, px_engine_client_t *c);

/* 1 when client c has a job `id` queued or running (the cluster gateway
 * checks a forwarded id against the client's local jobs). */
int px_engine_client_has(px_engine_t *eng, px_engine_client_t *c,
                         const char *id);

/* The client went away. cancel_jobs = 1: its queued and running jobs are
 * cancelled; 0: they run to the end. Either way their events are dropped
 * from now on (results are still counted and logged). Returns after any
 * in-progress on_event call of this client has returned; the handle must
 * not be used afterwards (the engine frees it after its last job). */
void px_engine_client_close(px_engine_t *eng, px_engine_client_t *c,
                            int cancel_jobs);

/* ---- jobs ---- */

/* What the transport hands over for one accepted `run`. */
typedef struct {
  /* Moved into the engine. Every pointer in it must be malloc'd and is
   * freed with free(): argv[] and its strings, env[] with name/value,
   * files[] with path/data, stdin_data, kb[] with name/host_path. An empty
   * spec.key is filled with a unique service-wide name. */
  px_job_spec_t spec;
  int stream;                    /* send output events */
  px_kb_rollback_t kb_rollback;
  px_audit_finding_t *audit;     /* moved; copied into the result as is */
  size_t naudit;
} px_engine_job_t;

/* Free what a job owns (for callers that built one and did not submit it)
 * and zero it. Idempotent. */
void px_engine_job_clear(px_engine_job_t *job);

/* Queue a job for client c; its contents are taken in every case (*job is
 * zeroed). Returns:
 *   0           accepted: the `accepted` event was delivered (with the
 *               queue position, also stored in *position if not NULL); one
 *               `result` follows later.
 *   PX_EBUSY    refused, *refusal = PX_CODE_QUEUE_FULL or PX_CODE_PAUSED:
 *               the job's one `result` (rejected) was delivered.
 *   PX_EEXIST   *refusal = PX_CODE_DUPLICATE_ID: the client has a job with
 *               this id in flight; nothing delivered (send an `error`).
 *   PX_EINVAL / PX_ENOMEM: nothing delivered, *refusal = PX_CODE_INTERNAL
 *               (bad arguments, client closed, out of memory).
 * refusal may be NULL. */
int px_engine_submit_take(px_engine_t *eng, px_engine_client_t *c,
                          px_engine_job_t *job, uint64_t *position,
                          px_code_t *refusal);

/* Deliver and count the one `result` of a run refused before the engine
 * (policy, audit, bad_request): status rejected with code and message,
 * audit findings moved in (may be NULL; taken in every case). 0 when
 * delivered; PX_EEXIST when the client has a job with this id in flight
 * (nothing delivered: answer with an `error` duplicate_id, the first job is
 * not disturbed); PX_EINVAL / PX_ENOMEM. */
int px_engine_reject(px_engine_t *eng, px_engine_client_t *c, const char *id,
                     px_code_t code, const char *message,
                     px_audit_finding_t *audit, size_t naudit);

/* Cancel the client's job `id`: a queued job gets its result `cancelled`
 * (delivered before this returns); a running one is killed and its worker
 * delivers `cancelled`. 0, or PX_ENOENT (unknown_id: no such job in
 * flight, or its result is already on its way). */
int px_engine_cancel(px_engine_t *eng, px_engine_client_t *c, const char *id);

/* Kill every running job and answer every queued job (`aborted`), then
 * refuse new work with `paused` until px_engine_resume. Returns once the
 * queued jobs' results are delivered (running ones follow from their
 * workers). Returns how many jobs it aborted. */
unsigned px_engine_scram(px_engine_t *eng);
/* Accept work again after a scram. No effect while stopping. */
void px_engine_resume(px_engine_t *eng);

/* Mark every later result "degraded" in its enforcement (1) or not (0):
 * the service's attestation found a control missing and the config allows
 * degraded running (px_attest.h). */
void px_engine_set_degraded(px_engine_t *eng, int degraded);

/* The fields of a `status` answer. version and backend are borrowed. */
typedef struct {
  const char *version;
  const char *backend;
  uint64_t enforcement_available; /* PX_ENF bits */
  uint64_t queue[PX_PRIO_COUNT];
  uint64_t queue_max;
  uint64_t running;
  uint64_t workers;
  int paused;
  uint64_t counters[PX_STATUS_COUNT_]; /* by px_status_t */
  uint64_t accepted;
  uint64_t uptime_ms;
  const struct px_attest_report_s *attestation; /* borrowed (px_attest.h);
                                                  NULL: not encoded */
  int has_pool; /* the backend reports a warm pool (px_pool_info_t) */
  uint64_t pool_size, pool_ready, pool_taken, pool_cold;
  /* Image runtimes (the container backend): has_containers when any is
   * configured; container_engine_up when the engine answered at start;
   * the runtimes whose image the engine does not have (borrowed names,
   * the first PX_STATUS_MISSING_MAX). */
  int has_containers, container_engine_up;
  size_t nmissing;
#define PX_STATUS_MISSING_MAX 32
  const char *missing_runtime[PX_STATUS_MISSING_MAX];
  const char *missing_image[PX_STATUS_MISSING_MAX];
  /* The gate (containers.gate, borrowed): its path, and why it failed its
   * check at start (NULL: usable, or not checked because the engine did
   * not answer: gate_checked 0). */
  const char *container_gate;
  const char *container_gate_error;
  int container_gate_checked;
} px_status_info_t;

/* Fill the `status` fields (version, backend name and enforcement are
 * borrowed static/engine strings). */
void px_engine_status(px_engine_t *eng, px_status_info_t *s);

/* Copy the engine's metrics (px_metrics.h) into *m; thread-safe. */
void px_engine_metrics(px_engine_t *eng, px_metrics_t *m);

#ifdef __cplusplus
}
#endif
#endif /* PX_ENGINE_H */
