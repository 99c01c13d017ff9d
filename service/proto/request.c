/* request.c - client messages: payload -> px_request_t.
 *
 * DESIGN
 * A payload goes through three gates: px_json_check (strict syntax,
 * UTF-8, depth, NUL; json_scan.c) -> cJSON -> the shape checks here.
 * Every refusal fills px_parse_error_t with a stable code and a message
 * that names the field ("files[2].path: reserved device name"). For a
 * `run` whose `id` is valid the refusal is answered as that job's
 * `rejected` result (has_id = 1), so the id is read before anything else.
 * Optional fields are either absent or of their type: null is refused.
 * Duplicate keys are refused in every object we interpret (cJSON would
 * silently take the first, other parsers the last).
 */
#include "proto_int.h"

#include "px/px_error.h"
#include "px/px_request.h"
#include "px/px_collect.h"
#include "px/px_encode.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RUNTIME_LEN 64
#define MAX_CAPABILITIES 32
#define MAX_CAPABILITY_LEN 64
#define MAX_FIELD_SHOWN 48 /* bytes of an untrusted key shown in messages */

typedef struct {
  const char *payload;
  size_t len;
  const cJSON *root;
  const px_request_limits_t *lim;
  px_parse_error_t *err;
} ctx_t;

/* Cut s back so it ends on a whole UTF-8 character. */
static void trim_utf8(char *s) {
  size_t len = strlen(s);
  while (len > 0 && !px_utf8_valid(s, len))
    len--;
  s[len] = '\0';
}

/* mingw's "printf" format checks the MSVCRT dialect (no %zu); with
 * __USE_MINGW_ANSI_STDIO the C99 one applies. */
#if defined(__MINGW_PRINTF_FORMAT)
#define FMT_ __MINGW_PRINTF_FORMAT
#else
#define FMT_ printf
#endif

static int fail_code(ctx_t *c, px_code_t code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(FMT_, 3, 4)))
#endif
    ;

static int fail_code(ctx_t *c, px_code_t code, const char *fmt, ...) {
  va_list ap;
  c->err->code = code;
  va_start(ap, fmt);
  vsnprintf(c->err->message, sizeof c->err->message, fmt, ap);
  va_end(ap);
  trim_utf8(c->err->message);
  return PX_EPROTO;
}

#define BAD(c, ...) fail_code((c), PX_CODE_BAD_REQUEST, __VA_ARGS__)

/* An untrusted key for a message: truncated on a character boundary. */
static const char *shown(const char *key, char *buf, size_t bufsz) {
  size_t n = strlen(key);
  if (n <= MAX_FIELD_SHOWN)
    return key;
  snprintf(buf, bufsz, "%.*s", MAX_FIELD_SHOWN, key);
  trim_utf8(buf);
  snprintf(buf + strlen(buf), bufsz - strlen(buf), "...");
  return buf;
}

/* Refuse keys outside `known` (NULL-terminated) and duplicate keys in
 * obj; `where` prefixes the message ("", "limits.", "files[1]."). */
static int check_keys(ctx_t *c, const cJSON *obj, const char *const *known,
                      const char *where) {
  const cJSON *a, *b;
  char buf[MAX_FIELD_SHOWN + 8];
  for (a = obj->child; a; a = a->next) {
    size_t i;
    for (i = 0; known[i] && strcmp(known[i], a->string) != 0; i++)
      ;
    if (!known[i])
      return BAD(c, "unknown field '%s%s'", where,
                 shown(a->string, buf, sizeof buf));
    for (b = obj->child; b != a; b = b->next)
      if (strcmp(a->string, b->string) == 0)
        return BAD(c, "duplicate field '%s%s'", where,
                   shown(a->string, buf, sizeof buf));
  }
  return 0;
}

/* A string field: *out borrowed from the tree, NULL when absent and
 * optional. */
static int get_string(ctx_t *c, const char *name, int required,
                      const char **out) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(c->root, name);
  *out = NULL;
  if (!it)
    return required ? BAD(c, "missing field '%s'", name) : 0;
  if (!cJSON_IsString(it))
    return BAD(c, "%s: must be a string", name);
  *out = it->valuestring;
  return 0;
}

static int get_bool(ctx_t *c, const char *name, int *out) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(c->root, name);
  if (!it)
    return 0;
  if (!cJSON_IsBool(it))
    return BAD(c, "%s: must be true or false", name);
  *out = cJSON_IsTrue(it) ? 1 : 0;
  return 0;
}

/* An enumerated string: *out = its index in names (NULL-terminated);
 * unchanged when absent. `choices` lists the names for the message. */
static int get_enum(ctx_t *c, const char *name, const char *const *names,
                    const char *choices, int *out) {
  const char *s;
  int i, rc = get_string(c, name, 0, &s);
  if (rc != 0 || !s)
    return rc;
  for (i = 0; names[i]; i++)
    if (strcmp(names[i], s) == 0) {
      *out = i;
      return 0;
    }
  return BAD(c, "%s: must be one of %s", name, choices);
}

static int name_ok(const char *s, size_t max) {
  size_t n = strlen(s);
  return n > 0 && n <= max && px_job_id_valid(s);
}

/* ---- run fields ---- */

static int parse_code(ctx_t *c, px_run_request_t *r) {
  const char *s;
  int rc = get_string(c, "runtime", 1, &s);
  if (rc != 0)
    return rc;
  if (!name_ok(s, MAX_RUNTIME_LEN))
    return BAD(c, "runtime: must be 1-64 characters of [A-Za-z0-9._-]");
  if (!(r->runtime = px_strdup(s)))
    return PX_ENOMEM;
  if ((rc = get_string(c, "code", 1, &s)) != 0)
    return rc;
  r->code_len = strlen(s);
  if (r->code_len > c->lim->max_code_bytes)
    return BAD(c, "code: %zu bytes, the limit is %zu", r->code_len,
               c->lim->max_code_bytes);
  if (!(r->code = px_strdup(s)))
    return PX_ENOMEM;
  if ((rc = get_string(c, "stdin", 0, &s)) != 0 || !s)
    return rc;
  r->stdin_len = strlen(s);
  if (!(r->stdin_data = px_strdup(s)))
    return PX_ENOMEM;
  return 0;
}

/* An array of strings: each 1..max_len bytes when max_len > 0. */
static int get_strings(ctx_t *c, const char *name, size_t max, size_t max_len,
                       char ***out, size_t *n) {
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(c->root, name);
  const cJSON *it;
  size_t count, i = 0;
  if (!arr)
    return 0;
  if (!cJSON_IsArray(arr))
    return BAD(c, "%s: must be an array of strings", name);
  count = (size_t)cJSON_GetArraySize(arr);
  if (count > max)
    return BAD(c, "%s: %zu entries, the limit is %zu", name, count, max);
  if (count == 0)
    return 0;
  if (!(*out = calloc(count, sizeof **out)))
    return PX_ENOMEM;
  *n = count;
  for (it = arr->child; it; it = it->next, i++) {
    if (!cJSON_IsString(it))
      return BAD(c, "%s[%zu]: must be a string", name, i);
    if (max_len && (!it->valuestring[0] || strlen(it->valuestring) > max_len))
      return BAD(c, "%s[%zu]: must be 1-%zu bytes", name, i, max_len);
    if (!((*out)[i] = px_strdup(it->valuestring)))
      return PX_ENOMEM;
  }
  return 0;
}

static int parse_env(ctx_t *c, px_run_request_t *r) {
  const cJSON *obj = cJSON_GetObjectItemCaseSensitive(c->root, "env");
  const cJSON *it, *prev;
  size_t count, i = 0;
  char buf[MAX_FIELD_SHOWN + 8];
  if (!obj)
    return 0;
  if (!cJSON_IsObject(obj))
    return BAD(c, "env: must be an object of strings");
  count = (size_t)cJSON_GetArraySize(obj);
  if (count > c->lim->max_env)
    return BAD(c, "env: %zu variables, the limit is %zu", count,
               c->lim->max_env);
  if (count == 0)
    return 0;
  if (!(r->env = calloc(count, sizeof *r->env)))
    return PX_ENOMEM;
  r->nenv = count;
  for (it = obj->child; it; it = it->next, i++) {
    const char *k = shown(it->string, buf, sizeof buf);
    if (!px__proto_env_name_valid(it->string, c->lim->max_env_name_len))
      return BAD(c,
                 "env.%s: invalid name (want [A-Za-z_][A-Za-z0-9_]*, "
                 "at most %zu bytes)",
                 k, c->lim->max_env_name_len);
    for (prev = obj->child; prev != it; prev = prev->next)
      if (px_strcasecmp(prev->string, it->string) == 0)
        return BAD(c, "env.%s: duplicate name (names ignore case)", k);
    if (!cJSON_IsString(it))
      return BAD(c, "env.%s: must be a string", k);
    if (strlen(it->valuestring) > c->lim->max_env_value_bytes)
      return BAD(c, "env.%s: value longer than %zu bytes", k,
                 c->lim->max_env_value_bytes);
    r->env[i].name = px_strdup(it->string);
    r->env[i].value = px_strdup(it->valuestring);
    if (!r->env[i].name || !r->env[i].value)
      return PX_ENOMEM;
  }
  return 0;
}

/* Does path a name b, or a directory of b (or the reverse), ignoring
 * ASCII case (Windows file systems do)? */
static int path_conflict(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b), n = la < lb ? la : lb, i;
  for (i = 0; i < n; i++) {
    char x = a[i], y = b[i];
    x = (x >= 'A' && x <= 'Z') ? (char)(x + 32) : x;
    y = (y >= 'A' && y <= 'Z') ? (char)(y + 32) : y;
    if (x != y)
      return 0;
  }
  return la == lb || (la < lb ? b[la] : a[lb]) == '/';
}

static int parse_content(ctx_t *c, const cJSON *content, int base64, size_t i,
                         px_job_file_t *f) {
  size_t len = strlen(content->valuestring);
  size_t max = c->lim->max_file_bytes;
  int rc;
  if (base64) {
    rc = px_base64_decode(content->valuestring, len, max, &f->data, &f->len);
    if (rc == PX_EINVAL)
      return BAD(c, "files[%zu].content: not valid base64", i);
    if (rc == PX_ERANGE)
      return BAD(c, "files[%zu].content: more than %zu bytes", i, max);
    return rc;
  }
  if (len > max)
    return BAD(c, "files[%zu].content: more than %zu bytes", i, max);
  if (!(f->data = malloc(len + 1)))
    return PX_ENOMEM;
  memcpy(f->data, content->valuestring, len + 1);
  f->len = len;
  return 0;
}

static int parse_file(ctx_t *c, const cJSON *obj, size_t i, px_job_file_t *f) {
  static const char *const keys[] = {"path", "content", "encoding", NULL};
  static const char *const encs[] = {"utf-8", "base64", NULL};
  const cJSON *path, *content, *enc;
  char where[32], why[96];
  int rc, e = 0;
  if (!cJSON_IsObject(obj))
    return BAD(c, "files[%zu]: must be an object", i);
  snprintf(where, sizeof where, "files[%zu].", i);
  if ((rc = check_keys(c, obj, keys, where)) != 0)
    return rc;
  path = cJSON_GetObjectItemCaseSensitive(obj, "path");
  content = cJSON_GetObjectItemCaseSensitive(obj, "content");
  enc = cJSON_GetObjectItemCaseSensitive(obj, "encoding");
  if (!cJSON_IsString(path))
    return BAD(c, "files[%zu].path: missing or not a string", i);
  if (px__proto_file_path_check(path->valuestring, c->lim->max_path_len, why,
                          sizeof why) != 0)
    return BAD(c, "files[%zu].path: %s", i, why);
  if (!cJSON_IsString(content))
    return BAD(c, "files[%zu].content: missing or not a string", i);
  if (enc) {
    for (e = 0; encs[e]; e++)
      if (cJSON_IsString(enc) && strcmp(enc->valuestring, encs[e]) == 0)
        break;
    if (!encs[e])
      return BAD(c, "files[%zu].encoding: must be utf-8 or base64", i);
  }
  if (!(f->path = px_strdup(path->valuestring)))
    return PX_ENOMEM;
  return parse_content(c, content, e == 1, i, f);
}

static int parse_files(ctx_t *c, px_run_request_t *r) {
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(c->root, "files");
  const cJSON *it;
  size_t count, i = 0, j;
  int rc;
  if (!arr)
    return 0;
  if (!cJSON_IsArray(arr))
    return BAD(c, "files: must be an array of objects");
  count = (size_t)cJSON_GetArraySize(arr);
  if (count > c->lim->max_files)
    return BAD(c, "files: %zu files, the limit is %zu", count,
               c->lim->max_files);
  if (count == 0)
    return 0;
  if (!(r->files = calloc(count, sizeof *r->files)))
    return PX_ENOMEM;
  r->nfiles = count;
  for (it = arr->child; it; it = it->next, i++) {
    if ((rc = parse_file(c, it, i, &r->files[i])) != 0)
      return rc;
    for (j = 0; j < i; j++)
      if (path_conflict(r->files[j].path, r->files[i].path))
        return BAD(c, "files[%zu].path: clashes with files[%zu].path", i, j);
  }
  return 0;
}

static int parse_limit(ctx_t *c, const cJSON *it, uint64_t *out) {
  const char *text;
  size_t ord, tlen;
  int rc;
  if (!cJSON_IsNumber(it))
    return BAD(c, "limits.%s: must be a positive integer", it->string);
  if (px__proto_json_number_ordinal(c->root, it, &ord) != 0 ||
      px__proto_json_number_text(c->payload, c->len, ord, &text, &tlen) != 0)
    return fail_code(c, PX_CODE_INTERNAL, "limits.%s: number lost", it->string);
  rc = px__proto_parse_pos_int(text, tlen, out);
  if (rc == PX_ERANGE)
    return BAD(c, "limits.%s: larger than 9223372036854775807", it->string);
  if (rc != 0)
    return BAD(c,
               "limits.%s: must be a positive integer written without "
               "sign, fraction or exponent",
               it->string);
  return 0;
}

static int parse_limits(ctx_t *c, px_run_request_t *r) {
  static const char *const keys[] = {
      "cpu_ms",       "wall_ms",    "memory_bytes", "processes",
      "output_bytes", "disk_bytes", NULL};
  static const unsigned bits[] = {PX_LIMSET_CPU,       PX_LIMSET_WALL,
                                  PX_LIMSET_MEMORY,    PX_LIMSET_PROCESSES,
                                  PX_LIMSET_OUTPUT,    PX_LIMSET_DISK};
  uint64_t *fields[6];
  const cJSON *obj = cJSON_GetObjectItemCaseSensitive(c->root, "limits");
  const cJSON *it;
  int rc;
  fields[0] = &r->limits.cpu_ms;
  fields[1] = &r->limits.wall_ms;
  fields[2] = &r->limits.memory_bytes;
  fields[3] = &r->limits.processes;
  fields[4] = &r->limits.output_bytes;
  fields[5] = &r->limits.disk_bytes;
  if (!obj)
    return 0;
  if (!cJSON_IsObject(obj))
    return BAD(c, "limits: must be an object");
  if ((rc = check_keys(c, obj, keys, "limits.")) != 0)
    return rc;
  for (it = obj->child; it; it = it->next) {
    size_t k;
    for (k = 0; strcmp(keys[k], it->string) != 0; k++)
      ;
    if ((rc = parse_limit(c, it, fields[k])) != 0)
      return rc;
    r->limits_set |= bits[k];
  }
  return 0;
}

/* "collect": a list of patterns, or {"patterns": [...], "max_files": N,
 * "max_bytes": N}; the caps against the policy come later (policy.c). */
static int parse_collect_cap(ctx_t *c, const cJSON *obj, const char *name,
                             uint64_t *out) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);
  const char *text;
  size_t ord, tlen;
  if (!it)
    return 0;
  if (!cJSON_IsNumber(it) ||
      px__proto_json_number_ordinal(c->root, it, &ord) != 0 ||
      px__proto_json_number_text(c->payload, c->len, ord, &text, &tlen) != 0 ||
      px__proto_parse_pos_int(text, tlen, out) != 0)
    return BAD(c, "collect.%s: must be a positive integer", name);
  return 0;
}

static int parse_collect_patterns(ctx_t *c, const cJSON *arr,
                                  px_collect_spec_t *cs) {
  const cJSON *it;
  size_t count, i = 0;
  const char *why;
  if (!cJSON_IsArray(arr))
    return BAD(c, "collect.patterns: must be an array of strings");
  count = (size_t)cJSON_GetArraySize(arr);
  if (count == 0 || count > PX_COLLECT_MAX_PATTERNS)
    return BAD(c, "collect.patterns: 1-%d patterns", PX_COLLECT_MAX_PATTERNS);
  if (!(cs->patterns = calloc(count, sizeof *cs->patterns)))
    return PX_ENOMEM;
  cs->npatterns = count;
  for (it = arr->child; it; it = it->next, i++) {
    if (!cJSON_IsString(it))
      return BAD(c, "collect.patterns[%zu]: must be a string", i);
    if (px_collect_pattern_check(it->valuestring, &why) != 0)
      return BAD(c, "collect.patterns[%zu]: %s", i, why);
    if (!(cs->patterns[i] = px_strdup(it->valuestring)))
      return PX_ENOMEM;
  }
  return 0;
}

static int parse_collect(ctx_t *c, px_run_request_t *r) {
  static const char *const keys[] = {"patterns", "max_files", "max_bytes",
                                     NULL};
  const cJSON *obj = cJSON_GetObjectItemCaseSensitive(c->root, "collect");
  const cJSON *pats;
  int rc;
  if (!obj)
    return 0;
  if (cJSON_IsArray(obj)) /* shorthand: the policy's default caps */
    return parse_collect_patterns(c, obj, &r->collect);
  if (!cJSON_IsObject(obj))
    return BAD(c, "collect: must be an array of patterns or an object");
  if ((rc = check_keys(c, obj, keys, "collect.")) != 0)
    return rc;
  if (!(pats = cJSON_GetObjectItemCaseSensitive(obj, "patterns")))
    return BAD(c, "collect.patterns: missing");
  if ((rc = parse_collect_patterns(c, pats, &r->collect)) != 0 ||
      (rc = parse_collect_cap(c, obj, "max_files", &r->collect.max_files)) != 0)
    return rc;
  return parse_collect_cap(c, obj, "max_bytes", &r->collect.max_bytes);
}

static int parse_options(ctx_t *c, px_run_request_t *r) {
  static const char *const prios[] = {"critical", "high", "normal", "low",
                                      NULL};
  static const char *const rollbacks[] = {"on_violation", "always", "never",
                                          NULL};
  static const char *const placements[] = {"local", "cluster", "any", NULL};
  int prio = PX_PRIO_NORMAL, kb = PX_KB_ROLLBACK_ON_VIOLATION, rc;
  int where = PX_PLACEMENT_LOCAL;
  if ((rc = get_enum(c, "priority", prios, "critical|high|normal|low",
                     &prio)) != 0 ||
      (rc = get_enum(c, "placement", placements, "local|cluster|any",
                     &where)) != 0 ||
      (rc = get_enum(c, "kb_rollback", rollbacks, "on_violation|always|never",
                     &kb)) != 0 ||
      (rc = get_bool(c, "stream", &r->stream)) != 0 ||
      (rc = get_bool(c, "high_trust", &r->high_trust)) != 0)
    return rc;
  r->priority = (px_priority_t)prio;
  r->kb_rollback = (px_kb_rollback_t)kb;
  r->placement = (px_placement_t)where;
  return 0;
}

/* code + stdin + decoded files must fit max_total_bytes. */
static int check_total(ctx_t *c, const px_run_request_t *r) {
  uint64_t total = (uint64_t)r->code_len + r->stdin_len;
  size_t i;
  for (i = 0; i < r->nfiles; i++)
    total += r->files[i].len;
  if (total > c->lim->max_total_bytes)
    return BAD(c,
               "request: code + stdin + files are %llu bytes, the "
               "limit is %zu",
               (unsigned long long)total, c->lim->max_total_bytes);
  return 0;
}

static int parse_run(ctx_t *c, px_run_request_t *r) {
  int rc;
  r->priority = PX_PRIO_NORMAL;
  r->kb_rollback = PX_KB_ROLLBACK_ON_VIOLATION;
  if ((rc = parse_code(c, r)) != 0 ||
      (rc = get_strings(c, "args", c->lim->max_args, 0, &r->args, &r->nargs)) !=
          0 ||
      (rc = parse_env(c, r)) != 0 || (rc = parse_files(c, r)) != 0 ||
      (rc = parse_limits(c, r)) != 0 ||
      (rc = get_strings(c, "capabilities", MAX_CAPABILITIES, MAX_CAPABILITY_LEN,
                        &r->capabilities, &r->ncapabilities)) != 0 ||
      (rc = parse_options(c, r)) != 0 || (rc = parse_collect(c, r)) != 0)
    return rc;
  return check_total(c, r);
}

/* ---- the message ---- */

static int count_key(const cJSON *obj, const char *name) {
  const cJSON *it;
  int n = 0;
  for (it = obj->child; it; it = it->next)
    n += strcmp(it->string, name) == 0;
  return n;
}

static int read_type(ctx_t *c, px_msg_type_t *type) {
  static const char *const names[] = {
      "run",     "cancel",  "status",     "ping",  "scram",
      "resume",  "kb_list", "kb_diff",    "kb_restore", "kb_gc",
      "attest",  "describe", "metrics", "cluster_status", NULL};
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(c->root, "type");
  char buf[MAX_FIELD_SHOWN + 8];
  int i;
  if (!it)
    return BAD(c, "missing field 'type'");
  if (count_key(c->root, "type") > 1)
    return BAD(c, "duplicate field 'type'");
  if (!cJSON_IsString(it))
    return BAD(c, "type: must be a string");
  for (i = 0; names[i]; i++)
    if (strcmp(names[i], it->valuestring) == 0) {
      *type = (px_msg_type_t)(i + 1);
      return 0;
    }
  return fail_code(c, PX_CODE_UNKNOWN_TYPE, "unknown message type '%s'",
                   shown(it->valuestring, buf, sizeof buf));
}

/* Note a valid, unambiguous id early so later refusals can name the job. */
static int peek_id(ctx_t *c, px_msg_type_t type, char *id) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(c->root, "id");
  if (!cJSON_IsString(it) || !px_job_id_valid(it->valuestring) ||
      count_key(c->root, "id") != 1)
    return 0;
  px_strlcpy(id, it->valuestring, PX_JOB_ID_MAX + 1);
  px_strlcpy(c->err->id, id, sizeof c->err->id);
  c->err->has_id = type == PX_MSG_RUN;
  return 1;
}

/* kb_diff / kb_restore: "snapshot", an id as px_kb_list reports it. */
static int parse_snapshot(ctx_t *c, px_request_t *req) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(c->root, "snapshot");
  if (!it)
    return BAD(c, "missing field 'snapshot'");
  if (count_key(c->root, "snapshot") > 1)
    return BAD(c, "duplicate field 'snapshot'");
  if (!cJSON_IsString(it) || !px_job_id_valid(it->valuestring))
    return BAD(c, "snapshot: must be 1-64 characters of [A-Za-z0-9._-]");
  px_strlcpy(req->snapshot, it->valuestring, sizeof req->snapshot);
  return 0;
}

static int parse_root(ctx_t *c, px_request_t *req) {
  static const char *const run_keys[] = {
      "type",     "id",     "runtime",    "code",        "args",
      "stdin",    "env",    "files",      "limits",      "capabilities",
      "priority", "stream", "high_trust", "kb_rollback", "collect",
      "placement", NULL};
  static const char *const id_keys[] = {"type", "id", NULL};
  static const char *const bare_keys[] = {"type", NULL};
  static const char *const snap_keys[] = {"type", "snapshot", NULL};
  int rc, has_id = 0;
  if ((rc = read_type(c, &req->type)) != 0)
    return rc;
  if (req->type == PX_MSG_RUN || req->type == PX_MSG_CANCEL)
    has_id = peek_id(c, req->type, req->id);
  rc = check_keys(c, c->root,
                  req->type == PX_MSG_RUN      ? run_keys
                  : req->type == PX_MSG_CANCEL ? id_keys
                  : (req->type == PX_MSG_KB_DIFF || req->type == PX_MSG_KB_RESTORE)
                      ? snap_keys
                      : bare_keys,
                  "");
  if (rc != 0)
    return rc;
  if (req->type == PX_MSG_KB_DIFF || req->type == PX_MSG_KB_RESTORE)
    return parse_snapshot(c, req);
  if ((req->type == PX_MSG_RUN || req->type == PX_MSG_CANCEL) && !has_id)
    return cJSON_GetObjectItemCaseSensitive(c->root, "id")
               ? BAD(c, "id: must be 1-64 characters of [A-Za-z0-9._-]")
               : BAD(c, "missing field 'id'");
  if (req->type != PX_MSG_RUN)
    return 0;
  memcpy(req->run.id, req->id, sizeof req->run.id);
  return parse_run(c, &req->run);
}

int px_request_parse(const char *payload, size_t len,
                     const px_request_limits_t *limits, px_request_t *req,
                     px_parse_error_t *err) {
  px_request_limits_t lim;
  cJSON *root = NULL;
  ctx_t c;
  char why[96];
  int rc;
  memset(req, 0, sizeof *req);
  memset(err, 0, sizeof *err);
  px_request_limits_default(&lim);
  if (limits) {
    /* The env bounds came later; 0 (a caller that fills the struct field
     * by field) means their default. */
    size_t name_len = lim.max_env_name_len, value = lim.max_env_value_bytes;
    lim = *limits;
    if (!lim.max_env_name_len)
      lim.max_env_name_len = name_len;
    if (!lim.max_env_value_bytes)
      lim.max_env_value_bytes = value;
  }
  c.lim = &lim;
  c.payload = payload;
  c.len = len;
  c.err = err;
  c.root = NULL;
  if (px_json_check(payload, len, why, sizeof why) != 0)
    return fail_code(&c, PX_CODE_BAD_JSON, "invalid JSON: %s", why);
  root = cJSON_ParseWithLength(payload, len);
  if (!root) { /* the text passed the strict check: out of memory */
    fail_code(&c, PX_CODE_INTERNAL, "out of memory parsing the request");
    return PX_ENOMEM;
  }
  c.root = root;
  rc = parse_root(&c, req);
  cJSON_Delete(root);
  if (rc == PX_ENOMEM)
    fail_code(&c, PX_CODE_INTERNAL, "out of memory parsing the request");
  if (rc != 0)
    px_request_free(req);
  return rc;
}

static void free_strings(char **v, size_t n) {
  size_t i;
  for (i = 0; v && i < n; i++)
    free(v[i]);
  free(v);
}

void px_request_free(px_request_t *req) {
  px_run_request_t *r = &req->run;
  size_t i;
  free(r->runtime);
  free(r->code);
  free(r->stdin_data);
  free_strings(r->args, r->nargs);
  free_strings(r->capabilities, r->ncapabilities);
  for (i = 0; r->env && i < r->nenv; i++) {
    free(r->env[i].name);
    free(r->env[i].value);
  }
  free(r->env);
  for (i = 0; r->files && i < r->nfiles; i++) {
    free(r->files[i].path);
    free(r->files[i].data);
  }
  free(r->files);
  free_strings(r->collect.patterns, r->collect.npatterns);
  memset(req, 0, sizeof *req);
}
