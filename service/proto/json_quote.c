/* json_quote.c - a byte string as a JSON string literal, for the encoder
 * (encode.c) and the protocol's other writers: control characters and NUL
 * escaped, invalid UTF-8 replaced by U+FFFD (the maximal-subpart rule of
 * base/utf8.c), so what goes out is always valid UTF-8.
 */
#include "px/px_encode.h"

#include "px/px_error.h"
#include "px/px_util.h"

static const char replacement[3] = {'\xEF', '\xBF', '\xBD'}; /* U+FFFD */

/* Append a JSON escape for control byte c ("\n" or "\u001f"). */
static int quote_control(px_buf_t *b, unsigned char c) {
  static const char hex[] = "0123456789abcdef";
  char esc[7] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15], 0};
  switch (c) {
  case '\b':
    return px_buf_append(b, "\\b", 2);
  case '\f':
    return px_buf_append(b, "\\f", 2);
  case '\n':
    return px_buf_append(b, "\\n", 2);
  case '\r':
    return px_buf_append(b, "\\r", 2);
  case '\t':
    return px_buf_append(b, "\\t", 2);
  default:
    return px_buf_append(b, esc, 6);
  }
}

/* Append one unit at s (len > 0) escaped; *used receives its length. */
static int quote_unit(px_buf_t *b, const unsigned char *s, size_t len,
                      size_t *used, int *lossy) {
  size_t bad, n;
  if (*s == '"' || *s == '\\') {
    *used = 1;
    return px_buf_append(b, *s == '"' ? "\\\"" : "\\\\", 2);
  }
  if (*s < 0x20 || *s == 0x7f) {
    *used = 1;
    return quote_control(b, *s);
  }
  n = px_utf8_seq(s, len, &bad);
  if (n) {
    *used = n;
    return px_buf_append(b, s, n);
  }
  *used = bad;
  if (lossy)
    *lossy = 1;
  return px_buf_append(b, replacement, sizeof replacement);
}

int px_json_quote(px_buf_t *b, const char *s, size_t len, int *lossy) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0, run;
  if (px_buf_reserve(b, len + 2) != 0 || px_buf_append(b, "\"", 1) != 0)
    return PX_ENOMEM;
  while (i < len) {
    size_t used = 0;
    /* Copy plain printable ASCII in one go. */
    for (run = i; run < len && p[run] >= 0x20 && p[run] < 0x7f &&
                  p[run] != '"' && p[run] != '\\';
         run++)
      ;
    if (run > i && px_buf_append(b, p + i, run - i) != 0)
      return PX_ENOMEM;
    i = run;
    if (i == len)
      break;
    if (quote_unit(b, p + i, len - i, &used, lossy) != 0)
      return PX_ENOMEM;
    i += used;
  }
  return px_buf_append(b, "\"", 1);
}
