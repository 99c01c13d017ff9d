/* log.c - PX_LOG: level check, formatting once, fan-out to sinks.
 *
 * DESIGN: sinks are a fixed table guarded by a mutex taken only while an
 * entry is delivered, so sinks see entries one at a time and need no locks
 * of their own. Formatting happens into a stack buffer; an entry longer than
 * PX_LOG_LINE_MAX is truncated with "...".
 */
#include "px/px_log.h"

#include "px/px_error.h"
#include "px/px_os.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define PX_LOG_LINE_MAX 2048
#define MAX_SINKS 8

volatile int px_log_threshold = PX_LOG_INFO;

typedef struct {
  px_log_sink_fn fn;
  void *ctx;
  px_log_level_t min_level;
} sink_t;

static sink_t sinks[MAX_SINKS];
static int nsinks = -1; /* -1: never configured -> stderr fallback */
static px_mutex_t sink_lock;
static int lock_ready;

static const char *const level_names[] = {"trace", "debug", "info",    "warn",
                                          "error", "critical", "off"};

static void ensure_lock(void) {
  /* The first call happens during single-threaded start-up (main sets the
   * level or adds a sink before any thread exists). */
  if (!lock_ready) {
    px_mutex_init(&sink_lock);
    lock_ready = 1;
  }
}

void px_log_set_level(px_log_level_t level) { px_log_threshold = (int)level; }

int px_log_level_parse(const char *name, px_log_level_t *out) {
  int i;
  for (i = 0; i <= PX_LOG_OFF; i++) {
    if (name && strcmp(name, level_names[i]) == 0) {
      *out = (px_log_level_t)i;
      return 0;
    }
  }
  return PX_EINVAL;
}

const char *px_log_level_name(px_log_level_t level) {
  if ((int)level < 0 || level > PX_LOG_OFF)
    return "?";
  return level_names[level];
}

int px_log_add_sink(px_log_sink_fn fn, void *ctx, px_log_level_t min_level) {
  int rc = 0;
  ensure_lock();
  px_mutex_lock(&sink_lock);
  if (nsinks < 0)
    nsinks = 0;
  if (nsinks >= MAX_SINKS) {
    rc = PX_ENOSPC;
  } else {
    sinks[nsinks].fn = fn;
    sinks[nsinks].ctx = ctx;
    sinks[nsinks].min_level = min_level;
    nsinks++;
  }
  px_mutex_unlock(&sink_lock);
  return rc;
}

void px_log_clear_sinks(void) {
  ensure_lock();
  px_mutex_lock(&sink_lock);
  nsinks = 0;
  px_mutex_unlock(&sink_lock);
}

static const char *base_name(const char *path) {
  const char *p = path, *s;
  for (s = path; *s; s++)
    if (*s == '/' || *s == '\\')
      p = s + 1;
  return p;
}

void px_log_stderr_sink(void *ctx, const px_log_entry_t *e) {
  char ts[32];
  uint64_t ms = px_wall_ms();
  time_t secs = (time_t)(ms / 1000);
  struct tm tm;
  (void)ctx;
#ifdef _WIN32
  gmtime_s(&tm, &secs);
#else
  gmtime_r(&secs, &tm);
#endif
  strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
  fprintf(stderr, "%s.%03uZ %-5s %s:%d %s: %s\n", ts, (unsigned)(ms % 1000),
          px_log_level_name(e->level), base_name(e->file), e->line, e->func,
          e->msg);
  fflush(stderr);
}

void px_log_write(px_log_level_t level, unsigned event_id, long long os_error,
                  const char *file, int line, const char *func,
                  const char *fmt, ...) {
  char buf[PX_LOG_LINE_MAX];
  px_log_entry_t e;
  va_list ap;
  int n, i;

  if ((int)level < px_log_threshold)
    return;
  va_start(ap, fmt);
  n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0)
    snprintf(buf, sizeof buf, "(unformattable log entry)");
  else if ((size_t)n >= sizeof buf)
    memcpy(buf + sizeof buf - 4, "...", 4);

  e.level = level;
  e.event_id = event_id;
  e.file = file;
  e.line = line;
  e.func = func;
  e.msg = buf;
  e.os_error = os_error;

  ensure_lock();
  px_mutex_lock(&sink_lock);
  if (nsinks < 0) {
    px_log_stderr_sink(NULL, &e);
  } else {
    for (i = 0; i < nsinks; i++)
      if (level >= sinks[i].min_level)
        sinks[i].fn(sinks[i].ctx, &e);
  }
  px_mutex_unlock(&sink_lock);
}

char *px_log_quote(char *out, size_t outsz, const char *s, size_t len) {
  static const char hex[] = "0123456789abcdef";
  size_t o = 0, i;
  if (outsz < 8) {
    if (outsz)
      out[0] = '\0';
    return out;
  }
  out[o++] = '"';
  for (i = 0; i < len && s[i]; i++) {
    unsigned char c = (unsigned char)s[i];
    char tmp[4];
    size_t tl = 0;
    if (c == '"' || c == '\\') {
      tmp[0] = '\\';
      tmp[1] = (char)c;
      tl = 2;
    } else if (c < 0x20 || c >= 0x7f) {
      tmp[0] = '\\';
      tmp[1] = 'x';
      tmp[2] = hex[c >> 4];
      tmp[3] = hex[c & 15];
      tl = 4;
    } else {
      tmp[0] = (char)c;
      tl = 1;
    }
    if (o + tl + 5 > outsz) { /* room for ..." and NUL */
      memcpy(out + o, "...", 3);
      o += 3;
      break;
    }
    memcpy(out + o, tmp, tl);
    o += tl;
  }
  out[o++] = '"';
  out[o] = '\0';
  return out;
}
