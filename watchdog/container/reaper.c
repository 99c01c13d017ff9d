/* reaper.c - the container backend's work off the job's path: removing a
 * finished job's container and directories, naming a warm container after
 * the job that took it.
 *
 * DESIGN. By the time a job's result is decided every process of the job
 * is gone (the gate killed and reaped them before its end record, or the
 * engine killed the container): what remains is the idle gate, the
 * container's metadata and the job's tmpfs, none of which the job can use.
 * Removing them costs ~100 ms of engine time, so release() queues it here
 * and the result goes out at once. The queue is bounded; when it is full
 * the caller does the work itself. close() drains the queue before the
 * backend goes, and a crash leaves nothing that the next start's recovery
 * does not remove (our label).
 */
#include "ctr_int.h"

#include "px/px_error.h"
#include "px/px_log.h"

#include <stdlib.h>
#include <string.h>

#define QUEUE_MAX 256

typedef enum { TASK_REMOVE, TASK_RENAME } task_kind_t;

struct px__ctr_task_s {
  task_kind_t kind;
  char id[PX_DK_ID_MAX + 1];
  char *name;   /* owned: TASK_RENAME's new name */
  char *dir;    /* owned: TASK_REMOVE's job dir */
  char **kbdirs; /* owned: TASK_REMOVE's KB views, nkb entries */
  size_t nkb;
};

static void task_run(px__ctr_t *be, px__ctr_task_t *t) {
  size_t i;
  if (t->kind == TASK_RENAME) {
    px__ctr_dk_rename(be->endpoint, t->id, t->name);
  } else {
    if (t->id[0] && px__ctr_dk_remove(be->endpoint, t->id))
      PX_LOG(PX_LOG_ERROR, "container %.12s could not be removed; the next "
                           "start removes it", t->id);
    for (i = 0; i < t->nkb; i++) {
      px__ctr_dk_jobdir_remove(t->kbdirs[i]);
      free(t->kbdirs[i]);
    }
    free(t->kbdirs);
    px__ctr_dk_jobdir_remove(t->dir);
  }
  free(t->dir);
  free(t->name);
}

static void reaper_thread(void *arg) {
  px__ctr_t *be = arg;
  for (;;) {
    px__ctr_task_t t;
    px_mutex_lock(&be->rlock);
    while (be->nq == 0 && !be->rstop)
      px_cond_wait(&be->rcv, &be->rlock);
    if (be->nq == 0) { /* stopping, and drained */
      px_mutex_unlock(&be->rlock);
      return;
    }
    t = be->q[0];
    memmove(be->q, be->q + 1, --be->nq * sizeof *be->q);
    px_mutex_unlock(&be->rlock);
    task_run(be, &t);
  }
}

int px__ctr_reaper_start(px__ctr_t *be) {
  int rc;
  px_mutex_init(&be->rlock);
  px_cond_init(&be->rcv);
  be->reaper_inited = 1;
  if (!(be->q = calloc(QUEUE_MAX, sizeof *be->q)))
    return PX_ENOMEM;
  if ((rc = px_thread_create(&be->reaper, reaper_thread, be)))
    return rc;
  be->reaper_started = 1;
  return 0;
}

void px__ctr_reaper_stop(px__ctr_t *be) {
  if (!be->reaper_inited)
    return;
  px_mutex_lock(&be->rlock);
  be->rstop = 1;
  px_cond_broadcast(&be->rcv);
  px_mutex_unlock(&be->rlock);
  if (be->reaper_started)
    px_thread_join(be->reaper);
  while (be->nq > 0) /* a thread that never started */
    task_run(be, &be->q[--be->nq]);
  free(be->q);
  px_cond_destroy(&be->rcv);
  px_mutex_destroy(&be->rlock);
  be->reaper_inited = 0;
}

/* Queue t, or run it here when the queue is full or stopping. */
static void submit(px__ctr_t *be, px__ctr_task_t *t) {
  int queued = 0;
  px_mutex_lock(&be->rlock);
  if (be->reaper_started && !be->rstop && be->nq < QUEUE_MAX) {
    be->q[be->nq++] = *t;
    px_cond_signal(&be->rcv);
    queued = 1;
  }
  px_mutex_unlock(&be->rlock);
  if (!queued)
    task_run(be, t);
}

void px__ctr_reap(px__ctr_t *be, const char *id, char *dir, char **kbdirs,
                  size_t nkb) {
  px__ctr_task_t t;
  memset(&t, 0, sizeof t);
  t.kind = TASK_REMOVE;
  px_strlcpy(t.id, id, sizeof t.id);
  t.dir = dir;
  t.kbdirs = kbdirs;
  t.nkb = nkb;
  submit(be, &t);
}

void px__ctr_rename_later(px__ctr_t *be, const char *id, const char *name) {
  px__ctr_task_t t;
  memset(&t, 0, sizeof t);
  t.kind = TASK_RENAME;
  px_strlcpy(t.id, id, sizeof t.id);
  if (!(t.name = px_strdup(name)))
    return; /* a name is cosmetic: no memory, no rename */
  submit(be, &t);
}
