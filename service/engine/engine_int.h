/* engine_int.h - what engine.c (API, clients, queue, workers),
 * engine_run.c (one job's run, verdict, events) and engine_jobs.c (job
 * and client bookkeeping) share. Not a seam. */
#ifndef PX_ENGINE_INT_H
#define PX_ENGINE_INT_H

#include "px/px_engine.h"
#include "px/px_os.h"
#include "px/px_metrics.h"
#include "queue.h"

typedef enum {
  JOB_QUEUED = 0, /* in the queue: whoever takes it out owns it */
  JOB_RUNNING,    /* popped by a worker, which owns it */
  JOB_DRAINED,    /* taken out of the queue by cancel/scram/stop/close:
                     the thread that took it delivers its result */
  JOB_FINISHING   /* the worker saw the end: nothing can change it */
} job_state_t;

typedef enum {
  REASON_NONE = 0,
  REASON_CANCEL, /* px_engine_cancel, client close with cancel */
  REASON_ABORT   /* scram, stop */
} job_reason_t;

typedef struct px__engine_job_s px__engine_job_t;

struct px__engine_job_s {
  px_queue_item_t qi;           /* qi.data == this job */
  px_engine_t *eng;             /* borrowed */
  px_engine_client_t *client;   /* borrowed; holds a reference */
  px_engine_job_t j;            /* owned: spec, audit */
  /* --- under eng->lock --- */
  job_state_t state;
  job_reason_t reason;
  int counted_running;          /* popped by px_queue_pop: px_queue_done */
  uint64_t t_queued_ms;         /* px_now_ms when queued (metrics) */
  uint64_t t_started_ms;        /* px_now_ms when started; 0: never ran */
  px_sandbox_t *sb;             /* set while kill() may be called */
  px__engine_job_t *prev, *next;       /* eng->active while out of the queue */
  px__engine_job_t *dnext; /* a drain's private list (no allocation) */
  /* --- under client->cb_lock --- */
  int started_sent;
  int result_sent;
  /* --- the worker's (fed by the backend's output thread) --- */
  px_outguard_t *guard;         /* owned */
};

/* One identity's share (engine lock): its clients' running-jobs group. */
typedef struct px__engine_ident_s {
  struct px__engine_ident_s *next;     /* eng->idents */
  char *key;                    /* owned */
  unsigned refs;                /* clients pointing at it */
  px_queue_group_t group;       /* the running cap of all its clients */
} px__engine_ident_t;

struct px_engine_client_s {
  px_engine_t *eng;
  char *name;                   /* owned */
  void (*on_event)(void *ctx, const px_engine_event_t *ev);
  void *ctx;                    /* borrowed until close */
  px_mutex_t cb_lock;           /* serializes on_event; guards closed */
  int closed;                   /* under cb_lock */
  /* --- under eng->lock --- */
  px_queue_client_t *qc;        /* owned by the queue */
  size_t max_queued;            /* 0: no cap */
  px__engine_ident_t *ident;           /* NULL: none, or exempt */
  unsigned refs;                /* 1 for the transport + one per job */
  int transport_closed;
  px_engine_client_t *prev, *next; /* eng->clients */
};

struct px_engine_s {
  px_engine_opts_t o;           /* copied; pointers borrowed */
  void *bstate;                 /* backend state (owned: ops->close) */
  void *cstate;                 /* container backend state (owned), NULL
                                   when none is configured or it failed */
  px_mutex_t lock;              /* "the engine lock" */
  px_cond_t work_cv;            /* workers: queue changed / stopping */
  px_cond_t idle_cv;            /* stop: a result was delivered */
  px_queue_t *q;                /* owned */
  px__engine_job_t *active;     /* out of the queue, result not delivered */
  px_engine_client_t *clients;
  px__engine_ident_t *idents;          /* identities with an open client */
  px_thread_t *threads;         /* owned; nthreads */
  unsigned nthreads;
  int paused, stopping, stopped;
  unsigned running;             /* jobs popped by workers, not finished */
  uint64_t pending;             /* accepted, result not yet delivered */
  uint64_t accepted;
  uint64_t counters[PX_STATUS_COUNT_];
  uint64_t seq;                 /* job keys */
  uint64_t t0;                  /* px_now_ms at creation */
  volatile int degraded;        /* px_engine_set_degraded: results carry
                                   "degraded" in enforcement */
  px_metrics_t metrics;         /* under lock */
};

/* engine_run.c */
/* The backend that runs `job`: the container one for image runtimes. */
const px_backend_ops_t *px__engine_backend(const px_engine_t *eng,
                                           const px__engine_job_t *job);
/* Run a popped job to its end on the calling worker and deliver its
 * result; the job is freed on return. */
void px__engine_run(px_engine_t *eng, px__engine_job_t *job);
/* Deliver the result of a job that never ran (status by its reason or
 * `status`), then free it. */
void px__engine_finish_unrun(px_engine_t *eng, px__engine_job_t *job,
                             px_status_t status);
/* Kill a job's sandbox if it has one (engine lock held). */
void px__engine_kill_locked(px_engine_t *eng, px__engine_job_t *job,
                            job_reason_t why);
/* Deliver an event to the job's client (takes cb_lock). */
void px__engine_emit(px__engine_job_t *job, const px_engine_event_t *ev);

/* engine_jobs.c (engine.c and engine_run.c both use it; it uses neither) */
/* Free a job nobody references any more: its spec, audit and guard. */
void px__engine_job_free(px__engine_job_t *job);
/* The active list: jobs out of the queue whose result is not delivered
 * (engine lock held). */
void px__engine_active_add(px_engine_t *eng, px__engine_job_t *job);
void px__engine_active_del(px_engine_t *eng, px__engine_job_t *job);
/* Unlink a client from the engine and free it (engine lock held). */
void px__engine_client_free(px_engine_t *eng, px_engine_client_t *c);
/* The identity `key`, created or shared, one reference more (engine lock
 * held). NULL on OOM. */
px__engine_ident_t *px__engine_ident_ref(px_engine_t *eng, const char *key);
/* Drop one reference (engine lock held; NULL: no-op); frees it at zero. */
void px__engine_ident_unref(px_engine_t *eng, px__engine_ident_t *id);
/* Jobs queued by every client of identity id (engine lock held). */
size_t px__engine_ident_queued(px_engine_t *eng, const px__engine_ident_t *id);
/* Drop one reference (engine lock held); frees the client at zero. */
void px__engine_client_unref_locked(px_engine_t *eng, px_engine_client_t *c);
/* Bookkeeping once a job's result is decided (engine lock NOT held, the
 * client's cb_lock held): count it (status counter and metrics), drop it
 * from the active list, free its cap slot. */
void px__engine_account_locked_cb(px_engine_t *eng, px__engine_job_t *job,
                                  const px_result_t *r);
/* After delivery: release the job's references (engine lock not held). */
void px__engine_job_done(px_engine_t *eng, px__engine_job_t *job);

#endif /* PX_ENGINE_INT_H */
