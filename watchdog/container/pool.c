/* pool.c - warm containers: created and started ahead of time, their gate
 * waiting on stdin, so that a job costs an attach instead of a create and
 * a start (together ~200 ms of engine time here; bench/README.md).
 *
 * DESIGN. A slot is a container made exactly as a job's would be (spec.c)
 * for an image and a job-directory mode (read-only, or writable for
 * fs:write_tmp), with its own empty job directory and the default limits
 * (limits.default), attached (the connection is kept: its stdin must stay
 * open) and started: its gate is the only process and waits for a job on
 * stdin. containers.pool slots are kept for each (image,
 * mode). Nothing in a slot is job-specific until a job takes it: the gate
 * receives argv and the environment on stdin, the job's files are written
 * into the slot's directory on the host, and limits other than the
 * defaults are set with one POST /containers/ID/update. The slot's state
 * is read back like any job's before the job is sent (spec.c). A slot
 * serves one job and is removed with it, like any container; the refill
 * thread (one per backend) makes the replacement off the job's path. An
 * idle slot costs one sleeping static process and its cgroups. Jobs the pool cannot
 * serve (KB roots, net:egress, a missing slot) take the cold path:
 * counted as misses. Slots carry our label, so crash recovery removes them
 * with everything else.
 */
#include "ctr_int.h"

#include "px/px_error.h"
#include "px/px_log.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REFILL_IDLE_MS 1000
/* Slots that failed in a row before the refill thread gives up (jobs then
 * take the cold path, each failing or not on its own): a pool that cannot
 * make a slot must not retry without end. */
#define REFILL_MAX_FAILS 5

struct px__ctr_slot_s {
  char id[PX_DK_ID_MAX + 1];
  char key[48];      /* ".pool-<n>": its name and job dir are derived */
  char *dir;         /* owned: its job directory */
  px__ctr_dk_stream_t st; /* owned: attached before the start and kept, since
                         a StdinOnce container's stdin closes when it runs
                         with no client attached */
  const char *image; /* borrowed from the backend's options */
  int writable;
};

/* Make one slot: the job dir and a created container (not started). */
static int slot_make(px__ctr_t *be, const char *image, int writable,
                     px__ctr_slot_t *s) {
  px_job_spec_t spec;
  px_sandbox_t tmp;
  char *json = NULL;
  char name[80];
  int rc;
  memset(s, 0, sizeof *s);
  memset(&spec, 0, sizeof spec);
  memset(&tmp, 0, sizeof tmp);
  px_mutex_lock(&be->plock);
  /* A dot name: beside the jobs' directories in the work root, and never
   * a job key (those start with a letter). */
  snprintf(s->key, sizeof s->key, ".pool-%llu", (unsigned long long)++be->pseq);
  px_mutex_unlock(&be->plock);
  s->image = image;
  s->writable = writable;
  px_strlcpy(spec.key, s->key, sizeof spec.key);
  spec.image = (char *)(uintptr_t)image;
  spec.caps = writable ? PX_CAP_FS_WRITE_TMP : 0;
  spec.limits = be->opts.container_slot_limits;
  tmp.be = be;
  tmp.spec = &spec;
  snprintf(name, sizeof name, "px%s", s->key);
  rc = be->remote ? 0 /* no host directory: deliver.c */
                  : px__ctr_dk_jobdir_create(be->work_root, s->key,
                                         be->opts.tmpfs_bytes
                                             ? be->opts.tmpfs_bytes
                                             : 64u << 20,
                                         writable, &s->dir);
  tmp.dir = s->dir;
  if (rc == 0)
    rc = px__ctr_create_json(&tmp, &json);
  if (rc == 0)
    rc = px__ctr_dk_create(be->endpoint, name, json, s->id);
  if (rc == 0 && be->remote)
    rc = px__ctr_deliver_gate(be, s->id);
  if (rc == 0)
    rc = px__ctr_dk_attach(be->endpoint, s->id, &s->st);
  if (rc == 0)
    rc = px__ctr_dk_start(be->endpoint, s->id);
  free(json);
  if (rc) {
    px__ctr_dk_stream_close(&s->st);
    if (s->id[0])
      px__ctr_dk_remove(be->endpoint, s->id);
    px__ctr_dk_jobdir_remove(s->dir);
    free(s->dir);
    s->dir = NULL;
  }
  return rc;
}

static void slot_drop(px__ctr_t *be, px__ctr_slot_t *s) {
  px__ctr_dk_stream_close(&s->st);
  if (s->id[0])
    px__ctr_dk_remove(be->endpoint, s->id);
  px__ctr_dk_jobdir_remove(s->dir);
  free(s->dir);
  memset(s, 0, sizeof *s);
}

/* Slots of (image, writable) now in the pool (under plock). */
static size_t count(const px__ctr_t *be, const char *image, int writable) {
  size_t i, n = 0;
  for (i = 0; i < be->nslots; i++)
    n += strcmp(be->slots[i].image, image) == 0 &&
         be->slots[i].writable == writable;
  return n;
}

/* One missing slot made, if any is missing: 1 made, 0 none missing,
 * < 0 the engine refused (the thread backs off). */
static int refill_one(px__ctr_t *be) {
  const char *const *im;
  int w;
  for (im = be->opts.container_images; im && *im; im++) {
    if (px__ctr_image_missing(be, *im))
      continue;
    for (w = 0; w < 2; w++) {
      px__ctr_slot_t s;
      size_t have;
      int rc;
      px_mutex_lock(&be->plock);
      have = count(be, *im, w);
      px_mutex_unlock(&be->plock);
      if (have >= be->opts.container_pool)
        continue;
      if ((rc = slot_make(be, *im, w, &s)))
        return rc;
      px_mutex_lock(&be->plock);
      if (!be->pstop && px_array_reserve(&be->slots, &be->cap_slots,
                                         be->nslots + 1, sizeof *be->slots,
                                         8) == 0) {
        be->slots[be->nslots++] = s;
        s.id[0] = 0;
      }
      px_mutex_unlock(&be->plock);
      if (s.id[0]) /* stopping, or no memory: not kept */
        slot_drop(be, &s);
      return 1;
    }
  }
  return 0;
}

static void refill_thread(void *arg) {
  px__ctr_t *be = arg;
  unsigned fails = 0;
  for (;;) {
    int r;
    px_mutex_lock(&be->plock);
    if (be->pstop) {
      px_mutex_unlock(&be->plock);
      return;
    }
    px_mutex_unlock(&be->plock);
    r = refill_one(be);
    fails = r < 0 ? fails + 1 : 0;
    if (r > 0)
      continue;
    if (fails >= REFILL_MAX_FAILS) {
      PX_LOG(PX_LOG_ERROR, "container pool: %u slots failed in a row (last: "
                           "%s); no more are made, jobs take the cold path",
             fails, px_strerror(r));
      return;
    }
    if (r < 0)
      PX_LOG(PX_LOG_WARN, "container pool: a slot could not be made (%s); "
                          "retrying", px_strerror(r));
    px_mutex_lock(&be->plock);
    if (!be->pstop)
      px_cond_timedwait(&be->pcv, &be->plock, REFILL_IDLE_MS);
    px_mutex_unlock(&be->plock);
  }
}

int px__ctr_pool_start(px__ctr_t *be) {
  int rc;
  px_mutex_init(&be->plock);
  px_cond_init(&be->pcv);
  be->pool_inited = 1;
  if (be->opts.container_pool == 0)
    return 0;
  if ((rc = px_thread_create(&be->refill, refill_thread, be)))
    return rc;
  be->refill_started = 1;
  return 0;
}

void px__ctr_pool_stop(px__ctr_t *be) {
  size_t i;
  if (!be->pool_inited)
    return;
  px_mutex_lock(&be->plock);
  be->pstop = 1;
  px_cond_broadcast(&be->pcv);
  px_mutex_unlock(&be->plock);
  if (be->refill_started)
    px_thread_join(be->refill);
  for (i = 0; i < be->nslots; i++)
    slot_drop(be, &be->slots[i]);
  free(be->slots);
  be->slots = NULL;
  be->nslots = 0;
  px_cond_destroy(&be->pcv);
  px_mutex_destroy(&be->plock);
  be->pool_inited = 0;
}

/* The job's limits on a slot's container, when not the slot's own. */
static int set_limits(px__ctr_t *be, const char *id, const px_job_spec_t *sp) {
  const px_limits_t *d = &be->opts.container_slot_limits;
  cJSON *u;
  char *json = NULL;
  int rc = PX_ENOMEM;
  double cpus = sp->caps & PX_CAP_RES_HIGH_CPU ? 2e9 : 1e9;
  if (sp->limits.memory_bytes == d->memory_bytes &&
      sp->limits.processes == d->processes &&
      !(sp->caps & PX_CAP_RES_HIGH_CPU))
    return 0;
  u = cJSON_CreateObject();
  if (u && cJSON_AddNumberToObject(u, "NanoCpus", cpus) &&
      (!sp->limits.memory_bytes ||
       (cJSON_AddNumberToObject(u, "Memory", (double)sp->limits.memory_bytes) &&
        cJSON_AddNumberToObject(u, "MemorySwap",
                                (double)sp->limits.memory_bytes))) &&
      (!sp->limits.processes ||
       cJSON_AddNumberToObject(u, "PidsLimit",
                               (double)sp->limits.processes + 1)) &&
      (json = cJSON_PrintUnformatted(u)))
    rc = px__ctr_dk_update(be->endpoint, id, json);
  free(json);
  cJSON_Delete(u);
  return rc;
}

int px__ctr_pool_take(px__ctr_t *be, px_sandbox_t *sb) {
  const px_job_spec_t *sp = sb->spec;
  int writable = (sp->caps & PX_CAP_FS_WRITE_TMP) != 0;
  px__ctr_slot_t s;
  size_t i;
  int rc;
  if (be->opts.container_pool == 0 || sp->nkb || sp->caps & PX_CAP_NET_EGRESS)
    return PX_ENOENT;
  memset(&s, 0, sizeof s);
  px_mutex_lock(&be->plock);
  for (i = 0; i < be->nslots; i++)
    if (be->slots[i].writable == writable &&
        strcmp(be->slots[i].image, sp->image) == 0) {
      s = be->slots[i];
      be->slots[i] = be->slots[--be->nslots];
      break;
    }
  if (s.id[0])
    be->hits++;
  else
    be->misses++;
  px_cond_signal(&be->pcv);
  px_mutex_unlock(&be->plock);
  if (!s.id[0])
    return PX_ENOENT;
  if ((rc = set_limits(be, s.id, sp))) {
    slot_drop(be, &s);
    return rc;
  }
  memcpy(sb->id, s.id, sizeof sb->id);
  snprintf(sb->name, sizeof sb->name, "px-%s", sp->key);
  sb->dir = s.dir;
  sb->st = s.st; /* the stream moves to the job */
  sb->prestarted = 1;
  /* Free slots are named px.pool-N; a taken one is named after its job
   * (docker ps shows which job a container serves). */
  px__ctr_rename_later(be, sb->id, sb->name);
  return 0;
}
