/* request_check.c - validators for the fields of a `run` request: exact
 * positive 64-bit integers, environment variable names, job file paths
 * (portable: safe on Windows and Linux at once) and strict base64.
 *
 * The path rules refuse everything that could name something outside the
 * job directory or something special on either platform, instead of trying
 * to normalise it: absolute paths, drive letters, UNC and device paths,
 * "." and ".." components, backslashes, ':' (drives and NTFS alternate
 * data streams), characters Windows forbids in names, names ending in a dot
 * or a space (Windows strips them, so "a." and "a" collide) and the DOS
 * device names (CON, PRN, AUX, NUL, COM0-9, LPT0-9, also with superscript
 * digits, CONIN$, CONOUT$ and CLOCK$) with or without an extension.
 */
#include "proto_int.h"

#include "px/px_encode.h"
#include "px/px_error.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int px__proto_parse_pos_int(const char *text, size_t len, uint64_t *out) {
  uint64_t v = 0;
  size_t i;
  if (len == 0 || text[0] < '1' || text[0] > '9')
    return PX_EINVAL;
  for (i = 0; i < len; i++) {
    unsigned d;
    if (text[i] < '0' || text[i] > '9')
      return PX_EINVAL;
    d = (unsigned)(text[i] - '0');
    if (v > ((uint64_t)INT64_MAX - d) / 10)
      return PX_ERANGE;
    v = v * 10 + d;
  }
  *out = v;
  return 0;
}

static int is_alpha_(int c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

int px__proto_env_name_valid(const char *name, size_t max_len) {
  size_t i;
  if (!is_alpha_((unsigned char)name[0]))
    return 0;
  for (i = 1; name[i]; i++)
    if (!is_alpha_((unsigned char)name[i]) &&
        !(name[i] >= '0' && name[i] <= '9'))
      return 0;
  return i <= max_len;
}

/* 1 if the component (len bytes) is a DOS device name, with or without an
 * extension, ignoring case and trailing spaces before the dot. */
static int reserved_name(const char *c, size_t len) {
  static const char *const plain[] = {"CON",    "PRN",     "AUX",   "NUL",
                                      "CONIN$", "CONOUT$", "CLOCK$"};
  char base[16];
  size_t n = 0, i;
  while (n < len && c[n] != '.')
    n++;
  while (n > 0 && c[n - 1] == ' ')
    n--;
  if (n == 0 || n >= sizeof base)
    return 0;
  for (i = 0; i < n; i++)
    base[i] = (c[i] >= 'a' && c[i] <= 'z') ? (char)(c[i] - 32) : c[i];
  base[n] = '\0';
  for (i = 0; i < sizeof plain / sizeof plain[0]; i++)
    if (strcmp(base, plain[i]) == 0)
      return 1;
  if (strncmp(base, "COM", 3) != 0 && strncmp(base, "LPT", 3) != 0)
    return 0;
  if (n == 4 && base[3] >= '0' && base[3] <= '9')
    return 1;
  /* COM¹ COM² COM³ (U+00B9, U+00B2, U+00B3 in UTF-8) are devices too. */
  return n == 5 && base[3] == '\xC2' &&
         (base[4] == '\xB9' || base[4] == '\xB2' || base[4] == '\xB3');
}

static int set_why(char *why, size_t whysz, const char *msg) {
  if (why && whysz)
    snprintf(why, whysz, "%s", msg);
  return PX_EINVAL;
}

/* One path component c[0..len): 0 or PX_EINVAL with why. */
static int check_component(const char *c, size_t len, char *why, size_t whysz) {
  size_t i;
  if (len == 0)
    return set_why(why, whysz, "empty path component");
  if ((len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
    return set_why(why, whysz, "'.' and '..' components are not allowed");
  if (c[len - 1] == '.' || c[len - 1] == ' ')
    return set_why(why, whysz, "a name may not end with '.' or ' '");
  for (i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)c[i];
    if (ch < 0x20 || ch == 0x7f || strchr("<>:\"|?*", ch))
      return set_why(why, whysz,
                     "characters <>:\"|?* and control characters are not "
                     "allowed");
  }
  if (reserved_name(c, len))
    return set_why(why, whysz, "reserved device name");
  return 0;
}

int px__proto_file_path_check(const char *path, size_t max_len, char *why,
                        size_t whysz) {
  size_t len = strlen(path), start = 0, i;
  if (len == 0)
    return set_why(why, whysz, "empty path");
  if (len > max_len)
    return set_why(why, whysz, "path too long");
  if (strchr(path, '\\'))
    return set_why(why, whysz, "use '/' as separator, not '\\'");
  if (path[0] == '/')
    return set_why(why, whysz, "absolute paths are not allowed");
  for (i = 0; i <= len; i++) {
    if (i < len && path[i] != '/')
      continue;
    if (check_component(path + start, i - start, why, whysz) != 0)
      return PX_EINVAL;
    start = i + 1;
  }
  return 0;
}

static int b64val(unsigned char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

char *px_base64_encode(const unsigned char *d, size_t len) {
  static const char a[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t i, o = 0, n;
  char *s;
  if (len > (SIZE_MAX - 1) / 4 * 3 - 3)
    return NULL;
  n = (len + 2) / 3 * 4;
  if (!(s = malloc(n + 1)))
    return NULL;
  for (i = 0; i + 2 < len; i += 3) {
    unsigned v = (unsigned)d[i] << 16 | (unsigned)d[i + 1] << 8 | d[i + 2];
    s[o++] = a[v >> 18];
    s[o++] = a[(v >> 12) & 63];
    s[o++] = a[(v >> 6) & 63];
    s[o++] = a[v & 63];
  }
  if (i < len) {
    unsigned v = (unsigned)d[i] << 16 | (i + 1 < len ? (unsigned)d[i + 1] << 8 : 0);
    s[o++] = a[v >> 18];
    s[o++] = a[(v >> 12) & 63];
    s[o++] = i + 1 < len ? a[(v >> 6) & 63] : '=';
    s[o++] = '=';
  }
  s[o] = '\0';
  return s;
}

size_t px__proto_base64_decoded_len(const char *s, size_t len) {
  size_t pad = 0;
  if (len >= 1 && s[len - 1] == '=')
    pad++;
  if (len >= 2 && s[len - 2] == '=')
    pad++;
  return len / 4 * 3 - pad;
}

/* Decode one 4-char group (is_last: padding allowed). */
static int b64_group(const unsigned char *g, int is_last, unsigned char *o,
                     size_t *n) {
  int v[4], i, pad = 0;
  for (i = 0; i < 4; i++) {
    if (g[i] == '=' && is_last && i >= 2 && (i == 3 || g[3] == '=')) {
      v[i] = 0;
      pad++;
      continue;
    }
    if ((v[i] = b64val(g[i])) < 0 || pad)
      return PX_EINVAL;
  }
  /* Canonical: the bits dropped by padding must be zero. */
  if ((pad == 2 && (v[1] & 0x0f)) || (pad == 1 && (v[2] & 0x03)))
    return PX_EINVAL;
  o[0] = (unsigned char)(v[0] << 2 | v[1] >> 4);
  o[1] = (unsigned char)((v[1] & 0x0f) << 4 | v[2] >> 2);
  o[2] = (unsigned char)((v[2] & 0x03) << 6 | v[3]);
  *n = 3 - (size_t)pad;
  return 0;
}

int px_base64_decode(const char *s, size_t len, size_t max,
                      unsigned char **out, size_t *out_len) {
  const unsigned char *p = (const unsigned char *)s;
  unsigned char *buf;
  size_t i, o = 0, n;
  *out = NULL;
  if (len % 4 != 0)
    return PX_EINVAL;
  if (px__proto_base64_decoded_len(s, len) > max)
    return PX_ERANGE;
  buf = malloc(len / 4 * 3 + 1);
  if (!buf)
    return PX_ENOMEM;
  for (i = 0; i < len; i += 4) {
    if (b64_group(p + i, i + 4 == len, buf + o, &n) != 0) {
      free(buf);
      return PX_EINVAL;
    }
    o += n;
  }
  *out = buf;
  *out_len = o;
  return 0;
}
