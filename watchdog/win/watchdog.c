/* watchdog.c - the thread that owns the completion port, and the sampler
 * thread beside it.
 *
 * DESIGN (after Chromium's TargetEventsThread): every job's Job Object is
 * associated with be->port under the key of its tracker (its id), and every
 * service-side pipe end under PX__KEY_IO; PX__KEY_QUIT and PX__KEY_WAKE are
 * commands. The watchdog thread handles, in one place:
 *  - job messages: NEW/EXIT/ABNORMAL_EXIT/ACTIVE_PROCESS_ZERO drive
 *    accounting and completion; the limit messages (memory, process count,
 *    job/process time) are verdicts detected by the OS;
 *  - pipe completions: bytes go to events->on_output; its answer continues,
 *    kills, or pauses the stream (the read is re-issued only when the pause
 *    has elapsed, so the pipe fills and the child blocks);
 *  - ticks (opts->tick_ms): the wall clock of every running job against
 *    its monotonic deadline, kills that have not taken yet, drains, ends.
 *    A tick makes no OS call per process of a running job, so under load
 *    no deadline, kill or drain waits behind a measurement.
 * Messages are hints the OS does not guarantee (Wine never posts the limit
 * ones), so the sampler thread re-measures every running job in turn - CPU
 * (user+kernel), memory (commit), process count, handles - and its job
 * directory (disk.c), outside be->lock on a duplicate of the job handle
 * (a spawn tree's sample costs calls per process: under Wine, seconds for
 * a few trees), and hands violations to the same verdict. A job ends when
 * no process is left (ACTIVE_PROCESS_ZERO, or a sample or kill check that
 * reads an empty list) and both output pipes reached EOF (a read waiting
 * on an empty pipe then is cancelled; any read after PX__DRAIN_MS).
 * Verdicts are decided in px__winbe_verdict only.
 */
#include "win_int.h"

#include "px/px_log.h"
#include "px/px_result.h"
#include "px/px_util.h"
#include "px/px_win_error.h"

#include <stdlib.h>
#include <string.h>

/* A process of the job exited. When what is left is only the hidden
 * console host the OS attached for our console child, the job's own work
 * is over: end the host now rather than wait for it to notice (under Wine
 * that takes tens of ms, on Windows a few), so ACTIVE_PROCESS_ZERO comes
 * at once. Not a kill of the job: its outcome stays the first process's. */
static void end_if_only_console_hosts(px_sandbox_t *sb) {
  uint64_t listed = 0, hosts = 0;
  /* The PID list and each image only, not a full sample: this runs under
   * be->lock for every EXIT_PROCESS, and a bomb sends many. */
  if (sb->zero || !sb->job || sb->kill_requested ||
      px__winbe_job_hosts(sb->job, &listed, &hosts) != 0)
    return;
  /* Only confirmed hosts: a process too new to report its image counts
   * as neither, and keeps the job alive. */
  if (listed > 0 && hosts == listed)
    PXW(TerminateJobObject)(sb->job, 0);
}

static void tracker_free(px_sandbox_t *sb) {
  px_cond_destroy(&sb->cond);
  free(sb);
}

void px__winbe_unref(px_sandbox_t *sb) {
  if (--sb->refs == 0)
    tracker_free(sb);
}

/* The watchdog's own kill of the job's tree (treekill.c), for when the
 * OS's job kill failed or did not empty the job: logged, and said in the
 * result (enforcement "watchdog_tree_kill") once it ended a process.
 * 0 when a whole round found nothing of the job alive. */
static int tree_kill_logged(px_sandbox_t *sb) {
  px__winbe_tree_report_t rep;
  int rc = px__winbe_tree_kill(sb, &rep);
  if (rep.by_job || rep.by_parent) {
    sb->outcome.enforcement |= PX_ENF(PX_ENF_TREE_KILL);
    PX_LOG(PX_LOG_WARN, "job %s: the watchdog's tree walk ended %u process(es) "
           "(%u by job membership, %u by parent) in %u round(s): %s",
           sb->spec->key, rep.by_job + rep.by_parent, rep.by_job, rep.by_parent,
           rep.rounds, rc == 0 ? "nothing of the job is left" : px_strerror(rc));
  } else if (rc != 0) {
    PX_LOG(PX_LOG_WARN, "job %s: the watchdog's tree walk cannot vouch for the "
           "job's processes after %u round(s) (%s, snapshot error %lu)",
           sb->spec->key, rep.rounds, px_strerror(rc),
           (unsigned long)rep.last_error);
  }
  return rc;
}

/* Kill every process of the job (under be->lock). Idempotent. */
void px__winbe_terminate(px_sandbox_t *sb) {
  if (sb->kill_requested || sb->state == PX__SB_ENDED)
    return;
  sb->kill_requested = 1;
  sb->kill_ms = px_now_ms();
  sb->outcome.killed = 1;
  if (sb->outcome.violation.limit == PX_LIMIT_NONE && sb->state != PX__SB_NEW)
    px_log_write(PX_LOG_CRITICAL, 0, 0, __FILE__, __LINE__, __func__,
                 "job %s killed on request (cancel, output guard, release)",
                 sb->spec->key);
  if (sb->job && PXW(TerminateJobObject)(sb->job, PX__KILL_EXIT_CODE)) {
    /* Prepare failed before the child's membership was confirmed: make
     * sure the suspended first process dies even if it is not in the job. */
    if (sb->state == PX__SB_NEW && sb->process)
      TerminateProcess(sb->process, PX__KILL_EXIT_CODE);
    return;
  }
  if (sb->job)
    (void)PX_LOG_WIN32(0, GetLastError(), "TerminateJobObject");
  /* The job could not be terminated (or the child never joined it): the
   * first process, then the whole tree by the watchdog's own walk; the
   * ticks walk again until nothing of the job is left (kill_progress). */
  if (sb->process)
    TerminateProcess(sb->process, PX__KILL_EXIT_CODE);
  sb->tree_kill = 1;
  (void)tree_kill_logged(sb);
}

void px__winbe_verdict(px_sandbox_t *sb, px_limit_t limit, uint64_t configured,
                       uint64_t observed, px_detector_t by) {
  if (sb->state == PX__SB_ENDED)
    return;
  if (sb->outcome.violation.limit == PX_LIMIT_NONE && !sb->kill_requested) {
    sb->outcome.violation.limit = limit;
    sb->outcome.violation.configured = configured;
    sb->outcome.violation.observed = observed;
    sb->outcome.violation.detected_by = by;
    px_log_write(PX_LOG_CRITICAL, 0, 0, __FILE__, __LINE__, __func__,
                 "job %s killed: %s limit %llu, observed %llu, detected by %s",
                 sb->spec->key, px_limit_name(limit),
                 (unsigned long long)configured, (unsigned long long)observed,
                 by == PX_DETECT_OS ? "os" : "watchdog");
  }
  px__winbe_terminate(sb);
}

static px_sandbox_t *find(px__winbe_t *be, ULONG_PTR key) {
  px_sandbox_t *sb;
  for (sb = be->jobs; sb; sb = sb->next)
    if (sb->id == key)
      return sb;
  return NULL;
}

/* ---- pipes ---------------------------------------------------------- */

static void read_issue(px_sandbox_t *sb, px__winbe_pipe_t *p) {
  if (p->closed || p->eof || p->pending || !p->h)
    return;
  memset(&p->ov, 0, sizeof p->ov);
  p->pending = 1;
  sb->refs++;
  if (!ReadFile(p->h, p->buf, sizeof p->buf, NULL, &p->ov) &&
      GetLastError() != ERROR_IO_PENDING) {
    /* Failed at once (broken pipe): no completion will come. */
    p->pending = 0;
    p->eof = 1;
    sb->refs--;
  }
}

static void stdin_issue(px_sandbox_t *sb) {
  px__winbe_pipe_t *p = &sb->in;
  size_t len = sb->spec->stdin_len;
  if (len == 0 || !sb->spec->stdin_data) {
    px_handle_close(&p->h); /* EOF at once */
    p->eof = 1;
    return;
  }
  if (len > 0x7FFFFFFF)
    len = 0x7FFFFFFF;
  memset(&p->ov, 0, sizeof p->ov);
  p->pending = 1;
  sb->refs++;
  if (!WriteFile(p->h, sb->spec->stdin_data, (DWORD)len, NULL, &p->ov) &&
      GetLastError() != ERROR_IO_PENDING) {
    p->pending = 0;
    sb->refs--;
    px_handle_close(&p->h);
    p->eof = 1;
  }
}

int px__winbe_io_begin(px__winbe_t *be, px_sandbox_t *sb) {
  px__winbe_pipe_t *ps[3] = {&sb->in, &sb->out, &sb->err};
  int i;
  for (i = 0; i < 3; i++)
    if (!PXW(CreateIoCompletionPort)(ps[i]->h, be->port, PX__KEY_IO, 0))
      return PX_LOG_WIN32(PX_ESPAWN, GetLastError(),
                          "CreateIoCompletionPort(pipe)");
  px_mutex_lock(&be->lock);
  stdin_issue(sb);
  read_issue(sb, &sb->out);
  read_issue(sb, &sb->err);
  px_mutex_unlock(&be->lock);
  return 0;
}

/* ---- completion ----------------------------------------------------- */

static void usage_update(px_sandbox_t *sb, const px__winbe_job_sample_t *s) {
  px_usage_t *u = &sb->outcome.usage;
  if (s->cpu_ms > u->cpu_ms) {
    u->cpu_ms = s->cpu_ms;
    u->user_ms = s->user_ms;
    u->kernel_ms = s->kernel_ms;
  }
  if (s->memory_bytes > u->peak_memory_bytes)
    u->peak_memory_bytes = s->memory_bytes;
  if (s->peak_bytes > u->peak_memory_bytes)
    u->peak_memory_bytes = s->peak_bytes;
  /* Not s->total: Wine counts a JOB_LIST child twice there. NEW_PROCESS
   * (deduplicated by pid) counts; the live count is a floor. */
  if (s->active > u->processes)
    u->processes = s->active;
}

static void finish(px_sandbox_t *sb) {
  px__winbe_job_sample_t s;
  DWORD code = 0;
  if (sb->job && px__winbe_job_sample(sb->job, &s) == 0)
    usage_update(sb, &s);
  if (sb->start_ms)
    sb->outcome.usage.wall_ms = px_now_ms() - sb->start_ms;
  if (sb->process && GetExitCodeProcess(sb->process, &code) &&
      code != STILL_ACTIVE) {
    sb->outcome.exit_code = (long long)code;
    sb->outcome.exited = !sb->outcome.killed || code != PX__KILL_EXIT_CODE;
  }
  if (sb->outcome.error) /* start failed: it never ran */
    sb->outcome.exited = 0;
  sb->t.ended = px_now_ms();
  sb->state = PX__SB_ENDED;
  px_cond_broadcast(&sb->cond);
}

static void maybe_finish(px_sandbox_t *sb) {
  if (sb->state != PX__SB_SPAWNED && sb->state != PX__SB_RUNNING)
    return;
  if (!sb->zero || sb->out.pending || sb->err.pending)
    return;
  if (!sb->out.eof || !sb->err.eof)
    return;
  finish(sb);
}

/* 1 when p's read waits on an empty pipe. */
static int caught_up(px__winbe_pipe_t *p) {
  DWORD avail = 0;
  return p->pending && p->h &&
         PeekNamedPipe(p->h, NULL, 0, NULL, &avail, NULL) && avail == 0;
}

static void drain_check(px_sandbox_t *sb, uint64_t now) {
  px__winbe_pipe_t *ps[2] = {&sb->out, &sb->err};
  uint64_t since;
  int i;
  if (!sb->zero)
    return;
  since = now > sb->zero_ms ? now - sb->zero_ms : 0;
  if (since < PX__DRAIN_QUIET_MS)
    return;
  /* Every process is gone and a pipe is still open: something outside the
   * job holds its other end (under Wine: a process it terminated while
   * creating it, whose handles live on). Nobody in the job can write any
   * more, so a read that waits on an empty pipe has all there was; past
   * PX__DRAIN_MS stop waiting in any case. */
  for (i = 0; i < 2; i++) {
    if (ps[i]->pending && ps[i]->h &&
        (since >= PX__DRAIN_MS || caught_up(ps[i])))
      CancelIoEx(ps[i]->h, &ps[i]->ov);
    else if (!ps[i]->pending && since >= PX__DRAIN_MS)
      ps[i]->eof = 1;
  }
}

static void on_io(px__winbe_t *be, px__winbe_pipe_t *p, DWORD bytes,
                  DWORD err) {
  px_sandbox_t *sb = p->sb;
  int r = PX_OUTPUT_CONTINUE;
  px_mutex_lock(&be->lock);
  p->pending = 0;
  if (p->stream == 0) { /* stdin written (or cancelled): EOF for the child */
    if (!p->closed)
      px_handle_close(&p->h);
    p->eof = 1;
    goto done;
  }
  if (err) { /* ERROR_BROKEN_PIPE: every writer closed; aborted: cancel */
    p->eof = 1;
    *(p == &sb->out ? &sb->t.eof_out : &sb->t.eof_err) = px_now_ms();
    goto done;
  }
  if (sb->released || p->closed) {
    p->eof = 1;
    goto done;
  }
  if (bytes && sb->events.on_output) {
    sb->in_callback = 1;
    px_mutex_unlock(&be->lock);
    r = sb->events.on_output(sb->events.ctx, (px_stream_t)p->stream, p->buf,
                             bytes);
    px_mutex_lock(&be->lock);
    sb->in_callback = 0;
    px_cond_broadcast(&sb->cond);
  }
  if (r == PX_OUTPUT_KILL)
    px__winbe_terminate(sb); /* the engine records why; keep draining */
  if (r > 0)
    p->resume_at = px_now_ms() + (uint64_t)r;
  else
    read_issue(sb, p);
done:
  maybe_finish(sb);
  px__winbe_unref(sb); /* the completed operation's reference */
  px_mutex_unlock(&be->lock);
}

/* ---- job messages --------------------------------------------------- */

/* 1 if NEW_PROCESS for this pid was already counted (remembers it). */
static int seen_before(px_sandbox_t *sb, DWORD pid) {
  unsigned i, n = sb->nseen < 64 ? sb->nseen : 64;
  for (i = 0; i < n; i++)
    if (sb->seen[i] == pid)
      return 1;
  sb->seen[sb->nseen++ % 64] = pid;
  return 0;
}

/* A process bomb is judged when it spawns, not at the next tick: the job's
 * NEW/EXIT messages count its live processes, and more than the limit +1
 * (the console host the OS may attach, as the OS limit allows) is a
 * breach for certain. Under load a tick comes late (sampling a job costs
 * a call per process), and a bomb grows in between; this costs nothing.
 * The tick's exact count catches what the messages miss. */
static void spawn_check(px_sandbox_t *sb) {
  const px_limits_t *l = &sb->spec->limits;
  if (sb->state != PX__SB_RUNNING || sb->kill_requested || !l->processes ||
      sb->live <= l->processes + 1)
    return;
  px__winbe_verdict(sb, PX_LIMIT_PROCESSES, l->processes, sb->live - 1,
                    PX_DETECT_WATCHDOG);
}

static int limit_message(DWORD msg) {
  return msg == JOB_OBJECT_MSG_END_OF_JOB_TIME ||
         msg == JOB_OBJECT_MSG_END_OF_PROCESS_TIME ||
         msg == JOB_OBJECT_MSG_ACTIVE_PROCESS_LIMIT ||
         msg == JOB_OBJECT_MSG_PROCESS_MEMORY_LIMIT ||
         msg == JOB_OBJECT_MSG_JOB_MEMORY_LIMIT;
}

static void on_job(px__winbe_t *be, ULONG_PTR key, DWORD msg, DWORD pid) {
  px_sandbox_t *sb;
  const px_limits_t *l;
  px__winbe_job_sample_t s;
  px_mutex_lock(&be->lock);
  sb = find(be, key);
  if (!sb) { /* released already: a late message */
    px_mutex_unlock(&be->lock);
    return;
  }
  l = &sb->spec->limits;
  if (msg < 16)
    sb->msgs[msg]++;
  memset(&s, 0, sizeof s);
  /* A limit message's verdict records what was observed: sample then
   * (rare; never under Wine), not for the per-process messages. */
  if (limit_message(msg) && sb->job && px__winbe_job_sample(sb->job, &s) == 0)
    usage_update(sb, &s);
  switch (msg) {
  case JOB_OBJECT_MSG_NEW_PROCESS:
    if (!seen_before(sb, pid)) {
      sb->outcome.usage.processes++;
      sb->live++;
      spawn_check(sb);
    }
    break;
  case JOB_OBJECT_MSG_EXIT_PROCESS:
    if (sb->live)
      sb->live--;
    end_if_only_console_hosts(sb);
    break;
  case JOB_OBJECT_MSG_ABNORMAL_EXIT_PROCESS:
    PX_LOG(PX_LOG_WARN, "job %s: process %lu exited abnormally", sb->spec->key,
           (unsigned long)pid);
    break;
  case JOB_OBJECT_MSG_ACTIVE_PROCESS_ZERO:
    if (!sb->zero) {
      sb->zero = 1;
      sb->zero_ms = px_now_ms();
    }
    break;
  case JOB_OBJECT_MSG_END_OF_JOB_TIME:
  case JOB_OBJECT_MSG_END_OF_PROCESS_TIME:
    px__winbe_verdict(sb, PX_LIMIT_CPU, l->cpu_ms,
                      s.cpu_ms > l->cpu_ms ? s.cpu_ms : l->cpu_ms, PX_DETECT_OS);
    break;
  case JOB_OBJECT_MSG_ACTIVE_PROCESS_LIMIT:
    px__winbe_verdict(sb, PX_LIMIT_PROCESSES, l->processes,
                      s.active > l->processes ? s.active : l->processes + 1,
                      PX_DETECT_OS);
    break;
  case JOB_OBJECT_MSG_PROCESS_MEMORY_LIMIT:
  case JOB_OBJECT_MSG_JOB_MEMORY_LIMIT: {
    uint64_t seen = s.memory_bytes > s.peak_bytes ? s.memory_bytes : s.peak_bytes;
    px__winbe_verdict(sb, PX_LIMIT_MEMORY, l->memory_bytes,
                      seen > l->memory_bytes ? seen : l->memory_bytes,
                      PX_DETECT_OS);
    break;
  }
  default: /* NOTIFICATION_LIMIT, JOB_CYCLE_TIME_LIMIT, SILO_TERMINATED */
    PX_LOG(PX_LOG_DEBUG, "job %s: job message %lu ignored", sb->spec->key,
           (unsigned long)msg);
    break;
  }
  maybe_finish(sb);
  px_mutex_unlock(&be->lock);
}

/* ---- ticks ---------------------------------------------------------- */

/* Processes against the limit: the confirmed ones, and those too new to
 * report their image but one while no console host is confirmed yet (it
 * may be that one). Under load a bomb's children stay unidentified for
 * long; not counting them let a tree grow far past its limit. */
static uint64_t procs_for_limit(const px__winbe_job_sample_t *s) {
  uint64_t unknown = s->unknown;
  if (s->hosts == 0 && unknown > 0)
    unknown--;
  return s->active + unknown;
}

static void check_limits(px_sandbox_t *sb, const px__winbe_job_sample_t *s) {
  const px_limits_t *l = &sb->spec->limits;
  uint64_t mem = s->memory_bytes > s->peak_bytes ? s->memory_bytes
                                                  : s->peak_bytes;
  /* The wall deadline is not here: it is the watchdog thread's
   * (tick_one), which a slow sample must not delay. */
  if (l->memory_bytes && mem > l->memory_bytes)
    px__winbe_verdict(sb, PX_LIMIT_MEMORY, l->memory_bytes, mem,
                      PX_DETECT_WATCHDOG);
  else if (l->cpu_ms && s->cpu_ms > l->cpu_ms)
    px__winbe_verdict(sb, PX_LIMIT_CPU, l->cpu_ms, s->cpu_ms,
                      PX_DETECT_WATCHDOG);
  else if (l->processes && procs_for_limit(s) > l->processes)
    px__winbe_verdict(sb, PX_LIMIT_PROCESSES, l->processes, procs_for_limit(s),
                      PX_DETECT_WATCHDOG);
  else if (sb->be->handles_cap && s->handles > sb->be->handles_cap)
    px__winbe_verdict(sb, PX_LIMIT_HANDLES, sb->be->handles_cap, s->handles,
                      PX_DETECT_WATCHDOG);
}

/* ---- a kill that does not take ----------------------------------- */

/* The state of a process the job lists: 'a' alive, 'x' exited (or gone,
 * or its pid is no longer the job's), '?' it cannot be opened. With
 * `terminate`, an alive one is terminated first. Wine 8 refuses
 * PROCESS_QUERY_LIMITED_INFORMATION on a process that never ran (one
 * being created when its job was terminated): there it is opened without
 * the membership check; while the job lists it, its pid cannot be reused. */
static char listed_state(px_sandbox_t *sb, DWORD pid, int terminate) {
  DWORD access = SYNCHRONIZE | (terminate ? PROCESS_TERMINATE : 0);
  BOOL in = FALSE;
  char c;
  HANDLE h = OpenProcess(access | PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid);
  if (h && IsProcessInJob(h, sb->job, &in) && !in) {
    px_handle_close(&h);
    return 'x'; /* a reused pid: the job's process is gone */
  }
  if (!h && GetLastError() == ERROR_INVALID_PARAMETER)
    return 'x'; /* no such process */
  if (!h && sb->be->wine)
    h = OpenProcess(access, FALSE, pid);
  if (!h)
    return '?';
  if (terminate && WaitForSingleObject(h, 0) == WAIT_TIMEOUT)
    TerminateProcess(h, PX__KILL_EXIT_CODE);
  c = WaitForSingleObject(h, 0) == WAIT_OBJECT_0 ? 'x' : 'a';
  px_handle_close(&h);
  return c;
}

/* Terminate what the job still lists: the job again, and each process it
 * lists. Wine 8's TerminateJobObject skips a process that has no running
 * thread yet (one being created at that moment); asking again, and each
 * process by itself, ends it (tests/win/test_storm_race.c). */
static void kill_again(px_sandbox_t *sb, const DWORD *pids, size_t n) {
  size_t i;
  if (!PXW(TerminateJobObject)(sb->job, PX__KILL_EXIT_CODE))
    sb->tree_kill = 1;
  for (i = 0; i < n; i++)
    (void)listed_state(sb, pids[i], 1);
}

/* 1 when every listed process has exited. Wine 8 keeps such a process in
 * the job's list after it is terminated, so the job never reports zero
 * processes: the list is stale and the job is over. */
static int all_exited(px_sandbox_t *sb, const DWORD *pids, size_t n) {
  size_t i;
  for (i = 0; i < n; i++)
    if (listed_state(sb, pids[i], 0) != 'x')
      return 0;
  return 1;
}

int px__winbe_job_over(px_sandbox_t *sb) {
  DWORD pids[256];
  size_t n = 0;
  if (px__winbe_job_pids(sb->job, pids, 256, &n) != 0)
    return 1; /* nothing more can be learnt */
  return n == 0 || all_exited(sb, pids, n);
}

/* The kill did not empty the job within PX__KILL_GRACE_MS: answer the job
 * anyway, with an error that says what was observed, and stop waiting for
 * its processes and pipes: a process that does not die, or a job whose
 * processes cannot be listed. Release closes the job (kill on close). */
static void give_up(px_sandbox_t *sb, const DWORD *pids, size_t n, int listed,
                    uint64_t since) {
  const px_violation_t *v = &sb->outcome.violation;
  char why[96], list[128];
  size_t i, off;
  list[0] = 0;
  for (i = 0; i < n && i < 8; i++) { /* the first few, and their state */
    off = strlen(list);
    px_snprintf(list + off, sizeof list - off, "%s%lu%c", i ? " " : "",
                (unsigned long)pids[i], listed_state(sb, pids[i], 0));
  }
  if (v->limit != PX_LIMIT_NONE)
    px_snprintf(why, sizeof why, "the %s limit (%llu, observed %llu)",
                px_limit_name(v->limit), (unsigned long long)v->configured,
                (unsigned long long)v->observed);
  else
    px_snprintf(why, sizeof why, "a kill on request");
  sb->outcome.error = PX_ESANDBOX;
  if (listed)
    px_snprintf(sb->outcome.error_msg, sizeof sb->outcome.error_msg,
                "after %s, %llu ms of terminating left %u process(es) in the "
                "job that the OS does not end (pids, a alive x exited ? "
                "unopenable: %s)", why,
                (unsigned long long)since, (unsigned)n, list);
  else
    px_snprintf(sb->outcome.error_msg, sizeof sb->outcome.error_msg,
                "after %s, the job's processes could not be listed for %llu ms",
                why, (unsigned long long)since);
  PX_LOG(PX_LOG_ERROR, "job %s: %s", sb->spec->key, sb->outcome.error_msg);
  sb->gave_up = 1;
  sb->zero = 1;
  sb->zero_ms = px_now_ms() - PX__DRAIN_MS; /* drain_check cancels the reads now */
}

/* A kill was requested and the job is not empty yet (under be->lock).
 * When the OS's job kill failed (sb->tree_kill), an empty or stale job
 * list is not enough: the watchdog's tree walk must also find nothing of
 * the job alive (descendants the list misses); under Wine it walks on
 * every tick of a kill that has not taken. */
static void kill_progress(px_sandbox_t *sb, uint64_t now) {
  DWORD pids[256];
  size_t n = 0;
  int listed = px__winbe_job_pids(sb->job, pids, 256, &n) == 0;
  /* kill_ms may be later than this tick's `now` (killed in this tick) */
  uint64_t since = now > sb->kill_ms ? now - sb->kill_ms : 0;
  if (listed && n == 0 && (!sb->tree_kill || tree_kill_logged(sb) == 0)) {
    sb->zero = 1; /* the kill took; its ZERO message may be lost */
    sb->zero_ms = now;
    return;
  }
  if (since < sb->be->tick_ms)
    return; /* the first kill gets a tick */
  if (listed && all_exited(sb, pids, n) &&
      (!(sb->tree_kill || sb->be->wine) || tree_kill_logged(sb) == 0)) {
    PX_LOG(PX_LOG_WARN, "job %s: %u process(es) still listed in the job have "
           "exited; the job is over", sb->spec->key, (unsigned)n);
    sb->zero = 1;
    sb->zero_ms = now;
    return;
  }
  if (!listed && tree_kill_logged(sb) == 0) {
    PX_LOG(PX_LOG_WARN, "job %s: its processes cannot be listed, and the "
           "watchdog's tree walk found none alive; the job is over",
           sb->spec->key);
    sb->zero = 1;
    sb->zero_ms = now;
    return;
  }
  if (since < PX__KILL_GRACE_MS) {
    kill_again(sb, pids, listed ? n : 0);
    if (sb->tree_kill || sb->be->wine)
      (void)tree_kill_logged(sb);
    return;
  }
  give_up(sb, pids, n, listed, since);
}

/* The watchdog thread's tick, under be->lock: only what costs no OS call
 * per process, so that no deadline waits behind a measurement. */
static void tick_one(px_sandbox_t *sb, uint64_t now) {
  px__winbe_pipe_t *ps[2] = {&sb->out, &sb->err};
  int i;
  for (i = 0; i < 2; i++)
    if (!ps[i]->pending && !ps[i]->eof && ps[i]->resume_at &&
        now >= ps[i]->resume_at) {
      ps[i]->resume_at = 0;
      read_issue(sb, ps[i]);
    }
  if (sb->state == PX__SB_RUNNING && !sb->zero && sb->job) {
    /* The deadline holds whether or not the job can be measured. */
    if (!sb->kill_requested && sb->spec->limits.wall_ms &&
        now >= sb->deadline_ms)
      px__winbe_verdict(sb, PX_LIMIT_WALL, sb->spec->limits.wall_ms,
                        now - sb->start_ms, PX_DETECT_WATCHDOG);
    if (sb->kill_requested)
      kill_progress(sb, now);
  }
  drain_check(sb, now);
  maybe_finish(sb);
}

/* ---- job directory caps (disk.c) ------------------------------------- */

/* The job's byte cap: its limits.disk_bytes (the request's, or the
 * policy default), at most windows.job_dir_bytes; that alone when the job
 * has none (a direct backend user). */
static uint64_t dir_cap(const px__winbe_t *be, const px_sandbox_t *sb) {
  uint64_t d = sb->spec->limits.disk_bytes;
  return d && d < be->dir_bytes ? d : be->dir_bytes;
}

/* One measurement's verdict, under be->lock. A directory that could not
 * be listed twice in a row fails closed (once may be a directory the job
 * is deleting). */
static void disk_verdict(px__winbe_t *be, px_sandbox_t *sb, int rc,
                         const px__winbe_dir_usage_t *u) {
  if (sb->state != PX__SB_RUNNING || sb->kill_requested)
    return;
  if (rc == PX_EACCES && ++sb->disk_denied < 2)
    return;
  if (rc == 0)
    sb->disk_denied = 0;
  if (rc == PX_EACCES) {
    PX_LOG(PX_LOG_ERROR, "job %s: a directory in the job directory cannot "
           "be listed; its size is unknown", sb->spec->key);
    px__winbe_verdict(sb, PX_LIMIT_DISK, dir_cap(be, sb), u->bytes,
                      PX_DETECT_WATCHDOG);
  } else if (rc == 0 && u->bytes > dir_cap(be, sb)) {
    px__winbe_verdict(sb, PX_LIMIT_DISK, dir_cap(be, sb), u->bytes,
                      PX_DETECT_WATCHDOG);
  } else if (rc == 0 && u->entries > be->dir_files) {
    px__winbe_verdict(sb, PX_LIMIT_FILES, be->dir_files, u->entries,
                      PX_DETECT_WATCHDOG);
  }
}

/* Measure the directories of running jobs that are due, every
 * PX__DISK_EVERY_MS. The walk runs outside be->lock (a full directory
 * takes a while and nothing else should wait for it): each tracker is held
 * by a reference and its path copied, since release frees sb->dir. */
static void disk_pass(px__winbe_t *be, uint64_t now) {
  enum { BATCH = 16 };
  px_sandbox_t *due[BATCH], *sb;
  WCHAR *dirs[BATCH];
  uint64_t caps[BATCH];
  size_t n = 0, i;
  px_mutex_lock(&be->lock);
  for (sb = be->jobs; sb && n < BATCH; sb = sb->next) {
    if (sb->state != PX__SB_RUNNING || sb->kill_requested || sb->zero ||
        !sb->dir || now < sb->disk_next_ms)
      continue;
    dirs[n] = _wcsdup(sb->dir);
    if (!dirs[n])
      break;
    sb->disk_next_ms = now + PX__DISK_EVERY_MS;
    caps[n] = dir_cap(be, sb);
    sb->refs++;
    due[n++] = sb;
  }
  px_mutex_unlock(&be->lock);
  for (i = 0; i < n; i++) {
    px__winbe_dir_usage_t u;
    int rc = px__winbe_dir_usage(dirs[i], caps[i], be->dir_files,
                                 &be->volume, &u);
    free(dirs[i]);
    px_mutex_lock(&be->lock);
    if (!due[i]->released)
      disk_verdict(be, due[i], rc, &u);
    px__winbe_unref(due[i]);
    px_mutex_unlock(&be->lock);
  }
}

static void tick(px__winbe_t *be) {
  px_sandbox_t *sb;
  uint64_t now = px_now_ms(), took;
  unsigned n = 0;
  px_mutex_lock(&be->lock);
  for (sb = be->jobs; sb; sb = sb->next, n++)
    tick_one(sb, now);
  px_mutex_unlock(&be->lock);
  /* A tick makes no call per process of a running job; if it is slow,
   * deadlines are late: say so. */
  took = px_now_ms() - now;
  if (took > 1000)
    PX_LOG(PX_LOG_WARN, "watchdog tick over %u jobs took %llu ms", n,
           (unsigned long long)took);
}

/* ---- the sampler: accounting outside be->lock --------------------- */

/* One measurement's verdict, under be->lock. */
static void sample_apply(px_sandbox_t *sb, int rc,
                         const px__winbe_job_sample_t *s) {
  if (sb->released || sb->state != PX__SB_RUNNING || sb->zero || rc != 0)
    return;
  usage_update(sb, s);
  if (!sb->kill_requested)
    check_limits(sb, s);
  if (s->listed == 0 && s->total > 0) { /* the ZERO message was lost */
    sb->zero = 1;
    sb->zero_ms = px_now_ms();
  }
  maybe_finish(sb);
}

/* Measure every running job once (CPU, memory, processes, handles). A
 * sample costs calls into the OS per process of the job (under Wine,
 * each a round trip to the wineserver: seconds for a few spawn trees
 * under load), so it runs on the sampler thread and outside be->lock,
 * on a duplicate of the job handle (release may close the job's own
 * meanwhile), the tracker held by a reference. */
static void sample_pass(px__winbe_t *be) {
  enum { BATCH = 64 };
  px_sandbox_t *due[BATCH], *sb;
  HANDLE jobs[BATCH];
  size_t n = 0, i;
  px_mutex_lock(&be->lock);
  for (sb = be->jobs; sb && n < BATCH; sb = sb->next) {
    if (sb->state != PX__SB_RUNNING || sb->zero || sb->kill_requested ||
        !sb->job ||
        !DuplicateHandle(GetCurrentProcess(), sb->job, GetCurrentProcess(),
                         &jobs[n], 0, FALSE, DUPLICATE_SAME_ACCESS))
      continue;
    sb->refs++;
    due[n++] = sb;
  }
  px_mutex_unlock(&be->lock);
  for (i = 0; i < n; i++) {
    px__winbe_job_sample_t s;
    int rc = px__winbe_job_sample(jobs[i], &s);
    px_handle_close(&jobs[i]);
    px_mutex_lock(&be->lock);
    sample_apply(due[i], rc, &s);
    px__winbe_unref(due[i]);
    px_mutex_unlock(&be->lock);
  }
}

/* The sampler thread: a sample pass and a disk pass, then tick_ms of
 * rest, until px__winbe_watchdog_stop. */
static void sampler_main(void *arg) {
  px__winbe_t *be = arg;
  px_mutex_lock(&be->lock);
  while (!be->sampler_quit) {
    uint64_t t0 = px_now_ms(), t1;
    px_mutex_unlock(&be->lock);
    sample_pass(be);
    t1 = px_now_ms();
    disk_pass(be, t1);
    if (px_now_ms() - t0 > 1000) /* CPU/memory verdicts come this late */
      PX_LOG(PX_LOG_DEBUG, "sampler pass: jobs %llu ms, directories %llu ms",
             (unsigned long long)(t1 - t0),
             (unsigned long long)(px_now_ms() - t1));
    px_mutex_lock(&be->lock);
    if (!be->sampler_quit)
      px_cond_timedwait(&be->sampler_cond, &be->lock, be->tick_ms);
  }
  px_mutex_unlock(&be->lock);
}

static void watchdog_main(void *arg) {
  px__winbe_t *be = arg;
  uint64_t next = px_now_ms() + be->tick_ms;
  for (;;) {
    DWORD bytes = 0, wait, err = 0;
    ULONG_PTR key = 0;
    OVERLAPPED *ov = NULL;
    uint64_t now = px_now_ms();
    BOOL ok;
    wait = next > now ? (DWORD)(next - now) : 0;
    ok = GetQueuedCompletionStatus(be->port, &bytes, &key, &ov, wait);
    if (!ok)
      err = GetLastError();
    if (!ok && ov == NULL) {
      if (err != WAIT_TIMEOUT) {
        (void)PX_LOG_WIN32(0, err, "GetQueuedCompletionStatus");
        px_sleep_ms(be->tick_ms);
      }
    } else if (key == PX__KEY_QUIT) {
      break;
    } else if (key == PX__KEY_IO) {
      on_io(be, (px__winbe_pipe_t *)(void *)ov, bytes, err);
    } else if (key >= PX__KEY_FIRST_JOB) {
      on_job(be, key, bytes, (DWORD)(ULONG_PTR)ov);
    } /* PX__KEY_WAKE: just loop */
    if (px_now_ms() >= next) {
      tick(be);
      next = px_now_ms() + be->tick_ms;
    }
  }
}

int px__winbe_watchdog_start(px__winbe_t *be) {
  int rc;
  if ((rc = px_thread_create(&be->thread, watchdog_main, be)) != 0)
    return rc;
  return px_thread_create(&be->sampler, sampler_main, be);
}

void px__winbe_watchdog_stop(px__winbe_t *be) {
  if (be->sampler) {
    px_mutex_lock(&be->lock);
    be->sampler_quit = 1;
    px_cond_broadcast(&be->sampler_cond);
    px_mutex_unlock(&be->lock);
    px_thread_join(be->sampler);
    be->sampler = NULL;
  }
  if (!be->thread)
    return;
  if (!PXW(PostQueuedCompletionStatus)(be->port, 0, PX__KEY_QUIT, NULL)) {
    (void)PX_LOG_WIN32(0, GetLastError(), "PostQueuedCompletionStatus(quit)");
    PostQueuedCompletionStatus(be->port, 0, PX__KEY_QUIT, NULL);
  }
  px_thread_join(be->thread);
  be->thread = NULL;
}
