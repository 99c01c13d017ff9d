/* util.c - string, buffer and array helpers (px_util.h). */
#include "px/px_util.h"

#include "px/px_error.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *px_strdup(const char *s) { return s ? px_strndup(s, strlen(s)) : NULL; }

char *px_strndup(const char *s, size_t n) {
  size_t len = 0;
  char *p;
  if (!s)
    return NULL;
  while (len < n && s[len])
    len++;
  p = malloc(len + 1);
  if (!p)
    return NULL;
  memcpy(p, s, len);
  p[len] = '\0';
  return p;
}

int px_strlcpy(char *dst, const char *src, size_t dstsz) {
  size_t n = strlen(src);
  if (dstsz == 0)
    return PX_ERANGE;
  if (n >= dstsz) {
    memcpy(dst, src, dstsz - 1);
    dst[dstsz - 1] = '\0';
    return PX_ERANGE;
  }
  memcpy(dst, src, n + 1);
  return 0;
}

int px_snprintf(char *dst, size_t dstsz, const char *fmt, ...) {
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(dst, dstsz, fmt, ap);
  va_end(ap);
  return (n < 0 || (size_t)n >= dstsz) ? PX_ERANGE : 0;
}

static int lower(int c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

int px_strcasecmp(const char *a, const char *b) {
  for (;; a++, b++) {
    int d = lower((unsigned char)*a) - lower((unsigned char)*b);
    if (d || !*a)
      return d;
  }
}

int px_hexval(int c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

const char *px_memcasemem(const char *hay, size_t hay_len, const char *needle,
                          size_t needle_len) {
  size_t i, j;
  if (needle_len == 0)
    return hay;
  for (i = 0; i + needle_len <= hay_len; i++) {
    for (j = 0; j < needle_len; j++)
      if (lower((unsigned char)hay[i + j]) != lower((unsigned char)needle[j]))
        break;
    if (j == needle_len)
      return hay + i;
  }
  return NULL;
}

int px_buf_reserve(px_buf_t *b, size_t extra) {
  size_t need, cap;
  char *p;
  if (extra > SIZE_MAX - b->len || b->len + extra == SIZE_MAX)
    return PX_ENOMEM;
  need = b->len + extra + 1; /* the NUL */
  if (need <= b->cap)
    return 0;
  cap = b->cap ? b->cap : 64;
  while (cap < need)
    cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  p = realloc(b->data, cap);
  if (!p)
    return PX_ENOMEM;
  b->data = p;
  b->cap = cap;
  return 0;
}

int px_buf_append(px_buf_t *b, const void *p, size_t n) {
  if (px_buf_reserve(b, n))
    return PX_ENOMEM;
  if (n)
    memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
  return 0;
}

int px_buf_append_str(px_buf_t *b, const char *s) {
  return px_buf_append(b, s, strlen(s));
}

int px_buf_printf(px_buf_t *b, const char *fmt, ...) {
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0)
    return PX_EINVAL;
  if (px_buf_reserve(b, (size_t)n))
    return PX_ENOMEM;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
  return 0;
}

const char *px_buf_cstr(px_buf_t *b) { return b->data ? b->data : ""; }

char *px_buf_take(px_buf_t *b, size_t *len) {
  char *p = b->data;
  if (len)
    *len = b->len;
  b->data = NULL;
  b->len = b->cap = 0;
  return p;
}

void px_buf_reset(px_buf_t *b) {
  b->len = 0;
  if (b->data)
    b->data[0] = '\0';
}

void px_buf_free(px_buf_t *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

int px_array_reserve(void *pptr, size_t *cap, size_t need, size_t elem_size,
                     size_t first_cap) {
  size_t max, ncap;
  void *old, *p;
  assert(pptr && cap && elem_size > 0);
  if (need <= *cap)
    return 0;
  max = SIZE_MAX / elem_size; /* the most elements a size_t byte count holds */
  if (need > max)
    return PX_ENOMEM;
  ncap = *cap ? *cap : first_cap;
  if (ncap == 0 || ncap > max)
    ncap = need;
  while (ncap < need)
    ncap = ncap > max / 2 ? need : ncap * 2;
  /* *pptr is a `T *`: reading or writing it through a `void **` would
   * break the aliasing rules (C11 6.5p7), copying its bytes does not. Every
   * object pointer has void *'s representation on the platforms we build
   * for. */
  memcpy(&old, pptr, sizeof old);
  p = realloc(old, ncap * elem_size);
  if (!p)
    return PX_ENOMEM;
  memcpy(pptr, &p, sizeof p);
  *cap = ncap;
  return 0;
}

int px_add_u64(uint64_t a, uint64_t b, uint64_t *out) {
  if (a > UINT64_MAX - b)
    return PX_EOVERFLOW;
  *out = a + b;
  return 0;
}

int px_mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
  if (a && b > UINT64_MAX / a)
    return PX_EOVERFLOW;
  *out = a * b;
  return 0;
}
