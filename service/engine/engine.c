/* engine.c - the engine's API: lifecycle, clients, submit, cancel, scram,
 * status, stop, and the worker loop (px_engine.h). One job's run is in
 * engine_run.c; the job and client bookkeeping both use is engine_jobs.c.
 *
 * DESIGN
 * One engine lock guards the queue, the list of active jobs (out of the
 * queue, result not yet delivered), job states and reasons, counters and
 * client reference counts. Each client has a callback lock (cb_lock) that
 * serializes its events; lock order is cb_lock -> engine lock, and no
 * callback ever runs with the engine lock held.
 * A job is owned by whoever takes it out of the queue, under the engine
 * lock: a worker (px_queue_pop, state RUNNING), or cancel / scram / stop /
 * client close (state DRAINED), which then deliver its result. Cancel,
 * scram and stop only set a reason on a RUNNING job and kill its sandbox;
 * the worker turns that into the result. Once the worker marks the job
 * FINISHING its verdict is fixed. That single hand-off is what makes every
 * accepted job end with exactly one result.
 * submit holds the client's cb_lock from the duplicate check to the
 * `accepted` event, and delivery holds it from the bookkeeping to the
 * `result` event, so a client never sees a job's events out of order and
 * never sees an id reused before the earlier job's result.
 */
#include "engine_int.h"

#include "px/px_error.h"
#include "px/px_events.h"
#include "px/px_log.h"
#include "px/px_util.h"
#include "px/px_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADMISSION_POLL_DEFAULT_MS 250

/* ---- options ---- */

void px_engine_opts_default(px_engine_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->queue_max = PX_QUEUE_DEFAULT_MAX_DEPTH;
  o->admission_poll_ms = ADMISSION_POLL_DEFAULT_MS;
  px_outguard_opts_default(&o->output);
  o->backend_opts.tick_ms = 50;
  o->backend_opts.ui_restrictions = 1;
}

/* ---- workers ---- */

static int admission_ok(px_engine_t *eng) {
  uint64_t free_b;
  if (eng->o.min_free_memory_bytes == 0)
    return 1;
  free_b = eng->o.free_memory ? eng->o.free_memory() : px_free_memory_bytes();
  return free_b == 0 || free_b >= eng->o.min_free_memory_bytes;
}

static void worker_main(void *arg) {
  px_engine_t *eng = arg;
  px_mutex_lock(&eng->lock);
  while (!eng->stopping) {
    px_queue_item_t *it = NULL;
    int blocked = 0;
    if (px_queue_depth(eng->q) > 0) {
      blocked = !admission_ok(eng);
      if (!blocked)
        it = px_queue_pop(eng->q, px_now_ms());
    }
    if (it) {
      px__engine_job_t *job = it->data;
      job->state = JOB_RUNNING;
      job->counted_running = 1;
      eng->running++;
      px__engine_active_add(eng, job);
      px_mutex_unlock(&eng->lock);
      px__engine_run(eng, job);
      px_mutex_lock(&eng->lock);
    } else if (blocked) {
      /* Free memory is under the floor: look again later. */
      (void)px_cond_timedwait(&eng->work_cv, &eng->lock,
                              eng->o.admission_poll_ms);
    } else {
      px_cond_wait(&eng->work_cv, &eng->lock);
    }
  }
  px_mutex_unlock(&eng->lock);
}

/* ---- lifecycle ---- */

static int engine_init_sync(px_engine_t *eng) {
  if (px_mutex_init(&eng->lock) != 0)
    return PX_ENOMEM;
  if (px_cond_init(&eng->work_cv) != 0) {
    px_mutex_destroy(&eng->lock);
    return PX_ENOMEM;
  }
  if (px_cond_init(&eng->idle_cv) != 0) {
    px_cond_destroy(&eng->work_cv);
    px_mutex_destroy(&eng->lock);
    return PX_ENOMEM;
  }
  return 0;
}

static int start_workers(px_engine_t *eng) {
  unsigned i;
  eng->threads = calloc(eng->o.workers, sizeof *eng->threads);
  if (!eng->threads)
    return PX_ENOMEM;
  for (i = 0; i < eng->o.workers; i++) {
    int rc = px_thread_create(&eng->threads[i], worker_main, eng);
    if (rc != 0)
      return rc;
    eng->nthreads++;
  }
  return 0;
}

static int backend_complete(const px_backend_ops_t *b) {
  return b && b->name && b->open && b->close && b->prepare && b->start &&
         b->wait && b->kill && b->release;
}

int px_engine_new(const px_engine_opts_t *opts, px_engine_t **out) {
  px_engine_t *eng = NULL;
  px_queue_opts_t qo;
  int rc;
  if (!opts || !out || !backend_complete(opts->backend))
    return PX_EINVAL;
  *out = NULL;
  eng = calloc(1, sizeof *eng);
  if (!eng)
    return PX_ENOMEM;
  eng->o = *opts;
  if (eng->o.workers == 0)
    eng->o.workers = px_cpu_count();
  if (eng->o.admission_poll_ms == 0)
    eng->o.admission_poll_ms = ADMISSION_POLL_DEFAULT_MS;
  eng->t0 = px_now_ms();
  qo.max_depth = opts->queue_max;
  qo.aging_ms = opts->aging_ms;
  rc = engine_init_sync(eng);
  if (rc != 0) {
    free(eng);
    return rc;
  }
  rc = px_queue_new(&qo, &eng->q);
  if (rc == 0)
    rc = eng->o.backend->open(&eng->o.backend_opts, &eng->bstate);
  if (rc != 0) {
    eng->stopped = 1;
    px_engine_free(eng);
    return rc;
  }
  if (eng->o.container &&
      eng->o.container->open(&eng->o.backend_opts, &eng->cstate) != 0) {
    eng->cstate = NULL;
    PX_LOG(PX_LOG_ERROR, "container backend unavailable: jobs of image "
                         "runtimes will fail until the service restarts");
  }
  rc = start_workers(eng);
  if (rc != 0) {
    px_engine_free(eng); /* stops the workers that did start */
    return rc;
  }
  PX_LOG(PX_LOG_INFO, "engine started: backend %s, %u workers, queue %llu",
         eng->o.backend->name, eng->nthreads,
         (unsigned long long)px_queue_max_depth(eng->q));
  *out = eng;
  return 0;
}

/* ---- clients ---- */

int px_engine_client_open(px_engine_t *eng, const px_engine_client_opts_t *o,
                          px_engine_client_t **out) {
  px_engine_client_t *c;
  unsigned cap;
  int rc;
  if (!eng || !o || !o->on_event || !out)
    return PX_EINVAL;
  *out = NULL;
  c = calloc(1, sizeof *c);
  if (!c)
    return PX_ENOMEM;
  c->name = px_strdup(o->name ? o->name : "client");
  if (!c->name || px_mutex_init(&c->cb_lock) != 0) {
    free(c->name);
    free(c);
    return PX_ENOMEM;
  }
  c->eng = eng;
  c->on_event = o->on_event;
  c->ctx = o->ctx;
  c->refs = 1;
  c->max_queued = o->max_queued ? o->max_queued : eng->o.client_max_queued;
  cap = o->max_concurrent ? o->max_concurrent : eng->o.client_max_concurrent;
  px_mutex_lock(&eng->lock);
  rc = px_queue_client_new(eng->q, cap, &c->qc);
  if (rc == 0 && o->identity && !o->exempt) {
    if ((c->ident = px__engine_ident_ref(eng, o->identity)) != NULL) {
      px_queue_client_set_group(c->qc, &c->ident->group);
    } else {
      px_queue_client_free(eng->q, c->qc);
      rc = PX_ENOMEM;
    }
  }
  if (rc == 0) {
    c->next = eng->clients;
    if (eng->clients)
      eng->clients->prev = c;
    eng->clients = c;
  }
  px_mutex_unlock(&eng->lock);
  if (rc != 0) {
    px_mutex_destroy(&c->cb_lock);
    free(c->name);
    free(c);
    return rc;
  }
  *out = c;
  return 0;
}

/* A job taken out of the queue by a non-worker thread (engine lock held):
 * it stays in the active list until its result is delivered. */
static px__engine_job_t *drain_item(px_engine_t *eng, px_queue_item_t *it,
                             job_reason_t why) {
  px__engine_job_t *job = it->data;
  job->state = JOB_DRAINED;
  job->reason = why;
  px__engine_active_add(eng, job);
  return job;
}

/* Deliver the results of jobs drained from the queue (not under any
 * lock): aborted or cancelled by their reason. */
static void finish_drained(px_engine_t *eng, px__engine_job_t *list) {
  while (list) {
    px__engine_job_t *job = list;
    list = job->dnext;
    px__engine_finish_unrun(eng, job,
                            job->reason == REASON_ABORT ? PX_STATUS_ABORTED
                                                        : PX_STATUS_CANCELLED);
  }
}

/* Take every queued job of client c (or of everyone when c is NULL) out of
 * the queue into *list (linked by dnext, oldest level first); kill the
 * running ones. Engine lock held; never allocates, so it cannot fail. */
static size_t drain_locked(px_engine_t *eng, px_engine_client_t *c,
                           job_reason_t why, px__engine_job_t **list,
                           unsigned *killed) {
  px__engine_job_t *job, **tail = list;
  px_queue_item_t *it;
  size_t n = 0;
  *list = NULL;
  for (job = eng->active; job; job = job->next)
    if ((!c || job->client == c) && job->state == JOB_RUNNING &&
        job->reason == REASON_NONE) {
      px__engine_kill_locked(eng, job, why);
      (*killed)++;
    }
  while ((it = c ? px_queue_pop_client(eng->q, c->qc)
                 : px_queue_pop_any(eng->q)) != NULL) {
    job = drain_item(eng, it, why);
    job->dnext = NULL;
    *tail = job;
    tail = &job->dnext;
    n++;
  }
  return n;
}

unsigned px_engine_client_jobs(px_engine_t *eng, px_engine_client_t *c) {
  unsigned n;
  px_mutex_lock(&eng->lock);
  n = c->refs > 0 ? c->refs - 1 : 0; /* one for the transport */
  px_mutex_unlock(&eng->lock);
  return n;
}

void px_engine_client_close(px_engine_t *eng, px_engine_client_t *c,
                            int cancel_jobs) {
  px__engine_job_t *jobs = NULL;
  unsigned killed = 0;
  if (!eng || !c)
    return;
  px_mutex_lock(&c->cb_lock);
  c->closed = 1; /* no callback after this, none in progress */
  px_mutex_unlock(&c->cb_lock);
  px_mutex_lock(&eng->lock);
  if (cancel_jobs)
    (void)drain_locked(eng, c, REASON_CANCEL, &jobs, &killed);
  c->refs++; /* keep c alive until the drained results are out */
  c->transport_closed = 1;
  px__engine_client_unref_locked(eng, c);
  px_mutex_unlock(&eng->lock);
  finish_drained(eng, jobs);
  px_mutex_lock(&eng->lock);
  px__engine_client_unref_locked(eng, c); /* may free c */
  px_mutex_unlock(&eng->lock);
}

/* ---- submit, reject, cancel ---- */

/* 1 if client c has a job with this id in flight (engine lock held). */
static int in_flight(px_engine_t *eng, px_engine_client_t *c,
                     const char *id) {
  px__engine_job_t *job;
  if (px_queue_find(eng->q, c->qc, id))
    return 1;
  for (job = eng->active; job; job = job->next)
    if (job->client == c && strcmp(job->j.spec.id, id) == 0)
      return 1;
  return 0;
}

int px_engine_client_has(px_engine_t *eng, px_engine_client_t *c,
                         const char *id) {
  int yes;
  px_mutex_lock(&eng->lock);
  yes = in_flight(eng, c, id);
  px_mutex_unlock(&eng->lock);
  return yes;
}

static void fill_key(px_engine_t *eng, px__engine_job_t *job) {
  uint32_t rnd = 0;
  if (job->j.spec.key[0])
    return;
  (void)px_random_bytes(&rnd, sizeof rnd);
  snprintf(job->j.spec.key, sizeof job->j.spec.key, "px-%llu-%llu-%08x",
           (unsigned long long)px_wall_ms(), (unsigned long long)++eng->seq,
           (unsigned)rnd);
}

/* Under cb_lock: queue the job or say why not (engine lock taken here). */
static px_code_t enqueue(px_engine_t *eng, px_engine_client_t *c,
                         px__engine_job_t *job, uint64_t *pos) {
  px_code_t code = PX_CODE_NONE;
  int rc;
  px_mutex_lock(&eng->lock);
  if (in_flight(eng, c, job->j.spec.id)) {
    code = PX_CODE_DUPLICATE_ID; /* first: never answer for the id in use */
  } else if (eng->paused || eng->stopping) {
    code = PX_CODE_PAUSED;
  } else if (c->max_queued &&
             px_queue_client_queued(c->qc) >= c->max_queued) {
    code = PX_CODE_QUEUE_FULL; /* this client's share of the queue */
  } else if (c->ident && eng->o.identity_max_queued &&
             px__engine_ident_queued(eng, c->ident) >= eng->o.identity_max_queued) {
    code = PX_CODE_QUEUE_FULL; /* its identity's share, over all its
                                  connections */
  } else {
    rc = px_queue_push(eng->q, c->qc, &job->qi, job->j.spec.id,
                       job->j.spec.priority, px_now_ms(), pos);
    if (rc == 0 && *pos > 0)
      (*pos)--; /* 1-based place -> jobs ahead (protocol queue_position) */
    if (rc == PX_ENOSPC) {
      code = PX_CODE_QUEUE_FULL;
    } else if (rc != 0) {
      code = PX_CODE_INTERNAL;
    } else {
      fill_key(eng, job);
      job->state = JOB_QUEUED;
      job->t_queued_ms = px_now_ms();
      c->refs++;
      eng->pending++;
      eng->accepted++;
      px_cond_signal(&eng->work_cv);
    }
  }
  if (code == PX_CODE_PAUSED || code == PX_CODE_QUEUE_FULL) {
    /* It gets its one result (rejected) from us: count it in flight. */
    c->refs++;
    eng->pending++;
    px__engine_active_add(eng, job);
  }
  px_mutex_unlock(&eng->lock);
  return code;
}

static void deliver_rejection(px_engine_t *eng, px__engine_job_t *job,
                              px_code_t code, const char *msg);

int px_engine_submit_take(px_engine_t *eng, px_engine_client_t *c,
                          px_engine_job_t *job, uint64_t *position,
                          px_code_t *refusal) {
  px__engine_job_t *jb;
  px_code_t code;
  uint64_t pos = 0;
  px_code_t dummy;
  if (!refusal)
    refusal = &dummy;
  *refusal = PX_CODE_INTERNAL;
  if (!eng || !c || !job || !px_job_id_valid(job->spec.id)) {
    px_engine_job_clear(job);
    return PX_EINVAL;
  }
  jb = calloc(1, sizeof *jb);
  if (!jb) {
    px_engine_job_clear(job);
    return PX_ENOMEM;
  }
  jb->j = *job;
  memset(job, 0, sizeof *job);
  jb->eng = eng;
  jb->client = c;
  jb->qi.data = jb;
  if ((unsigned)jb->j.spec.priority >= PX_PRIO_COUNT)
    jb->j.spec.priority = PX_PRIO_NORMAL;
  px_mutex_lock(&c->cb_lock);
  if (c->closed) {
    px_mutex_unlock(&c->cb_lock);
    px__engine_job_free(jb);
    return PX_EINVAL;
  }
  code = enqueue(eng, c, jb, &pos);
  if (code == PX_CODE_NONE) {
    px_engine_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.type = PX_ENGINE_EV_ACCEPTED;
    ev.id = jb->j.spec.id;
    ev.queue_position = pos;
    c->on_event(c->ctx, &ev);
  }
  px_mutex_unlock(&c->cb_lock);
  *refusal = code;
  if (code == PX_CODE_NONE) {
    if (position)
      *position = pos;
    return 0;
  }
  if (code == PX_CODE_PAUSED || code == PX_CODE_QUEUE_FULL) {
    deliver_rejection(eng, jb, code,
                      code == PX_CODE_PAUSED
                          ? "the executor is paused or stopping"
                          : "the queue is full");
    return PX_EBUSY;
  }
  px__engine_job_free(jb);
  return code == PX_CODE_DUPLICATE_ID ? PX_EEXIST : PX_ENOMEM;
}

/* The rejected result of a job that is in the active list. A submit of
 * the same id could slip in between the unlock in submit and this
 * delivery; in_flight sees the job in the active list until then. */
static void deliver_rejection(px_engine_t *eng, px__engine_job_t *job,
                              px_code_t code, const char *msg) {
  px_result_t r;
  px_engine_event_t ev;
  px_engine_client_t *c = job->client;
  char qid[80];
  memset(&r, 0, sizeof r);
  px_strlcpy(r.id, job->j.spec.id, sizeof r.id);
  r.status = PX_STATUS_REJECTED;
  r.exit_code = -1;
  r.audit = job->j.audit;
  r.naudit = job->j.naudit;
  job->j.audit = NULL;
  job->j.naudit = 0;
  px_result_set_error(&r, code, "%s", msg);
  memset(&ev, 0, sizeof ev);
  ev.type = PX_ENGINE_EV_RESULT;
  ev.id = r.id;
  ev.result = &r;
  px_mutex_lock(&c->cb_lock);
  job->result_sent = 1;
  px__engine_account_locked_cb(eng, job, &r);
  if (!c->closed)
    c->on_event(c->ctx, &ev);
  px_mutex_unlock(&c->cb_lock);
  px_log_quote(qid, sizeof qid, r.id, strlen(r.id));
  PX_LOG(PX_LOG_INFO, "job %s (client %s) rejected: %s", qid, c->name,
         px_code_name(code));
  px_result_free(&r);
  px__engine_job_done(eng, job);
}

int px_engine_reject(px_engine_t *eng, px_engine_client_t *c, const char *id,
                     px_code_t code, const char *message,
                     px_audit_finding_t *audit, size_t naudit) {
  px__engine_job_t *jb;
  if (!eng || !c || !id || strlen(id) > PX_JOB_ID_MAX) {
    px_engine_job_t tmp = {0};
    tmp.audit = audit;
    tmp.naudit = naudit;
    px_engine_job_clear(&tmp);
    return PX_EINVAL;
  }
  jb = calloc(1, sizeof *jb);
  if (!jb) {
    px_engine_job_t tmp = {0};
    tmp.audit = audit;
    tmp.naudit = naudit;
    px_engine_job_clear(&tmp);
    return PX_ENOMEM;
  }
  px_strlcpy(jb->j.spec.id, id, sizeof jb->j.spec.id);
  jb->j.audit = audit;
  jb->j.naudit = naudit;
  jb->eng = eng;
  jb->client = c;
  px_mutex_lock(&eng->lock);
  if (in_flight(eng, c, id)) {
    /* Answering for an id in use would confuse the client about the
     * first job: the caller sends `error` duplicate_id instead. */
    px_mutex_unlock(&eng->lock);
    px__engine_job_free(jb);
    return PX_EEXIST;
  }
  c->refs++;
  eng->pending++;
  px__engine_active_add(eng, jb);
  px_mutex_unlock(&eng->lock);
  deliver_rejection(eng, jb, code, message ? message : "");
  return 0;
}

int px_engine_cancel(px_engine_t *eng, px_engine_client_t *c,
                     const char *id) {
  px_queue_item_t *it;
  px__engine_job_t *job = NULL;
  int rc = PX_ENOENT;
  if (!eng || !c || !id)
    return PX_EINVAL;
  px_mutex_lock(&eng->lock);
  it = px_queue_find(eng->q, c->qc, id);
  if (it) {
    px_queue_remove(eng->q, it);
    job = drain_item(eng, it, REASON_CANCEL);
    rc = 0;
  } else {
    px__engine_job_t *a;
    for (a = eng->active; a; a = a->next)
      if (a->client == c && a->state == JOB_RUNNING &&
          strcmp(a->j.spec.id, id) == 0) {
        if (a->reason == REASON_NONE)
          px__engine_kill_locked(eng, a, REASON_CANCEL);
        rc = a->reason == REASON_CANCEL ? 0 : PX_ENOENT;
        break;
      }
  }
  px_mutex_unlock(&eng->lock);
  if (job)
    px__engine_finish_unrun(eng, job, PX_STATUS_CANCELLED);
  return rc;
}

/* ---- scram, resume, status, stop ---- */

unsigned px_engine_scram(px_engine_t *eng) {
  px__engine_job_t *jobs = NULL;
  size_t n;
  unsigned killed = 0;
  if (!eng)
    return 0;
  px_mutex_lock(&eng->lock);
  eng->paused = 1;
  n = drain_locked(eng, NULL, REASON_ABORT, &jobs, &killed);
  px_mutex_unlock(&eng->lock);
  PX_LOG_EVENT(PX_LOG_CRITICAL, PX_EVENT_SCRAM,
               "scram: %u running jobs killed, %llu queued aborted",
         killed, (unsigned long long)n);
  finish_drained(eng, jobs);
  return killed + (unsigned)n;
}

void px_engine_resume(px_engine_t *eng) {
  if (!eng)
    return;
  px_mutex_lock(&eng->lock);
  if (!eng->stopping && eng->paused) {
    eng->paused = 0;
    PX_LOG_EVENT(PX_LOG_WARN, PX_EVENT_RESUME, "resumed: accepting work again");
  }
  px_mutex_unlock(&eng->lock);
}

void px_engine_set_degraded(px_engine_t *eng, int degraded) {
  px_mutex_lock(&eng->lock);
  eng->degraded = degraded != 0;
  px_mutex_unlock(&eng->lock);
}

/* Image runtimes for `status`: is the engine up, which images are missing
 * (the backend's list is fixed at open: read without a lock). Through the
 * backend's own ops: the engine knows no backend by name. */
static void container_status(const px_engine_t *eng, px_status_info_t *s) {
  const px_backend_opts_t *bo = &eng->o.backend_opts;
  const px_backend_ops_t *ops = eng->o.container;
  size_t i;
  if (!ops || !bo->container_images)
    return;
  s->has_containers = 1;
  s->container_engine_up = eng->cstate != NULL;
  s->container_gate = bo->container_gate;
  if (!eng->cstate || !ops->gate_error || !ops->image_missing)
    return;
  s->container_gate_checked = 1;
  s->container_gate_error = ops->gate_error(eng->cstate);
  for (i = 0; bo->container_images[i] && s->nmissing < PX_STATUS_MISSING_MAX;
       i++)
    if (ops->image_missing(eng->cstate, bo->container_images[i])) {
      s->missing_image[s->nmissing] = bo->container_images[i];
      s->missing_runtime[s->nmissing++] =
          bo->container_runtimes ? bo->container_runtimes[i] : "";
    }
}

void px_engine_status(px_engine_t *eng, px_status_info_t *s) {
  memset(s, 0, sizeof *s);
  if (!eng)
    return;
  s->version = eng->o.version;
  s->backend = eng->o.backend->name;
  s->enforcement_available =
      (eng->o.backend->enforcement_available && eng->bstate
           ? eng->o.backend->enforcement_available(eng->bstate)
           : 0) |
      PX_ENF(PX_ENF_OUTPUT_GUARD);
  px_mutex_lock(&eng->lock);
  px_queue_age(eng->q, px_now_ms());
  px_queue_counts(eng->q, s->queue);
  s->queue_max = px_queue_max_depth(eng->q);
  s->running = eng->running;
  s->workers = eng->nthreads;
  s->paused = eng->paused;
  memcpy(s->counters, eng->counters, sizeof s->counters);
  s->accepted = eng->accepted;
  s->uptime_ms = px_now_ms() - eng->t0;
  px_mutex_unlock(&eng->lock);
  if (eng->o.backend->pool_stats && eng->bstate) {
    px_pool_info_t p;
    eng->o.backend->pool_stats(eng->bstate, &p);
    s->has_pool = 1;
    s->pool_size = p.size;
    s->pool_ready = p.ready;
    s->pool_taken = p.taken;
    s->pool_cold = p.cold;
  }
  container_status(eng, s);
}

void px_engine_metrics(px_engine_t *eng, px_metrics_t *m) {
  memset(m, 0, sizeof *m);
  if (!eng)
    return;
  px_mutex_lock(&eng->lock);
  *m = eng->metrics;
  px_mutex_unlock(&eng->lock);
}

void px_engine_stop(px_engine_t *eng) {
  px__engine_job_t *jobs = NULL;
  size_t n = 0;
  unsigned killed = 0, i;
  if (!eng)
    return;
  px_mutex_lock(&eng->lock);
  if (eng->stopped || eng->stopping) {
    /* Someone else is stopping: wait for them. */
    while (!eng->stopped)
      px_cond_wait(&eng->idle_cv, &eng->lock);
    px_mutex_unlock(&eng->lock);
    return;
  }
  eng->stopping = 1;
  eng->paused = 1;
  if (eng->q)
    n = drain_locked(eng, NULL, REASON_ABORT, &jobs, &killed);
  px_cond_broadcast(&eng->work_cv);
  px_mutex_unlock(&eng->lock);
  PX_LOG(PX_LOG_INFO, "stopping: %u running jobs killed, %llu queued aborted",
         killed, (unsigned long long)n);
  finish_drained(eng, jobs);
  for (i = 0; i < eng->nthreads; i++)
    px_thread_join(eng->threads[i]);
  eng->nthreads = 0;
  px_mutex_lock(&eng->lock);
  while (eng->pending > 0) /* results other threads are delivering */
    px_cond_wait(&eng->idle_cv, &eng->lock);
  eng->stopped = 1;
  px_cond_broadcast(&eng->idle_cv);
  px_mutex_unlock(&eng->lock);
}

void px_engine_free(px_engine_t *eng) {
  if (!eng)
    return;
  px_engine_stop(eng);
  while (eng->clients) /* the transport did not close them */
    px__engine_client_free(eng, eng->clients);
  px_queue_free(eng->q);
  if (eng->bstate)
    eng->o.backend->close(eng->bstate);
  if (eng->cstate)
    eng->o.container->close(eng->cstate);
  free(eng->threads);
  px_cond_destroy(&eng->idle_cv);
  px_cond_destroy(&eng->work_cv);
  px_mutex_destroy(&eng->lock);
  free(eng);
}
