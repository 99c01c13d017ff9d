/* px_log_file.h - a size-capped rotating text log (base/log_file.c):
 * "executor.log" rotates to "executor.log.1" .. ".N" when it passes the
 * size cap. Portable (stdio only); used by the Windows service and the
 * Linux daemon. */
#ifndef PX_LOG_FILE_H
#define PX_LOG_FILE_H

#include "px/px_log.h"

#include <stdint.h>

typedef struct px_log_file_s px_log_file_t;

/* Open (append) path; rotate at max_bytes keeping `keep` old files.
 * 0 or PX_E*. */
int px_log_file_open(const char *path, uint64_t max_bytes, unsigned keep,
                     px_log_file_t **out);
/* The sink to register with px_log_add_sink (ctx = the px_log_file_t). */
void px_log_file_sink(void *ctx, const px_log_entry_t *entry);
/* Flush and close; NULL is fine. Remove the sink first. */
void px_log_file_close(px_log_file_t *f);

#endif
