/* cases.c - loader and checker for the data-driven protocol cases
 * (cases.h; the file format is in README.md beside this file).
 *
 * A case becomes bytes to send (PXF1 frames built here, or raw bytes) and
 * a list of expectations. An expectation maps dotted paths ("error.code",
 * "audit.0.rule") to a JSON value compared for equality, or to a matcher
 * string starting with '$' ("$present", "$absent", "$string", "$integer",
 * "$contains:text", ...), or to {"$keys": [...]} (exact key set) or
 * {"$one_of": [...]}.
 */
#include "tests/cases/cases.h"

#include "px/px_frame.h"
#include "px/px_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TIMEOUT_MS 10000u

#if defined(__MINGW_PRINTF_FORMAT) /* C99 dialect, see stdio.h */
#define FMT_ __MINGW_PRINTF_FORMAT
#else
#define FMT_ printf
#endif

static int fail(char *why, size_t whysz, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(FMT_, 3, 4)))
#endif
    ;

/* Format the reason into why (may be NULL); returns -1. */
static int fail(char *why, size_t whysz, const char *fmt, ...) {
  va_list ap;
  if (why && whysz) {
    va_start(ap, fmt);
    vsnprintf(why, whysz, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* Hex text (blanks allowed between bytes) -> px_buf_t. 0 or -1. */
static int unhex(const char *s, px_buf_t *out) {
  while (*s) {
    int hi, lo;
    unsigned char byte;
    if (*s == ' ' || *s == '\n' || *s == '\t') {
      s++;
      continue;
    }
    hi = px_hexval((unsigned char)s[0]);
    lo = s[1] ? px_hexval((unsigned char)s[1]) : -1;
    if (hi < 0 || lo < 0)
      return -1;
    byte = (unsigned char)(hi << 4 | lo);
    if (px_buf_append(out, &byte, 1) != 0)
      return -1;
    s += 2;
  }
  return 0;
}

/* The payload of a framed item ("json", "text" or "hex") into p. */
static int item_payload(const cJSON *item, px_buf_t *p, char *why,
                        size_t whysz) {
  const cJSON *json = cJSON_GetObjectItemCaseSensitive(item, "json");
  const cJSON *text = cJSON_GetObjectItemCaseSensitive(item, "text");
  const cJSON *hex = cJSON_GetObjectItemCaseSensitive(item, "hex");
  const cJSON *pad = cJSON_GetObjectItemCaseSensitive(item, "pad_to");
  if (json) {
    char *s = cJSON_PrintUnformatted(json);
    int rc = s ? px_buf_append_str(p, s) : -1;
    free(s);
    if (rc != 0)
      return fail(why, whysz, "send: out of memory");
  } else if (cJSON_IsString(text)) {
    if (px_buf_append_str(p, text->valuestring) != 0)
      return -1;
  } else if (!cJSON_IsString(hex) || unhex(hex->valuestring, p) != 0) {
    return fail(why, whysz, "send: need json, text, hex or raw_hex");
  }
  if (pad && (!cJSON_IsNumber(pad) || pad->valuedouble < (double)p->len))
    return fail(why, whysz, "send: pad_to smaller than the payload");
  while (pad && p->len < (size_t)pad->valuedouble)
    if (px_buf_append(p, " ", 1) != 0)
      return -1;
  return 0;
}

static int check_item_keys(const cJSON *item, char *why, size_t whysz) {
  static const char *const keys[] = {"json",    "text",   "hex",
                                     "raw_hex", "pad_to", "corrupt_crc",
                                     "comment", NULL};
  const cJSON *k;
  if (!cJSON_IsObject(item))
    return fail(why, whysz, "send: items are objects");
  for (k = item->child; k; k = k->next) {
    size_t i;
    for (i = 0; keys[i] && strcmp(keys[i], k->string) != 0; i++)
      ;
    if (!keys[i])
      return fail(why, whysz, "send: unknown key '%s'", k->string);
  }
  return 0;
}

/* One "send" item into s. */
static int load_item(px_case_t *c, const cJSON *item, px_case_send_t *s,
                     char *why, size_t whysz) {
  const cJSON *raw = cJSON_GetObjectItemCaseSensitive(item, "raw_hex");
  px_buf_t p = {0}, f = {0};
  int rc = -1;
  if (check_item_keys(item, why, whysz) != 0)
    return -1;
  if (raw) {
    c->stream_only = 1;
    if (!cJSON_IsString(raw) || unhex(raw->valuestring, &f) != 0) {
      fail(why, whysz, "send: bad raw_hex");
      goto cleanup;
    }
  } else {
    if (item_payload(item, &p, why, whysz) != 0 ||
        px_frame_encode(&f, p.data, p.len) != 0)
      goto cleanup;
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(item, "corrupt_crc"))) {
      f.data[8] ^= 0x5a; /* a CRC the payload cannot have */
      c->stream_only = 1;
    }
    s->payload_len = p.len;
    s->payload = (unsigned char *)px_buf_take(&p, NULL);
    if (!s->payload && !(s->payload = calloc(1, 1)))
      goto cleanup;
  }
  s->len = f.len;
  s->data = (unsigned char *)px_buf_take(&f, NULL);
  rc = 0;
cleanup:
  px_buf_free(&p);
  px_buf_free(&f);
  return rc;
}

static int load_send(px_case_t *c, const cJSON *arr, char *why, size_t whysz) {
  const cJSON *it;
  size_t n;
  if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0)
    return fail(why, whysz, "'send' must be a non-empty array");
  n = (size_t)cJSON_GetArraySize(arr);
  if (!(c->send = calloc(n, sizeof *c->send)))
    return -1;
  for (it = arr->child; it; it = it->next, c->nsend++)
    if (load_item(c, it, &c->send[c->nsend], why, whysz) != 0)
      return -1;
  return 0;
}

/* ---- expectations ---- */

static const char *const matchers[] = {
    "$present", "$absent", "$null",  "$string",   "$number", "$integer",
    "$bool",    "$object", "$array", "$nonempty", NULL};

static int is_matcher(const cJSON *want) {
  return cJSON_IsString(want) && want->valuestring[0] == '$' &&
         want->valuestring[1] != '$';
}

/* The node at a dotted path ("a.b.0.c"), or NULL. */
static const cJSON *at_path(const cJSON *root, const char *path) {
  char part[128];
  const cJSON *cur = root;
  while (cur && *path) {
    size_t n = strcspn(path, ".");
    if (n >= sizeof part)
      return NULL;
    memcpy(part, path, n);
    part[n] = '\0';
    path += n + (path[n] == '.');
    if (cJSON_IsArray(cur)) {
      char *end;
      long i = strtol(part, &end, 10);
      cur = (*end || end == part || i < 0) ? NULL
                                           : cJSON_GetArrayItem(cur, (int)i);
    } else {
      cur = cJSON_IsObject(cur) ? cJSON_GetObjectItemCaseSensitive(cur, part)
                                : NULL;
    }
  }
  return cur;
}

static int is_integer(const cJSON *v) {
  double d = v->valuedouble;
  return cJSON_IsNumber(v) && d == (double)(long long)d;
}

/* 1 if got satisfies matcher m (a "$..." string). */
static int match_named(const char *m, const cJSON *got) {
  if (strncmp(m, "$contains:", 10) == 0)
    return cJSON_IsString(got) && strstr(got->valuestring, m + 10) != NULL;
  if (strcmp(m, "$absent") == 0)
    return got == NULL;
  if (!got)
    return 0;
  if (strcmp(m, "$present") == 0)
    return 1;
  if (strcmp(m, "$null") == 0)
    return cJSON_IsNull(got);
  if (strcmp(m, "$string") == 0)
    return cJSON_IsString(got);
  if (strcmp(m, "$number") == 0)
    return cJSON_IsNumber(got);
  if (strcmp(m, "$integer") == 0)
    return is_integer(got);
  if (strcmp(m, "$bool") == 0)
    return cJSON_IsBool(got);
  if (strcmp(m, "$object") == 0)
    return cJSON_IsObject(got);
  if (strcmp(m, "$array") == 0)
    return cJSON_IsArray(got);
  if (strcmp(m, "$nonempty") == 0)
    return (cJSON_IsString(got) && got->valuestring[0]) ||
           (cJSON_IsArray(got) && got->child);
  return 0;
}

/* {"$keys": [...]}: got is an object with exactly these keys. */
static int match_keys(const cJSON *keys, const cJSON *got) {
  const cJSON *k;
  if (!cJSON_IsObject(got) ||
      cJSON_GetArraySize(keys) != cJSON_GetArraySize(got))
    return 0;
  for (k = keys->child; k; k = k->next)
    if (!cJSON_IsString(k) ||
        !cJSON_GetObjectItemCaseSensitive(got, k->valuestring))
      return 0;
  return 1;
}

static int match_value(const cJSON *want, const cJSON *got) {
  const cJSON *special =
      cJSON_IsObject(want) && want->child && !want->child->next ? want->child
                                                                : NULL;
  if (is_matcher(want))
    return match_named(want->valuestring, got);
  if (!got)
    return 0;
  if (special && strcmp(special->string, "$keys") == 0)
    return match_keys(special, got);
  if (special && strcmp(special->string, "$one_of") == 0) {
    const cJSON *alt;
    for (alt = special->child; alt; alt = alt->next)
      if (match_value(alt, got))
        return 1;
    return 0;
  }
  if (cJSON_IsString(want) && want->valuestring[0] == '$') /* "$$x" */
    return cJSON_IsString(got) &&
           strcmp(got->valuestring, want->valuestring + 1) == 0;
  return cJSON_Compare(want, got, 1);
}

/* "path: want W, got G" into why. */
static int mismatch(const char *path, const cJSON *want, const cJSON *got,
                    char *why, size_t whysz) {
  char *w = cJSON_PrintUnformatted(want);
  char *g = got ? cJSON_PrintUnformatted(got) : NULL;
  if (why && whysz)
    snprintf(why, whysz, "%s: want %.200s, got %.200s", path, w ? w : "?",
             got ? (g ? g : "?") : "(absent)");
  free(w);
  free(g);
  return -1;
}

int px_case_check(const cJSON *expect, const cJSON *msg, char *why,
                  size_t whysz) {
  const cJSON *e;
  if (!cJSON_IsObject(expect) || !cJSON_IsObject(msg))
    return fail(why, whysz, "expectation and message must be objects");
  for (e = expect->child; e; e = e->next) {
    const cJSON *got = at_path(msg, e->string);
    if (!match_value(e, got))
      return mismatch(e->string, e, got, why, whysz);
  }
  return 0;
}

int px_case_check_text(const cJSON *expect, const char *msg, size_t len,
                       char *why, size_t whysz) {
  cJSON *m = cJSON_ParseWithLength(msg, len);
  int rc;
  if (!m)
    return fail(why, whysz, "message is not JSON");
  rc = px_case_check(expect, m, why, whysz);
  cJSON_Delete(m);
  return rc;
}

/* Validate one expectation object at load time. */
static int check_expectation(const cJSON *e, char *why, size_t whysz) {
  const cJSON *p;
  if (!cJSON_IsObject(e) || !e->child)
    return fail(why, whysz, "expect: items are non-empty objects");
  for (p = e->child; p; p = p->next) {
    size_t i;
    if (!p->string[0] || p->string[strlen(p->string) - 1] == '.')
      return fail(why, whysz, "expect: bad path '%s'", p->string);
    if (!is_matcher(p) || strncmp(p->valuestring, "$contains:", 10) == 0)
      continue;
    for (i = 0; matchers[i] && strcmp(matchers[i], p->valuestring); i++)
      ;
    if (!matchers[i])
      return fail(why, whysz, "expect: unknown matcher '%s' at %s",
                  p->valuestring, p->string);
  }
  return 0;
}

/* ---- cases ---- */

static int check_case_keys(const cJSON *root, char *why, size_t whysz) {
  static const char *const keys[] = {
      "name",   "description", "platform", "client", "config",     "send",
      "expect", "ignore",      "close",    "codec",  "timeout_ms", NULL};
  const cJSON *k;
  for (k = root->child; k; k = k->next) {
    size_t i;
    for (i = 0; keys[i] && strcmp(keys[i], k->string) != 0; i++)
      ;
    if (!keys[i])
      return fail(why, whysz, "unknown key '%s'", k->string);
  }
  return 0;
}

/* An optional string member, copied; def when absent. */
static int opt_string(const cJSON *root, const char *name, const char *def,
                      char **out, char *why, size_t whysz) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, name);
  if (it && !cJSON_IsString(it))
    return fail(why, whysz, "'%s' must be a string", name);
  *out = px_strdup(it ? it->valuestring : def);
  return (*out || !(it ? it->valuestring : def)) ? 0 : -1;
}

static int load_meta(px_case_t *c, cJSON *root, char *why, size_t whysz) {
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "timeout_ms");
  if (opt_string(root, "name", NULL, &c->name, why, whysz) != 0 ||
      opt_string(root, "platform", NULL, &c->platform, why, whysz) != 0 ||
      opt_string(root, "client", "user", &c->client, why, whysz) != 0)
    return -1;
  if (!c->name || !c->name[0])
    return fail(why, whysz, "'name' is required");
  if (c->platform && strcmp(c->platform, "linux") != 0 &&
      strcmp(c->platform, "windows") != 0)
    return fail(why, whysz, "platform '%s': want linux or windows",
                c->platform);
  if (strcmp(c->client, "user") != 0 && strcmp(c->client, "admin") != 0)
    return fail(why, whysz, "client '%s': want user or admin", c->client);
  c->expect_close = cJSON_IsTrue(cJSON_GetObjectItem(root, "close"));
  c->codec_only = cJSON_IsTrue(cJSON_GetObjectItem(root, "codec"));
  c->timeout_ms = cJSON_IsNumber(t) && t->valuedouble >= 1
                      ? (unsigned)t->valuedouble
                      : DEFAULT_TIMEOUT_MS;
  c->config = cJSON_DetachItemFromObjectCaseSensitive(root, "config");
  if (c->config && !cJSON_IsObject(c->config))
    return fail(why, whysz, "'config' must be an object");
  c->ignore = cJSON_DetachItemFromObjectCaseSensitive(root, "ignore");
  if (c->ignore && !cJSON_IsArray(c->ignore))
    return fail(why, whysz, "'ignore' must be an array of types");
  return 0;
}

static int load_expect(px_case_t *c, cJSON *root, char *why, size_t whysz) {
  const cJSON *e;
  c->expect = cJSON_DetachItemFromObjectCaseSensitive(root, "expect");
  if (!cJSON_IsArray(c->expect))
    return fail(why, whysz, "'expect' must be an array");
  for (e = c->expect->child; e; e = e->next, c->nexpect++)
    if (check_expectation(e, why, whysz) != 0)
      return -1;
  if (c->nexpect == 0 && !c->expect_close)
    return fail(why, whysz, "expect nothing and no close?");
  return 0;
}

int px_case_parse(const char *text, size_t len, px_case_t *c, char *why,
                  size_t whysz) {
  cJSON *root = cJSON_ParseWithLength(text, len);
  int rc = -1;
  memset(c, 0, sizeof *c);
  if (!cJSON_IsObject(root)) {
    fail(why, whysz, "not a JSON object");
    goto cleanup;
  }
  if (check_case_keys(root, why, whysz) != 0 ||
      load_meta(c, root, why, whysz) != 0 ||
      load_send(c, cJSON_GetObjectItemCaseSensitive(root, "send"), why,
                whysz) != 0 ||
      load_expect(c, root, why, whysz) != 0)
    goto cleanup;
  rc = 0;
cleanup:
  cJSON_Delete(root);
  if (rc != 0)
    px_case_free(c);
  return rc;
}

int px_case_load(const char *path, px_case_t *c, char *why, size_t whysz) {
  px_buf_t b = {0};
  char chunk[4096];
  size_t n;
  int rc;
  FILE *f = fopen(path, "rb");
  memset(c, 0, sizeof *c);
  if (!f)
    return fail(why, whysz, "%s: cannot open", path);
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    if (px_buf_append(&b, chunk, n) != 0)
      break;
  fclose(f);
  rc = px_case_parse(px_buf_cstr(&b), b.len, c, why, whysz);
  px_buf_free(&b);
  return rc;
}

void px_case_free(px_case_t *c) {
  size_t i;
  for (i = 0; c->send && i < c->nsend; i++) {
    free(c->send[i].data);
    free(c->send[i].payload);
  }
  free(c->send);
  free(c->name);
  free(c->platform);
  free(c->client);
  cJSON_Delete(c->config);
  cJSON_Delete(c->expect);
  cJSON_Delete(c->ignore);
  memset(c, 0, sizeof *c);
}

int px_case_applies(const px_case_t *c, const char *platform, int stream) {
  if (c->platform && strcmp(c->platform, platform) != 0)
    return 0;
  return stream || !c->stream_only;
}

static int ignored(const px_case_t *c, const cJSON *msg) {
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(msg, "type");
  const cJSON *t;
  if (!c->ignore || !cJSON_IsString(type))
    return 0;
  for (t = c->ignore->child; t; t = t->next)
    if (cJSON_IsString(t) && strcmp(t->valuestring, type->valuestring) == 0)
      return 1;
  return 0;
}

int px_case_feed(px_case_run_t *run, const char *msg, size_t len, char *why,
                 size_t whysz) {
  cJSON *m = cJSON_ParseWithLength(msg, len);
  char inner[400];
  int rc;
  if (!m)
    return fail(why, whysz, "message %s is not JSON", run->c->name);
  if (ignored(run->c, m)) {
    cJSON_Delete(m);
    return 1;
  }
  if (run->next >= run->c->nexpect) {
    cJSON_Delete(m);
    return fail(why, whysz, "%s: message after the last expectation",
                run->c->name);
  }
  rc = px_case_check(cJSON_GetArrayItem(run->c->expect, (int)run->next), m,
                     inner, sizeof inner);
  cJSON_Delete(m);
  if (rc != 0) {
    if (why && whysz)
      snprintf(why, whysz, "%s: expect[%zu]: %s", run->c->name, run->next,
               inner);
    return -1;
  }
  run->next++;
  return 0;
}

int px_case_done(const px_case_run_t *run) {
  return run->next >= run->c->nexpect;
}
