/* run.c - one container job's thread: the attach stream, the watchdog, the
 * outcome.
 *
 * DESIGN. The engine's non-TTY attach stream multiplexes stdout and stderr
 * in frames: an 8-byte header (stream 1 or 2, three zero bytes, the
 * payload length big-endian) and the payload. The thread reads it in
 * slices of at most one tick (opts.tick_ms, 50 ms), hands payloads to
 * on_output (honouring pauses and kill answers), and on every tick checks
 * the wall deadline and the container's cgroup accounting: CPU time (the
 * engine has no CPU-time limit, only a rate: the time limit is ours, as on
 * the native backends), refused forks at the pids limit and peak memory.
 * The stream ends when the container's processes are gone (or killed);
 * the exit code and the OOM flag then come from an inspect. The memory
 * limit itself is the kernel's (OOM kill in the container's cgroup).
 */
#include "ctr_int.h"

#include "px/px_error.h"
#include "px/px_log.h"

#include <string.h>

#define EXIT_POLL_MS 20
#define EXIT_WAIT_MS 10000
/* A remote engine's stats stream: one JSON object a line (a few KiB). */
#define STATS_LINE_MAX (256u * 1024u)

void px__ctr_violation(px_sandbox_t *sb, px_limit_t limit, uint64_t configured,
                       uint64_t observed, px_detector_t by) {
  px_mutex_lock(&sb->lock);
  if (sb->outcome.violation.limit == PX_LIMIT_NONE) {
    sb->outcome.violation.limit = limit;
    sb->outcome.violation.configured = configured;
    sb->outcome.violation.observed = observed;
    sb->outcome.violation.detected_by = by;
  }
  sb->outcome.killed = 1;
  sb->kill_req = 1;
  px_mutex_unlock(&sb->lock);
}

static void kill_thread(void *arg) {
  px_sandbox_t *sb = arg;
  px__ctr_dk_kill(sb->be->endpoint, sb->id);
}

void px__ctr_kill_pending(px_sandbox_t *sb) {
  int req;
  px_mutex_lock(&sb->lock);
  req = sb->kill_req;
  px_mutex_unlock(&sb->lock);
  if (!req || sb->kill_sent)
    return;
  sb->kill_sent = 1;
  /* POST /kill answers only once the container has stopped (the engine
   * waits up to 10 s), and it cannot stop while the engine is blocked
   * writing output nobody reads: the kill goes from a thread of its own
   * while this one keeps draining the stream. (release joins it.) */
  if (px_thread_create(&sb->killer, kill_thread, sb) == 0)
    sb->killer_started = 1;
  else
    px__ctr_dk_kill(sb->be->endpoint, sb->id);
}

typedef struct {
  unsigned char hdr[8];
  size_t hdr_have;
  uint64_t left;        /* payload bytes of the current frame still to come */
  px_stream_t stream;
  uint64_t pause_until; /* on_output asked for a pause */
  uint64_t peak_mem, peak_pids; /* peak_pids counts the gate */
  uint64_t cpu_ns;
  uint64_t oom_kills;
  px_buf_t sline;        /* remote: the stats stream's partial line */
  px__ctr_dk_cgstat_t scg;   /* remote: the latest sample */
  int have_scg;
  /* The gate's end record, per stream (index stream - 1): the bytes of
   * sb->end_prefix matched so far are held back from on_output; then its
   * status digits. The job is over when both records arrived. */
  size_t m[2];
  int in_status[2], seen[2], ended;
  int field[2];               /* 0: the status digits; 1: OOM kills;
                                 2: forks refused */
  long long end_status[2];
  uint64_t end_count[2][2];   /* the gate's counts of OOM kills and of
                                 forks refused in the container's cgroups */
  char out[4096]; /* bytes passed on, batched */
  size_t nout;
} demux_t;

static void emit(px_sandbox_t *sb, demux_t *d, px_stream_t stream,
                 const char *p, size_t n) {
  int a;
  if (n == 0 || !sb->ev.on_output)
    return;
  a = sb->ev.on_output(sb->ev.ctx, stream, p, n);
  if (a == PX_OUTPUT_KILL)
    px__ctr_violation(sb, PX_LIMIT_NONE, 0, 0, PX_DETECT_ENGINE);
  else if (a > 0)
    d->pause_until = px_now_ms() + (uint64_t)a;
}

static void put(px_sandbox_t *sb, demux_t *d, px_stream_t st, const char *p,
                size_t n) {
  while (n > 0) {
    size_t k = sizeof d->out - d->nout < n ? sizeof d->out - d->nout : n;
    memcpy(d->out + d->nout, p, k);
    d->nout += k;
    p += k;
    n -= k;
    if (d->nout == sizeof d->out) {
      emit(sb, d, st, d->out, d->nout);
      d->nout = 0;
    }
  }
}

/* One stream's bytes through its end-record matcher. The prefix starts
 * with \x1e, which occurs nowhere else in it, so a mismatch restarts at
 * that byte. Nothing after a stream's record is the job's. */
static void feed_stream(px_sandbox_t *sb, demux_t *d, px_stream_t st,
                        const char *p, size_t n) {
  const char *pre = sb->end_prefix;
  int k = st == PX_STREAM_STDERR;
  size_t i;
  for (i = 0; i < n && !d->seen[k]; i++) {
    char c = p[i];
    if (d->in_status[k]) { /* "<status> <oom kills> <forks refused>\n" */
      if (c >= '0' && c <= '9') {
        uint64_t *v = d->field[k] ? &d->end_count[k][d->field[k] - 1] : NULL;
        if (!v && d->end_status[k] < 100000)
          d->end_status[k] = d->end_status[k] * 10 + (c - '0');
        else if (v && *v < 1000000000u)
          *v = *v * 10 + (uint64_t)(c - '0');
      } else if (c == ' ' && d->field[k] < 2) {
        d->field[k]++;
      } else {
        d->seen[k] = c == '\n';
      }
      continue;
    }
    if (c == pre[d->m[k]]) {
      if (++d->m[k] == sizeof sb->end_prefix - 1) {
        d->in_status[k] = 1;
      }
      continue;
    }
    if (d->m[k] > 0) {
      put(sb, d, st, pre, d->m[k]);
      d->m[k] = 0;
      if (c == pre[0]) {
        d->m[k] = 1;
        continue;
      }
    }
    put(sb, d, st, &c, 1);
  }
  emit(sb, d, st, d->out, d->nout);
  d->nout = 0;
  d->ended = d->seen[0] && d->seen[1];
}

/* Feed n bytes of the stream through the frame parser. */
static void feed(px_sandbox_t *sb, demux_t *d, const char *p, size_t n) {
  while (n > 0 && !d->ended) {
    if (d->left == 0) {
      size_t k = 8 - d->hdr_have < n ? 8 - d->hdr_have : n;
      memcpy(d->hdr + d->hdr_have, p, k);
      d->hdr_have += k;
      p += k;
      n -= k;
      if (d->hdr_have == 8) {
        d->stream = d->hdr[0] == 2 ? PX_STREAM_STDERR : PX_STREAM_STDOUT;
        d->left = (uint64_t)d->hdr[4] << 24 | (uint64_t)d->hdr[5] << 16 |
                  (uint64_t)d->hdr[6] << 8 | d->hdr[7];
        d->hdr_have = 0;
      }
    } else {
      size_t k = d->left < n ? (size_t)d->left : n;
      feed_stream(sb, d, d->stream, p, k);
      d->left -= k;
      p += k;
      n -= k;
    }
  }
}

/* Whatever the stats stream has delivered, without waiting: each
 * complete line is a sample; the latest is kept in d->scg. */
static void drain_stats(px_sandbox_t *sb, demux_t *d) {
  char buf[16384];
  for (;;) {
    const char *nl;
    long n = sb->stats.conn
                 ? px__ctr_dk_stream_read(&sb->stats, buf, sizeof buf, 0)
                 : 0;
    if (n == 0 || (n < 0 && n != PX_ETIMEDOUT))
      px__ctr_dk_stream_close(&sb->stats); /* ended: the last sample stays */
    if (n <= 0)
      return;
    if (px_buf_append(&d->sline, buf, (size_t)n) || d->sline.len > STATS_LINE_MAX)
      px_buf_reset(&d->sline); /* not a stats stream: drop it */
    while (d->sline.len &&
           (nl = memchr(d->sline.data, '\n', d->sline.len)) != NULL) {
      size_t k = (size_t)(nl - d->sline.data) + 1;
      px__ctr_dk_cgstat_t cg;
      if (px__ctr_dk_stats_parse(d->sline.data, k - 1, &cg) == 0) {
        d->scg = cg;
        d->have_scg = 1;
      }
      memmove(d->sline.data, d->sline.data + k, d->sline.len - k);
      d->sline.len -= k;
    }
  }
}

/* The container's accounting: its cgroups on this host, or the latest
 * sample of a remote engine's stats stream. 1 when *cg was filled. */
static int accounting(px_sandbox_t *sb, demux_t *d, int final,
                      px__ctr_dk_cgstat_t *cg) {
  (void)final;
  if (sb->be->host_kernel)
    return px__ctr_dk_cgstat(sb->pid, cg) == 0;
  drain_stats(sb, d);
  *cg = d->scg;
  return d->have_scg;
}

/* One watchdog tick: wall and CPU deadlines, pids refusals, peaks. The
 * final one, after the stream ended, only takes the accounting. */
static void tick(px_sandbox_t *sb, demux_t *d, int final) {
  const px_limits_t *l = &sb->spec->limits;
  uint64_t now = px_now_ms();
  px__ctr_dk_cgstat_t cg;
  if (accounting(sb, d, final, &cg)) {
    if (cg.mem_peak > d->peak_mem)
      d->peak_mem = cg.mem_peak;
    if (cg.pids_current > d->peak_pids)
      d->peak_pids = cg.pids_current;
    /* Counters only grow; a stopped container's stats read 0. */
    if (cg.cpu_ns > sb->cpu0_ns && cg.cpu_ns - sb->cpu0_ns > d->cpu_ns)
      d->cpu_ns = cg.cpu_ns - sb->cpu0_ns;
    if (cg.oom_kills > d->oom_kills)
      d->oom_kills = cg.oom_kills;
    if (l->memory_bytes && cg.oom_kills > 0)
      px__ctr_violation(sb, PX_LIMIT_MEMORY, l->memory_bytes,
                        d->peak_mem > l->memory_bytes ? d->peak_mem
                                                      : l->memory_bytes,
                        PX_DETECT_OS);
    if (l->processes && cg.pids_max_hits > 0)
      px__ctr_violation(sb, PX_LIMIT_PROCESSES, l->processes,
                        d->peak_pids - 1 > l->processes ? d->peak_pids - 1
                                                        : l->processes,
                        PX_DETECT_OS);
    if (final)
      return;
    if (l->cpu_ms && d->cpu_ns / 1000000u >= l->cpu_ms)
      px__ctr_violation(sb, PX_LIMIT_CPU, l->cpu_ms, d->cpu_ns / 1000000u,
                        PX_DETECT_WATCHDOG);
  }
  if (!final && l->wall_ms && now - sb->start_ms >= l->wall_ms)
    px__ctr_violation(sb, PX_LIMIT_WALL, l->wall_ms, now - sb->start_ms,
                      PX_DETECT_WATCHDOG);
}

static void pump(px_sandbox_t *sb, demux_t *d) {
  char buf[16384];
  uint64_t next_tick = px_now_ms();
  int tick_ms = (int)sb->be->opts.tick_ms;
  for (;;) {
    uint64_t now = px_now_ms();
    long n;
    if (now >= next_tick) {
      tick(sb, d, 0);
      next_tick = now + (uint64_t)tick_ms;
    }
    if (now < d->pause_until) {
      px_sleep_ms(d->pause_until - now < (uint64_t)tick_ms
                      ? d->pause_until - now
                      : (uint64_t)tick_ms);
      continue;
    }
    px__ctr_kill_pending(sb);
    n = px__ctr_dk_stream_read(&sb->st, buf, sizeof buf, tick_ms);
    if (n == PX_ETIMEDOUT)
      continue;
    if (n <= 0)
      return; /* the container ended (killed, or the gate lost) */
    feed(sb, d, buf, (size_t)n);
    if (d->ended)
      return; /* the gate's end record: every job process is gone */
  }
}

/* The stream ended without the gate's record (a kill, or the engine lost
 * the container): wait until the engine says the container has stopped
 * (kill it if it has not within EXIT_WAIT_MS), then its state. */
static int final_state(px_sandbox_t *sb, px__ctr_dk_state_t *st) {
  uint64_t until = px_now_ms() + EXIT_WAIT_MS;
  int rc;
  while ((rc = px__ctr_dk_inspect(sb->be->endpoint, sb->id, st)) == 0 &&
         st->running) {
    if (px_now_ms() >= until) { /* once more, from here: the stream is
                                   over, nothing can block the engine */
      px__ctr_violation(sb, PX_LIMIT_NONE, 0, 0, PX_DETECT_WATCHDOG);
      sb->kill_sent = 1;
      px__ctr_dk_kill(sb->be->endpoint, sb->id);
      until = px_now_ms() + EXIT_WAIT_MS;
    }
    px__ctr_kill_pending(sb);
    px_sleep_ms(EXIT_POLL_MS);
  }
  return rc;
}

static void fill(px_sandbox_t *sb, const demux_t *d,
                 const px__ctr_dk_state_t *st, int rc) {
  px_outcome_t *o = &sb->outcome;
  const px_limits_t *l = &sb->spec->limits;
  o->usage.wall_ms = px_now_ms() - sb->start_ms;
  o->usage.cpu_ms = o->usage.user_ms = d->cpu_ns / 1000000u;
  o->usage.peak_memory_bytes = d->peak_mem;
  o->usage.processes = d->peak_pids > 1 ? d->peak_pids - 1 : 1;
  if (rc) {
    o->error = PX_ESANDBOX;
    px_snprintf(o->error_msg, sizeof o->error_msg,
                "the container engine lost the job: %s", px_strerror(rc));
    return;
  }
  if ((st->oom_killed || d->oom_kills) && l->memory_bytes &&
      o->violation.limit == PX_LIMIT_NONE) {
    o->violation.limit = PX_LIMIT_MEMORY;
    o->violation.configured = l->memory_bytes;
    o->violation.observed =
        d->peak_mem > l->memory_bytes ? d->peak_mem : l->memory_bytes;
    o->violation.detected_by = PX_DETECT_OS;
    o->killed = 1;
  }
  o->exited = !o->killed;
  o->exit_code = st->exit_code;
  if (st->exit_code > 128 && o->killed)
    o->term_signal = (int)(st->exit_code - 128);
}

void px__ctr_run(void *arg) {
  px_sandbox_t *sb = arg;
  demux_t d;
  px__ctr_dk_state_t st;
  int rc;
  memset(&d, 0, sizeof d);
  memset(&st, 0, sizeof st);
  pump(sb, &d);
  if (!d.ended) { /* killed: what a stream held back was the job's */
    emit(sb, &d, PX_STREAM_STDOUT, sb->end_prefix, d.m[0]);
    emit(sb, &d, PX_STREAM_STDERR, sb->end_prefix, d.m[1]);
  }
  PX_LOG(PX_LOG_DEBUG, "job %s: %s", sb->spec->key,
         d.ended ? "end record" : "stream ended");
  /* The final accounting: the gate keeps the cgroups after its record.
   * Without the record the container is gone or going, and its pid may
   * already name another process: this host's cgroups are not read. */
  if (d.ended || !sb->be->host_kernel)
    tick(sb, &d, 1);
  if (d.ended) { /* the gate's record: the job is over, its status known */
    st.exit_code = d.end_status[0];
    /* The gate read its cgroups' OOM kills and refused forks (gate.c):
     * the verdicts where this host cannot read them (a remote engine). */
    if (d.end_count[0][0] > d.oom_kills)
      d.oom_kills = d.end_count[0][0];
    if (d.end_count[0][1] && sb->spec->limits.processes)
      px__ctr_violation(sb, PX_LIMIT_PROCESSES, sb->spec->limits.processes,
                        sb->spec->limits.processes, PX_DETECT_OS);
    rc = 0;
  } else {
    rc = final_state(sb, &st);
    PX_LOG(PX_LOG_DEBUG, "job %s: container stopped", sb->spec->key);
  }
  px__ctr_dk_stream_close(&sb->stats);
  px_buf_free(&d.sline);
  px_mutex_lock(&sb->lock);
  fill(sb, &d, &st, rc);
  sb->gate_ended = d.ended;
  sb->done = 1;
  px_cond_broadcast(&sb->cv);
  px_mutex_unlock(&sb->lock);
}
