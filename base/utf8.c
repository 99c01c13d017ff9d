/* utf8.c - UTF-8 validation and repair.
 *
 * Valid means RFC 3629: shortest form only (no overlongs such as C0 80 or
 * E0 80 80), no UTF-16 surrogates (ED A0..BF xx), nothing above U+10FFFF
 * (F4 90.. and F5..FF). Repair follows the WHATWG / Unicode "maximal
 * subpart" practice: each maximal prefix of a would-be valid sequence, or
 * each lone bad byte, becomes one U+FFFD, and decoding resumes at the byte
 * that broke the sequence. So "\xE2\x82" + "A" gives U+FFFD "A" and
 * "\xF0\x80\x80" gives three U+FFFD (F0 80 is already impossible).
 */
#include "px/px_util.h"

#include "px/px_error.h"

#include <stdlib.h>
#include <string.h>

static const char replacement[3] = {'\xEF', '\xBF', '\xBD'}; /* U+FFFD */

/* The allowed range of the second byte after lead byte b (Unicode table
 * 3-7), and the sequence length; 0 for bytes that cannot lead. */
static size_t lead_info(unsigned char b, unsigned char *lo, unsigned char *hi) {
  *lo = 0x80;
  *hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF)
    return 2;
  if (b >= 0xE0 && b <= 0xEF) {
    if (b == 0xE0)
      *lo = 0xA0; /* overlong below U+0800 */
    else if (b == 0xED)
      *hi = 0x9F; /* surrogates U+D800..DFFF */
    return 3;
  }
  if (b >= 0xF0 && b <= 0xF4) {
    if (b == 0xF0)
      *lo = 0x90; /* overlong below U+10000 */
    else if (b == 0xF4)
      *hi = 0x8F; /* above U+10FFFF */
    return 4;
  }
  return 0;
}

size_t px_utf8_seq(const unsigned char *s, size_t len, size_t *bad_len) {
  unsigned char lo, hi;
  size_t n, i;
  *bad_len = 1;
  if (len == 0)
    return 0;
  if (s[0] < 0x80)
    return 1;
  n = lead_info(s[0], &lo, &hi);
  if (n == 0)
    return 0;
  for (i = 1; i < n; i++) {
    if (i >= len || s[i] < lo || s[i] > hi) {
      *bad_len = i; /* the lead and the good continuation bytes */
      return 0;
    }
    lo = 0x80;
    hi = 0xBF;
  }
  return n;
}

int px_utf8_valid(const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0, bad;
  while (i < len) {
    size_t n;
    if (p[i] < 0x80) { /* fast path for ASCII runs */
      i++;
      continue;
    }
    n = px_utf8_seq(p + i, len - i, &bad);
    if (n == 0)
      return 0;
    i += n;
  }
  return 1;
}

char *px_utf8_sanitize(const char *s, size_t len, size_t *out_len, int *lossy) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0, o = 0, cap;
  char *out;
  /* Worst case: every byte becomes 3 bytes of U+FFFD. */
  if (len > (SIZE_MAX - 1) / 3)
    return NULL;
  cap = px_utf8_valid(s, len) ? len + 1 : len * 3 + 1;
  out = malloc(cap);
  if (!out)
    return NULL;
  while (i < len) {
    size_t bad, n = px_utf8_seq(p + i, len - i, &bad);
    if (n) {
      memcpy(out + o, p + i, n);
      o += n;
      i += n;
    } else {
      memcpy(out + o, replacement, sizeof replacement);
      o += sizeof replacement;
      i += bad;
      if (lossy)
        *lossy = 1;
    }
  }
  out[o] = '\0';
  if (out_len)
    *out_len = o;
  return out;
}
