/* fake_backend.c - px_backend_fake: an in-process backend that runs no program.
 *
 * It follows the px_sandbox.h contract faithfully (one thread per started
 * job, kill from any thread at any time between prepare and release,
 * idempotent; wait fills the outcome exactly once; no callback after wait
 * returned; wall deadlines enforced by its own "watchdog") so the engine's
 * tests exercise the same paths a real backend drives.
 *
 * A job is scripted by its argv: argv[0] must be "fake" (anything else
 * fails at start with PX_ESPAWN, like a missing program), and every further
 * element is one step, run in order:
 *   exit N          end with exit code N (later steps are not run)
 *   sleep MS        sleep MS ms (cut short by kill or the wall deadline)
 *   hang            block until killed or the wall deadline
 *   print-out N     write N bytes to stdout ("0123456789" repeated) in
 *   print-err N       chunks of 4096, honouring pauses and kill answers
 *   out:TEXT        write TEXT to stdout / stderr; "\xHH" and "\\" escapes
 *   err:TEXT
 *   stdin           copy the job's stdin to stdout
 *   hog-memory      memory violation detected_by os (observed = limit + 1)
 *   spin            burn "CPU" (cpu time = wall time) until limits.cpu_ms:
 *                   cpu violation detected_by watchdog
 *   fork-bomb       processes violation detected_by os
 *   sandbox-error   the backend loses the job: outcome.error = PX_ESANDBOX
 *   fail-prepare    prepare fails with PX_ESANDBOX (nothing runs)
 *   argv-too-long   prepare fails with PX_ERANGE, as a real backend does
 *                   for a command line over the platform limit
 *   fail-start      start fails with PX_ESPAWN (nothing runs)
 *   fail-create     start fails with PX_EPROCESS, as a real backend does
 *                   when the OS refuses to create the process (nothing runs)
 * Without an exit step the job exits 0. An unknown step fails prepare with
 * PX_EINVAL (a typo in a test must not pass silently).
 * Limits: wall_ms (0 = none) is enforced with violation wall_time
 * detected_by watchdog. Usage: wall time measured, cpu = time spent in
 * spin, peak memory 4 MiB (the limit for hog-memory), 1 process.
 */
#include "px/px_sandbox.h"

#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_os.h"
#include "px/px_util.h"

#include <stdlib.h>
#include <string.h>

#define FAKE_CHUNK 4096
#define FAKE_PEAK_MEMORY (4u * 1024u * 1024u)

typedef enum {
  STEP_EXIT,
  STEP_SLEEP,
  STEP_HANG,
  STEP_PRINT,
  STEP_TEXT,
  STEP_STDIN,
  STEP_HOG,
  STEP_SPIN,
  STEP_FORK,
  STEP_SBERR,
  STEP_FAIL_PREPARE,
  STEP_ARGV_TOO_LONG,
  STEP_FAIL_START,
  STEP_FAIL_CREATE
} step_kind_t;

typedef struct {
  step_kind_t kind;
  px_stream_t stream;
  uint64_t n;   /* exit code, ms or byte count */
  char *text;   /* STEP_TEXT, decoded; owned */
  size_t len;
} step_t;

typedef struct {
  px_backend_opts_t opts;
} fake_state_t;

struct px_sandbox_s {
  const px_job_spec_t *spec; /* borrowed until release */
  px_sandbox_events_t ev;
  step_t *steps;             /* owned */
  size_t nsteps;
  px_mutex_t m;
  px_cond_t c;
  int killed;        /* the kill op was called (or the job killed itself) */
  int done;          /* the job thread finished the outcome */
  int waited;
  int started;       /* start was called (once only) */
  px_thread_t thr;   /* owned; joined by wait or release */
  int have_thread;
  uint64_t t0;       /* start, monotonic ms */
  uint64_t cpu_ms;
  px_outcome_t out;
};

/* ---- script parsing ---- */

static int parse_u64(const char *s, uint64_t *out) {
  uint64_t v = 0;
  if (!*s)
    return PX_EINVAL;
  for (; *s; s++) {
    if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
      return PX_EINVAL;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  *out = v;
  return 0;
}

static int decode_text(const char *s, step_t *st) {
  size_t n = strlen(s), o = 0, i;
  char *t = malloc(n + 1);
  if (!t)
    return PX_ENOMEM;
  for (i = 0; i < n; i++) {
    if (s[i] == '\\' && s[i + 1] == '\\') {
      t[o++] = '\\';
      i++;
    } else if (s[i] == '\\' && s[i + 1] == 'x' &&
               px_hexval((unsigned char)s[i + 2]) >= 0 &&
               px_hexval((unsigned char)s[i + 3]) >= 0) {
      t[o++] = (char)(px_hexval((unsigned char)s[i + 2]) * 16 +
                      px_hexval((unsigned char)s[i + 3]));
      i += 3;
    } else {
      t[o++] = s[i];
    }
  }
  st->text = t;
  st->len = o;
  return 0;
}

static int parse_step(const char *a, step_t *st) {
  static const struct {
    const char *word;
    step_kind_t kind;
  } plain[] = {{"hang", STEP_HANG},         {"stdin", STEP_STDIN},
               {"hog-memory", STEP_HOG},    {"spin", STEP_SPIN},
               {"fork-bomb", STEP_FORK},    {"sandbox-error", STEP_SBERR},
               {"fail-prepare", STEP_FAIL_PREPARE},
               {"argv-too-long", STEP_ARGV_TOO_LONG},
               {"fail-start", STEP_FAIL_START},
               {"fail-create", STEP_FAIL_CREATE}};
  size_t i;
  memset(st, 0, sizeof *st);
  for (i = 0; i < sizeof plain / sizeof plain[0]; i++)
    if (strcmp(a, plain[i].word) == 0) {
      st->kind = plain[i].kind;
      return 0;
    }
  if (strncmp(a, "exit ", 5) == 0) {
    st->kind = STEP_EXIT;
    return parse_u64(a + 5, &st->n);
  }
  if (strncmp(a, "sleep ", 6) == 0) {
    st->kind = STEP_SLEEP;
    return parse_u64(a + 6, &st->n);
  }
  if (strncmp(a, "print-out ", 10) == 0 || strncmp(a, "print-err ", 10) == 0) {
    st->kind = STEP_PRINT;
    st->stream = a[6] == 'o' ? PX_STREAM_STDOUT : PX_STREAM_STDERR;
    return parse_u64(a + 10, &st->n);
  }
  if (strncmp(a, "out:", 4) == 0 || strncmp(a, "err:", 4) == 0) {
    st->kind = STEP_TEXT;
    st->stream = a[0] == 'o' ? PX_STREAM_STDOUT : PX_STREAM_STDERR;
    return decode_text(a + 4, st);
  }
  return PX_EINVAL;
}

static void free_steps(step_t *steps, size_t n) {
  size_t i;
  for (i = 0; i < n; i++)
    free(steps[i].text);
  free(steps);
}

/* ---- the job thread ---- */

typedef enum { WAKE_TIME = 0, WAKE_KILLED, WAKE_DEADLINE } wake_t;

/* Sleep until monotonic time `until` (UINT64_MAX: forever), the wall
 * deadline or a kill, whichever comes first. */
static wake_t sleep_until(px_sandbox_t *sb, uint64_t until) {
  uint64_t wall = sb->spec->limits.wall_ms;
  uint64_t deadline = wall ? sb->t0 + wall : UINT64_MAX;
  wake_t w = WAKE_TIME;
  px_mutex_lock(&sb->m);
  for (;;) {
    uint64_t now = px_now_ms(), end = until < deadline ? until : deadline;
    if (sb->killed) {
      w = WAKE_KILLED;
      break;
    }
    if (now >= deadline) {
      w = WAKE_DEADLINE;
      break;
    }
    if (now >= end)
      break;
    (void)px_cond_timedwait(&sb->c, &sb->m, end - now);
  }
  px_mutex_unlock(&sb->m);
  return w;
}

static void set_violation(px_sandbox_t *sb, px_limit_t lim, uint64_t conf,
                          uint64_t obs, px_detector_t by) {
  sb->out.violation.limit = lim;
  sb->out.violation.configured = conf;
  sb->out.violation.observed = obs;
  sb->out.violation.detected_by = by;
  sb->out.killed = 1;
}

/* Hand `len` bytes to on_output, honouring its answer. */
static wake_t emit(px_sandbox_t *sb, px_stream_t s, const char *p,
                   size_t len) {
  int r;
  if (!sb->ev.on_output || len == 0)
    return WAKE_TIME;
  r = sb->ev.on_output(sb->ev.ctx, s, p, len);
  if (r == PX_OUTPUT_KILL) {
    px_mutex_lock(&sb->m);
    sb->killed = 1; /* the engine records why */
    px_mutex_unlock(&sb->m);
    return WAKE_KILLED;
  }
  if (r > 0)
    return sleep_until(sb, px_now_ms() + (uint64_t)r);
  return sleep_until(sb, 0); /* only checks kill and deadline */
}

static wake_t run_print(px_sandbox_t *sb, const step_t *st) {
  char chunk[FAKE_CHUNK];
  uint64_t left = st->n;
  size_t i;
  for (i = 0; i < sizeof chunk; i++)
    chunk[i] = (char)('0' + i % 10);
  while (left > 0) {
    size_t n = left < sizeof chunk ? (size_t)left : sizeof chunk;
    wake_t w = emit(sb, st->stream, chunk, n);
    if (w != WAKE_TIME)
      return w;
    left -= n;
  }
  return WAKE_TIME;
}

static wake_t run_spin(px_sandbox_t *sb) {
  uint64_t limit = sb->spec->limits.cpu_ms, t = px_now_ms();
  wake_t w;
  if (limit == 0)
    w = sleep_until(sb, UINT64_MAX);
  else
    w = sleep_until(sb, t + (limit > sb->cpu_ms ? limit - sb->cpu_ms : 0));
  sb->cpu_ms += px_now_ms() - t;
  if (w == WAKE_TIME) {
    set_violation(sb, PX_LIMIT_CPU, limit, sb->cpu_ms, PX_DETECT_WATCHDOG);
    return WAKE_KILLED;
  }
  return w;
}

/* Run one step. WAKE_TIME: go on; anything else ends the script. *exit_now
 * is set by an exit step. */
static wake_t run_step(px_sandbox_t *sb, const step_t *st, int *exit_now) {
  const px_limits_t *lim = &sb->spec->limits;
  switch (st->kind) {
  case STEP_EXIT:
    sb->out.exit_code = (long long)st->n;
    *exit_now = 1;
    return WAKE_TIME;
  case STEP_SLEEP:
    return sleep_until(sb, px_now_ms() + st->n);
  case STEP_HANG:
    return sleep_until(sb, UINT64_MAX);
  case STEP_PRINT:
    return run_print(sb, st);
  case STEP_TEXT:
    return emit(sb, st->stream, st->text, st->len);
  case STEP_STDIN:
    return emit(sb, PX_STREAM_STDOUT, (const char *)sb->spec->stdin_data,
                sb->spec->stdin_len);
  case STEP_HOG:
    set_violation(sb, PX_LIMIT_MEMORY, lim->memory_bytes,
                  lim->memory_bytes + 1, PX_DETECT_OS);
    sb->out.usage.peak_memory_bytes = lim->memory_bytes;
    return WAKE_KILLED;
  case STEP_SPIN:
    return run_spin(sb);
  case STEP_FORK:
    set_violation(sb, PX_LIMIT_PROCESSES, lim->processes, lim->processes + 1,
                  PX_DETECT_OS);
    sb->out.usage.processes = lim->processes + 1;
    return WAKE_KILLED;
  case STEP_SBERR:
    sb->out.error = PX_ESANDBOX;
    px_strlcpy(sb->out.error_msg, "fake: the watchdog lost the job",
               sizeof sb->out.error_msg);
    return WAKE_KILLED;
  case STEP_FAIL_PREPARE:
  case STEP_ARGV_TOO_LONG:
  case STEP_FAIL_START:
  case STEP_FAIL_CREATE:
    return WAKE_TIME; /* handled by prepare/start */
  }
  return WAKE_TIME;
}

static void job_thread(void *arg) {
  px_sandbox_t *sb = arg;
  wake_t w = WAKE_TIME;
  int exit_now = 0;
  size_t i;
  px_mutex_lock(&sb->m);
  w = sb->killed ? WAKE_KILLED : WAKE_TIME;
  px_mutex_unlock(&sb->m);
  if (w == WAKE_TIME && sb->ev.on_started)
    sb->ev.on_started(sb->ev.ctx);
  for (i = 0; i < sb->nsteps && w == WAKE_TIME && !exit_now; i++)
    w = run_step(sb, &sb->steps[i], &exit_now);
  if (w == WAKE_DEADLINE)
    set_violation(sb, PX_LIMIT_WALL, sb->spec->limits.wall_ms,
                  px_now_ms() - sb->t0, PX_DETECT_WATCHDOG);
  if (w == WAKE_TIME) {
    sb->out.exited = 1;
  } else {
    sb->out.killed = 1;
    sb->out.exit_code = -1;
  }
  sb->out.usage.wall_ms = px_now_ms() - sb->t0;
  sb->out.usage.cpu_ms = sb->out.usage.user_ms = sb->cpu_ms;
  if (sb->out.usage.peak_memory_bytes == 0)
    sb->out.usage.peak_memory_bytes = FAKE_PEAK_MEMORY;
  if (sb->out.usage.processes == 0)
    sb->out.usage.processes = 1;
  px_mutex_lock(&sb->m);
  sb->done = 1; /* after this, no more callbacks */
  px_cond_broadcast(&sb->c);
  px_mutex_unlock(&sb->m);
}

/* ---- backend operations ---- */

static int fake_open(const px_backend_opts_t *opts, void **state) {
  fake_state_t *st = calloc(1, sizeof *st);
  if (!st)
    return PX_ENOMEM;
  if (opts)
    st->opts = *opts;
  *state = st;
  return 0;
}

static void fake_close(void *state) { free(state); }

static uint64_t fake_enforcement(void *state) {
  (void)state;
  return PX_ENF(PX_ENF_WATCHDOG_POLL);
}

static int has_step(const px_sandbox_t *sb, step_kind_t k) {
  size_t i;
  for (i = 0; i < sb->nsteps; i++)
    if (sb->steps[i].kind == k)
      return 1;
  return 0;
}

static int fake_prepare(void *state, const px_job_spec_t *spec,
                        const px_sandbox_events_t *events,
                        px_sandbox_t **out) {
  px_sandbox_t *sb = NULL;
  size_t i;
  int rc;
  (void)state;
  *out = NULL;
  if (!spec || !events)
    return PX_EINVAL;
  sb = calloc(1, sizeof *sb);
  if (!sb)
    return PX_ENOMEM;
  sb->spec = spec;
  sb->ev = *events;
  if (spec->argc > 1) {
    sb->steps = calloc(spec->argc - 1, sizeof *sb->steps);
    if (!sb->steps) {
      free(sb);
      return PX_ENOMEM;
    }
  }
  for (i = 1; i < spec->argc; i++) {
    rc = parse_step(spec->argv[i], &sb->steps[sb->nsteps]);
    if (rc != 0) {
      PX_LOG(PX_LOG_ERROR, "fake backend: bad step %u of job %s", (unsigned)i,
             spec->key);
      free_steps(sb->steps, sb->nsteps);
      free(sb);
      return rc;
    }
    sb->nsteps++;
  }
  if (has_step(sb, STEP_FAIL_PREPARE) || has_step(sb, STEP_ARGV_TOO_LONG)) {
    int err = has_step(sb, STEP_ARGV_TOO_LONG) ? PX_ERANGE : PX_ESANDBOX;
    free_steps(sb->steps, sb->nsteps);
    free(sb);
    return err;
  }
  if (px_mutex_init(&sb->m) != 0 || px_cond_init(&sb->c) != 0) {
    free_steps(sb->steps, sb->nsteps);
    free(sb);
    return PX_ENOMEM;
  }
  *out = sb;
  return 0;
}

static int fake_start(px_sandbox_t *sb) {
  int rc;
  if (!sb || sb->started)
    return PX_EINVAL;
  sb->started = 1;
  if (sb->spec->argc == 0 || strcmp(sb->spec->argv[0], "fake") != 0 ||
      has_step(sb, STEP_FAIL_START))
    return PX_ESPAWN;
  if (has_step(sb, STEP_FAIL_CREATE))
    return PX_EPROCESS;
  sb->out.enforcement = PX_ENF(PX_ENF_WATCHDOG_POLL);
  sb->t0 = px_now_ms();
  rc = px_thread_create(&sb->thr, job_thread, sb);
  if (rc != 0)
    return PX_ESPAWN;
  sb->have_thread = 1;
  return 0;
}

static int fake_wait(px_sandbox_t *sb, px_outcome_t *out) {
  if (!sb || !out || !sb->have_thread || sb->waited)
    return PX_EINVAL;
  px_mutex_lock(&sb->m);
  while (!sb->done)
    px_cond_wait(&sb->c, &sb->m);
  px_mutex_unlock(&sb->m);
  px_thread_join(sb->thr);
  sb->have_thread = 0;
  sb->waited = 1;
  *out = sb->out;
  return 0;
}

static int fake_kill(px_sandbox_t *sb) {
  if (!sb)
    return PX_EINVAL;
  px_mutex_lock(&sb->m);
  sb->killed = 1;
  px_cond_broadcast(&sb->c);
  px_mutex_unlock(&sb->m);
  return 0;
}

static void fake_release(px_sandbox_t *sb) {
  if (!sb)
    return;
  fake_kill(sb);
  if (sb->have_thread)
    px_thread_join(sb->thr); /* the thread ends promptly once killed */
  px_cond_destroy(&sb->c);
  px_mutex_destroy(&sb->m);
  free_steps(sb->steps, sb->nsteps);
  free(sb);
}

const px_backend_ops_t px_backend_fake = {
    .name = "fake",
    .open = fake_open,
    .close = fake_close,
    .enforcement_available = fake_enforcement,
    .prepare = fake_prepare,
    .start = fake_start,
    .wait = fake_wait,
    .kill = fake_kill,
    .release = fake_release};
