/* attest_report.c - the attestation report (px_attest.h): the probe's
 * lines in, the verdict and its JSON out. Portable and free of I/O, so the rules
 * are unit-tested on both platforms (tests/unit/test_attest.c).
 */
#include "px/px_attest.h"

#include "px/px_error.h"
#include "px/px_util.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *px_attest_result_name(px_attest_result_t r) {
  switch (r) {
  case PX_ATTEST_PASS:
    return "pass";
  case PX_ATTEST_FAIL:
    return "fail";
  default:
    return "unsupported";
  }
}

const char *px_attest_state_name(px_attest_state_t s) {
  switch (s) {
  case PX_ATTEST_ENFORCED:
    return "enforced";
  case PX_ATTEST_DEGRADED:
    return "degraded";
  case PX_ATTEST_FAILED:
    return "failed";
  default:
    return "pending";
  }
}

/* Copy at most dstsz-1 bytes, never splitting a UTF-8 character. */
static void copy_trunc(char *dst, size_t dstsz, const char *src) {
  size_t n = src ? strlen(src) : 0;
  if (n >= dstsz) {
    n = dstsz - 1;
    while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
      n--; /* src[n] is a continuation byte: cut before its lead byte */
  }
  if (n)
    memcpy(dst, src, n);
  dst[n] = '\0';
}

int px_attest_add(px_attest_report_t *r, const char *name,
                  px_attest_result_t result, const char *observed) {
  px_attest_check_t *c;
  if (r->nchecks >= PX_ATTEST_MAX_CHECKS)
    return PX_ERANGE;
  c = &r->checks[r->nchecks++];
  copy_trunc(c->name, sizeof c->name, name);
  c->result = result;
  copy_trunc(c->observed, sizeof c->observed, observed);
  return 0;
}

const px_attest_check_t *px_attest_find(const px_attest_report_t *r,
                                        const char *name) {
  size_t i;
  for (i = 0; i < r->nchecks; i++)
    if (strcmp(r->checks[i].name, name) == 0)
      return &r->checks[i];
  return NULL;
}

static int result_parse(const char *s, px_attest_result_t *out) {
  if (strcmp(s, "pass") == 0)
    *out = PX_ATTEST_PASS;
  else if (strcmp(s, "fail") == 0)
    *out = PX_ATTEST_FAIL;
  else if (strcmp(s, "unsupported") == 0)
    *out = PX_ATTEST_UNSUPPORTED;
  else
    return PX_EPROTO;
  return 0;
}

/* A check name is [a-z0-9_], 1-47 characters. */
static int name_ok(const char *s) {
  size_t i, n = strlen(s);
  if (n == 0 || n >= PX_ATTEST_NAME_MAX)
    return 0;
  for (i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
          s[i] == '_'))
      return 0;
  return 1;
}

int px_attest_parse_line(px_attest_report_t *r, const char *line, size_t len,
                         const char *prefix) {
  cJSON *o = NULL;
  const cJSON *name, *res, *obs;
  px_attest_result_t result;
  char full[PX_ATTEST_NAME_MAX];
  char *clean = NULL;
  int rc = PX_EPROTO;

  if (!px_utf8_valid(line, len) || memchr(line, '\0', len) ||
      !(o = cJSON_ParseWithLength(line, len)))
    return PX_EPROTO;
  name = cJSON_GetObjectItemCaseSensitive(o, "check");
  res = cJSON_GetObjectItemCaseSensitive(o, "result");
  obs = cJSON_GetObjectItemCaseSensitive(o, "observed");
  if (!cJSON_IsString(name) || !cJSON_IsString(res) ||
      !name_ok(name->valuestring) ||
      result_parse(res->valuestring, &result) != 0 ||
      (obs && !cJSON_IsString(obs)))
    goto done;
  if (px_snprintf(full, sizeof full, "%s%s", prefix ? prefix : "",
                  name->valuestring) != 0)
    goto done;
  clean = px_strdup(obs ? obs->valuestring : "");
  rc = clean ? px_attest_add(r, full, result, clean) : PX_ENOMEM;
done:
  free(clean);
  cJSON_Delete(o);
  return rc;
}

px_attest_state_t px_attest_decide(const px_attest_report_t *r,
                                   int allow_degraded, int under_wine) {
  size_t i;
  int failed = r->nchecks == 0; /* nothing checked proves nothing */
  for (i = 0; i < r->nchecks; i++)
    if (r->checks[i].result == PX_ATTEST_FAIL)
      failed = 1;
  if (failed)
    return allow_degraded ? PX_ATTEST_DEGRADED : PX_ATTEST_FAILED;
  return under_wine ? PX_ATTEST_DEGRADED : PX_ATTEST_ENFORCED;
}

size_t px_attest_unsupported_refused(const px_attest_report_t *r,
                                     const char *const *allowed, char *out,
                                     size_t outsz) {
  size_t i, k, n = 0, used = 0;
  if (outsz)
    out[0] = '\0';
  for (i = 0; i < r->nchecks; i++) {
    const char *name = r->checks[i].name;
    int ok = 0;
    if (r->checks[i].result != PX_ATTEST_UNSUPPORTED)
      continue;
    for (k = 0; allowed && allowed[k] && !ok; k++)
      ok = strcmp(allowed[k], name) == 0;
    if (ok)
      continue;
    n++;
    if (outsz && used + strlen(name) + 2 <= outsz) {
      if (used)
        out[used++] = ' ';
      memcpy(out + used, name, strlen(name) + 1);
      used += strlen(name);
    }
  }
  return n;
}

void px_attest_failed_names(const px_attest_report_t *r, char *out,
                            size_t outsz) {
  size_t i, used = 0;
  if (!outsz)
    return;
  out[0] = '\0';
  for (i = 0; i < r->nchecks; i++) {
    const char *n = r->checks[i].name;
    size_t need = strlen(n) + (used ? 1 : 0);
    if (r->checks[i].result != PX_ATTEST_FAIL)
      continue;
    if (used + need + 1 > outsz)
      break;
    if (used)
      out[used++] = ',';
    memcpy(out + used, n, strlen(n) + 1);
    used += strlen(n);
  }
}

/* ms since 1970 -> "YYYY-MM-DDTHH:MM:SSZ" (proleptic Gregorian, UTC;
 * Howard Hinnant's days-to-civil). */
static void iso_utc(uint64_t ms, char *out, size_t outsz) {
  int64_t s = (int64_t)(ms / 1000), z = s / 86400 + 719468, era, doe, yoe,
          doy, mp, d, m, y, sod = s % 86400;
  era = z / 146097;
  doe = z - era * 146097;
  yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y = yoe + era * 400 + (m <= 2);
  px_snprintf(out, outsz, "%04" PRId64 "-%02" PRId64 "-%02" PRId64
                          "T%02" PRId64 ":%02" PRId64 ":%02" PRId64 "Z",
              y, m, d, sod / 3600, sod / 60 % 60, sod % 60);
}

static int add_check(cJSON *arr, const px_attest_check_t *c) {
  cJSON *o = cJSON_CreateObject();
  if (!o || !cJSON_AddItemToArray(arr, o)) {
    cJSON_Delete(o);
    return 1;
  }
  return !cJSON_AddStringToObject(o, "name", c->name) ||
         !cJSON_AddStringToObject(o, "result", px_attest_result_name(c->result)) ||
         !cJSON_AddStringToObject(o, "observed", c->observed);
}

char *px_attest_to_json(const px_attest_report_t *r) {
  cJSON *o = cJSON_CreateObject(), *arr;
  char when[32], dur[24];
  char *out = NULL;
  size_t i;
  int bad = !o;
  if (r->time_ms)
    iso_utc(r->time_ms, when, sizeof when);
  snprintf(dur, sizeof dur, "%" PRIu64, r->duration_ms);
  bad = bad || !(r->time_ms ? cJSON_AddStringToObject(o, "time", when)
                            : cJSON_AddNullToObject(o, "time")) ||
        !cJSON_AddStringToObject(o, "state", px_attest_state_name(r->state)) ||
        !cJSON_AddRawToObject(o, "duration_ms", dur) ||
        !(arr = cJSON_AddArrayToObject(o, "checks"));
  for (i = 0; !bad && i < r->nchecks; i++)
    bad = add_check(arr, &r->checks[i]);
  if (!bad)
    out = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return out;
}
