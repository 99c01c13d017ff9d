/* reaper.c - removes finished jobs' cgroups and job directories off the
 * job's critical path.
 *
 * DESIGN: by the time release() runs, every process of the job is dead
 * (wait() returned only after the cgroups were empty), so what is left is
 * bookkeeping: rmdir of a cgroup in each hierarchy and the unmount and
 * removal of the job's tmpfs directory - together up to a couple of ms,
 * which the engine would otherwise pay before it can deliver the result.
 * release() hands them here; one thread does them in order. Destroy still
 * kills anything it finds in a cgroup (it cannot, but it costs nothing).
 * The queue is bounded: past PX__REAP_MAX items release() cleans inline.
 * close() drains the queue before it returns, so a stopped backend leaves
 * nothing behind; after a crash, open()'s recovery removes the leftovers.
 */
#include "linux_int.h"

#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_os.h"
#include "px/px_util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PX__REAP_MAX 256

typedef struct reap_item_s {
  struct reap_item_s *next;
  px__lnx_cg_job_t cg;  /* owned (moved in) */
  char *key;        /* owned; NULL: no job directory */
  int mounted;
  int fd;           /* owned: closed here (a slot's mount ns), or -1 */
} reap_item_t;

struct px__lnx_reaper_s {
  px__lnx_backend_t *be; /* borrowed */
  px_mutex_t mu;
  px_cond_t cv;
  reap_item_t *head, *tail; /* guarded by mu */
  size_t n;
  int stop;
  px_thread_t thread;
};

static void clean(px__lnx_backend_t *be, reap_item_t *it) {
  if (it->fd >= 0)
    close(it->fd);
  px__lnx_cg_job_destroy(&be->cg, &it->cg);
  if (it->key)
    px__lnx_jobdir_remove(be->work_root_fd, be->work_root, it->key,
                          it->mounted);
  free(it->key);
  free(it);
}

static void reaper_main(void *arg) {
  px__lnx_reaper_t *r = arg;
  for (;;) {
    reap_item_t *it;
    px_mutex_lock(&r->mu);
    while (!r->head && !r->stop)
      px_cond_wait(&r->cv, &r->mu);
    it = r->head;
    if (it) {
      r->head = it->next;
      if (!r->head)
        r->tail = NULL;
      r->n--;
    }
    px_mutex_unlock(&r->mu);
    if (!it)
      return; /* stopping and drained */
    clean(r->be, it);
  }
}

int px__lnx_reaper_open(px__lnx_backend_t *be, px__lnx_reaper_t **out) {
  px__lnx_reaper_t *r = calloc(1, sizeof *r);
  int rc;
  if (!r)
    return PX_ENOMEM;
  r->be = be;
  if ((rc = px_mutex_init(&r->mu)) != 0 || (rc = px_cond_init(&r->cv)) != 0 ||
      (rc = px_thread_create(&r->thread, reaper_main, r)) != 0) {
    free(r);
    return rc;
  }
  *out = r;
  return 0;
}

/* Queue it (0), or PX_EBUSY when stopping or full. */
static int enqueue(px__lnx_reaper_t *r, reap_item_t *it) {
  px_mutex_lock(&r->mu);
  if (r->stop || r->n >= PX__REAP_MAX) {
    px_mutex_unlock(&r->mu);
    return PX_EBUSY;
  }
  if (r->tail)
    r->tail->next = it;
  else
    r->head = it;
  r->tail = it;
  r->n++;
  px_cond_signal(&r->cv);
  px_mutex_unlock(&r->mu);
  return 0;
}

void px__lnx_reaper_take_fd(px__lnx_reaper_t *r, int *fd) {
  reap_item_t *it;
  if (*fd < 0)
    return;
  it = r ? calloc(1, sizeof *it) : NULL;
  if (it) {
    px__lnx_cg_job_init(&it->cg);
    it->fd = *fd;
    if (enqueue(r, it) == 0) {
      *fd = -1;
      return;
    }
    free(it);
  }
  close(*fd);
  *fd = -1;
}

int px__lnx_reaper_take(px__lnx_reaper_t *r, px__lnx_cg_job_t *cg,
                        const char *key, int mounted) {
  reap_item_t *it;
  if (!r)
    return PX_EINVAL;
  it = calloc(1, sizeof *it);
  if (!it || (key && !(it->key = px_strdup(key)))) {
    free(it);
    return PX_ENOMEM;
  }
  it->cg = *cg; /* ownership moves; the caller's copy is reset below */
  it->mounted = mounted;
  it->fd = -1;
  if (enqueue(r, it) != 0) {
    free(it->key);
    free(it);
    return PX_EBUSY; /* the caller cleans inline */
  }
  px__lnx_cg_job_init(cg);
  return 0;
}

void px__lnx_reaper_close(px__lnx_reaper_t *r) {
  if (!r)
    return;
  px_mutex_lock(&r->mu);
  r->stop = 1;
  px_cond_signal(&r->cv);
  px_mutex_unlock(&r->mu);
  px_thread_join(r->thread); /* returns once the queue is empty */
  px_cond_destroy(&r->cv);
  px_mutex_destroy(&r->mu);
  free(r);
}
