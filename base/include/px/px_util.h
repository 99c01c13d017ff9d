/* px_util.h - small string, buffer and array helpers shared by every
 * component. (strdup is not ISO C and mingw hides it under -std=c11: use
 * these.) */
#ifndef PX_UTIL_H
#define PX_UTIL_H

#include "px/px_attr.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* malloc'd copy of s (NULL if s is NULL or on OOM). Caller frees. */
char *px_strdup(const char *s);
/* malloc'd copy of at most n bytes of s, NUL-terminated. Caller frees. */
char *px_strndup(const char *s, size_t n);
/* Copy src into dst (size dstsz, > 0), always NUL-terminating. Returns 0,
 * or PX_ERANGE when src was truncated. */
int px_strlcpy(char *dst, const char *src, size_t dstsz);
/* snprintf that reports truncation: 0, or PX_ERANGE. */
int px_snprintf(char *dst, size_t dstsz, const char *fmt, ...)
    PX_PRINTF(3, 4)
    ;
/* ASCII case-insensitive comparisons (locale-independent). */
int px_strcasecmp(const char *a, const char *b);
/* First occurrence of needle in hay[0..hay_len), ASCII case-insensitive;
 * NULL if none. */
const char *px_memcasemem(const char *hay, size_t hay_len, const char *needle,
                          size_t needle_len);
/* Value of one hex digit ([0-9a-fA-F] -> 0..15), -1 for anything else
 * (c is a char's value as unsigned char, or EOF). */
int px_hexval(int c);

/* A growable byte buffer. Zero-initialise ({0}) before use. */
typedef struct {
  char *data; /* owned; NUL-terminated when len > 0 or after px_buf_cstr */
  size_t len;
  size_t cap;
} px_buf_t;

/* Append n bytes; returns 0 or PX_ENOMEM (buffer unchanged then). */
int px_buf_append(px_buf_t *b, const void *p, size_t n);
int px_buf_append_str(px_buf_t *b, const char *s);
int px_buf_printf(px_buf_t *b, const char *fmt, ...)
    PX_PRINTF(2, 3)
    ;
/* Make sure cap >= len + extra + 1. */
int px_buf_reserve(px_buf_t *b, size_t extra);
/* The contents as a C string ("" for an empty buffer; never NULL). */
const char *px_buf_cstr(px_buf_t *b);
/* Hand the storage to the caller (who frees it) and reset the buffer. */
char *px_buf_take(px_buf_t *b, size_t *len);
void px_buf_reset(px_buf_t *b); /* len = 0, keeps the storage */
void px_buf_free(px_buf_t *b);  /* frees, idempotent */

/* Make the growable array *pptr hold at least `need` elements of elem_size
 * (> 0) bytes. pptr is the address of the array pointer (`&v` for a
 * `T *v`; v NULL and *cap 0 while empty). When it must grow, the capacity
 * doubles from *cap, or from first_cap for an empty array (0: exactly
 * need), until it holds need; *cap is the new capacity. Returns 0 (also
 * when there is room already), or PX_ENOMEM when the allocation fails or
 * the size in bytes would overflow a size_t; *pptr, *cap and the contents
 * are unchanged then. The caller owns the array and frees it with free(). */
int px_array_reserve(void *pptr, size_t *cap, size_t need, size_t elem_size,
                     size_t first_cap);

/* Overflow-checked arithmetic: 0, or PX_EOVERFLOW. */
int px_add_u64(uint64_t a, uint64_t b, uint64_t *out);
int px_mul_u64(uint64_t a, uint64_t b, uint64_t *out);

/* ---- UTF-8 (base/utf8.c) ---- */
/* 1 if s[0..len) is valid UTF-8 (no overlongs, no surrogates, <= U+10FFFF). */
int px_utf8_valid(const char *s, size_t len);
/* Copy s into a malloc'd NUL-terminated string, invalid sequences replaced
 * by U+FFFD; *lossy set to 1 if anything was replaced (else unchanged).
 * NULs are kept as-is (JSON encodes them as \u0000). *out_len receives the
 * length. Returns NULL on OOM. */
char *px_utf8_sanitize(const char *s, size_t len, size_t *out_len, int *lossy);

/* Length of the valid UTF-8 sequence at s[0..len), or 0 when the bytes
 * there do not start a valid sequence; *bad_len then receives the length
 * of the maximal subpart to replace (>= 1). */
size_t px_utf8_seq(const unsigned char *s, size_t len, size_t *bad_len);

#ifdef __cplusplus
}
#endif
#endif /* PX_UTIL_H */
