/* px_audit.h - the pre-execution code audit: per-runtime rules matched
 * line by line against a job's source.
 *
 * The audit is a tripwire, not a boundary (docs/audit.md): it catches the
 * obvious (a model that writes `shutil.rmtree("/")`), never a determined
 * author. The sandbox is the boundary.
 *
 * Pattern syntax (ASCII case-insensitive, matched within one line):
 *   literal text   matches itself ("os.remove")
 *   *              any run of characters on the same line (may be empty)
 *   ?              any one character
 *   \b             a word boundary (between [A-Za-z0-9_] and anything else,
 *                  or a line edge); zero-width
 *   \* \? \\       a literal '*', '?', '\'
 * A pattern may match anywhere in a line: "rm -rf" is "*rm -rf*".
 */
#ifndef PX_AUDIT_H
#define PX_AUDIT_H

#include "px/px_result.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PX_AUDIT_MAX_PATTERN 256

typedef enum {
  PX_AUDIT_ADVISORY = 0, /* report findings only */
  PX_AUDIT_HIGH_TRUST    /* every job is treated as high trust */
} px_audit_mode_t;

typedef struct {
  char *id; /* "py.subprocess" */
  px_severity_t severity;
  char *pattern; /* see the syntax above */
  char *message;
} px_audit_rule_t;

/* The rules of one runtime family ("python", "powershell", "cmd", "sh"). */
typedef struct {
  char *name;
  px_audit_rule_t *rules;
  size_t nrules;
} px_audit_ruleset_t;

/* A rule as shipped (static storage). */
typedef struct {
  const char *id;
  px_severity_t severity;
  const char *pattern;
  const char *message;
} px_audit_default_rule_t;

/* The shipped rule sets: names[i] and its rules (static). Returns the
 * number of sets. */
size_t px_audit_default_sets(const char *const **names);
/* The shipped rules of set name; NULL (and *n = 0) if none. */
const px_audit_default_rule_t *px_audit_default_rules(const char *name,
                                                      size_t *n);

/* 0 if pattern is valid (non-empty, at most PX_AUDIT_MAX_PATTERN bytes, no
 * dangling or unknown escape, not only wildcards); PX_EINVAL with a reason
 * in err otherwise. */
int px_audit_pattern_check(const char *pattern, char *err, size_t errsz);
/* 1 if a valid pattern matches somewhere in line[0..len) (no newline in
 * it), else 0. Time O(len * strlen(pattern)). */
int px_audit_pattern_match(const char *pattern, const char *line, size_t len);

/* "info" "low" "medium" "high" "critical" <-> px_severity_t: 0 or
 * PX_EINVAL. */
int px_audit_severity_parse(const char *name, px_severity_t *out);
const char *px_audit_severity_name(px_severity_t sev);

struct px_config_s;

/* Audit code (len bytes, may contain NULs) with the rule set of runtime
 * `runtime` (its `audit` set; none: nothing to find). Every finding (rule,
 * 1-based line, severity, message) is added to *result with
 * px_result_add_finding, at most audit.max_findings. Verdict: when
 * high_trust is set or audit.mode is high_trust, any finding at or above
 * audit.reject_severity rejects: result gets status rejected, exit_code -1
 * and error audit_rejected naming the first such rule, and PX_EPOLICY is
 * returned. Otherwise 0 (advisory: findings only). PX_ENOMEM on OOM. */
int px_audit_run(const struct px_config_s *cfg, const char *runtime,
                 const char *code, size_t len, int high_trust,
                 px_result_t *result);

#ifdef __cplusplus
}
#endif
#endif /* PX_AUDIT_H */
