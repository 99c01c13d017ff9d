/* px_request.h - the request model: a client's JSON message parsed and
 * shape-checked into a typed px_request_t (policy is applied later, by
 * the session). See docs/protocol.md.
 */
#ifndef PX_REQUEST_H
#define PX_REQUEST_H

#include "px/px_job.h"
#include "px/px_result.h"
#include "px/px_util.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PX_JSON_MAX_DEPTH 64      /* the top-level object is depth 1 */
#define PX_JSON_MAX_VALUES 65536  /* values (incl. containers) per payload */


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
  PX_MSG_METRICS,    /* the engine's counters and histograms */
  PX_MSG_CLUSTER_STATUS /* the cluster's workers (PX_NODES) */
} px_msg_type_t;

/* Which limits the request set explicitly (the rest default from policy). */
enum {
  PX_LIMSET_CPU = 1u << 0,
  PX_LIMSET_WALL = 1u << 1,
  PX_LIMSET_MEMORY = 1u << 2,
  PX_LIMSET_PROCESSES = 1u << 3,
  PX_LIMSET_OUTPUT = 1u << 4,
  PX_LIMSET_DISK = 1u << 5
};

/* Where a `run` goes (docs/protocol.md 3.1, docs/cluster.md): "local"
 * (the default), "cluster" (forwarded to the NATS cluster by a daemon
 * with cluster.mode submit or both), "any" (the cluster when the engine
 * has no free slot for this client right now, else local). */
typedef enum {
  PX_PLACEMENT_LOCAL = 0,
  PX_PLACEMENT_CLUSTER,
  PX_PLACEMENT_ANY
} px_placement_t;

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
  px_placement_t placement;
  /* `collect` (px_collect.h): patterns validated; max_files/max_bytes 0
   * when the request left them to the policy's defaults. */
  px_collect_spec_t collect;
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


/* (service/proto/json_scan.c) Strict syntax check of a JSON text before cJSON sees it: RFC 8259
 * grammar, valid UTF-8 everywhere, nesting <= PX_JSON_MAX_DEPTH, no
 * control characters or \u0000 inside strings, lone surrogate escapes
 * refused, no trailing data. Iterative (no recursion). Returns 0 or
 * PX_EPROTO with a short reason in msg. */
int px_json_check(const char *p, size_t len, char *msg, size_t msgsz);

#ifdef __cplusplus
}
#endif
#endif /* PX_REQUEST_H */
