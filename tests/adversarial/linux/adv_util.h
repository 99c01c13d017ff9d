/* adv_util.h - helpers of the Linux adversarial and soak suites
 * (tests/adversarial/linux/adv_util.c): a real phoenix-executor with canary
 * files and a knowledge base beside it, hostile payloads from
 * tests/adversarial/payloads, and the "host untouched" check every attack
 * ends with. Built on tests/linux/daemon_helpers.h.
 */
#ifndef PX_TEST_ADV_UTIL_H
#define PX_TEST_ADV_UTIL_H

#include "tests/linux/daemon_helpers.h"

#include <cjson/cJSON.h>

typedef struct {
  px_daemon_t d;
  char root[512];       /* scratch of this test: canaries and the KB */
  char canary_dir[600]; /* host files no job may change (0777 dir) */
  char canary[700];     /* a host file, world-writable on purpose */
  char secret[700];     /* a "service key" readable only by root */
  char kb_mind[600];    /* KB root "mind", writable by the sandbox uid */
  char kb_store[600];
  char *canary_digest;  /* owned: tree digests taken at start */
  char *kb_digest;
  px_client_t *cl;      /* owned: a root (admin) connection */
} adv_env_t;

/* Create canaries and the KB, start the daemon with the KB configured and
 * extra_json merged over it, connect as root. 0 or -1. */
int adv_start(adv_env_t *e, const char *extra_json);
/* Stop the daemon (SIGTERM), free everything, remove the scratch. */
void adv_stop(adv_env_t *e);

/* Text of a payload file (malloc'd), or NULL. */
char *adv_payload(const char *name);
/* A run request: runtime, code (a payload file name when it ends in .py or
 * .sh and exists, else literal code), limits as a JSON object text or
 * NULL, capabilities as a JSON array text or NULL. Caller owns it. */
cJSON *adv_req(const char *id, const char *runtime, const char *code,
               const char *limits, const char *caps);
/* Append args to a request. */
void adv_req_args(cJSON *req, int n, const char *const *args);
/* Send req and read until its result (other messages are skipped).
 * Returns the result (caller frees), or NULL on timeout. */
cJSON *adv_run(px_client_t *cl, const cJSON *req, int timeout_ms);
/* Send raw JSON text and wait for the first message carrying this id
 * (or any `error` when id is NULL). Caller frees. */
cJSON *adv_send_wait(px_client_t *cl, const char *json, const char *id,
                     int timeout_ms);

const char *adv_str(const cJSON *o, const char *path); /* "a.b.c"; "" */
long long adv_int(const cJSON *o, const char *path);   /* -1 if absent */
/* Print a compact summary of a result (status, violation, output head). */
void adv_print(const char *what, const cJSON *res);
/* Assert status and, when limit != NULL, the violation's limit. */
void adv_expect(const cJSON *res, const char *status, const char *limit);
#define ADV_EXPECT(res, status_, limit_) adv_expect((res), (status_), (limit_))
/* Every probe line of a payload says DENIED; none says ALLOWED. Returns
 * the number of DENIED lines. */
int adv_all_denied(const cJSON *res);
/* Like adv_all_denied, but lines "<name>: ALLOWED" for names in
 * `contained` (NULL-terminated: allowed because they stay inside the job)
 * are accepted. The DENIED count, or -1 on any other ALLOWED. */
int adv_denied_except(const cJSON *res, const char *const *contained);

/* Digest of a directory tree: every entry's relative path, type, mode,
 * size, content hash and link target, sorted. malloc'd. */
char *adv_tree_digest(const char *dir);
/* The host is untouched: canaries and KB byte-identical to the start,
 * the daemon answers ping and status, no job directory is left under the
 * work root, job cgroups are back to the baseline and no process carries
 * marker (NULL: skip that one). Fails the test otherwise. */
void adv_check_host(adv_env_t *e, const char *marker);
/* The daemon's status message (caller frees) or NULL. */
cJSON *adv_status(px_client_t *cl, int timeout_ms);
/* Names of job directories under the work root now (count). */
int adv_job_dirs(const adv_env_t *e, char *first, size_t firstsz);

uint64_t adv_ms(void);

/* A host process of the sandbox's own uid (65534) sleeping with marker as
 * its argument: a target no job may reach. The caller kills and reaps it. */
pid_t adv_victim(const char *marker);

/* A TCP listener of the test on 127.0.0.1 (nonblocking); fd (port in
 * *port), or -1. */
int adv_listener(int *port);

/* The "ENV NAME=value" lines of env_dump.py's output: every name is one
 * of allowed[0..n) (fails the test otherwise, naming it); returns how
 * many lines there were. */
int adv_env_only(const char *out, const char *const *allowed, size_t n);

#endif
