/* config_read.h - the typed reads of the configuration parser
 * (config_read.c), below both config.c and config_lists.c. Not a seam.
 */
#ifndef PX_CONFIG_READ_H
#define PX_CONFIG_READ_H

#include <cjson/cJSON.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* Largest integer a JSON number carries exactly (2^53). */
#define PX__JSON_INT_MAX (UINT64_C(1) << 53)
#define PX__PATH_MAX 160 /* JSON path in messages ("clients[3].match") */
#define PX__STR_MAX 4096 /* any string value in the file */

/* printf-style checking that matches the C99 printf mingw builds use. */
#if defined(__MINGW32__)
#define PX__PRINTF(f, a) __attribute__((format(gnu_printf, f, a)))
#elif defined(__GNUC__)
#define PX__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define PX__PRINTF(f, a)
#endif

/* A parse in progress: where errors go. */
typedef struct {
  char *err;
  size_t errsz;
} px__cfg_ctx_t;

/* Write "path: message" into ctx->err; returns PX_ECONFIG. */
int px__cfg_fail(px__cfg_ctx_t *ctx, const char *path, const char *fmt, ...)
    PX__PRINTF(3, 4);
/* child = path + "." + key (or key alone at the root). */
void px__cfg_join(char *child, size_t sz, const char *path, const char *key);
/* child = path + "[i]". */
void px__cfg_index(char *child, size_t sz, const char *path, size_t i);

/* Typed reads: 0 or PX_ECONFIG (message names path). */
int px__cfg_u64(px__cfg_ctx_t *ctx, const cJSON *it, const char *path,
                uint64_t min, uint64_t max, uint64_t *out);
int px__cfg_str(px__cfg_ctx_t *ctx, const cJSON *it, const char *path,
                int allow_empty, const char **out);
/* Fail on a duplicate key among obj's members (cJSON keeps both). */
int px__cfg_no_dup_keys(px__cfg_ctx_t *ctx, const cJSON *obj, const char *path);
int px__cfg_expect_object(px__cfg_ctx_t *ctx, const cJSON *it,
                          const char *path);

/* A u64 as an exact JSON integer. */
cJSON *px__cfg_number(uint64_t v);

#endif /* PX_CONFIG_READ_H */
