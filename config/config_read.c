/* config_read.c - the typed reads of the configuration parser: errors
 * with the JSON path, path building, integers, strings, objects without
 * duplicate keys, and exact integers for the printed form. Used by every
 * part of the parser (config.c, config_lists.c); uses none of them.
 */
#include "config_read.h"

#include "px/px_error.h"
#include "px/px_util.h"

#include <stdio.h>
#include <string.h>

/* ---- errors and paths ---- */

int px__cfg_fail(px__cfg_ctx_t *ctx, const char *path, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (ctx->err && ctx->errsz)
    snprintf(ctx->err, ctx->errsz, "%s: %s", path && *path ? path : "(root)",
             msg);
  return PX_ECONFIG;
}

/* JSON paths only name things in messages: a path too long for the
 * buffer is shown truncated (px_snprintf always terminates it). */
void px__cfg_join(char *child, size_t sz, const char *path, const char *key) {
  if (!path || !*path)
    (void)px_snprintf(child, sz, "%s", key);
  else
    (void)px_snprintf(child, sz, "%s.%s", path, key);
}

void px__cfg_index(char *child, size_t sz, const char *path, size_t i) {
  (void)px_snprintf(child, sz, "%s[%zu]", path, i);
}

/* ---- typed reads ---- */

static int is_integral(double d) {
  return d >= 0 && d <= (double)PX__JSON_INT_MAX && d == (double)(uint64_t)d;
}

int px__cfg_u64(px__cfg_ctx_t *ctx, const cJSON *it, const char *path,
                uint64_t min, uint64_t max, uint64_t *out) {
  const char *what = min >= 1 ? "must be a positive integer"
                              : "must be a non-negative integer";
  uint64_t v;
  if (!cJSON_IsNumber(it) || !is_integral(it->valuedouble))
    return px__cfg_fail(ctx, path, "%s", what);
  v = (uint64_t)it->valuedouble;
  if (v < min)
    return px__cfg_fail(ctx, path, "%s (at least %llu)", what,
                        (unsigned long long)min);
  if (v > max)
    return px__cfg_fail(ctx, path, "must be at most %llu",
                        (unsigned long long)max);
  *out = v;
  return 0;
}

int px__cfg_str(px__cfg_ctx_t *ctx, const cJSON *it, const char *path,
                int allow_empty, const char **out) {
  size_t n;
  if (!cJSON_IsString(it) || !it->valuestring)
    return px__cfg_fail(ctx, path, "must be a string");
  n = strlen(it->valuestring);
  if (!allow_empty && n == 0)
    return px__cfg_fail(ctx, path, "must not be empty");
  if (n > PX__STR_MAX)
    return px__cfg_fail(ctx, path, "longer than %d bytes", PX__STR_MAX);
  *out = it->valuestring;
  return 0;
}

int px__cfg_expect_object(px__cfg_ctx_t *ctx, const cJSON *it,
                          const char *path) {
  if (!cJSON_IsObject(it))
    return px__cfg_fail(ctx, path, "must be an object");
  return px__cfg_no_dup_keys(ctx, it, path);
}

int px__cfg_no_dup_keys(px__cfg_ctx_t *ctx, const cJSON *obj,
                        const char *path) {
  const cJSON *a, *b;
  char child[PX__PATH_MAX];
  if (cJSON_GetArraySize(obj) > 4096) /* bounds the quadratic scan */
    return px__cfg_fail(ctx, path, "more than 4096 members");
  for (a = obj->child; a; a = a->next) {
    for (b = a->next; b; b = b->next)
      if (a->string && b->string && strcmp(a->string, b->string) == 0) {
        px__cfg_join(child, sizeof child, path, a->string);
        return px__cfg_fail(ctx, child, "duplicate key");
      }
  }
  return 0;
}

/* ---- print ---- */

cJSON *px__cfg_number(uint64_t v) {
  char num[24];
  snprintf(num, sizeof num, "%llu", (unsigned long long)v);
  return cJSON_CreateRaw(num);
}
