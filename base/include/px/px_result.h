/* px_result.h - the one result every `run` ends with (protocol `result`).
 *
 * The engine fills it; the protocol encoder turns it into JSON. Portable
 * plain data; px_result_free releases what it owns.
 */
#ifndef PX_RESULT_H
#define PX_RESULT_H

#include "px/px_attr.h"

#include "px/px_job.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  PX_STATUS_OK = 0,       /* "ok": exit 0 */
  PX_STATUS_NONZERO_EXIT, /* "nonzero_exit" */
  PX_STATUS_KILLED,       /* "killed": a limit or sandbox violation */
  PX_STATUS_CANCELLED,    /* "cancelled" */
  PX_STATUS_REJECTED,     /* "rejected": refused before start */
  PX_STATUS_ERROR,        /* "error": the service failed */
  PX_STATUS_ABORTED,      /* "aborted": service stopping or scram */
  PX_STATUS_COUNT_
} px_status_t;

/* Stable error codes of `result.error.code` and `error` messages. */
#define PX_CODE_MAP(X)                                                       \
  X(PX_CODE_NONE, "")                                                        \
  X(PX_CODE_BAD_FRAME, "bad_frame")                                          \
  X(PX_CODE_FRAME_TOO_LARGE, "frame_too_large")                              \
  X(PX_CODE_BAD_CRC, "bad_crc")                                              \
  X(PX_CODE_BAD_JSON, "bad_json")                                            \
  X(PX_CODE_UNKNOWN_TYPE, "unknown_type")                                    \
  X(PX_CODE_BAD_REQUEST, "bad_request")                                      \
  X(PX_CODE_DUPLICATE_ID, "duplicate_id")                                    \
  X(PX_CODE_UNKNOWN_ID, "unknown_id")                                        \
  X(PX_CODE_FORBIDDEN, "forbidden")                                          \
  X(PX_CODE_UNKNOWN_RUNTIME, "unknown_runtime")                              \
  X(PX_CODE_LIMIT_EXCEEDS_POLICY, "limit_exceeds_policy")                    \
  X(PX_CODE_CAPABILITY_DENIED, "capability_denied")                          \
  X(PX_CODE_AUDIT_REJECTED, "audit_rejected")                                \
  X(PX_CODE_ARGV_TOO_LONG, "argv_too_long")                                  \
  X(PX_CODE_QUEUE_FULL, "queue_full")                                        \
  X(PX_CODE_PAUSED, "paused")                                                \
  X(PX_CODE_SPAWN_FAILED, "spawn_failed")                                    \
  X(PX_CODE_SANDBOX_FAILED, "sandbox_failed")                                \
  X(PX_CODE_INTERNAL, "internal")                                            \
  X(PX_CODE_KB_UNAVAILABLE, "kb_unavailable")                                \
  X(PX_CODE_UNKNOWN_SNAPSHOT, "unknown_snapshot")                            \
  X(PX_CODE_KB_FAILED, "kb_failed")                                          \
  X(PX_CODE_SANDBOX_UNVERIFIED, "sandbox_unverified")                        \
  X(PX_CODE_PROCESS_CREATE_FAILED, "process_create_failed")                  \
  X(PX_CODE_EXECUTOR_LOST, "executor_lost")                                  \
  X(PX_CODE_CLUSTER_UNAVAILABLE, "cluster_unavailable")                      \
  X(PX_CODE_CLUSTER_OFF, "cluster_off")

typedef enum {
#define PX_CODE_ENUM_(name, str) name,
  PX_CODE_MAP(PX_CODE_ENUM_)
#undef PX_CODE_ENUM_
  PX_CODE_COUNT_
} px_code_t;

/* The wire names of the enumerations (static strings, never freed):
 * px_code_name: "bad_request" ("" for NONE, "internal" when out of range);
 * px_status_name: "nonzero_exit" ("error" when out of range);
 * px_limit_name: "memory", "cpu_time", "wall_time", "processes", "output",
 * "sandbox", "disk", "files", "handles"; NULL for NONE or out of range;
 * px_detector_name: "os", "watchdog", "engine"; NULL for NONE. */
const char *px_code_name(px_code_t code);
const char *px_status_name(px_status_t status);
const char *px_limit_name(px_limit_t limit);
const char *px_detector_name(px_detector_t d);

typedef enum {
  PX_SEV_INFO = 0,
  PX_SEV_LOW = 1,
  PX_SEV_MEDIUM = 2,
  PX_SEV_HIGH = 3,
  PX_SEV_CRITICAL = 4
} px_severity_t;

/* "info", "low", "medium", "high", "critical" (the wire form of
 * result.audit[].severity); NULL when out of range. Static. */
const char *px_severity_name(px_severity_t sev);
/* The reverse (exact, lower case): 0 or PX_EINVAL. For config rules. */
int px_severity_parse(const char *name, px_severity_t *out);

typedef struct {
  char *rule;    /* rule id, owned */
  unsigned line; /* 1-based line of the code */
  px_severity_t severity;
  char *message; /* owned */
} px_audit_finding_t;

/* One snapshot of the store (px_kb_list; the `kb_snapshots` answer). */
typedef struct {
  char *id;            /* sortable: "20261125T221836.123Z-0001", owned */
  uint64_t created_ms; /* wall clock, ms since the Unix epoch */
  uint64_t entries;    /* files, directories and links in the manifest */
  uint64_t bytes;      /* sum of file sizes */
} px_kb_snapinfo_t;

typedef struct {
  char *path;   /* relative to its root, prefixed "root/" ("mind/a.txt") */
  char *action; /* "restored", "removed", "modified_kept", ... (static) */
} px_kb_change_t;

typedef struct {
  int present;        /* 0: no KB configured / no snapshot: "kb": null */
  char *snapshot;     /* snapshot id, owned */
  int rolled_back;
  uint64_t files_restored;
  uint64_t files_removed;
  uint64_t bytes_restored;
  int verified;       /* rollback verified against the manifest */
  px_kb_change_t *changes; /* first N, owned */
  size_t nchanges;
  char *error;        /* owned; set when rollback or verification failed */
  const char *limit;  /* static: "kb_size" / "kb_files" when the job added
                         more than kb.job_max_bytes / job_max_files (its
                         changes were rolled back), else NULL */
} px_kb_result_t;

/* One entry of result.files (px_collect.h): collected (data set,
 * skipped NULL) or listed as skipped with the reason. */
typedef struct {
  char *path;             /* owned; relative, '/', valid UTF-8 */
  uint64_t bytes;         /* collected bytes, or the size seen when skipped */
  char sha256[65];        /* hex; "" when skipped */
  const char *media_type; /* static; NULL when skipped */
  unsigned char *data;    /* owned; the content (NULL if empty or skipped) */
  size_t len;
  const char *skipped;    /* static reason, or NULL */
} px_out_file_t;

/* result.collect: how the walk went (present when the run asked). */
typedef struct {
  int asked;          /* 1: the run had a collect */
  uint64_t visited;   /* entries the walk looked at */
  uint64_t unlisted;  /* skipped entries past PX_COLLECT_LIST_MAX */
  const char *stopped; /* static: why the walk ended early, or NULL */
} px_collect_info_t;

typedef struct {
  char id[PX_JOB_ID_MAX + 1];
  px_status_t status;
  long long exit_code; /* meaningful for ok/nonzero_exit; -1 otherwise */
  px_violation_t violation;
  char *out[2]; /* [0] stdout, [1] stderr: valid UTF-8, owned */
  size_t out_len[2];
  int out_truncated[2];
  int output_lossy; /* invalid UTF-8 replaced by U+FFFD */
  px_usage_t usage;
  px_audit_finding_t *audit; /* owned */
  size_t naudit;
  px_kb_result_t kb;
  uint64_t enforcement; /* PX_ENF bits */
  px_code_t error_code; /* PX_CODE_NONE unless rejected/error */
  char *error_message;  /* owned */
  px_out_file_t *files; /* owned: collected and skipped output files */
  size_t nfiles;
  px_collect_info_t collect;
} px_result_t;

/* Release everything the result owns (not the struct itself) and clear
 * the owning pointers and counts; idempotent, NULL allowed. */
void px_result_free(px_result_t *r);
/* Append a finding (copies strings; NULL becomes ""). 0 or PX_ENOMEM (the
 * result is unchanged then). */
int px_result_add_finding(px_result_t *r, const char *rule, unsigned line,
                          px_severity_t sev, const char *message);
/* Set error code and a formatted message (copied; replaces an earlier
 * message). 0, or PX_ENOMEM (the code is set, the old message kept). */
int px_result_set_error(px_result_t *r, px_code_t code, const char *fmt, ...)
    PX_PRINTF(3, 4)
    ;

#ifdef __cplusplus
}
#endif
#endif /* PX_RESULT_H */
