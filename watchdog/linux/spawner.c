/* spawner.c - the spawner thread: the one thread every job's pid 1 (and
 * every pool stub) is cloned from.
 *
 * Its parent-death signal (SIGKILL) fires when that *thread* ends, so an
 * engine worker thread that exits must not be the parent, while a daemon
 * that dies (even by SIGKILL) takes every job with it. One clone at a
 * time, each inside the clone fence (px_fence.h); the rest of a spawn
 * stays on the caller's thread (spawn.c, pool.c).
 */
#include "linux_int.h"

#include "px/px_error.h"
#include "px/px_fence.h"
#include "px/px_os.h"

#include <errno.h>
#include <stdlib.h>

struct px__lnx_spawner_s {
  px_mutex_t mu;          /* guards everything below */
  px_mutex_t call_mu;     /* one request at a time */
  px_cond_t cv;
  px_thread_t thr;
  int running, stop;
  pid_t (*fn)(void *);    /* the request being served, or NULL */
  void *arg;              /* borrowed */
  int done, err;
  pid_t pid;
};

static void spawner_main(void *arg) {
  px__lnx_spawner_t *sp = arg;
  px_mutex_lock(&sp->mu);
  while (!sp->stop) {
    pid_t pid;
    if (!sp->fn || sp->done) {
      px_cond_wait(&sp->cv, &sp->mu);
      continue;
    }
    errno = 0;
    px_fence_clone_begin();
    pid = sp->fn(sp->arg);
    px_fence_clone_end();
    sp->pid = pid;
    sp->err = pid < 0 ? errno : 0;
    sp->done = 1;
    px_cond_broadcast(&sp->cv);
  }
  px_mutex_unlock(&sp->mu);
}

pid_t px__lnx_spawner_call(px__lnx_spawner_t *sp, pid_t (*fn)(void *),
                           void *arg) {
  pid_t pid;
  int err;
  px_mutex_lock(&sp->call_mu);
  px_mutex_lock(&sp->mu);
  sp->fn = fn;
  sp->arg = arg;
  sp->done = 0;
  px_cond_broadcast(&sp->cv);
  while (!sp->done)
    px_cond_wait(&sp->cv, &sp->mu);
  pid = sp->pid;
  err = sp->err;
  sp->fn = NULL;
  px_mutex_unlock(&sp->mu);
  px_mutex_unlock(&sp->call_mu);
  errno = err;
  return pid;
}

int px__lnx_spawner_open(px__lnx_spawner_t **out) {
  px__lnx_spawner_t *sp = calloc(1, sizeof *sp);
  int rc;
  if (!sp)
    return PX_ENOMEM;
  if (px_mutex_init(&sp->mu) != 0 || px_mutex_init(&sp->call_mu) != 0 ||
      px_cond_init(&sp->cv) != 0) {
    free(sp);
    return PX_ENOMEM;
  }
  if ((rc = px_thread_create(&sp->thr, spawner_main, sp)) != 0) {
    px__lnx_spawner_close(sp);
    return rc;
  }
  sp->running = 1;
  *out = sp;
  return 0;
}

void px__lnx_spawner_close(px__lnx_spawner_t *sp) {
  if (!sp)
    return;
  if (sp->running) {
    px_mutex_lock(&sp->mu);
    sp->stop = 1;
    px_cond_broadcast(&sp->cv);
    px_mutex_unlock(&sp->mu);
    px_thread_join(sp->thr);
  }
  px_cond_destroy(&sp->cv);
  px_mutex_destroy(&sp->call_mu);
  px_mutex_destroy(&sp->mu);
  free(sp);
}
