/* probe.h - px-attest, the attestation probe the service runs inside its
 * own sandbox at every start (service/proto/include/px/px_attest.h, service/attest.c).
 *
 * It is a real job: the service starts it through the engine and the
 * backend like any client's code. It tries a compact set of forbidden
 * things and positive controls and prints one JSON line per check:
 *
 *   {"check":"landlock","result":"pass","observed":"..."}
 *
 * It never decides whether the host is safe: it reports what it saw, and
 * the service judges. Each platform part (linux/, win/) runs its checks,
 * one mechanism per file; this portable part holds the arguments and the
 * output. Links libc (and on Windows the system DLLs) only.
 */
#ifndef PX_ATTEST_PROBE_H
#define PX_ATTEST_PROBE_H

#include <stdint.h>

typedef struct {
  int egress;                /* --mode egress: only the network control */
  unsigned port;             /* --port: the service's loopback listener */
  unsigned long service_pid; /* --service-pid */
  uint64_t memory;           /* --memory: the job's configured limit */
  uint64_t processes;        /* --processes */
  const char *host_ns;       /* --host-ns (Linux): "pid:N,mnt:N,..." */
  const char *sibling;       /* --sibling (Windows): a dir it must not open */
  const char *job_user;      /* --job-user (Windows): the job account's SID */
  const char *config;        /* --config (Windows): a file it must not read */
  const char *kb_store;      /* --kb-store (Windows): a dir it must not list */
  const char *pipe;          /* --pipe (Windows): a pipe with the service's
                                DACL it must not open */
} pxa_args_t;

typedef enum { PXA_PASS, PXA_FAIL, PXA_UNSUPPORTED } pxa_result_t;

/* Print one check line (observed is printf-formatted, JSON-escaped). */
void pxa_report(const char *check, pxa_result_t result, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Parse argv into *a: 0, or -1 (usage printed on stderr). */
int pxa_parse_args(int argc, char **argv, pxa_args_t *a);

/* The value of the first environment variable whose name starts with
 * prefix ("PX_KB_"), or NULL (linux/main.c, win/main.c). */
const char *pxa_env_prefixed(const char *prefix);

/* Run every check of this platform (or only the network control when
 * a->egress). Implemented by linux/checks.c and win/checks.c. */
void pxa_run_checks(const pxa_args_t *a);

#endif
