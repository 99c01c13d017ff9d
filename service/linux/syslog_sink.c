/* syslog_sink.c - log entries to syslog (the journal picks them up). */
#include "linux/daemon.h"

#include <syslog.h>

static int prio(px_log_level_t l) {
  switch (l) {
  case PX_LOG_TRACE:
  case PX_LOG_DEBUG: return LOG_DEBUG;
  case PX_LOG_INFO: return LOG_INFO;
  case PX_LOG_WARN: return LOG_WARNING;
  case PX_LOG_ERROR: return LOG_ERR;
  default: return LOG_CRIT;
  }
}

void px_syslog_sink(void *ctx, const px_log_entry_t *e) {
  (void)ctx;
  syslog(prio(e->level), "%s (%s:%d)", e->msg, e->func, e->line);
}

void px_syslog_open(void) {
  openlog("phoenix-executor", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}
