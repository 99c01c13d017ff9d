/* px_encode.h - the service's messages to clients, encoded as JSON
 * (accepted, started, output, result, error, attestation, KB answers;
 * `status`, `describe` and `metrics` are the service's: service/info.c). See docs/protocol.md.
 */
#ifndef PX_ENCODE_H
#define PX_ENCODE_H

#include "px/px_attest.h"
#include "px/px_job.h"
#include "px/px_result.h"
#include "px/px_util.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- service -> client messages ----
 * Each returns compact JSON text, malloc'd (the caller free()s it), or
 * NULL on OOM. Fields come out in the documented order. Integers are
 * written as exact decimal text (not through a double), strings are
 * escaped, and any invalid UTF-8 in them is replaced by U+FFFD, so the
 * output is always valid UTF-8. */
/* cluster_id: the id a forwarded job has in the cluster (the gateway's);
 * NULL for a local job, whose `accepted` has no such member. */
char *px_encode_accepted(const char *id, uint64_t queue_position,
                         const char *cluster_id);
char *px_encode_started(const char *id);
/* stream: 1 stdout, 2 stderr (px_stream_t); data must already be valid
 * UTF-8 (the output guard sanitizes and never splits a character). */
char *px_encode_output(const char *id, int stream, const char *data,
                       size_t len);
/* The full result. output_lossy is true when r->output_lossy is set or
 * when stdout/stderr needed repair here. Strings may be NULL ("" or null
 * as documented). */
char *px_encode_result(const px_result_t *r);
/* id may be NULL (JSON null). */
char *px_encode_error(const char *id, px_code_t code, const char *message);
char *px_encode_pong(void);

/* Add to object o the array `name` of the names of the enforcement bits
 * set in mask (px_enforcement_name, bit order): for encoders of other
 * layers (the service's `status`). 0, or 1 on OOM. */
struct cJSON;
int px_encode_add_enforcement(struct cJSON *o, const char *name,
                              uint64_t mask);
/* `attestation` {time, state, duration_ms, checks}: the answer to an
 * `attest` request (docs/protocol.md). */
char *px_encode_attestation(const px_attest_report_t *r);

/* KB admin answers (see docs/protocol.md, "Knowledge base"). The arrays
 * are borrowed. */
char *px_encode_kb_snapshots(const px_kb_snapinfo_t *snaps, size_t n);
char *px_encode_kb_diff(const char *snapshot, const px_kb_change_t *changes,
                        size_t n);
/* `kb_restored` {kb: <the result's kb object>} */
char *px_encode_kb_restored(const px_kb_result_t *kb);
/* `kb_gc` with the collector's counters. */
char *px_encode_kb_gc(uint64_t snapshots_removed, uint64_t objects_removed,
                      uint64_t bytes_removed, uint64_t objects_kept,
                      uint64_t bytes_kept);

/* (service/proto/json_quote.c) Append s[0..len) to b as a JSON string literal with quotes. Bytes that
 * are not valid UTF-8 are replaced by U+FFFD (*lossy set if non-NULL);
 * control characters and NUL are escaped. 0 or PX_ENOMEM. */
int px_json_quote(px_buf_t *b, const char *s, size_t len, int *lossy);

/* base64, the wire form of binary file contents (request `files`, result
 * `files`). Strict base64 (RFC 4648, padded, canonical, no whitespace). Decodes
 * into a malloc'd buffer (*out, caller frees; never NULL on success).
 * 0, PX_EINVAL (malformed), PX_ERANGE (decoded size > max) or PX_ENOMEM. */
int px_base64_decode(const char *s, size_t len, size_t max,
                      unsigned char **out, size_t *out_len);

/* Padded base64 of data[0..len) as a malloc'd NUL-terminated string
 * (caller frees), or NULL on OOM or a size that would overflow. */
char *px_base64_encode(const unsigned char *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* PX_ENCODE_H */
