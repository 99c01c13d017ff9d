/* wide.c (Windows) - the one UTF-8 <-> UTF-16 converter (px_winapi.h).
 *
 * Every Win32 "W" call takes UTF-16 and the project speaks UTF-8, and the
 * callers differ only in what to do with input that is not valid: a path
 * of the security path or of a config file is refused, a KB file name may
 * hold a lone surrogate (NTFS allows it; WTF-8 carries it through both
 * ways so a KB name round-trips), and text for people (the Event Log) has
 * U+FFFD in place of what cannot be read. One decoder serves all three;
 * no MultiByteToWideChar, whose refusals and replacements are not
 * documented byte for byte.
 */
#include "px/px_winapi.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One code point from s[i..n): its length, or 0 when the bytes are not a
 * well-formed UTF-8 sequence (overlong, past U+10FFFF, cut short, a
 * surrogate unless allow_surrogate). */
static size_t decode(const unsigned char *s, size_t i, size_t n,
                     int allow_surrogate, uint32_t *cp) {
  unsigned char c = s[i];
  size_t len, k;
  uint32_t v;
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  if ((c & 0xE0) == 0xC0)
    v = c & 0x1Fu, len = 2;
  else if ((c & 0xF0) == 0xE0)
    v = c & 0x0Fu, len = 3;
  else if ((c & 0xF8) == 0xF0)
    v = c & 0x07u, len = 4;
  else
    return 0;
  if (i + len > n)
    return 0;
  for (k = 1; k < len; k++) {
    if ((s[i + k] & 0xC0) != 0x80)
      return 0;
    v = v << 6 | (s[i + k] & 0x3Fu);
  }
  if ((len == 2 && v < 0x80) || (len == 3 && v < 0x800) ||
      (len == 4 && (v < 0x10000 || v > 0x10FFFF)) ||
      (!allow_surrogate && v >= 0xD800 && v <= 0xDFFF))
    return 0;
  *cp = v;
  return len;
}

WCHAR *px_win_wide(const char *s, unsigned how, size_t *wlen) {
  const unsigned char *u = (const unsigned char *)s;
  size_t n = strlen(s), i = 0, o = 0;
  WCHAR *w = malloc((n + 1) * sizeof *w); /* UTF-16 is never longer */
  if (!w)
    return NULL;
  while (i < n) {
    uint32_t cp;
    size_t len = decode(u, i, n, (how & PX_WIDE_WTF8) != 0, &cp);
    if (!len && !(how & PX_WIDE_REPLACE)) {
      free(w);
      return NULL;
    }
    if (!len)
      cp = 0xFFFD, len = 1;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      w[o++] = (WCHAR)(0xD800 | (cp >> 10));
      w[o++] = (WCHAR)(0xDC00 | (cp & 0x3FF));
    } else {
      w[o++] = (WCHAR)cp;
    }
    i += len;
  }
  w[o] = 0;
  if (wlen)
    *wlen = o;
  return w;
}

/* Append code point cp to p as UTF-8 (a surrogate as its 3-byte WTF-8). */
static char *encode(char *p, uint32_t cp) {
  if (cp < 0x80) {
    *p++ = (char)cp;
  } else if (cp < 0x800) {
    *p++ = (char)(0xC0 | cp >> 6);
    *p++ = (char)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *p++ = (char)(0xE0 | cp >> 12);
    *p++ = (char)(0x80 | ((cp >> 6) & 0x3F));
    *p++ = (char)(0x80 | (cp & 0x3F));
  } else {
    *p++ = (char)(0xF0 | cp >> 18);
    *p++ = (char)(0x80 | ((cp >> 12) & 0x3F));
    *p++ = (char)(0x80 | ((cp >> 6) & 0x3F));
    *p++ = (char)(0x80 | (cp & 0x3F));
  }
  return p;
}

char *px_win_utf8(const WCHAR *w, size_t wlen, unsigned how) {
  size_t i;
  char *s, *p;
  if (wlen == PX_WIDE_NUL)
    for (wlen = 0; w[wlen]; wlen++) {
    }
  if (wlen > (SIZE_MAX - 1) / 3 || !(s = malloc(wlen * 3 + 1)))
    return NULL;
  for (i = 0, p = s; i < wlen; i++) {
    uint32_t cp = w[i];
    if (cp >= 0xD800 && cp <= 0xDBFF && i + 1 < wlen && w[i + 1] >= 0xDC00 &&
        w[i + 1] <= 0xDFFF) {
      cp = 0x10000 + ((cp - 0xD800) << 10) + (w[i + 1] - 0xDC00u);
      i++;
    } else if (cp >= 0xD800 && cp <= 0xDFFF && !(how & PX_WIDE_WTF8)) {
      if (!(how & PX_WIDE_REPLACE)) {
        free(s);
        return NULL;
      }
      cp = 0xFFFD; /* a lone surrogate */
    }
    p = encode(p, cp);
  }
  *p = '\0';
  return s;
}
