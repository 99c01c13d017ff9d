/* engine_run.c - one job's life on its worker: KB snapshot, prepare,
 * start, wait, release, the verdict, KB finish, and the one result.
 * Also the event delivery helpers shared with engine.c.
 */
#include "engine_int.h"

#include "px/px_error.h"
#include "px/px_events.h"
#include "px/px_log.h"
#include "px/px_util.h"

#include <stdlib.h>
#include <string.h>

/* ---- events ---- */

void px__engine_emit(px__engine_job_t *job, const px_engine_event_t *ev) {
  px_engine_client_t *c = job->client;
  px_mutex_lock(&c->cb_lock);
  if (!c->closed && !job->result_sent)
    c->on_event(c->ctx, ev);
  px_mutex_unlock(&c->cb_lock);
}

/* The `started` event, once, before any output and never after the
 * result. Called by on_started, by on_output and by the worker. */
static void ensure_started(px__engine_job_t *job) {
  px_engine_client_t *c = job->client;
  px_mutex_lock(&c->cb_lock);
  if (!job->started_sent && !job->result_sent) {
    px_engine_event_t ev;
    job->started_sent = 1;
    job->t_started_ms = px_now_ms();
    memset(&ev, 0, sizeof ev);
    ev.type = PX_ENGINE_EV_STARTED;
    ev.id = job->j.spec.id;
    if (!c->closed)
      c->on_event(c->ctx, &ev);
  }
  px_mutex_unlock(&c->cb_lock);
}

static const char *reason_name(job_reason_t why) {
  return why == REASON_CANCEL ? "cancel" : why == REASON_ABORT ? "abort"
                                                               : "none";
}

void px__engine_kill_locked(px_engine_t *eng, px__engine_job_t *job,
                            job_reason_t why) {
  char qid[80];
  if (job->state != JOB_RUNNING || job->reason != REASON_NONE)
    return;
  job->reason = why;
  px_log_quote(qid, sizeof qid, job->j.spec.id, strlen(job->j.spec.id));
  PX_LOG(PX_LOG_WARN, "killing job %s (key %s, client %s): %s", qid,
         job->j.spec.key, job->client->name, reason_name(why));
  if (job->sb)
    px__engine_backend(eng, job)->kill(job->sb); /* checksrc: allow - op */
}

/* ---- the one result ---- */

/* The operational event of a limit kill (installer/messages.mc). */
static unsigned kill_event(px_limit_t limit) {
  switch (limit) {
  case PX_LIMIT_MEMORY: return PX_EVENT_JOB_KILLED_MEMORY;
  case PX_LIMIT_CPU: return PX_EVENT_JOB_KILLED_CPU;
  case PX_LIMIT_WALL: return PX_EVENT_JOB_KILLED_WALL;
  case PX_LIMIT_PROCESSES: return PX_EVENT_JOB_KILLED_PROCESSES;
  case PX_LIMIT_OUTPUT: return PX_EVENT_JOB_KILLED_OUTPUT;
  case PX_LIMIT_DISK:
  case PX_LIMIT_FILES: return PX_EVENT_JOB_KILLED_DISK;
  case PX_LIMIT_HANDLES: return PX_EVENT_JOB_KILLED_HANDLES;
  default: return PX_EVENT_JOB_SANDBOX_FAILED;
  }
}

static void log_end(const px__engine_job_t *job, const px_result_t *r) {
  char qid[80];
  if ((int)(r->status == PX_STATUS_KILLED ? PX_LOG_CRITICAL : PX_LOG_INFO) <
      px_log_threshold)
    return;
  px_log_quote(qid, sizeof qid, r->id, strlen(r->id));
  if (r->status == PX_STATUS_KILLED) {
    const char *lim = px_limit_name(r->violation.limit);
    PX_LOG_EVENT(PX_LOG_CRITICAL, kill_event(r->violation.limit),
           "job %s (key %s, client %s) killed: %s limit %llu observed %llu",
           qid, job->j.spec.key, job->client->name, lim ? lim : "?",
           (unsigned long long)r->violation.configured,
           (unsigned long long)r->violation.observed);
  } else {
    PX_LOG(PX_LOG_INFO,
           "job %s (key %s, client %s) ended: %s exit %lld wall %llu ms "
           "cpu %llu ms%s%s",
           qid, job->j.spec.key, job->client->name,
           px_status_name(r->status), r->exit_code,
           (unsigned long long)r->usage.wall_ms,
           (unsigned long long)r->usage.cpu_ms,
           r->error_code != PX_CODE_NONE ? " code " : "",
           r->error_code != PX_CODE_NONE ? px_code_name(r->error_code) : "");
  }
}

/* Deliver r as the job's one result, then release the job. */
static void deliver(px_engine_t *eng, px__engine_job_t *job, px_result_t *r) {
  px_engine_client_t *c = job->client;
  px_engine_event_t ev;
  memset(&ev, 0, sizeof ev);
  ev.type = PX_ENGINE_EV_RESULT;
  ev.id = r->id;
  ev.result = r;
  px_mutex_lock(&c->cb_lock);
  job->result_sent = 1;
  px__engine_account_locked_cb(eng, job, r);
  if (!c->closed)
    c->on_event(c->ctx, &ev);
  px_mutex_unlock(&c->cb_lock);
  log_end(job, r);
  px_result_free(r);
  px__engine_job_done(eng, job);
}

static void result_init(px_result_t *r, px__engine_job_t *job) {
  memset(r, 0, sizeof *r);
  px_strlcpy(r->id, job->j.spec.id, sizeof r->id);
  r->exit_code = -1;
  r->audit = job->j.audit; /* moved */
  r->naudit = job->j.naudit;
  job->j.audit = NULL;
  job->j.naudit = 0;
}

void px__engine_finish_unrun(px_engine_t *eng, px__engine_job_t *job,
                             px_status_t status) {
  px_result_t r;
  result_init(&r, job);
  r.status = status;
  deliver(eng, job, &r);
}

/* ---- backend callbacks (backend threads) ---- */

static void cb_started(void *ctx) { ensure_started(ctx); }

static int cb_output(void *ctx, px_stream_t stream, const char *data,
                     size_t len) {
  px__engine_job_t *job = ctx;
  int was = px_outguard_killed(job->guard), rc;
  ensure_started(job);
  rc = px_outguard_feed(job->guard, stream, data, len, px_now_ms());
  if (rc == PX_OUTPUT_KILL && !was)
    PX_LOG(PX_LOG_WARN, "killing job key %s: output over %llu bytes",
           job->j.spec.key,
           (unsigned long long)px_outguard_seen(job->guard, stream));
  return rc;
}

static void guard_emit(void *ctx, px_stream_t stream, const char *data,
                       size_t len) {
  px__engine_job_t *job = ctx;
  px_engine_event_t ev;
  memset(&ev, 0, sizeof ev);
  ev.type = PX_ENGINE_EV_OUTPUT;
  ev.id = job->j.spec.id;
  ev.stream = stream;
  ev.data = data;
  ev.len = len;
  px__engine_emit(job, &ev);
}

/* ---- the run ---- */

typedef struct {
  int err;           /* first failure, 0 if none */
  const char *stage; /* where it failed */
  int ran;           /* wait filled oc */
  px_outcome_t oc;
  px_collector_t *files; /* owned; when the run asked for files */
} run_t;

static job_reason_t reason_of(px_engine_t *eng, px__engine_job_t *job) {
  job_reason_t r;
  px_mutex_lock(&eng->lock);
  r = job->reason;
  px_mutex_unlock(&eng->lock);
  return r;
}

static int guard_new(px_engine_t *eng, px__engine_job_t *job) {
  px_outguard_opts_t o = eng->o.output;
  if (job->j.spec.limits.output_bytes)
    o.limit_bytes = job->j.spec.limits.output_bytes;
  o.emit = job->j.stream ? guard_emit : NULL;
  o.emit_ctx = job;
  return px_outguard_new(&o, px_now_ms(), &job->guard);
}

const px_backend_ops_t *px__engine_backend(const px_engine_t *eng,
                                           const px__engine_job_t *job) {
  return job->j.spec.image ? eng->o.container : eng->o.backend;
}

/* The job's output files, before release removes its directory. */
static void collect_files(const px_backend_ops_t *ops, px_sandbox_t *sb,
                          px_collector_t *c) {
  int rc;
  if (!ops->collect) {
    px_collector_stopped(c, "unsupported: this backend cannot collect files");
    return;
  }
  if ((rc = ops->collect(sb, c)) != 0) {
    px_collector_stopped(c, "walk failed: see the service log");
    PX_LOG(PX_LOG_WARN, "collect: %s", px_strerror(rc));
  }
}

/* prepare, start, wait, release; the kill op may run while job->sb is set. */
static void run_sandbox(px_engine_t *eng, px__engine_job_t *job, run_t *rn) {
  const px_backend_ops_t *ops = px__engine_backend(eng, job);
  void *state = job->j.spec.image ? eng->cstate : eng->bstate;
  px_sandbox_events_t ev = {job, cb_output, cb_started};
  px_sandbox_t *sb = NULL;
  job_reason_t why;
  rn->stage = "prepare";
  if (!ops || !state) { /* an image runtime without a container engine */
    rn->err = PX_ENOENGINE;
    return;
  }
  rn->err = ops->prepare(state, &job->j.spec, &ev, &sb);
  if (rn->err == 0 && !sb)
    rn->err = PX_ESANDBOX; /* a backend bug: fail closed */
  if (rn->err != 0)
    return;
  px_mutex_lock(&eng->lock);
  job->sb = sb;
  why = job->reason; /* a cancel/scram during prepare found no sandbox */
  px_mutex_unlock(&eng->lock);
  if (why == REASON_NONE) {
    rn->stage = "start";
    rn->err = ops->start(sb);
    if (rn->err == 0) {
      ensure_started(job); /* for backends that report nothing first */
      rn->stage = "wait";
      rn->err = ops->wait(sb, &rn->oc);
      rn->ran = rn->err == 0;
    }
  }
  if (rn->ran && rn->files) /* whatever the verdict: a killed job's files
                               often explain the kill */
    collect_files(ops, sb, rn->files);
  px_mutex_lock(&eng->lock);
  job->state = JOB_FINISHING;
  job->sb = NULL; /* no kill op from now on */
  px_mutex_unlock(&eng->lock);
  ops->release(sb);
}

static px_code_t failure_code(int err) {
  if (err == PX_EPROCESS) /* the OS call that creates or starts it failed */
    return PX_CODE_PROCESS_CREATE_FAILED;
  if (err == PX_ESPAWN || err == PX_ENOENT)
    return PX_CODE_SPAWN_FAILED;
  return err == PX_ENOMEM ? PX_CODE_INTERNAL : PX_CODE_SANDBOX_FAILED;
}

/* The verdict (see px_engine.h). */
static void decide(px__engine_job_t *job, job_reason_t why, const run_t *rn,
                   px_result_t *r) {
  const px_outcome_t *oc = &rn->oc;
  px_violation_t gv;
  if (rn->ran) {
    r->usage = oc->usage;
    r->enforcement = oc->enforcement | PX_ENF(PX_ENF_OUTPUT_GUARD);
    if (job->eng->degraded) /* the attestation found a gap (px_attest.h) */
      r->enforcement |= PX_ENF(PX_ENF_DEGRADED);
  }
  if (why == REASON_ABORT) {
    r->status = PX_STATUS_ABORTED;
  } else if (why == REASON_CANCEL) {
    r->status = PX_STATUS_CANCELLED;
  } else if (rn->err == PX_ERANGE && strcmp(rn->stage, "prepare") == 0) {
    /* The backend's command line limit (px_sandbox.h): refused before
     * anything ran. */
    r->status = PX_STATUS_REJECTED;
    px_result_set_error(r, PX_CODE_ARGV_TOO_LONG,
                        "the command line built from the runtime and args is "
                        "longer than this platform allows");
  } else if (rn->err != 0) {
    r->status = PX_STATUS_ERROR;
    px_result_set_error(r, failure_code(rn->err), "%s failed: %s", rn->stage,
                        px_strerror(rn->err));
  } else if (oc->error != 0) {
    r->status = PX_STATUS_ERROR;
    px_result_set_error(r, PX_CODE_SANDBOX_FAILED, "sandbox failed: %s",
                        oc->error_msg[0] ? oc->error_msg
                                         : px_strerror(oc->error));
  } else if (px_outguard_violation(job->guard, &gv)) {
    r->status = PX_STATUS_KILLED;
    r->violation = gv;
  } else if (oc->violation.limit != PX_LIMIT_NONE) {
    r->status = PX_STATUS_KILLED;
    r->violation = oc->violation;
  } else if (oc->killed || !oc->exited) {
    r->status = PX_STATUS_ERROR;
    px_result_set_error(r, PX_CODE_SANDBOX_FAILED,
                        "the backend ended the job without a reason");
  } else {
    r->status = oc->exit_code == 0 ? PX_STATUS_OK : PX_STATUS_NONZERO_EXIT;
    r->exit_code = oc->exit_code;
  }
}

static int want_rollback(px_kb_rollback_t mode, px_status_t st) {
  return mode == PX_KB_ROLLBACK_ALWAYS ||
         (mode == PX_KB_ROLLBACK_ON_VIOLATION && st == PX_STATUS_KILLED);
}

void px__engine_run(px_engine_t *eng, px__engine_job_t *job) {
  const px_kb_hooks_t *kb = &eng->o.kb;
  px_result_t r;
  run_t rn;
  void *snap = NULL;
  int have_snap = 0;
  memset(&rn, 0, sizeof rn);
  result_init(&r, job);
  rn.stage = "output guard";
  rn.err = guard_new(eng, job);
  if (rn.err == 0 && job->j.spec.collect.npatterns) {
    rn.stage = "collect";
    rn.err = px_collector_new(&job->j.spec.collect, &rn.files);
  }
  if (rn.err == 0 && kb->snapshot && reason_of(eng, job) == REASON_NONE) {
    rn.stage = "kb snapshot";
    rn.err = kb->snapshot(kb->ctx, &job->j.spec, &snap);
    have_snap = rn.err == 0;
  }
  if (rn.err == 0 && reason_of(eng, job) == REASON_NONE)
    run_sandbox(eng, job, &rn);
  px_mutex_lock(&eng->lock);
  job->state = JOB_FINISHING;
  px_mutex_unlock(&eng->lock);
  /* No output callback can come any more: the backend's wait returned or
   * it never started. */
  if (job->guard) {
    px_outguard_flush(job->guard);
    if (rn.ran && px_outguard_finish(job->guard, &r) != 0 && rn.err == 0) {
      rn.err = PX_ENOMEM;
      rn.stage = "output capture";
    }
  }
  decide(job, job->reason, &rn, &r);
  if (rn.files) {
    if (!rn.ran)
      px_collector_stopped(rn.files, "the job did not run");
    px_collector_finish(rn.files, &r);
    px_collector_free(rn.files);
  }
  if (have_snap && kb->finish)
    kb->finish(kb->ctx, snap, want_rollback(job->j.kb_rollback, r.status),
               &r.kb);
  deliver(eng, job, &r);
}
