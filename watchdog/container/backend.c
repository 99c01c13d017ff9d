/* backend.c - px_backend_container: jobs of image runtimes, each in a fresh
 * container made through the Docker Engine API.
 *
 * DESIGN. prepare() makes the job directory (a size-capped tmpfs) with the
 * job's files and creates the container (spec.c says with what): nothing
 * runs yet, because the container's entrypoint is our gate, which waits on
 * stdin. start() attaches to the container, starts it, reads its state back
 * from the kernel (px__ctr_verify: fail closed), then sends the gate the
 * job (argv, environment) followed by the job's stdin and ends the input;
 * the gate execs the job. A thread per job (run.c) demultiplexes output
 * and runs the watchdog until the container has stopped. kill() is
 * POST /kill from any thread; release() kills, force-removes the container
 * and unmounts the job directory, so nothing outlives a job. open() removes
 * every container carrying our label: what a crashed daemon left behind.
 *
 * The engine is trusted like the kernel: whoever controls it is root on
 * the host (docs/container-backend.md, "A shared Docker daemon").
 */
#include "ctr_int.h"

#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_util.h"

#include <stdlib.h>
#include <string.h>

static void be_free(px__ctr_t *be) {
  if (!be)
    return;
  px__ctr_pool_stop(be);
  px__ctr_reaper_stop(be);
  px__ctr_dk_ids_free(be->missing, be->nmissing);
  if (be->idmap_fd >= 0)
    px__ctr_dk_idmap_close(be->idmap_fd);
  free(be->endpoint);
  free(be->gate);
  free(be->user);
  free(be->work_root);
  free(be->gate_error);
  px_buf_free(&be->gate_tar);
  free(be);
}

/* Crash recovery: every container with our label goes. */
static int recover(px__ctr_t *be) {
  char **ids = NULL;
  size_t n = 0, i;
  int rc = px__ctr_dk_list_labelled(be->endpoint, PX_CTR_LABEL, &ids, &n);
  if (rc)
    return rc;
  for (i = 0; i < n; i++)
    if (px__ctr_dk_remove(be->endpoint, ids[i]) == 0)
      PX_LOG(PX_LOG_WARN, "removed container %.12s left by an earlier run",
             ids[i]);
  px__ctr_dk_ids_free(ids, n);
  return 0;
}

static int ctr_open(const px_backend_opts_t *opts, void **state) {
  px__ctr_t *be;
  int rc;
  *state = NULL;
  if (!opts || !opts->container_endpoint || !opts->container_gate ||
      !opts->work_root)
    return PX_EINVAL;
  if (!(be = calloc(1, sizeof *be)))
    return PX_ENOMEM;
  be->idmap_fd = -1;
  be->opts = *opts;
  be->opts.tick_ms = opts->tick_ms ? opts->tick_ms : 50;
  be->endpoint = px_strdup(opts->container_endpoint);
  be->gate = px_strdup(opts->container_gate);
  be->user = px_strdup(opts->container_user ? opts->container_user
                                            : "65534:65534");
  be->work_root = px_strdup(opts->work_root);
  /* The engine's containers run on this kernel when it is reached over a
   * Unix socket (Docker on Linux); over TCP or a pipe it may be a VM. */
  be->host_kernel = strncmp(be->endpoint, "unix://", 7) == 0;
  /* ... and shares this host's file system; any other engine gets the
   * gate and the job's files through the archive API (deliver.c). */
  be->remote = !be->host_kernel;
  if (!be->endpoint || !be->gate || !be->user || !be->work_root) {
    be_free(be);
    return PX_ENOMEM;
  }
  if (be->host_kernel) {
    unsigned long uid = strtoul(be->user, NULL, 10);
    unsigned long gid = strtoul(strchr(be->user, ':') ? strchr(be->user, ':') + 1
                                                      : be->user, NULL, 10);
    unsigned long kuid = opts->kb_owner_uid ? opts->kb_owner_uid
                                            : PX_KB_OWNER_DEFAULT;
    unsigned long kgid = opts->kb_owner_uid && opts->kb_owner_gid
                             ? opts->kb_owner_gid
                             : PX_KB_OWNER_DEFAULT;
    px__ctr_dk_idmap_open(kuid, kgid, uid, gid, &be->idmap_fd);
  }
  if (be->host_kernel) {
    unsigned long engine = 0;
    if ((rc = px__ctr_dk_engine_pid(be->endpoint, &engine)) ||
        (rc = px__ctr_dk_engine_ns(engine))) {
      be_free(be);
      return rc;
    }
  }
  /* An unusable gate (gatecheck.c) leaves the backend open but refusing
   * image jobs, with no warm pool: status says why. */
  if ((rc = px__ctr_dk_ping(be->endpoint)) || (rc = px__ctr_gate_check(be)) ||
      (be->remote && !be->gate_error && (rc = px__ctr_deliver_open(be))) ||
      (rc = recover(be)) || (rc = px__ctr_images_check(be)) ||
      (rc = px__ctr_reaper_start(be)) ||
      (!be->gate_error && (rc = px__ctr_pool_start(be)))) {
    PX_LOG(PX_LOG_ERROR, "container backend: the Docker Engine at %s does "
                         "not answer: %s", be->endpoint, px_strerror(rc));
    be_free(be);
    return rc;
  }
  *state = be;
  return 0;
}

static void ctr_close(void *state) { be_free(state); }

int px_container_image_missing(void *state, const char *image) {
  return state ? px__ctr_image_missing(state, image) : 0;
}

const char *px_container_gate_error(void *state) {
  return state ? ((px__ctr_t *)state)->gate_error : NULL;
}

static uint64_t ctr_enforcement(void *state) {
  px__ctr_t *be = state;
  uint64_t a = PX_ENF(PX_ENF_CONTAINER) | PX_ENF(PX_ENF_WATCHDOG_POLL);
  if (be && be->host_kernel)
    a |= PX_ENF(PX_ENF_SECCOMP_DOCKER) | PX_ENF(PX_ENF_NO_NEW_PRIVS) |
         PX_ENF(PX_ENF_CAPS_DROPPED) | PX_ENF(PX_ENF_UID_DROP) |
         PX_ENF(PX_ENF_READONLY_ROOTFS) | PX_ENF(PX_ENF_NETWORK_NONE) |
         PX_ENF(PX_ENF_CGROUP_MEMORY) | PX_ENF(PX_ENF_CGROUP_PIDS);
  return a;
}

static void sb_free(px_sandbox_t *sb) {
  px__ctr_dk_stream_close(&sb->st);
  px__ctr_dk_stream_close(&sb->stats);
  px_cond_destroy(&sb->cv);
  px_mutex_destroy(&sb->lock);
  free(sb);
}

/* Kill if still running (a failed start), then hand the container and
 * directories to the reaper: the job's processes are gone already. */
static void ctr_release(px_sandbox_t *sb) {
  if (!sb)
    return;
  if (sb->thread_started)
    px_thread_join(sb->thread);
  if (sb->killer_started)
    px_thread_join(sb->killer);
  if (sb->id[0] && !sb->done) /* never ran to its end: stop it now */
    px__ctr_dk_kill(sb->be->endpoint, sb->id);
  px__ctr_reap(sb->be, sb->id, sb->dir, sb->kbdirs,
               sb->kbdirs ? sb->spec->nkb : 0);
  sb->dir = NULL;
  sb->kbdirs = NULL;
  sb_free(sb);
}

/* Each visible KB root through an idmapped view of its own on the host:
 * <work root>/.ctr-kb/<key>.kb<i>, bound into the container at
 * /kb/<name>. The view shows the KB's files as the job's uid owns them, so
 * a host process of that uid (nobody) must never reach it: .ctr-kb is
 * root's and 0700 (jobdir.c makes and checks it); the engine, root, binds
 * from it. */
static int kb_views(px_sandbox_t *sb) {
  const px_job_spec_t *sp = sb->spec;
  size_t i;
  int rc;
  if (sp->nkb == 0)
    return 0;
  if (!(sb->kbdirs = calloc(sp->nkb, sizeof *sb->kbdirs)))
    return PX_ENOMEM;
  for (i = 0; i < sp->nkb; i++) {
    px_buf_t b = {0};
    if (px_buf_printf(&b, "%s/" PX_CTR_KB_VIEWS "/%s.kb%zu",
                      sb->be->work_root, sp->key, i))
      return PX_ENOMEM;
    sb->kbdirs[i] = px_buf_take(&b, NULL);
    if ((rc = px__ctr_dk_kb_view(sb->be->idmap_fd, sp->kb[i].host_path,
                             sb->kbdirs[i], sp->kb[i].writable)))
      return rc;
  }
  return 0;
}

static int write_files(px_sandbox_t *sb) {
  return px__ctr_dk_jobdir_write(sb->dir, sb->spec->files, sb->spec->nfiles);
}

static int ctr_prepare(void *state, const px_job_spec_t *spec,
                       const px_sandbox_events_t *events, px_sandbox_t **out) {
  px__ctr_t *be = state;
  px_sandbox_t *sb = calloc(1, sizeof *sb);
  char *json = NULL;
  uint64_t cap = be->opts.tmpfs_bytes ? be->opts.tmpfs_bytes : 64u << 20;
  int rc;
  *out = NULL;
  if (be->gate_error) { /* logged once at open; status says why */
    free(sb);
    return PX_ENOENGINE;
  }
  if (!sb)
    return PX_ENOMEM;
  px_mutex_init(&sb->lock);
  px_cond_init(&sb->cv);
  sb->be = be;
  sb->spec = spec;
  if (events)
    sb->ev = *events;
  if (!spec->image || px_snprintf(sb->name, sizeof sb->name, "px-%s", spec->key)) {
    sb_free(sb);
    return PX_EINVAL;
  }
  if (px__ctr_image_missing(be, spec->image)) {
    sb_free(sb);
    return PX_ENOIMAGE;
  }
  if (be->remote && spec->nkb) {
    /* KB roots are host directories a remote engine cannot bind: refuse
     * the job rather than run it without them. */
    PX_LOG(PX_LOG_ERROR, "job %s: KB roots need an engine that shares this "
                         "host's file system (a unix:// endpoint); refused",
           spec->key);
    sb_free(sb);
    return PX_ENOTSUP;
  }
  if (px__ctr_pool_take(be, sb) == 0) {
    PX_LOG(PX_LOG_DEBUG, "job %s: warm container %.12s", spec->key, sb->id);
    rc = be->remote ? 0 : write_files(sb); /* remote: at start */
  } else if (be->remote) {
    if ((rc = px__ctr_create_json(sb, &json)) == 0 &&
        (rc = px__ctr_dk_create(be->endpoint, sb->name, json, sb->id)) == 0)
      rc = px__ctr_deliver_gate(be, sb->id);
  } else if ((rc = px__ctr_dk_jobdir_create(be->work_root, spec->key, cap,
                                        (spec->caps & PX_CAP_FS_WRITE_TMP) != 0,
                                        &sb->dir)) == 0 &&
             (rc = write_files(sb)) == 0 && (rc = kb_views(sb)) == 0 &&
             (rc = px__ctr_create_json(sb, &json)) == 0) {
    rc = px__ctr_dk_create(be->endpoint, sb->name, json, sb->id);
  }
  if (rc) {
    free(json);
    ctr_release(sb); /* the engine releases only what prepare returned */
    return rc == PX_ENOENT ? PX_ENOIMAGE : rc; /* create: 404 no image */
  }
  free(json);
  if (!be->remote) /* the host tmpfs; a remote one is not read back */
    sb->outcome.enforcement |= PX_ENF(PX_ENF_TMPFS_WORKDIR);
  *out = sb;
  return 0;
}

static int kill_requested(px_sandbox_t *sb) {
  int k;
  px_mutex_lock(&sb->lock);
  k = sb->kill_req;
  px_mutex_unlock(&sb->lock);
  return k;
}

/* Send the gate its header and the job's stdin, then end the input. */
static int feed_gate(px_sandbox_t *sb) {
  px_buf_t h = {0};
  int rc = px__ctr_gate_header(sb, &h);
  if (rc == 0)
    rc = px__ctr_dk_conn_write(sb->st.conn, h.data, h.len);
  if (rc == 0 && sb->spec->stdin_len)
    rc = px__ctr_dk_conn_write(sb->st.conn, sb->spec->stdin_data,
                           sb->spec->stdin_len);
  if (rc == 0)
    rc = px__ctr_dk_conn_shutdown_write(sb->st.conn);
  px_buf_free(&h);
  return rc;
}

static int ctr_start(px_sandbox_t *sb) {
  px__ctr_dk_state_t st;
  int rc;
  if ((!sb->prestarted &&
       ((rc = px__ctr_dk_attach(sb->be->endpoint, sb->id, &sb->st)) ||
        (rc = px__ctr_dk_start(sb->be->endpoint, sb->id)))) ||
      (rc = px__ctr_dk_inspect(sb->be->endpoint, sb->id, &st)))
    return rc;
  if (!st.running || !st.pid) {
    PX_LOG(PX_LOG_ERROR, "container of job %s stopped before its job was "
                         "sent (exit %lld)", sb->spec->key, st.exit_code);
    return PX_ESPAWN;
  }
  sb->pid = st.pid;
  if ((rc = px__ctr_verify(sb)))
    return rc;
  PX_LOG(PX_LOG_DEBUG, "job %s: container %.12s started and verified",
         sb->spec->key, sb->id);
  if (kill_requested(sb))
    return PX_ECANCELED; /* cancelled while starting: the job never ran */
  /* A remote engine's accounting comes from its stats stream: without it
   * the CPU-time limit could not be enforced, so no stream, no job. */
  if (sb->be->remote && ((rc = px__ctr_deliver_files(sb)) ||
                         (rc = px__ctr_dk_stats_open(sb->be->endpoint, sb->id,
                                                 &sb->stats))))
    return rc;
  sb->start_ms = px_now_ms();
  if ((rc = feed_gate(sb)))
    return rc;
  if ((rc = px_thread_create(&sb->thread, px__ctr_run, sb)))
    return rc;
  sb->thread_started = 1;
  if (sb->ev.on_started)
    sb->ev.on_started(sb->ev.ctx);
  return 0;
}

static int ctr_wait(px_sandbox_t *sb, px_outcome_t *out) {
  if (!sb->thread_started)
    return PX_EINVAL;
  px_mutex_lock(&sb->lock);
  while (!sb->done)
    px_cond_wait(&sb->cv, &sb->lock);
  *out = sb->outcome;
  px_mutex_unlock(&sb->lock);
  return 0;
}

/* Called under the engine's lock: only asks (run.c sends it within a
 * tick; a job not started yet is refused by start). */
static int ctr_kill(px_sandbox_t *sb) {
  px_mutex_lock(&sb->lock);
  if (!sb->done) {
    sb->outcome.killed = 1;
    sb->kill_req = 1;
  }
  px_mutex_unlock(&sb->lock);
  return 0;
}

const px_backend_ops_t px_backend_container = {
    .name = "container",
    .open = ctr_open,
    .close = ctr_close,
    .enforcement_available = ctr_enforcement,
    .prepare = ctr_prepare,
    .start = ctr_start,
    .wait = ctr_wait,
    .kill = ctr_kill,
    .release = ctr_release,
    .collect = px__ctr_collect,
    .image_missing = px_container_image_missing,
    .gate_error = px_container_gate_error,
};
