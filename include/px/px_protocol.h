/* px_protocol.h - the wire protocol: PXF1 framing, client messages parsed
 * into typed requests, and service messages encoded as JSON.
 *
 * Framing (every stream transport): 12-byte header then payload.
 *   bytes 0-3  "PXF1"
 *   bytes 4-7  payload length, uint32 little-endian
 *   bytes 8-11 CRC-32 (IEEE, zlib's crc32()) of the payload, uint32 LE
 * The payload is one UTF-8 JSON object. ZeroMQ carries the same objects as
 * the last message frame without the header. See docs/protocol.md.
 */
#ifndef PX_PROTOCOL_H
#define PX_PROTOCOL_H

#include "px_attest.h"
#include "px_job.h"
#include "px_kb.h"
#include "px_result.h"
#include "px_util.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PX_FRAME_MAGIC "PXF1"
#define PX_FRAME_HEADER 12
#define PX_DEFAULT_MAX_FRAME (16u * 1024u * 1024u)
#define PX_JSON_MAX_DEPTH 64      /* the top-level object is depth 1 */
#define PX_JSON_MAX_VALUES 65536  /* values (incl. containers) per payload */

/* ---- CRC-32 ---- */
/* Continue a CRC-32 (start with crc = 0), zlib-compatible. */
uint32_t px_crc32(uint32_t crc, const void *data, size_t len);

/* ---- frame decoder (incremental) ---- */
typedef enum {
  PX_FRAME_NEED_MORE = 0, /* feed more bytes */
  PX_FRAME_READY,         /* a payload is ready (px_frame_payload) */
  PX_FRAME_BAD_MAGIC,     /* fatal: send bad_frame, close */
  PX_FRAME_TOO_LARGE,     /* fatal: send frame_too_large, close */
  PX_FRAME_BAD_CRC,       /* the payload was skipped; connection usable */
  PX_FRAME_NOMEM          /* fatal: no memory for the payload buffer
                             (send `error` internal, close) */
} px_frame_status_t;

typedef struct px_frame_decoder_s px_frame_decoder_t;

/* A decoder for one connection; max_payload is checked on the header,
 * before any allocation (the payload buffer is at most max_payload + 1
 * bytes). Returns NULL on OOM; free with px_frame_decoder_free. */
px_frame_decoder_t *px_frame_decoder_new(uint32_t max_payload);
/* Release the decoder and its buffer; NULL is allowed. */
void px_frame_decoder_free(px_frame_decoder_t *d);
/* Consume up to len bytes; *consumed says how many were used. Returns at
 * most one frame per call: call again with the rest (data + *consumed)
 * after handling READY/BAD_CRC. NEED_MORE means all len bytes were
 * consumed. Fatal states (BAD_MAGIC, TOO_LARGE, NOMEM) are sticky: later
 * calls return them again and consume nothing. A wrong magic byte is
 * refused as soon as it arrives. */
px_frame_status_t px_frame_feed(px_frame_decoder_t *d, const void *data,
                                size_t len, size_t *consumed);
/* After READY: the payload (NUL-terminated for convenience; may contain
 * NULs, len is authoritative). Valid until the next feed. */
const char *px_frame_payload(px_frame_decoder_t *d, size_t *len);
/* 1 while a frame is partly received (for the stall timeout): some
 * header bytes, or a header whose payload is incomplete. */
int px_frame_in_progress(const px_frame_decoder_t *d);

/* Append a frame (header + payload) to out. 0, PX_ENOMEM (out unchanged),
 * or PX_ERANGE when len does not fit 32 bits. payload may be NULL when
 * len is 0. */
int px_frame_encode(px_buf_t *out, const void *payload, size_t len);

/* ---- UTF-8 ---- */
/* 1 if s[0..len) is valid UTF-8 (no overlongs, no surrogates, <= U+10FFFF). */
int px_utf8_valid(const char *s, size_t len);
/* Copy s into a malloc'd NUL-terminated string, invalid sequences replaced
 * by U+FFFD; *lossy set to 1 if anything was replaced (else unchanged).
 * NULs are kept as-is (JSON encodes them as \u0000). *out_len receives the
 * length. Returns NULL on OOM. */
char *px_utf8_sanitize(const char *s, size_t len, size_t *out_len, int *lossy);

/* ---- client -> service messages ---- */
typedef enum {
  PX_MSG_RUN = 1,
  PX_MSG_CANCEL,
  PX_MSG_STATUS,
  PX_MSG_PING,
  PX_MSG_SCRAM,
  PX_MSG_RESUME,
  PX_MSG_KB_LIST,    /* admin: snapshots of the knowledge base */
  PX_MSG_KB_DIFF,    /* admin: {snapshot}: what changed since */
  PX_MSG_KB_RESTORE, /* admin: {snapshot}: put the KB back, verified */
  PX_MSG_KB_GC,      /* admin: retention and unreferenced objects */
  PX_MSG_ATTEST,     /* admin: rerun the sandbox attestation */
  PX_MSG_DESCRIBE,   /* runtimes, limits, what this client may do */
  PX_MSG_METRICS     /* the engine's counters and histograms */
} px_msg_type_t;

typedef enum {
  PX_KB_ROLLBACK_ON_VIOLATION = 0,
  PX_KB_ROLLBACK_ALWAYS,
  PX_KB_ROLLBACK_NEVER
} px_kb_rollback_t;

/* Which limits the request set explicitly (the rest default from policy). */
enum {
  PX_LIMSET_CPU = 1u << 0,
  PX_LIMSET_WALL = 1u << 1,
  PX_LIMSET_MEMORY = 1u << 2,
  PX_LIMSET_PROCESSES = 1u << 3,
  PX_LIMSET_OUTPUT = 1u << 4
};

/* A parsed, shape-checked `run` (policy not yet applied). Owns all its
 * memory; px_request_free releases it. */
typedef struct {
  char id[PX_JOB_ID_MAX + 1];
  char *runtime;
  char *code;
  size_t code_len;
  char **args;
  size_t nargs;
  char *stdin_data;
  size_t stdin_len;
  px_env_var_t *env;
  size_t nenv;
  px_job_file_t *files;
  size_t nfiles;
  px_limits_t limits;
  unsigned limits_set; /* PX_LIMSET_* */
  char **capabilities; /* as given, e.g. "fs:write_tmp", "dev:python" */
  size_t ncapabilities;
  px_priority_t priority;
  int stream;
  int high_trust;
  px_kb_rollback_t kb_rollback;
} px_run_request_t;

typedef struct {
  px_msg_type_t type;
  px_run_request_t run; /* PX_MSG_RUN */
  char id[PX_JOB_ID_MAX + 1]; /* PX_MSG_CANCEL (and RUN: same as run.id) */
  char snapshot[PX_JOB_ID_MAX + 1]; /* PX_MSG_KB_DIFF / PX_MSG_KB_RESTORE */
} px_request_t;

/* A parse failure: the error frame or rejected result to send. */
typedef struct {
  px_code_t code;    /* BAD_JSON, UNKNOWN_TYPE, BAD_REQUEST */
  int has_id;        /* 1: a valid run id was read: answer with a
                        `result` rejected, else an `error` frame */
  char id[PX_JOB_ID_MAX + 1]; /* "" or the valid id (run or cancel) */
  char message[256]; /* names the field for bad_request */
} px_parse_error_t;

/* Limits on a request's shape (from config; defaults in
 * px_request_limits_default, shown in brackets, the same as config's
 * `request` defaults). Exceeding one is a bad_request naming the field. */
typedef struct {
  size_t max_code_bytes;      /* [1 MiB] `code` */
  size_t max_files;           /* [64] entries of `files` */
  size_t max_file_bytes;      /* [4 MiB] one file, decoded */
  size_t max_total_bytes;     /* [12 MiB] code + stdin + decoded files */
  size_t max_args;            /* [256] entries of `args` */
  size_t max_env;             /* [64] entries of `env` */
  size_t max_path_len;        /* [200] bytes of one file path */
  size_t max_env_name_len;    /* [128] bytes of one env name; 0: default */
  size_t max_env_value_bytes; /* [32767] bytes of one env value; 0: default */
} px_request_limits_t;

/* Fill *l with the defaults above. */
void px_request_limits_default(px_request_limits_t *l);

/* Parse one payload (UTF-8 JSON object) into *req. limits may be NULL
 * (defaults). Returns 0 (free *req with px_request_free), PX_EPROTO with
 * *err filled (code BAD_JSON, UNKNOWN_TYPE or BAD_REQUEST), or PX_ENOMEM
 * (*err code INTERNAL). On error *req is zeroed and needs no free.
 * err->id holds a valid, unambiguous `id` of a run or cancel whenever one
 * was read (use it as the `error` frame's id); err->has_id is 1 only for
 * a run, whose refusal is its `rejected` result. */
int px_request_parse(const char *payload, size_t len,
                     const px_request_limits_t *limits, px_request_t *req,
                     px_parse_error_t *err);
/* Release what *req owns and zero it; idempotent. */
void px_request_free(px_request_t *req);

/* 1 if s is a valid job id: 1-64 chars of [A-Za-z0-9._-]. */
int px_job_id_valid(const char *s);

/* ---- service -> client messages ----
 * Each returns compact JSON text, malloc'd (the caller free()s it), or
 * NULL on OOM. Fields come out in the documented order. Integers are
 * written as exact decimal text (not through a double), strings are
 * escaped, and any invalid UTF-8 in them is replaced by U+FFFD, so the
 * output is always valid UTF-8. */
char *px_encode_accepted(const char *id, uint64_t queue_position);
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

/* The fields of a `status` answer. version and backend are borrowed. */
typedef struct {
  const char *version;
  const char *backend;
  uint64_t enforcement_available; /* PX_ENF bits */
  uint64_t queue[PX_PRIO_COUNT];
  uint64_t queue_max;
  uint64_t running;
  uint64_t workers;
  int paused;
  uint64_t counters[PX_STATUS_COUNT_]; /* by px_status_t */
  uint64_t accepted;
  uint64_t uptime_ms;
  const px_attest_report_t *attestation; /* borrowed; NULL: not encoded */
  int has_pool; /* the backend reports a warm pool (px_pool_info_t) */
  uint64_t pool_size, pool_ready, pool_taken, pool_cold;
  /* Image runtimes (the container backend): has_containers when any is
   * configured; container_engine_up when the engine answered at start;
   * the runtimes whose image the engine does not have (borrowed names,
   * the first PX_STATUS_MISSING_MAX). */
  int has_containers, container_engine_up;
  size_t nmissing;
#define PX_STATUS_MISSING_MAX 32
  const char *missing_runtime[PX_STATUS_MISSING_MAX];
  const char *missing_image[PX_STATUS_MISSING_MAX];
} px_status_info_t;

/* `status`: enforcement_available as a list of names, queue as
 * {critical, high, normal, low, max}, counters as {accepted, ok, ...}. */
char *px_encode_status(const px_status_info_t *s);
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

#ifdef __cplusplus
}
#endif
#endif /* PX_PROTOCOL_H */
