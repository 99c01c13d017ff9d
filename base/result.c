/* result.c - names of the result's enumerations and the px_result_t
 * helpers (px_result.h). The strings are part of the wire protocol:
 * stable, documented in docs/protocol.md. */
#include "px/px_result.h"

#include "px/px_error.h"
#include "px/px_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const code_names[] = {
#define NAME_(name, str) str,
    PX_CODE_MAP(NAME_)
#undef NAME_
};

static const char *const status_names[] = {
    "ok",       "nonzero_exit", "killed", "cancelled",
    "rejected", "error",        "aborted"};

static const char *const limit_names[] = {
    NULL,     "memory",  "cpu_time", "wall_time", "processes",
    "output", "sandbox", "disk",     "files",    "handles"};

static const char *const severity_names[] = {"info", "low", "medium", "high",
                                             "critical"};

static const char *const detector_names[] = {NULL, "os", "watchdog", "engine"};

#define COUNT_(a) (sizeof(a) / sizeof((a)[0]))

const char *px_code_name(px_code_t code) {
  if ((unsigned)code >= COUNT_(code_names))
    return "internal";
  return code_names[code];
}

const char *px_status_name(px_status_t status) {
  if ((unsigned)status >= COUNT_(status_names))
    return "error";
  return status_names[status];
}

const char *px_limit_name(px_limit_t limit) {
  if ((unsigned)limit >= COUNT_(limit_names))
    return NULL;
  return limit_names[limit];
}

const char *px_severity_name(px_severity_t sev) {
  if ((unsigned)sev >= COUNT_(severity_names))
    return NULL;
  return severity_names[sev];
}

int px_severity_parse(const char *name, px_severity_t *out) {
  size_t i;
  for (i = 0; i < COUNT_(severity_names); i++)
    if (strcmp(name, severity_names[i]) == 0) {
      *out = (px_severity_t)i;
      return 0;
    }
  return PX_EINVAL;
}

const char *px_detector_name(px_detector_t d) {
  if ((unsigned)d >= COUNT_(detector_names))
    return NULL;
  return detector_names[d];
}

static void kb_free(px_kb_result_t *kb) {
  size_t i;
  free(kb->snapshot);
  for (i = 0; kb->changes && i < kb->nchanges; i++)
    free(kb->changes[i].path); /* action is static */
  free(kb->changes);
  free(kb->error);
  memset(kb, 0, sizeof *kb);
}

void px_result_free(px_result_t *r) {
  size_t i;
  if (!r)
    return;
  free(r->out[0]);
  free(r->out[1]);
  r->out[0] = r->out[1] = NULL;
  r->out_len[0] = r->out_len[1] = 0;
  for (i = 0; r->audit && i < r->naudit; i++) {
    free(r->audit[i].rule);
    free(r->audit[i].message);
  }
  free(r->audit);
  r->audit = NULL;
  r->naudit = 0;
  kb_free(&r->kb);
  free(r->error_message);
  r->error_message = NULL;
  for (i = 0; r->files && i < r->nfiles; i++) {
    free(r->files[i].path);
    free(r->files[i].data);
  }
  free(r->files);
  r->files = NULL;
  r->nfiles = 0;
}

int px_result_add_finding(px_result_t *r, const char *rule, unsigned line,
                          px_severity_t sev, const char *message) {
  px_audit_finding_t *v, *f;
  char *rule_copy = px_strdup(rule ? rule : "");
  char *msg_copy = px_strdup(message ? message : "");
  if (!rule_copy || !msg_copy)
    goto nomem;
  v = realloc(r->audit, (r->naudit + 1) * sizeof *v);
  if (!v)
    goto nomem;
  r->audit = v;
  f = &v[r->naudit++];
  f->rule = rule_copy;
  f->line = line;
  f->severity = sev;
  f->message = msg_copy;
  return 0;
nomem:
  free(rule_copy);
  free(msg_copy);
  return PX_ENOMEM;
}

int px_result_set_error(px_result_t *r, px_code_t code, const char *fmt, ...) {
  px_buf_t b = {0};
  va_list ap;
  char *msg;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  r->error_code = code;
  if (n < 0 || px_buf_reserve(&b, (size_t)n) != 0)
    return PX_ENOMEM;
  va_start(ap, fmt);
  vsnprintf(b.data, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b.len = (size_t)n;
  msg = px_buf_take(&b, NULL);
  free(r->error_message);
  r->error_message = msg;
  return 0;
}
