/* backend.c - px_backend_windows: the Windows sandbox backend's operations.
 *
 * DESIGN. prepare() builds every control before anything runs, in this
 * order: per-job SID and AppContainer SID (every job, net:egress or not)
 * -> job directory with its DACL and label -> the job's files -> restricted
 * low-integrity token -> the job's window station and desktop (desktop.c)
 * -> Job Object with limits and the completion port -> stdio pipes -> the
 * child, suspended, in the job, its token and mitigations read back
 * (spawn.c) -> overlapped pipe I/O on the port. start() checks the job
 * once more, arms the wall deadline and resumes. wait() sleeps until the watchdog thread
 * (watchdog.c) finishes the job; kill() terminates the job object from any
 * thread; release() kills what is left, waits until no process remains
 * (at once when the watchdog saw the job end), removes the directory without following links (cleanup.c) and hands the
 * tracker's memory to whoever drops the last reference (pending overlapped
 * operations hold one each). Any failure before start fails closed: the
 * suspended child dies with its job and prepare/start return the error.
 */
#include "win_int.h"

#include "px/px_log.h"
#include "px/px_os.h"
#include "px/px_util.h"
#include "px/px_win_error.h"
#include "px/px_win_pathcheck.h"

#include <sddl.h>
#include <stdlib.h>
#include <wchar.h>

/* The work root, opened from the volume root down by handle
 * (pathcheck.c): a link at any level, or a component a non-administrator
 * could change, is refused; missing own components (the root and its
 * parent, unless that is the volume root) are created admin-only. The
 * handle is kept for the backend's life: it pins the root (nobody can
 * rename or replace it) and every job directory is created relative to
 * it (acl.c). The final path is read from it, for cleanup's check. */
static int work_root_init(px__winbe_t *be, const char *root) {
  px_win_path_req_t rq;
  char why[512];
  WCHAR *buf = NULL;
  size_t n;
  DWORD len;
  int rc;
  if (!root || !*root)
    return PX_EINVAL;
  be->work_root = px_win_wide(root, 0, NULL);
  if (!be->work_root)
    return PX_EINVAL;
  n = wcslen(be->work_root);
  while (n > 3 && (be->work_root[n - 1] == L'\\' || be->work_root[n - 1] == L'/'))
    be->work_root[--n] = 0;
  memset(&rq, 0, sizeof rq);
  rq.path = be->work_root;
  rq.owned = px_win_path_owned_depth(be->work_root, NULL); /* pathcheck.h */
  rq.create = 1;
  rq.acl = 1;
  if ((rc = px_win_path_open(&rq, &be->root_h, why, sizeof why)) != 0) {
    PX_LOG(PX_LOG_ERROR, "work root refused: %s", why);
    be->root_h = NULL;
    return rc;
  }
  if (!(buf = malloc(32768 * sizeof(WCHAR))))
    return PX_ENOMEM;
  len = GetFinalPathNameByHandleW(be->root_h, buf, 32768, FILE_NAME_NORMALIZED);
  if (len == 0 || len >= 32768) {
    free(buf);
    return PX_LOG_WIN32(PX_EIO, GetLastError(), "GetFinalPathNameByHandleW");
  }
  be->work_root_final = buf;
  return 0;
}

static uint64_t available(const px__winbe_t *be) {
  uint64_t a = PX_ENF(PX_ENF_JOB_OBJECT) | PX_ENF(PX_ENF_JOB_MEMORY_LIMIT) |
               PX_ENF(PX_ENF_JOB_PROCESS_LIMIT) | PX_ENF(PX_ENF_JOB_CPU_LIMIT) |
               PX_ENF(PX_ENF_KILL_ON_JOB_CLOSE) |
               PX_ENF(PX_ENF_RESTRICTED_TOKEN) | PX_ENF(PX_ENF_JOB_DIR_ACL) |
               PX_ENF(PX_ENF_HANDLE_LIST) | PX_ENF(PX_ENF_WATCHDOG_POLL) |
               PX_ENF(PX_ENF_JOB_DIR_WATCH) |
               PX_ENF(PX_ENF_CHILD_PROCESS_POLICY);
  a |= be->opts.untrusted_integrity ? PX_ENF(PX_ENF_UNTRUSTED_INTEGRITY)
                                    : PX_ENF(PX_ENF_LOW_INTEGRITY);
  if (be->opts.ui_restrictions)
    a |= PX_ENF(PX_ENF_UI_RESTRICTIONS);
  /* The job account's logon (identity.c); not the Wine fallback. */
  if (be->acct_token)
    a |= PX_ENF(PX_ENF_JOB_ACCOUNT);
  /* Wine: no CPU rate control, no AppContainer; it creates window stations
   * and accepts mitigation policies but stores and applies neither. */
  if (!be->wine)
    a |= PX_ENF(PX_ENF_CPU_RATE_CONTROL) | PX_ENF(PX_ENF_APPCONTAINER) |
         PX_ENF(PX_ENF_ALT_DESKTOP) | PX_ENF(PX_ENF_STRICT_HANDLE_CHECKS) |
         PX_ENF(PX_ENF_EXTENSION_POINTS_DISABLED) |
         PX_ENF(PX_ENF_IMAGE_LOAD_NO_REMOTE) |
         PX_ENF(PX_ENF_NON_SYSTEM_FONTS_DISABLED);
  return a;
}

static void be_free(px__winbe_t *be) {
  px__winbe_watchdog_stop(be);
  px__winbe_identity_close(be);
  px_handle_close(&be->port);
  px_handle_close(&be->root_h);
  free(be->work_root);
  free(be->work_root_final);
  px_cond_destroy(&be->sampler_cond);
  px_mutex_destroy(&be->lock);
  free(be);
}

static int win_open(const px_backend_opts_t *opts, void **state) {
  px__winbe_t *be;
  int rc;
  *state = NULL;
  if (!opts)
    return PX_EINVAL;
  be = calloc(1, sizeof *be);
  if (!be)
    return PX_ENOMEM;
  px_mutex_init(&be->lock);
  px_cond_init(&be->sampler_cond);
  be->opts = *opts;
  be->opts.work_root = NULL;
  be->opts.ro_binds = NULL;
  be->opts.cgroup_root = NULL;
  be->tick_ms = opts->tick_ms ? opts->tick_ms : 50;
  be->dir_bytes = opts->job_dir_bytes ? opts->job_dir_bytes : 64u << 20;
  be->dir_files = opts->job_dir_files ? opts->job_dir_files : 16384;
  be->handles_cap = opts->job_handles ? opts->job_handles : 20000;
  be->wine = px_os_under_wine();
  be->next_id = PX__KEY_FIRST_JOB;
  if ((rc = work_root_init(be, opts->work_root)))
    goto fail;
  px__winbe_volume_info(be->root_h, &be->volume);
  be->port = PXW(CreateIoCompletionPort)(INVALID_HANDLE_VALUE, NULL, 0, 1);
  if (!be->port) {
    rc = PX_LOG_WIN32(PX_EJOB, GetLastError(), "CreateIoCompletionPort");
    goto fail;
  }
  if ((rc = px__winbe_watchdog_start(be)))
    goto fail;
  px__winbe_identity_open(be); /* the job account's token, once */
  be->available = available(be);
  if (be->wine)
    PX_LOG(PX_LOG_WARN, "running under Wine: job limits, tokens, ACLs and "
                        "network isolation are not enforced by the OS; the "
                        "watchdog's polling is");
  *state = be;
  return 0;
fail:
  be_free(be);
  return rc;
}

static void win_close(void *state) {
  if (state)
    be_free(state);
}

static uint64_t win_enforcement(void *state) {
  return state ? ((px__winbe_t *)state)->available : 0;
}

/* Every job runs in an AppContainer (spawn.c gives it internetClient when
 * it holds net:egress): a third access check against a package SID no
 * other object grants, no loopback, no LAN, no enterprise authentication,
 * named objects of its own - with or without network, the job never acts
 * with the service's identity towards a server. Wine has none; there the
 * job runs without it and says so. */
static int net_setup(px__winbe_t *be, px_sandbox_t *sb) {
  if (be->wine) {
    sb->outcome.enforcement |= PX_ENF(PX_ENF_DEGRADED);
    PX_LOG(PX_LOG_DEBUG, "job %s: no AppContainer under Wine", sb->spec->key);
    return 0;
  }
  return px__winbe_appcontainer_sid(&sb->ac_sid);
}

/* Tear down after a failed prepare: kill, wait, close, remove. */
static void teardown(px_sandbox_t *sb);

static int prepare_steps(px__winbe_t *be, px_sandbox_t *sb) {
  int rc;
  if ((rc = px__winbe_sid_new_job(&sb->job_sid)) ||
      (rc = net_setup(be, sb)) ||
      (rc = px__winbe_identity_job(be, sb)) ||
      (rc = px__winbe_dir_create(be, sb)) ||
      (rc = px__winbe_files_write(sb)) ||
      (rc = px__winbe_token_create(be, sb)) ||
      (rc = px__winbe_desktop_create(be, sb)) ||
      (rc = px__winbe_job_create(be, sb)) ||
      (rc = px__winbe_pipes_create(sb)) ||
      (rc = px__winbe_spawn(be, sb)))
    return rc;
  px_mutex_lock(&be->lock);
  sb->state = PX__SB_SPAWNED;
  px_mutex_unlock(&be->lock);
  return px__winbe_io_begin(be, sb);
}

static int win_prepare(void *state, const px_job_spec_t *spec,
                       const px_sandbox_events_t *events, px_sandbox_t **out) {
  px__winbe_t *be = state;
  px_sandbox_t *sb;
  int rc;
  *out = NULL;
  if (!be || !spec || spec->argc == 0 || !spec->argv || !spec->argv[0])
    return PX_EINVAL;
  sb = calloc(1, sizeof *sb);
  if (!sb)
    return PX_ENOMEM;
  sb->be = be;
  sb->spec = spec;
  if (events)
    sb->events = *events;
  sb->refs = 1;
  px_cond_init(&sb->cond);
  px_mutex_lock(&be->lock);
  sb->id = be->next_id++;
  sb->next = be->jobs;
  be->jobs = sb;
  px_mutex_unlock(&be->lock);
  rc = prepare_steps(be, sb);
  if (rc) {
    PX_LOG(PX_LOG_ERROR, "job %s: sandbox setup failed (%s); nothing runs",
           spec->key, px_err_name(rc));
    teardown(sb);
    return rc;
  }
  *out = sb;
  return 0;
}

static int win_start(px_sandbox_t *sb) {
  px__winbe_t *be;
  BOOL in = FALSE;
  int rc = 0;
  if (!sb)
    return PX_EINVAL;
  be = sb->be;
  px_mutex_lock(&be->lock);
  if (sb->state != PX__SB_SPAWNED) {
    rc = sb->state == PX__SB_ENDED || sb->kill_requested ? PX_ECANCELED
                                                         : PX_EINVAL;
    goto out;
  }
  if (sb->kill_requested) {
    rc = PX_ECANCELED;
    goto out;
  }
  /* Checked again right before the first instruction runs. */
  if (!PXW(IsProcessInJob)(sb->process, sb->job, &in) || !in) {
    rc = PX_LOG_WIN32(PX_EJOB, GetLastError(), "IsProcessInJob(start)");
    goto fail;
  }
  sb->start_ms = px_now_ms();
  sb->deadline_ms = sb->start_ms + sb->spec->limits.wall_ms;
  sb->outcome.enforcement |= PX_ENF(PX_ENF_WATCHDOG_POLL) |
                             PX_ENF(PX_ENF_JOB_DIR_WATCH);
  sb->state = PX__SB_RUNNING;
  /* The second half of the OS's process creation (created suspended,
   * spawn.c): a refusal here, like one of CreateProcessAsUserW, means the
   * program never ran a single instruction. */
  if (PXW(ResumeThread)(sb->thread) == (DWORD)-1) {
    rc = PX_LOG_WIN32(PX_EPROCESS, GetLastError(), "ResumeThread");
    goto fail;
  }
  px_mutex_unlock(&be->lock);
  if (sb->events.on_started)
    sb->events.on_started(sb->events.ctx);
  return 0;
fail:
  sb->outcome.error = rc;
  px_snprintf(sb->outcome.error_msg, sizeof sb->outcome.error_msg,
              "sandbox start failed: %s", px_strerror(rc));
  px__winbe_terminate(sb);
  sb->outcome.killed = 0; /* it never ran */
out:
  px_mutex_unlock(&be->lock);
  return rc;
}

static int win_wait(px_sandbox_t *sb, px_outcome_t *out) {
  px__winbe_t *be;
  if (!sb || !out)
    return PX_EINVAL;
  be = sb->be;
  px_mutex_lock(&be->lock);
  while (sb->state != PX__SB_ENDED)
    px_cond_wait(&sb->cond, &be->lock);
  *out = sb->outcome;
  px_mutex_unlock(&be->lock);
  return 0;
}

static int win_kill(px_sandbox_t *sb) {
  if (!sb)
    return PX_EINVAL;
  px_mutex_lock(&sb->be->lock);
  px__winbe_terminate(sb);
  px_mutex_unlock(&sb->be->lock);
  return 0;
}

/* Wait (bounded) until no process of the job is left, so that nothing
 * holds files in the directory we are about to remove. Only for a job the
 * watchdog did not see end (released before its end): for one it did, a
 * process Wine keeps listed after it exited would cost the full bound. */
static void wait_empty(px_sandbox_t *sb) {
  uint64_t until = px_now_ms() + 10000;
  if (sb->process)
    WaitForSingleObject(sb->process, 10000);
  while (sb->job && px_now_ms() < until && !px__winbe_job_over(sb))
    px_sleep_ms(10);
}

/* A killed job answered late: where the time went, from the kill (each
 * step in ms after it; -1 never). The watchdog's latency under load is
 * read from these (docs/windows-backend.md, the watchdog). */
#define SLOW_END_MS 2000
#define AFTER(x) ((x) ? (long long)((x) - sb->kill_ms) : -1LL)
static void slow_end_log(px_sandbox_t *sb) {
  if (!sb->kill_requested || !sb->kill_ms ||
      sb->t.released - sb->kill_ms < SLOW_END_MS)
    return;
  PX_LOG(PX_LOG_WARN, "job %s: released %lld ms after its kill (processes "
         "gone %lld, stdout closed %lld, stderr closed %lld, ended %lld, "
         "release began %lld, processes waited for %lld)", sb->spec->key,
         AFTER(sb->t.released), AFTER(sb->zero_ms), AFTER(sb->t.eof_out),
         AFTER(sb->t.eof_err), AFTER(sb->t.ended), AFTER(sb->t.release),
         AFTER(sb->t.emptied));
}
#undef AFTER

static void teardown(px_sandbox_t *sb) {
  px__winbe_t *be = sb->be;
  px__winbe_pipe_t *ps[3] = {&sb->in, &sb->out, &sb->err};
  px_sandbox_t **pp;
  int i, over;
  px_mutex_lock(&be->lock);
  for (pp = &be->jobs; *pp; pp = &(*pp)->next) /* no more job messages */
    if (*pp == sb) {
      *pp = sb->next;
      break;
    }
  sb->released = 1;
  if (sb->state != PX__SB_ENDED) {
    px__winbe_terminate(sb);
    sb->state = PX__SB_ENDED;
    px_cond_broadcast(&sb->cond); /* a stray waiter must not sleep on */
  }
  while (sb->in_callback) /* on_output must not outlive release */
    px_cond_wait(&sb->cond, &be->lock);
  sb->t.release = px_now_ms();
  /* Off the list, the watchdog no longer changes zero or gave_up; after
   * give_up what is left stays (release closes the job). */
  over = sb->zero || sb->gave_up;
  px_mutex_unlock(&be->lock);
  if (!over)
    wait_empty(sb);
  sb->t.emptied = px_now_ms();
  px_mutex_lock(&be->lock);
  for (i = 0; i < 3; i++) { /* pending I/O completes aborted; refs free us */
    ps[i]->closed = 1;
    if (ps[i]->h && ps[i]->pending)
      CancelIoEx(ps[i]->h, NULL);
    px_handle_close(&ps[i]->h);
  }
  px_mutex_unlock(&be->lock);
  px_handle_close(&sb->child_in);
  px_handle_close(&sb->child_out);
  px_handle_close(&sb->child_err);
  px_handle_close(&sb->job); /* KILL_ON_JOB_CLOSE as a last resort */
  px_handle_close(&sb->thread);
  px_handle_close(&sb->process);
  px_handle_close(&sb->token);
  px_handle_close(&sb->base_token);
  px__winbe_desktop_close(sb); /* no process of the job is left on it */
  if (sb->dir && be->work_root_final &&
      px_win_remove_tree(sb->dir, be->work_root_final))
    PX_LOG(PX_LOG_ERROR, "job %s: directory not fully removed", sb->spec->key);
  free(sb->dir);
  sb->dir = NULL;
  LocalFree(sb->job_sid);
  sb->job_sid = NULL;
  if (sb->ac_sid)
    FreeSid(sb->ac_sid);
  sb->ac_sid = NULL;
  sb->t.released = px_now_ms();
  slow_end_log(sb);
  px_mutex_lock(&be->lock);
  px__winbe_unref(sb); /* the owner's reference */
  px_mutex_unlock(&be->lock);
}

static void win_release(px_sandbox_t *sb) {
  if (sb)
    teardown(sb);
}

const px_backend_ops_t px_backend_windows = {
    .name = "windows",
    .open = win_open,
    .close = win_close,
    .enforcement_available = win_enforcement,
    .prepare = win_prepare,
    .start = win_start,
    .wait = win_wait,
    .kill = win_kill,
    .release = win_release,
    .collect = px__winbe_collect};

const px_backend_ops_t *px_backend_native(void) { return &px_backend_windows; }

/* ---- test hooks (win_int.h; test-seam builds only) ------------------ */
#ifdef PX_TEST_SEAMS

HANDLE px__winbe_test_port(void *state) {
  return state ? ((px__winbe_t *)state)->port : NULL;
}
const WCHAR *px__winbe_test_dir(px_sandbox_t *sb) { return sb->dir; }
DWORD px__winbe_test_pid(px_sandbox_t *sb) { return sb->pid; }
HANDLE px__winbe_test_job(px_sandbox_t *sb) { return sb->job; }
ULONG_PTR px__winbe_test_key(px_sandbox_t *sb) { return sb->id; }
unsigned px__winbe_test_msgs(px_sandbox_t *sb, unsigned msg) {
  unsigned n;
  px_mutex_lock(&sb->be->lock);
  n = msg < 16 ? sb->msgs[msg] : 0;
  px_mutex_unlock(&sb->be->lock);
  return n;
}
#endif
