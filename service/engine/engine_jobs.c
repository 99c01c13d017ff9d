/* engine_jobs.c - the bookkeeping of jobs and clients under the engine
 * lock that the API (engine.c) and one job's run (engine_run.c) share:
 * the active list, client references, a job's accounting once its result
 * is decided, and its release after delivery; px_engine_job_clear.
 * Uses neither of them.
 */
#include "engine_int.h"

#include "px/px_util.h"

#include <stdlib.h>
#include <string.h>

void px_engine_job_clear(px_engine_job_t *job) {
  size_t i;
  if (!job)
    return;
  px_job_spec_free(&job->spec);
  for (i = 0; job->audit && i < job->naudit; i++) {
    free(job->audit[i].rule);
    free(job->audit[i].message);
  }
  free(job->audit);
  memset(job, 0, sizeof *job);
}

void px__engine_job_free(px__engine_job_t *job) {
  px_engine_job_clear(&job->j);
  px_outguard_free(job->guard);
  free(job);
}

/* ---- active list, accounting (engine lock) ---- */

void px__engine_active_add(px_engine_t *eng, px__engine_job_t *job) {
  job->prev = NULL;
  job->next = eng->active;
  if (eng->active)
    eng->active->prev = job;
  eng->active = job;
}

void px__engine_active_del(px_engine_t *eng, px__engine_job_t *job) {
  if (job->prev)
    job->prev->next = job->next;
  else if (eng->active == job)
    eng->active = job->next;
  if (job->next)
    job->next->prev = job->prev;
  job->prev = job->next = NULL;
}

void px__engine_client_free(px_engine_t *eng, px_engine_client_t *c) {
  if (c->prev)
    c->prev->next = c->next;
  else
    eng->clients = c->next;
  if (c->next)
    c->next->prev = c->prev;
  px_queue_client_free(eng->q, c->qc);
  px__engine_ident_unref(eng, c->ident);
  px_mutex_destroy(&c->cb_lock);
  free(c->name);
  free(c);
}

px__engine_ident_t *px__engine_ident_ref(px_engine_t *eng, const char *key) {
  px__engine_ident_t *id;
  for (id = eng->idents; id; id = id->next)
    if (strcmp(id->key, key) == 0)
      break;
  if (!id) {
    if (!(id = calloc(1, sizeof *id)) || !(id->key = px_strdup(key))) {
      free(id);
      return NULL;
    }
    id->group.cap = eng->o.identity_max_running;
    id->next = eng->idents;
    eng->idents = id;
  }
  id->refs++;
  return id;
}

void px__engine_ident_unref(px_engine_t *eng, px__engine_ident_t *id) {
  px__engine_ident_t **pp;
  if (!id || --id->refs > 0)
    return;
  for (pp = &eng->idents; *pp; pp = &(*pp)->next)
    if (*pp == id) {
      *pp = id->next;
      break;
    }
  free(id->key);
  free(id);
}

size_t px__engine_ident_queued(px_engine_t *eng, const px__engine_ident_t *id) {
  const px_engine_client_t *c;
  size_t n = 0;
  for (c = eng->clients; c; c = c->next)
    if (c->ident == id)
      n += px_queue_client_queued(c->qc);
  return n;
}

void px__engine_client_unref_locked(px_engine_t *eng, px_engine_client_t *c) {
  if (--c->refs == 0)
    px__engine_client_free(eng, c);
}

void px__engine_account_locked_cb(px_engine_t *eng, px__engine_job_t *job,
                                  const px_result_t *r) {
  uint64_t wait = job->t_started_ms > job->t_queued_ms
                      ? job->t_started_ms - job->t_queued_ms : 0;
  px_mutex_lock(&eng->lock);
  if ((unsigned)r->status < PX_STATUS_COUNT_)
    eng->counters[r->status]++;
  px_metrics_record_result(&eng->metrics, r, job->t_started_ms != 0, wait);
  px__engine_active_del(eng, job);
  if (job->counted_running) {
    job->counted_running = 0;
    px_queue_done(eng->q, job->client->qc);
    eng->running--;
    px_cond_broadcast(&eng->work_cv); /* a cap slot is free */
  }
  px_mutex_unlock(&eng->lock);
}

void px__engine_job_done(px_engine_t *eng, px__engine_job_t *job) {
  px_mutex_lock(&eng->lock);
  px__engine_client_unref_locked(eng, job->client);
  eng->pending--;
  px_cond_broadcast(&eng->idle_cv);
  px_mutex_unlock(&eng->lock);
  px__engine_job_free(job);
}
