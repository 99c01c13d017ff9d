/* px_log.h - leveled logging with pluggable sinks.
 *
 * PX_LOG(level, fmt, ...) tests the level before formatting anything, and
 * every entry carries file, line and function. Sinks (stderr, a rotating
 * file, the Windows Event Log, syslog/journal) register with px_log_add_sink.
 * Never log payloads; quote untrusted strings with px_log_quote.
 */
#ifndef PX_LOG_H
#define PX_LOG_H

#include "px/px_attr.h"

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  PX_LOG_TRACE = 0,
  PX_LOG_DEBUG = 1,
  PX_LOG_INFO = 2,
  PX_LOG_WARN = 3,
  PX_LOG_ERROR = 4,
  PX_LOG_CRITICAL = 5,
  PX_LOG_OFF = 6
} px_log_level_t;

/* One formatted entry as handed to sinks. `event_id` is 0 or one of the
 * PX_EVENT_* operational event IDs (installer/messages.mc). */
typedef struct {
  px_log_level_t level;
  unsigned event_id;
  const char *file;
  int line;
  const char *func;
  const char *msg; /* formatted, NUL-terminated, no trailing newline */
  long long os_error; /* raw errno / GetLastError() value, 0 if none */
} px_log_entry_t;

typedef void (*px_log_sink_fn)(void *ctx, const px_log_entry_t *entry);

/* The current threshold; entries below it are dropped before formatting. */
extern volatile int px_log_threshold;

void px_log_set_level(px_log_level_t level);
/* Parse "trace".."critical"/"off"; returns 0 or PX_EINVAL. */
int px_log_level_parse(const char *name, px_log_level_t *out);
const char *px_log_level_name(px_log_level_t level);

/* Register a sink that receives entries at or above min_level. Returns 0,
 * or PX_ENOSPC when the sink table (8 entries) is full. ctx is borrowed. */
int px_log_add_sink(px_log_sink_fn fn, void *ctx, px_log_level_t min_level);
/* Remove every sink (tests, shutdown). */
void px_log_clear_sinks(void);

/* The stderr sink; ctx unused. One line per entry:
 * "2026-11-25T22:10:00.123Z WARN  file.c:42 func: message". */
void px_log_stderr_sink(void *ctx, const px_log_entry_t *entry);

void px_log_write(px_log_level_t level, unsigned event_id, long long os_error,
                  const char *file, int line, const char *func,
                  const char *fmt, ...)
    PX_PRINTF(7, 8)
    ;

/* Copy `s` (up to `len` bytes) into `out` as a double-quoted C-style
 * literal, escaping control bytes, quotes and non-ASCII, truncating with
 * "..." so that it fits `outsz`. Returns out. For untrusted strings. */
char *px_log_quote(char *out, size_t outsz, const char *s, size_t len);

#define PX_LOG(level, ...)                                                   \
  do {                                                                       \
    if ((int)(level) >= px_log_threshold)                                    \
      px_log_write((level), 0, 0, __FILE__, __LINE__, __func__, __VA_ARGS__); \
  } while (0)

/* Log an operational event with its message-table ID. */
#define PX_LOG_EVENT(level, event_id, ...)                                   \
  do {                                                                       \
    if ((int)(level) >= px_log_threshold)                                    \
      px_log_write((level), (event_id), 0, __FILE__, __LINE__, __func__,     \
                   __VA_ARGS__);                                             \
  } while (0)

/* Log an errno failure of OS call `call` at ERROR level and evaluate to
 * `code` (a PX_E* value), for `return PX_LOG_ERRNO(PX_EJOB, errno, "...");` */
#define PX_LOG_ERRNO(code, err, call)                                        \
  (px_log_write(PX_LOG_ERROR, 0, (long long)(err), __FILE__, __LINE__,       \
                __func__, "%s failed: errno %d", (call), (int)(err)),        \
   (code))

#ifdef __cplusplus
}
#endif
#endif /* PX_LOG_H */
