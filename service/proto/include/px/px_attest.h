/* px_attest.h - sandbox attestation: what a probe job read back from
 * inside the real sandbox, and the verdict the service draws from it.
 *
 * At every start, before any transport accepts a client, the service runs
 * the shipped probe (px-attest / px-attest.exe) as a real job through the
 * real engine and backend (the identity, token, job object, desktop,
 * directory layout and default limits of every job). The probe prints one
 * JSON line per check on stdout:
 *
 *   {"check":"seccomp","result":"pass","observed":"Seccomp: 2"}
 *
 * result is "pass", "fail" or "unsupported" (the check cannot be made or
 * does not apply here, e.g. no KB root configured). The service parses the
 * lines (px_attest_parse_line), adds its own checks (probe_ran,
 * time_budget, checks_complete; unsupported_allowed: a check reported
 * "unsupported" that the platform does not list as allowed to be fails
 * it) and decides (px_attest_decide):
 *
 *   any fail, allow_degraded off    failed    every `run` is refused with
 *                                             sandbox_unverified
 *   any fail, allow_degraded on     degraded  jobs run; results carry
 *                                             "degraded" in enforcement
 *   no fail                         enforced
 *
 * Under Wine the state is never "enforced" (px_attest_decide is told so):
 * a platform that enforces nothing must not pass.
 */
#ifndef PX_ATTEST_H
#define PX_ATTEST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PX_ATTEST_MAX_CHECKS 40
#define PX_ATTEST_NAME_MAX 48
#define PX_ATTEST_OBSERVED_MAX 200
#define PX_ATTEST_BUDGET_MS 10000 /* the whole attestation, both jobs */

typedef enum {
  PX_ATTEST_PASS = 0,
  PX_ATTEST_FAIL,
  PX_ATTEST_UNSUPPORTED
} px_attest_result_t;

typedef enum {
  PX_ATTEST_PENDING = 0, /* not run yet: `run` is refused */
  PX_ATTEST_ENFORCED,
  PX_ATTEST_DEGRADED,
  PX_ATTEST_FAILED
} px_attest_state_t;

typedef struct {
  char name[PX_ATTEST_NAME_MAX];
  px_attest_result_t result;
  char observed[PX_ATTEST_OBSERVED_MAX];
} px_attest_check_t;

typedef struct px_attest_report_s {
  uint64_t time_ms;     /* wall clock (ms since 1970) when it finished */
  uint64_t duration_ms; /* how long it took */
  px_attest_state_t state;
  px_attest_check_t checks[PX_ATTEST_MAX_CHECKS];
  size_t nchecks;
} px_attest_report_t;

/* "pass" / "fail" / "unsupported"; "pending" / "enforced" / "degraded" /
 * "failed". Static strings. */
const char *px_attest_result_name(px_attest_result_t r);
const char *px_attest_state_name(px_attest_state_t s);

/* Append a check (name and observed are truncated to fit). 0, or PX_ERANGE
 * when the report is full (the check is dropped). */
int px_attest_add(px_attest_report_t *r, const char *name,
                  px_attest_result_t result, const char *observed);
/* The check called name, or NULL. Borrowed from r. */
const px_attest_check_t *px_attest_find(const px_attest_report_t *r,
                                        const char *name);

/* Parse one probe output line ({"check","result","observed"}) and append
 * it, its name prefixed with prefix (may be NULL). 0, PX_EPROTO (not a
 * check line: ignored by callers that allow noise, counted by the
 * service), PX_ERANGE (report full). */
int px_attest_parse_line(px_attest_report_t *r, const char *line, size_t len,
                         const char *prefix);

/* The overall state from the checks (see the table above). under_wine
 * forbids "enforced": without a fail the state is then "degraded". */
px_attest_state_t px_attest_decide(const px_attest_report_t *r,
                                   int allow_degraded, int under_wine);

/* The checks reported "unsupported" whose names are not in allowed
 * (NULL-terminated), space-separated into out (truncated to fit; "" when
 * none). Returns how many. An unsupported check proves nothing, so only a
 * platform's own list may be unsupported (service/attest.c adds the
 * check unsupported_allowed from this). */
size_t px_attest_unsupported_refused(const px_attest_report_t *r,
                                     const char *const *allowed, char *out,
                                     size_t outsz);

/* The names of the failed checks, comma-separated, into out (truncated
 * to fit; "" when none). */
void px_attest_failed_names(const px_attest_report_t *r, char *out,
                            size_t outsz);

/* The attestation object as JSON: {"time":"2026-11-26T06:20:12Z",
 * "state":..., "duration_ms":..., "checks":[{"name","result","observed"}]}.
 * malloc'd (free()), NULL on OOM. */
char *px_attest_to_json(const px_attest_report_t *r);

#ifdef __cplusplus
}
#endif
#endif /* PX_ATTEST_H */
