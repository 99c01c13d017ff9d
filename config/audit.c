/* audit.c - the pre-execution code audit (px_audit.h): a tiny
 * case-insensitive pattern matcher and the per-job scan and verdict.
 *
 * DESIGN
 * A pattern is compiled on the stack into items (literal byte, any byte,
 * star, word boundary) and matched against one line at a time with an
 * implicit leading and trailing star. Between stars every item has a fixed
 * width, so the classic single-backtrack glob algorithm (remember the last
 * star, retry one byte further) is exact and runs in O(line * pattern):
 * hostile code cannot make the audit slow. The audit is a tripwire, not a
 * boundary: see docs/audit.md.
 */
#include "config_int.h"

#include "px/px_error.h"
#include "px/px_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { I_LIT, I_ANY, I_STAR, I_WB } item_kind_t;

typedef struct {
  unsigned char kind;
  unsigned char c; /* I_LIT, lower-cased */
} item_t;

static const char *const sev_names[] = {"info", "low", "medium", "high",
                                        "critical"};

int px_audit_severity_parse(const char *name, px_severity_t *out) {
  int i;
  for (i = 0; name && i < 5; i++)
    if (strcmp(name, sev_names[i]) == 0) {
      *out = (px_severity_t)i;
      return 0;
    }
  return PX_EINVAL;
}

const char *px_audit_severity_name(px_severity_t sev) {
  return (unsigned)sev < 5 ? sev_names[sev] : "info";
}

static unsigned char lower(unsigned char c) {
  return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c;
}

/* Compile pattern into items (at most PX_AUDIT_MAX_PATTERN). Returns the
 * count, or -1 with a reason. */
static int compile(const char *pat, item_t *items, const char **why) {
  size_t i, n = 0, lits = 0, len = strlen(pat);
  if (len == 0 || len > PX_AUDIT_MAX_PATTERN) {
    *why = "must be 1-256 bytes";
    return -1;
  }
  for (i = 0; i < len; i++) {
    item_t it = {I_LIT, lower((unsigned char)pat[i])};
    if (pat[i] == '*')
      it.kind = I_STAR;
    else if (pat[i] == '?')
      it.kind = I_ANY;
    else if (pat[i] == '\\') {
      char e = pat[++i];
      if (e == 'b')
        it.kind = I_WB;
      else if (e == '*' || e == '?' || e == '\\')
        it.c = (unsigned char)e;
      else {
        *why = e ? "unknown escape (use \\b, \\*, \\? or \\\\)"
                 : "dangling backslash";
        return -1;
      }
    } else if (pat[i] == '\n' || pat[i] == '\r') {
      *why = "must not contain a line break";
      return -1;
    }
    lits += it.kind == I_LIT;
    items[n++] = it;
  }
  if (lits == 0) {
    *why = "needs at least one literal character";
    return -1;
  }
  return (int)n;
}

int px_audit_pattern_check(const char *pattern, char *err, size_t errsz) {
  item_t items[PX_AUDIT_MAX_PATTERN];
  const char *why = NULL;
  if (pattern && compile(pattern, items, &why) >= 0)
    return 0;
  if (err && errsz)
    snprintf(err, errsz, "invalid pattern: %s", why ? why : "missing");
  return PX_EINVAL;
}

static int word(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_';
}

static int boundary(const char *s, size_t len, size_t i) {
  int before = i > 0 && word((unsigned char)s[i - 1]);
  int after = i < len && word((unsigned char)s[i]);
  return before != after;
}

static int match_items(const item_t *it, size_t n, const char *s, size_t len) {
  size_t p = 0, i = 0, star_p = 0, star_i = 0; /* implicit leading star */
  for (;;) {
    if (p == n)
      return 1; /* implicit trailing star */
    if (it[p].kind == I_STAR) {
      star_p = ++p;
      star_i = i;
      continue;
    }
    if (it[p].kind == I_WB && boundary(s, len, i)) {
      p++;
      continue;
    }
    if (it[p].kind != I_WB && i < len &&
        (it[p].kind == I_ANY || lower((unsigned char)s[i]) == it[p].c)) {
      p++;
      i++;
      continue;
    }
    if (++star_i > len)
      return 0;
    i = star_i;
    p = star_p;
  }
}

int px_audit_pattern_match(const char *pattern, const char *line, size_t len) {
  item_t items[PX_AUDIT_MAX_PATTERN];
  const char *why = NULL;
  int n = compile(pattern, items, &why);
  return n > 0 && match_items(items, (size_t)n, line, len);
}

/* ---- the scan ---- */

typedef struct {
  item_t items[PX_AUDIT_MAX_PATTERN];
  int n;
} compiled_t;

static const px_audit_ruleset_t *find_set(const px_config_t *cfg,
                                          const char *runtime) {
  const px_runtime_t *rt = px_config_runtime(cfg, runtime);
  const char *name = rt && rt->audit ? rt->audit : runtime;
  size_t i;
  for (i = 0; name && i < cfg->audit.nsets; i++)
    if (strcmp(cfg->audit.sets[i].name, name) == 0)
      return &cfg->audit.sets[i];
  return NULL;
}

/* Compile every rule of set once (the patterns were checked at load). */
static compiled_t *compile_set(const px_audit_ruleset_t *set) {
  compiled_t *c = calloc(set->nrules ? set->nrules : 1, sizeof *c);
  const char *why = NULL;
  size_t r;
  for (r = 0; c && r < set->nrules; r++)
    c[r].n = compile(set->rules[r].pattern, c[r].items, &why);
  return c;
}

int px_audit_run(const px_config_t *cfg, const char *runtime, const char *code,
                 size_t len, int high_trust, px_result_t *result) {
  const px_audit_ruleset_t *set = find_set(cfg, runtime);
  const px_audit_rule_t *worst = NULL;
  compiled_t *pats = NULL;
  unsigned worst_line = 0, line = 1;
  size_t pos = 0, r, reported = 0;
  int rc = 0;
  if (!set || !code || set->nrules == 0)
    return 0;
  if (!(pats = compile_set(set)))
    return PX_ENOMEM;
  while (rc == 0 && pos <= len) {
    const char *nl = memchr(code + pos, '\n', len - pos);
    size_t end = nl ? (size_t)(nl - code) : len;
    for (r = 0; rc == 0 && r < set->nrules; r++) {
      const px_audit_rule_t *rule = &set->rules[r];
      if (pats[r].n <= 0 ||
          !match_items(pats[r].items, (size_t)pats[r].n, code + pos, end - pos))
        continue;
      if (reported < cfg->audit.max_findings) {
        rc = px_result_add_finding(result, rule->id, line, rule->severity,
                                   rule->message);
        reported++;
      }
      if (rule->severity >= cfg->audit.reject_severity && !worst) {
        worst = rule;
        worst_line = line;
      }
    }
    if (!nl)
      break;
    pos = end + 1;
    line++;
  }
  free(pats);
  if (rc != 0)
    return rc;
  if (!worst || !(high_trust || cfg->audit.mode == PX_AUDIT_HIGH_TRUST))
    return 0;
  result->status = PX_STATUS_REJECTED;
  result->exit_code = -1;
  if (px_result_set_error(result, PX_CODE_AUDIT_REJECTED,
                          "audit rule %s (%s) on line %u: %s", worst->id,
                          px_audit_severity_name(worst->severity), worst_line,
                          worst->message) != 0)
    return PX_ENOMEM;
  return PX_EPOLICY;
}
