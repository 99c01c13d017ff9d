/* daemon.h - pieces of the Linux daemon (service/linux). */
#ifndef PX_LINUX_DAEMON_H
#define PX_LINUX_DAEMON_H

#include "px/px_config.h"
#include "px/px_log.h"

/* Send a sd_notify(3) state ("READY=1", "STOPPING=1"); 0 when sent or
 * when not under systemd, -1 on failure (logged). */
int px_sd_notify(const char *state);

void px_syslog_open(void);
/* A px_log sink writing to syslog; ctx unused. */
void px_syslog_sink(void *ctx, const px_log_entry_t *entry);

/* Create the state directories that are missing (state_dirs.c): the KB
 * store (0700) when a KB is configured and the directory of log_file
 * (0750; may be NULL). 0, or PX_EIO with the path and reason on stderr. */
int px_linux_state_dirs(const px_config_t *cfg, const char *log_file);

#endif
