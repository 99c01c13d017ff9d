/* px_outguard.h - the output guard: what the engine does with every byte a
 * job writes to stdout and stderr.
 *
 *  - Capture: at most limit_bytes per stream are kept for the result.
 *    Overflow "kill": the job is killed (px_outguard_feed answers
 *    PX_OUTPUT_KILL) and the guard records violation {output, limit,
 *    observed bytes}. Overflow "truncate": the first ceil(limit/2) bytes
 *    and the last floor(limit/2) bytes are kept, everything between is
 *    read, counted and dropped, and the stream is marked truncated.
 *  - Rate: one token bucket per job (both streams) refilled at
 *    rate_bytes_per_s up to burst_bytes. Bytes already read are always
 *    accepted; when the bucket goes negative the answer is a pause in ms
 *    (back-pressure: the backend stops reading that pipe for that long, the
 *    pipe fills, the child blocks). rate 0 disables it.
 *  - Streaming (opts.emit set): captured bytes are forwarded as they come,
 *    valid UTF-8, never splitting a character: an incomplete sequence at
 *    the end of a chunk is held back until the next chunk or the end. Only
 *    the bytes that fit the capture limit are forwarded (a flood is not
 *    streamed past the limit either).
 *  - The final text of each stream is sanitized (px_utf8_sanitize): invalid
 *    UTF-8 becomes U+FFFD and output_lossy is set.
 *
 * Threading: a guard belongs to one job. px_outguard_feed is called from
 * the backend's output callback, which the px_sandbox.h contract never
 * calls concurrently for one job; flush/finish run after the backend's wait
 * returned. No locking inside.
 */
#ifndef PX_OUTGUARD_H
#define PX_OUTGUARD_H

#include "px/px_job.h"
#include "px/px_result.h"
#include "px/px_sandbox.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PX_OUTGUARD_DEFAULT_LIMIT (1024u * 1024u)      /* per stream */
#define PX_OUTGUARD_DEFAULT_RATE (1024u * 1024u)       /* bytes/s */
#define PX_OUTGUARD_DEFAULT_BURST (256u * 1024u)       /* bytes */
#define PX_OUTGUARD_MAX_PAUSE_MS 1000u /* one answer never pauses longer */

/* Receives a streamed chunk: valid UTF-8, len > 0. Called from inside
 * px_outguard_feed or px_outguard_flush. */
typedef void (*px_outguard_emit_fn)(void *ctx, px_stream_t stream,
                                    const char *data, size_t len);

typedef struct {
  uint64_t limit_bytes;      /* per stream; 0 keeps nothing */
  px_overflow_t overflow;
  uint64_t rate_bytes_per_s; /* 0: no rate limit */
  uint64_t burst_bytes;      /* bucket size (0: rate_bytes_per_s / 4) */
  px_outguard_emit_fn emit;  /* NULL: no streaming */
  void *emit_ctx;            /* borrowed */
} px_outguard_opts_t;

typedef struct px_outguard_s px_outguard_t;

/* Fill o with the defaults above (kill on overflow, no streaming). */
void px_outguard_opts_default(px_outguard_opts_t *o);

/* A guard for one job; the bucket starts full at now_ms. 0, PX_EINVAL or
 * PX_ENOMEM. *out owned by the caller (px_outguard_free). */
int px_outguard_new(const px_outguard_opts_t *opts, uint64_t now_ms,
                    px_outguard_t **out);
void px_outguard_free(px_outguard_t *g);

/* Account for len bytes read from `stream` at now_ms. Returns
 * PX_OUTPUT_CONTINUE, PX_OUTPUT_KILL (overflow in kill mode, and on every
 * call after it, and on out-of-memory: fail closed), or a pause in ms
 * (1..PX_OUTGUARD_MAX_PAUSE_MS) from the rate limit. */
int px_outguard_feed(px_outguard_t *g, px_stream_t stream, const char *data,
                     size_t len, uint64_t now_ms);

/* Streaming: emit whatever is still held back (an incomplete trailing
 * sequence, sanitized: it becomes U+FFFD; dropped instead when the stream
 * went past the limit, which is what cut it). Call once after the job
 * ended, before the result. */
void px_outguard_flush(px_outguard_t *g);

/* 1 and *v filled when the guard decided to kill the job (kill mode
 * overflow: limit PX_LIMIT_OUTPUT, detected_by PX_DETECT_ENGINE), else 0. */
int px_outguard_violation(const px_outguard_t *g, px_violation_t *v);

/* Total bytes seen on a stream (captured or not). */
uint64_t px_outguard_seen(const px_outguard_t *g, px_stream_t stream);
/* 1 once the guard asked the backend to kill the job. */
int px_outguard_killed(const px_outguard_t *g);

/* Move the captured text into r->out[], r->out_len[], r->out_truncated[]
 * and set r->output_lossy when something was replaced (r->out[i] must be
 * NULL; they become malloc'd, NUL-terminated, valid UTF-8, owned by r).
 * 0 or PX_ENOMEM. */
int px_outguard_finish(px_outguard_t *g, px_result_t *r);

#ifdef __cplusplus
}
#endif
#endif /* PX_OUTGUARD_H */
